/* dlc-run: run an exported dlc model on .npy inputs, without Python.
 *
 *   dlc-run MODEL.so [--entry NAME] [--threads N] [--repeat N] [--info]
 *           [-i NAME=FILE.npy ...] [FILE.npy ...] [-o OUTDIR]
 *
 * Inputs come in order (positional FILE.npy) or by name (-i NAME=FILE.npy), each
 * checked against the entry's metadata (dtype, rank, each dim). Each output is
 * summarized on stdout (name, dtype, shape, sum, min, max); with -o it is also
 * written to OUTDIR/<output name>.npy (the name reduced to [A-Za-z0-9._-]; all
 * outputs are written to temporary files first and renamed at the end, so a failure
 * leaves none). --repeat N times N more runs and prints the median and the minimum.
 * Every error is one line "dlc-run: error: ..." on stderr and exit status 1 (2 for a
 * bad command line).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dlc_npy.h"
#include "dlc_runtime.h"

#define MAX_MESSAGE 1024

static const char USAGE[] =
    "usage: dlc-run MODEL.so [options] [INPUT.npy ...]\n"
    "\n"
    "Run a model exported by dlc (dlc compile) on .npy inputs.\n"
    "\n"
    "  INPUT.npy              the entry's inputs, in order\n"
    "  -i, --input NAME=FILE  an input by name (instead of in order)\n"
    "  -o, --output-dir DIR   write each output as DIR/<output name>.npy (DIR is created)\n"
    "  -e, --entry NAME       the entry point to run (default: the model's default)\n"
    "  -t, --threads N        threads for parallel loops (0 = all cores, at most 1024)\n"
    "  -r, --repeat N         N more timed runs after the first; print median and min time\n"
    "      --info             print the entries with their inputs and outputs, and exit\n"
    "  -h, --help             this help\n";

static int error(const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

static int error(const char *format, ...) {
    va_list args;
    fputs("dlc-run: error: ", stderr);
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
    return 1;
}

static int usage_error(const char *what, const char *value) {
    fprintf(stderr, "dlc-run: error: %s%s%s (see dlc-run --help)\n", what, value ? ": " : "", value ? value : "");
    return 2;
}

/* A decimal int in [low, high], the whole string. */
static int parse_int(const char *text, long low, long high, int *out) {
    char *end;
    long value;
    errno = 0;
    value = strtol(text, &end, 10);
    if (errno || end == text || *end || value < low || value > high) return 0;
    *out = (int)value;
    return 1;
}

static void format_shape(int ndim, const int64_t *shape, char *out, size_t size) {
    size_t used = 0;
    int i;
    used += (size_t)snprintf(out, size, "[");
    for (i = 0; i < ndim && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (used < size) snprintf(out + used, size - used, "]");
}

static void print_tensor(const char *what, size_t index, const dlc_tensor_info *t) {
    char shape[512];
    format_shape(t->ndim, t->shape, shape, sizeof shape);
    printf("  %s %zu '%s': %s %s\n", what, index, t->name, dlc_dtype_name(t->dtype), shape);
}

static void print_info(const dlc_model *model) {
    size_t i, j;
    for (i = 0; i < dlc_model_num_entries(model); i++) {
        const dlc_entry *e = dlc_model_entry(model, i);
        printf("entry @%s%s\n", dlc_entry_name(e), e == dlc_model_default_entry(model) ? " (default)" : "");
        for (j = 0; j < dlc_entry_num_inputs(e); j++) print_tensor("input", j, dlc_entry_input(e, j));
        for (j = 0; j < dlc_entry_num_outputs(e); j++) print_tensor("output", j, dlc_entry_output(e, j));
    }
}

/* -- inputs ----------------------------------------------------------------------- */

/* The input `t` from `path`, checked against the metadata. */
static int read_input(const char *path, const dlc_tensor_info *t, npy_array *a) {
    char message[MAX_MESSAGE], have[512], want[512];
    int i;
    if (npy_read(path, a, message, sizeof message)) return error("input '%s': %s", t->name, message);
    format_shape(a->ndim, a->shape, have, sizeof have);
    format_shape(t->ndim, t->shape, want, sizeof want);
    if (a->dtype != t->dtype)
        return error("input '%s' (%s): dtype %s, the model expects %s", t->name, path, dlc_dtype_name(a->dtype),
                     dlc_dtype_name(t->dtype));
    if (a->ndim != t->ndim)
        return error("input '%s' (%s): shape %s has %d dims, the model expects %d dims %s", t->name, path, have,
                     a->ndim, t->ndim, want);
    for (i = 0; i < a->ndim; i++)
        if (a->shape[i] != t->shape[i])
            return error("input '%s' (%s): dim %d is %lld, the model expects %lld (shape %s, expected %s)", t->name,
                         path, i, (long long)a->shape[i], (long long)t->shape[i], have, want);
    return 0;
}

/* The index of the input NAME in "NAME=FILE" (the longest input name that matches),
 * or -1. */
static long named_input(const dlc_entry *e, const char *spec, const char **file) {
    long best = -1;
    size_t best_length = 0, i;
    for (i = 0; i < dlc_entry_num_inputs(e); i++) {
        const char *name = dlc_entry_input(e, i)->name;
        size_t n = strlen(name);
        if (strncmp(spec, name, n) == 0 && spec[n] == '=' && (best < 0 || n > best_length)) {
            best = (long)i;
            best_length = n;
        }
    }
    if (best >= 0) *file = spec + best_length + 1;
    return best;
}

/* -- outputs ---------------------------------------------------------------------- */

static double half_to_double(uint16_t h) {
    int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    double value;
    if (exponent == 0) value = ldexp(mantissa, -24);
    else if (exponent == 31) value = mantissa ? NAN : INFINITY;
    else value = ldexp(mantissa + 1024, exponent - 25);
    return h & 0x8000 ? -value : value;
}

static double element(const void *data, dlc_dtype dtype, size_t i) {
    switch (dtype) {
    case DLC_FLOAT16: return half_to_double(((const uint16_t *)data)[i]);
    case DLC_FLOAT32: return ((const float *)data)[i];
    case DLC_FLOAT64: return ((const double *)data)[i];
    case DLC_INT8: return ((const int8_t *)data)[i];
    case DLC_INT16: return ((const int16_t *)data)[i];
    case DLC_INT32: return ((const int32_t *)data)[i];
    case DLC_INT64: return (double)((const int64_t *)data)[i];
    case DLC_UINT8: case DLC_BOOL: return ((const uint8_t *)data)[i];
    case DLC_UINT16: return ((const uint16_t *)data)[i];
    case DLC_UINT32: return ((const uint32_t *)data)[i];
    case DLC_UINT64: return (double)((const uint64_t *)data)[i];
    default: return NAN;
    }
}

static void summarize(size_t index, const dlc_tensor_info *t, const void *data) {
    char shape[512];
    format_shape(t->ndim, t->shape, shape, sizeof shape);
    printf("output %zu '%s': %s %s", index, t->name, dlc_dtype_name(t->dtype), shape);
    if (t->num_elements && !isnan(element(data, t->dtype, 0)) && dlc_dtype_size(t->dtype) &&
        t->dtype < DLC_BFLOAT16) {
        double sum = 0, low = INFINITY, high = -INFINITY;
        size_t i;
        for (i = 0; i < t->num_elements; i++) {
            double v = element(data, t->dtype, i);
            sum += v;
            if (v < low) low = v;
            if (v > high) high = v;
        }
        printf(" sum %.9g min %.9g max %.9g", sum, low, high);
    }
    printf("\n");
}

/* The output's file name: [A-Za-z0-9._-] kept, anything else '_', no leading '.',
 * never empty, at most 200 bytes. */
static void base_name(const char *name, size_t index, char *out, size_t size) {
    size_t i, n = 0;
    for (i = 0; name[i] && n + 1 < size && n < 200; i++) {
        char c = name[i];
        int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                   (c == '.' && n > 0);
        out[n++] = keep ? c : '_';
    }
    if (n == 0) n = (size_t)snprintf(out, size, "output%zu", index);
    out[n] = '\0';
}

/* names[i] for every output: base_name, with "_<i>" added (again) while an earlier
 * output already has that name. */
static void file_names(const dlc_entry *e, char (*names)[256]) {
    size_t i, j;
    for (i = 0; i < dlc_entry_num_outputs(e); i++) {
        base_name(dlc_entry_output(e, i)->name, i, names[i], sizeof names[i]);
        for (j = 0; j < i; j++)
            if (strcmp(names[j], names[i]) == 0) {
                size_t n = strlen(names[i]);
                if (n > 230) n = 230;
                snprintf(names[i] + n, sizeof names[i] - n, "_%zu", i);
                j = (size_t)-1; /* check again from the first */
            }
    }
}

static int write_all(int fd, const void *data, size_t size) {
    const char *p = data;
    while (size) {
        ssize_t n = write(fd, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 0;
        p += n;
        size -= (size_t)n;
    }
    return 1;
}

/* All outputs to DIR/<name>.npy: each to a temporary file, then all renamed. */
static int write_outputs(const char *dir, const dlc_entry *e, void **outputs) {
    size_t count = dlc_entry_num_outputs(e), i;
    char (*temps)[4200] = calloc(count ? count : 1, sizeof *temps);
    char (*finals)[4200] = calloc(count ? count : 1, sizeof *finals);
    char (*names)[256] = calloc(count ? count : 1, sizeof *names);
    struct stat info;
    int status = 0;
    if (!temps || !finals || !names) {
        free(temps);
        free(finals);
        free(names);
        return error("out of memory");
    }
    file_names(e, names);
    if (stat(dir, &info) != 0) {
        if (errno != ENOENT || mkdir(dir, 0777) != 0) status = error("-o %s: cannot create the directory: %s", dir, strerror(errno));
    } else if (!S_ISDIR(info.st_mode)) {
        status = error("-o %s: not a directory", dir);
    }
    for (i = 0; i < count && !status; i++) {
        const dlc_tensor_info *t = dlc_entry_output(e, i);
        const char *name = names[i];
        char head[4096];
        size_t head_size = npy_header(t->dtype, t->ndim, t->shape, head, sizeof head);
        int fd;
        if (!head_size) {
            status = error("output '%s' is %s, which .npy cannot hold (no numpy descr); run without -o", t->name,
                           dlc_dtype_name(t->dtype));
            break;
        }
        if ((size_t)snprintf(finals[i], sizeof finals[i], "%s/%s.npy", dir, name) >= sizeof finals[i]) {
            status = error("-o %s: path too long", dir);
            break;
        }
        snprintf(temps[i], sizeof temps[i], "%s/.%s.npy.XXXXXX", dir, name);
        if ((fd = mkstemp(temps[i])) < 0) {
            temps[i][0] = '\0';
            status = error("cannot write %s: %s", finals[i], strerror(errno));
            break;
        }
        if (!write_all(fd, head, head_size) || !write_all(fd, outputs[i], t->byte_size)) {
            status = error("cannot write %s: %s", finals[i], strerror(errno));
            close(fd);
            break;
        }
        if (close(fd) != 0) {
            status = error("cannot write %s: %s", finals[i], strerror(errno));
            break;
        }
    }
    for (i = 0; i < count && !status; i++) {
        if (rename(temps[i], finals[i]) != 0) status = error("cannot write %s: %s", finals[i], strerror(errno));
        else temps[i][0] = '\0';
    }
    for (i = 0; i < count; i++)
        if (temps[i][0]) unlink(temps[i]);
    free(temps);
    free(finals);
    free(names);
    return status;
}

/* -- timing ----------------------------------------------------------------------- */

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* -- main ------------------------------------------------------------------------- */

typedef struct options {
    const char *model, *entry, *output_dir;
    int threads, repeat, info;
    const char **positional, **named;
    int num_positional, num_named;
} options;

static int parse_args(int argc, char **argv, options *o) {
    int i;
    o->threads = -1;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            exit(0);
        } else if (!strcmp(a, "--info")) {
            o->info = 1;
            takes = 0;
        } else if (!strcmp(a, "-e") || !strcmp(a, "--entry")) {
            o->entry = value;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output-dir")) {
            o->output_dir = value;
        } else if (!strcmp(a, "-i") || !strcmp(a, "--input")) {
            if (value) o->named[o->num_named++] = value;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (value && !parse_int(value, 0, DLC_MAX_THREADS, &o->threads))
                return usage_error("--threads: expected a thread count from 0 (all cores) to 1024, got", value);
        } else if (!strcmp(a, "-r") || !strcmp(a, "--repeat")) {
            if (value && !parse_int(value, 0, 1000000, &o->repeat))
                return usage_error("--repeat: expected a count from 0 to 1000000, got", value);
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error("unknown option", a);
        } else {
            takes = 0;
            if (!o->model) o->model = a;
            else o->positional[o->num_positional++] = a;
        }
        if (takes) {
            if (!value) return usage_error("option needs a value", a);
            i++;
        }
    }
    if (!o->model) return usage_error("no model given", NULL);
    return 0;
}

static int run(const options *o) {
    dlc_error err;
    dlc_model *model = NULL;
    const dlc_entry *entry;
    size_t num_inputs, num_outputs, i;
    npy_array *arrays = NULL;
    void **inputs = NULL, **outputs = NULL;
    double *times = NULL;
    int status = 1;
    if (dlc_model_open(o->model, &model, &err) != DLC_OK) return error("%s", err.message);
    if (o->info) {
        print_info(model);
        dlc_model_close(model);
        return 0;
    }
    if (dlc_model_find_entry(model, o->entry, &entry, &err) != DLC_OK) {
        dlc_model_close(model);
        return error("%s", err.message);
    }
    if (o->threads >= 0 && dlc_model_set_num_threads(model, o->threads, &err) != DLC_OK) {
        dlc_model_close(model);
        return error("--threads: %s", err.message);
    }
    num_inputs = dlc_entry_num_inputs(entry);
    num_outputs = dlc_entry_num_outputs(entry);
    arrays = calloc(num_inputs + 1, sizeof *arrays);
    inputs = calloc(num_inputs + 1, sizeof *inputs);
    outputs = calloc(num_outputs + 1, sizeof *outputs);
    times = calloc((size_t)o->repeat + 1, sizeof *times);
    if (!arrays || !inputs || !outputs || !times) {
        error("out of memory");
        goto done;
    }
    if ((size_t)o->num_positional > num_inputs) {
        error("@%s takes %zu inputs, got %d files", dlc_entry_name(entry), num_inputs, o->num_positional);
        goto done;
    }
    for (i = 0; i < (size_t)o->num_positional; i++)
        if (read_input(o->positional[i], dlc_entry_input(entry, i), &arrays[i])) goto done;
    for (i = 0; i < (size_t)o->num_named; i++) {
        const char *file = NULL;
        long k = named_input(entry, o->named[i], &file);
        if (k < 0) {
            error("-i %s: no input named like that (expected NAME=FILE.npy with NAME one of @%s's inputs)", o->named[i],
                  dlc_entry_name(entry));
            goto done;
        }
        if (arrays[k].data) {
            error("input '%s' is given twice", dlc_entry_input(entry, (size_t)k)->name);
            goto done;
        }
        if (read_input(file, dlc_entry_input(entry, (size_t)k), &arrays[k])) goto done;
    }
    for (i = 0; i < num_inputs; i++) {
        if (!arrays[i].data) {
            error("input '%s' of @%s is missing (give FILE.npy in order or -i %s=FILE.npy)",
                  dlc_entry_input(entry, i)->name, dlc_entry_name(entry), dlc_entry_input(entry, i)->name);
            goto done;
        }
        inputs[i] = arrays[i].data;
    }
    for (i = 0; i < num_outputs; i++) {
        size_t size = dlc_entry_output(entry, i)->byte_size;
        if (posix_memalign(&outputs[i], 64, size ? size : 1) != 0) {
            outputs[i] = NULL;
            error("out of memory for output '%s'", dlc_entry_output(entry, i)->name);
            goto done;
        }
    }
    if (dlc_entry_run(entry, inputs, outputs, &err) != DLC_OK) {
        error("%s", err.message);
        goto done;
    }
    for (i = 0; i < (size_t)o->repeat; i++) {
        double start = now_ms();
        if (dlc_entry_run(entry, inputs, outputs, &err) != DLC_OK) {
            error("%s", err.message);
            goto done;
        }
        times[i] = now_ms() - start;
    }
    for (i = 0; i < num_outputs; i++) summarize(i, dlc_entry_output(entry, i), outputs[i]);
    if (o->repeat) {
        qsort(times, (size_t)o->repeat, sizeof *times, by_value);
        printf("time: median %.3f ms, min %.3f ms (%d runs)\n",
               o->repeat % 2 ? times[o->repeat / 2] : (times[o->repeat / 2 - 1] + times[o->repeat / 2]) / 2,
               times[0], o->repeat);
    }
    if (o->output_dir && write_outputs(o->output_dir, entry, outputs)) goto done;
    status = 0;
done:
    for (i = 0; arrays && i < num_inputs; i++) free(arrays[i].data);
    for (i = 0; outputs && i < num_outputs; i++) free(outputs[i]);
    free(arrays);
    free(inputs);
    free(outputs);
    free(times);
    dlc_model_close(model);
    return status;
}

int main(int argc, char **argv) {
    options o;
    int status;
    memset(&o, 0, sizeof o);
    o.positional = calloc((size_t)argc, sizeof *o.positional);
    o.named = calloc((size_t)argc, sizeof *o.named);
    if (!o.positional || !o.named) return error("out of memory");
    if ((status = parse_args(argc, argv, &o)) != 0) return status;
    /* libgomp's idle wait: a short spin, as the Python runtime chooses (see
     * dlc/runtime/native.py); the user's OMP_WAIT_POLICY / GOMP_SPINCOUNT win */
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) setenv("GOMP_SPINCOUNT", "1000", 0);
    status = run(&o);
    free(o.positional);
    free(o.named);
    return status;
}
