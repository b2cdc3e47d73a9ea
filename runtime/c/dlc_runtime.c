/* The C runtime of dlc: open an exported model, describe its entries, run them.
 * The API and the checks are described in include/dlc_runtime.h; the file format
 * (ELF shared library + 48-byte trailer) in dlc/runtime/library.py, whose checks
 * this file mirrors. The entries are called through the `int32_t <entry>__packed(void
 * **args)` wrapper the exporter emits (dlc/backends/llvm/translate.py), so calling an
 * entry of any arity needs no per-arity code here.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "dlc_internal.h"

#define TRAILER_SIZE 48
#define PACKED_SUFFIX "__packed"
#define ET_DYN 3
#define SHT_DYNSYM 11
#define SHT_NOBITS 8

/* e_machine of the ELF files the machine this runtime was built for runs (0: not
 * checked here; dlopen still refuses a foreign file) */
#if defined(__x86_64__)
#define HOST_MACHINE 62
#define HOST_NAME "x86_64"
#elif defined(__aarch64__)
#define HOST_MACHINE 183
#define HOST_NAME "aarch64"
#elif defined(__riscv) && __riscv_xlen == 64
#define HOST_MACHINE 243
#define HOST_NAME "riscv64"
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
#define HOST_MACHINE 21
#define HOST_NAME "ppc64le"
#else
#define HOST_MACHINE 0
#define HOST_NAME "?"
#endif

dlc_status dlc_fail(dlc_error *error, dlc_status status, const char *format, ...) {
    if (error) {
        char *c;
        va_list args;
        va_start(args, format);
        vsnprintf(error->message, sizeof error->message, format, args);
        va_end(args);
        for (c = error->message; *c; c++)
            if (*c == '\n' || *c == '\r') *c = ' '; /* one line, whatever dlerror says */
        error->status = status;
    }
    return status;
}

static dlc_status ok(dlc_error *error) {
    if (error) {
        error->status = DLC_OK;
        error->message[0] = '\0';
    }
    return DLC_OK;
}

const char *dlc_status_name(dlc_status status) {
    switch (status) {
    case DLC_OK: return "DLC_OK";
    case DLC_ERR_IO: return "DLC_ERR_IO";
    case DLC_ERR_FORMAT: return "DLC_ERR_FORMAT";
    case DLC_ERR_LOAD: return "DLC_ERR_LOAD";
    case DLC_ERR_ARGUMENT: return "DLC_ERR_ARGUMENT";
    case DLC_ERR_OUT_OF_MEMORY: return "DLC_ERR_OUT_OF_MEMORY";
    case DLC_ERR_MODEL: return "DLC_ERR_MODEL";
    }
    return "?";
}

/* -- reading the file ------------------------------------------------------------- */

static dlc_status read_file(const char *path, unsigned char **data, size_t *size, dlc_error *error) {
    struct stat info;
    unsigned char *buffer;
    size_t done = 0;
    int fd = open(path, O_RDONLY);
    *data = NULL;
    if (fd < 0) {
        if (errno == ENOENT) return dlc_fail(error, DLC_ERR_IO, "%s: no such file", path);
        return dlc_fail(error, DLC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    if (fstat(fd, &info) != 0) {
        close(fd);
        return dlc_fail(error, DLC_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    }
    if (!S_ISREG(info.st_mode)) {
        close(fd);
        return dlc_fail(error, DLC_ERR_IO, "%s: not a regular file%s", path,
                        S_ISDIR(info.st_mode) ? " (a directory)" : "");
    }
    if ((uint64_t)info.st_size > (uint64_t)SIZE_MAX - 1) {
        close(fd);
        return dlc_fail(error, DLC_ERR_IO, "%s: too large to read", path);
    }
    if (!(buffer = malloc((size_t)info.st_size + 1))) {
        close(fd);
        return dlc_fail(error, DLC_ERR_OUT_OF_MEMORY, "%s: out of memory reading %lld bytes", path,
                        (long long)info.st_size);
    }
    while (done < (size_t)info.st_size) {
        ssize_t n = read(fd, buffer + done, (size_t)info.st_size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int why = n < 0 ? errno : 0;
            free(buffer);
            close(fd);
            return dlc_fail(error, DLC_ERR_IO, "%s: cannot read: %s", path, why ? strerror(why) : "file shrank");
        }
        done += (size_t)n;
    }
    close(fd);
    *data = buffer;
    *size = done;
    return DLC_OK;
}

/* -- ELF -------------------------------------------------------------------------- */

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* offset + length <= size, without overflow */
static int inside(uint64_t offset, uint64_t length, uint64_t size) {
    return offset <= size && length <= size - offset;
}

static dlc_status truncated(dlc_error *error, const char *path, const char *what, long index, uint64_t offset,
                            uint64_t length, size_t size) {
    char name[64];
    if (index >= 0) snprintf(name, sizeof name, "%s %ld", what, index);
    else snprintf(name, sizeof name, "%s", what);
    return dlc_fail(error, DLC_ERR_FORMAT,
                    "%s: truncated: %s (bytes %llu..%llu) lies beyond the end of the file (%zu bytes)", path, name,
                    (unsigned long long)offset, (unsigned long long)(offset + length), size);
}

/* The ELF header for this machine, every segment and section inside the file. */
static dlc_status check_elf(const unsigned char *d, size_t size, const char *path, dlc_error *error) {
    uint64_t phoff, shoff;
    unsigned phentsize, phnum, shentsize, shnum, type, machine, i;
    if (size < 4 || memcmp(d, "\177ELF", 4) != 0)
        return dlc_fail(error, DLC_ERR_FORMAT, "%s: not an ELF shared library (%s)", path,
                        size < 4 ? "too short" : "bad magic");
    if (size < 64) return dlc_fail(error, DLC_ERR_FORMAT, "%s: not an ELF shared library (only %zu bytes)", path, size);
    if (d[4] != 2 || d[5] != 1)
        return dlc_fail(error, DLC_ERR_FORMAT, "%s: not a 64-bit little-endian ELF file (this runtime loads only those)",
                        path);
    type = rd16(d + 16);
    machine = rd16(d + 18);
    phoff = rd64(d + 32);
    shoff = rd64(d + 40);
    phentsize = rd16(d + 54);
    phnum = rd16(d + 56);
    shentsize = rd16(d + 58);
    shnum = rd16(d + 60);
    if (type != ET_DYN) return dlc_fail(error, DLC_ERR_FORMAT, "%s: not a shared library (ELF type %u)", path, type);
    if (HOST_MACHINE && machine != HOST_MACHINE)
        return dlc_fail(error, DLC_ERR_FORMAT, "%s: built for another machine (ELF machine %u, this runtime is for %s)",
                        path, machine, HOST_NAME);
    if ((phnum && phentsize != 56) || (shnum && shentsize != 64))
        return dlc_fail(error, DLC_ERR_FORMAT, "%s: corrupt ELF header (entry sizes %u/%u, expected 56/64)", path,
                        phentsize, shentsize);
    if (!inside(phoff, (uint64_t)phentsize * phnum, size))
        return truncated(error, path, "program header table", -1, phoff, (uint64_t)phentsize * phnum, size);
    for (i = 0; i < phnum; i++) {
        const unsigned char *ph = d + phoff + (uint64_t)i * 56;
        if (!inside(rd64(ph + 8), rd64(ph + 32), size))
            return truncated(error, path, "segment", (long)i, rd64(ph + 8), rd64(ph + 32), size);
    }
    if (!inside(shoff, (uint64_t)shentsize * shnum, size))
        return truncated(error, path, "section header table", -1, shoff, (uint64_t)shentsize * shnum, size);
    for (i = 0; i < shnum; i++) {
        const unsigned char *sh = d + shoff + (uint64_t)i * 64;
        if (rd32(sh + 4) != SHT_NOBITS && !inside(rd64(sh + 24), rd64(sh + 32), size))
            return truncated(error, path, "section", (long)i, rd64(sh + 24), rd64(sh + 32), size);
    }
    return DLC_OK;
}

/* The bytes of the dynamic symbol `name` (through .dynsym/.dynstr: the symbol's own
 * size bounds the read); NULL when the file has no such symbol. check_elf ran first,
 * so every section lies inside the file. */
static const unsigned char *elf_symbol(const unsigned char *d, size_t size, const char *name, uint64_t *length) {
    uint64_t shoff = rd64(d + 40);
    unsigned shnum = rd16(d + 60), i;
    size_t name_length = strlen(name);
    (void)size;
    for (i = 0; i < shnum; i++) {
        const unsigned char *sh = d + shoff + (uint64_t)i * 64;
        const unsigned char *strtab;
        uint64_t strsize, count, j, link = rd32(sh + 40);
        if (rd32(sh + 4) != SHT_DYNSYM || link >= shnum || rd32(d + shoff + link * 64 + 4) == SHT_NOBITS) continue;
        strtab = d + rd64(d + shoff + link * 64 + 24);
        strsize = rd64(d + shoff + link * 64 + 32);
        count = rd64(sh + 32) / 24;
        for (j = 0; j < count; j++) {
            const unsigned char *sym = d + rd64(sh + 24) + j * 24;
            uint64_t sname = rd32(sym), value = rd64(sym + 8), ssize = rd64(sym + 16);
            unsigned shndx = rd16(sym + 6);
            const unsigned char *target;
            if (sname >= strsize || strsize - sname <= name_length) continue;
            if (memcmp(strtab + sname, name, name_length + 1) != 0) continue;
            if (shndx == 0 || shndx >= shnum) return NULL; /* undefined or special: not data */
            target = d + shoff + (uint64_t)shndx * 64;
            if (rd32(target + 4) == SHT_NOBITS) return NULL;
            /* the symbol's bytes inside its section */
            if (value < rd64(target + 16) || !inside(value - rd64(target + 16), ssize, rd64(target + 32))) return NULL;
            *length = ssize;
            return d + rd64(target + 24) + (value - rd64(target + 16));
        }
    }
    return NULL;
}

static dlc_status check_trailer(const unsigned char *d, size_t size, const char *path, dlc_error *error) {
    unsigned char digest[32];
    uint64_t length;
    if (size < TRAILER_SIZE || memcmp(d + size - TRAILER_SIZE, "DLCSUM01", 8) != 0)
        return dlc_fail(error, DLC_ERR_FORMAT,
                        "%s: no dlc checksum trailer: truncated, or not written by dlc's export "
                        "(re-export it with CompiledModule.export or `dlc compile`)", path);
    length = rd64(d + size - TRAILER_SIZE + 8);
    if (length != size - TRAILER_SIZE)
        return dlc_fail(error, DLC_ERR_FORMAT,
                        "%s: size mismatch: the export wrote %llu bytes of library, the file has %zu "
                        "(truncated or modified)", path, (unsigned long long)length, size - TRAILER_SIZE);
    dlc_sha256(d, size - TRAILER_SIZE, digest);
    if (memcmp(digest, d + size - 32, 32) != 0)
        return dlc_fail(error, DLC_ERR_FORMAT, "%s: checksum mismatch: the file was modified or corrupted after export",
                        path);
    return DLC_OK;
}

/* -- loading ---------------------------------------------------------------------- */

/* Keep the OpenMP runtime a model pulled in loaded after dlc_model_close: its idle worker
 * threads outlive the parallel regions, and dlclose unmapping their code crashed them
 * (SIGSEGV in a worker at exit, about 1 run in 3). RTLD_NOLOAD: only a library already
 * there (a model without OpenMP loads none). The model itself is still unloaded. */
static void pin_openmp_runtime(void) {
#if defined(RTLD_NOLOAD) && defined(RTLD_NODELETE)
    static const char *const names[] = {"libgomp.so.1", "libomp.so", "libomp.so.5", "libiomp5.so"};
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        if (h) dlclose(h); /* drops the reference just taken; NODELETE keeps it mapped */
    }
#endif
}

/* dlopen the verified bytes from a fresh private directory, removed at once. */
static dlc_status load_copy(const unsigned char *d, size_t size, const char *path, void **handle, dlc_error *error) {
    const char *tmp = getenv("TMPDIR");
    char dir[4096], copy[4200];
    size_t done = 0;
    int fd;
    dlc_status s = DLC_OK;
    if (!tmp || !tmp[0]) tmp = "/tmp";
    if ((size_t)snprintf(dir, sizeof dir, "%s/dlc-runtime-XXXXXX", tmp) >= sizeof dir)
        return dlc_fail(error, DLC_ERR_IO, "%s: TMPDIR is too long", path);
    if (!mkdtemp(dir)) return dlc_fail(error, DLC_ERR_IO, "%s: cannot create a directory in %s: %s", path, tmp, strerror(errno));
    snprintf(copy, sizeof copy, "%s/model.so", dir);
    fd = open(copy, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        s = dlc_fail(error, DLC_ERR_IO, "%s: cannot write a private copy in %s: %s", path, dir, strerror(errno));
        rmdir(dir);
        return s;
    }
    while (done < size) {
        ssize_t n = write(fd, d + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            s = dlc_fail(error, DLC_ERR_IO, "%s: cannot write a private copy in %s: %s", path, dir,
                         n < 0 ? strerror(errno) : "no progress");
            break;
        }
        done += (size_t)n;
    }
    if (close(fd) != 0 && s == DLC_OK)
        s = dlc_fail(error, DLC_ERR_IO, "%s: cannot write a private copy in %s: %s", path, dir, strerror(errno));
    if (s == DLC_OK) {
        *handle = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
        if (!*handle) {
            const char *why = dlerror();
            s = dlc_fail(error, DLC_ERR_LOAD, "%s: cannot load: %s", path, why ? why : "dlopen failed");
        } else {
            pin_openmp_runtime();
        }
    }
    unlink(copy); /* the mapping outlives the name */
    rmdir(dir);
    return s;
}

static void *symbol(void *handle, const char *name) {
    dlerror();
    return dlsym(handle, name);
}

static dlc_status bind_symbols(dlc_model *m, dlc_error *error) {
    static const char *const names[3] = {"dlc_set_num_threads", "dlc_release_workspaces", "dlc_alloc_failure_bytes"};
    void *found[3];
    size_t i;
    for (i = 0; i < 3; i++)
        if (!(found[i] = symbol(m->handle, names[i])))
            return dlc_fail(error, DLC_ERR_FORMAT, "%s: not a dlc model (no %s symbol)", m->path, names[i]);
    /* object pointer -> function pointer through memcpy: POSIX guarantees they are
     * the same size, ISO C has no cast for it */
    memcpy(&m->set_num_threads, &found[0], sizeof found[0]);
    memcpy(&m->release_workspaces, &found[1], sizeof found[1]);
    memcpy(&m->alloc_failure_bytes, &found[2], sizeof found[2]);
    for (i = 0; i < m->num_entries; i++) {
        dlc_entry *e = &m->entries[i];
        char name[DLC_MAX_NAME + sizeof PACKED_SUFFIX];
        void *wrapper;
        snprintf(name, sizeof name, "%s%s", e->name, PACKED_SUFFIX);
        if (!(wrapper = symbol(m->handle, name))) {
            if (!symbol(m->handle, e->name))
                return dlc_fail(error, DLC_ERR_FORMAT, "%s: the metadata names @%s, which the library lacks", m->path,
                                e->name);
            return dlc_fail(error, DLC_ERR_FORMAT,
                            "%s: @%s has no packed wrapper %s (exported by an older dlc: re-export the model with "
                            "this dlc)", m->path, e->name, name);
        }
        memcpy(&e->packed, &wrapper, sizeof wrapper);
    }
    return DLC_OK;
}

dlc_status dlc_model_open(const char *path, dlc_model **model, dlc_error *error) {
    unsigned char *data = NULL;
    const unsigned char *metadata, *nul;
    uint64_t metadata_size = 0;
    size_t size = 0;
    dlc_model *m;
    dlc_status s;
    if (!model) return dlc_fail(error, DLC_ERR_ARGUMENT, "dlc_model_open: model is NULL");
    *model = NULL;
    if (!path) return dlc_fail(error, DLC_ERR_ARGUMENT, "dlc_model_open: path is NULL");
    if (!(m = calloc(1, sizeof *m)) || !(m->path = malloc(strlen(path) + 1))) {
        free(m);
        return dlc_fail(error, DLC_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    strcpy(m->path, path);
    if ((s = read_file(path, &data, &size, error)) != DLC_OK) goto fail;
    if ((s = check_elf(data, size, path, error)) != DLC_OK) goto fail;
    if ((s = check_trailer(data, size, path, error)) != DLC_OK) goto fail;
    if (!(metadata = elf_symbol(data, size, "dlc_metadata", &metadata_size))) {
        s = dlc_fail(error, DLC_ERR_FORMAT, "%s: not a dlc model (no dlc_metadata symbol)", path);
        goto fail;
    }
    if (!(nul = memchr(metadata, 0, (size_t)metadata_size))) {
        s = dlc_fail(error, DLC_ERR_FORMAT, "%s: corrupt dlc_metadata (not NUL-terminated)", path);
        goto fail;
    }
    if ((s = dlc_parse_metadata((const char *)metadata, (size_t)(nul - metadata), path, m, error)) != DLC_OK) goto fail;
    if ((s = load_copy(data, size, path, &m->handle, error)) != DLC_OK) goto fail;
    free(data);
    data = NULL;
    if ((s = bind_symbols(m, error)) != DLC_OK) goto fail;
    if (m->num_threads >= 0) m->set_num_threads((int32_t)m->num_threads); /* the compile-time choice */
    *model = m;
    return ok(error);
fail:
    free(data);
    if (m->handle) dlclose(m->handle);
    dlc_free_entries(m);
    free(m->path);
    free(m);
    return s;
}

void dlc_model_close(dlc_model *m) {
    if (!m) return;
    m->release_workspaces();
    dlclose(m->handle);
    dlc_free_entries(m);
    free(m->path);
    free(m);
}

/* -- describing ------------------------------------------------------------------- */

size_t dlc_model_num_entries(const dlc_model *m) { return m ? m->num_entries : 0; }

const dlc_entry *dlc_model_entry(const dlc_model *m, size_t index) {
    return m && index < m->num_entries ? &m->entries[index] : NULL;
}

const dlc_entry *dlc_model_default_entry(const dlc_model *m) { return m ? &m->entries[m->default_index] : NULL; }

dlc_status dlc_model_find_entry(const dlc_model *m, const char *name, const dlc_entry **entry, dlc_error *error) {
    char have[256];
    size_t i, used = 0;
    if (!m || !entry) return dlc_fail(error, DLC_ERR_ARGUMENT, "dlc_model_find_entry: NULL argument");
    *entry = NULL;
    if (!name) {
        *entry = &m->entries[m->default_index];
        return ok(error);
    }
    for (i = 0; i < m->num_entries; i++)
        if (strcmp(m->entries[i].name, name) == 0) {
            *entry = &m->entries[i];
            return ok(error);
        }
    have[0] = '\0';
    for (i = 0; i < m->num_entries && used < sizeof have; i++) {
        int n = snprintf(have + used, sizeof have - used, "%s@%s", i ? ", " : "", m->entries[i].name);
        if (n < 0) break;
        used += (size_t)n;
    }
    return dlc_fail(error, DLC_ERR_ARGUMENT, "%s: no entry point named @%.200s (have %s)", m->path, name, have);
}

dlc_status dlc_model_set_num_threads(dlc_model *m, int n, dlc_error *error) {
    if (!m) return dlc_fail(error, DLC_ERR_ARGUMENT, "dlc_model_set_num_threads: model is NULL");
    if (n < 0 || n > DLC_MAX_THREADS)
        return dlc_fail(error, DLC_ERR_ARGUMENT, "thread count %d is out of range (0 = all cores, or 1 to %d)", n,
                        DLC_MAX_THREADS);
    m->set_num_threads((int32_t)n);
    return ok(error);
}

const char *dlc_entry_name(const dlc_entry *e) { return e ? e->name : NULL; }
size_t dlc_entry_num_inputs(const dlc_entry *e) { return e ? e->num_inputs : 0; }
size_t dlc_entry_num_outputs(const dlc_entry *e) { return e ? e->num_outputs : 0; }

const dlc_tensor_info *dlc_entry_input(const dlc_entry *e, size_t index) {
    return e && index < e->num_inputs ? &e->tensors[index] : NULL;
}

const dlc_tensor_info *dlc_entry_output(const dlc_entry *e, size_t index) {
    return e && index < e->num_outputs ? &e->tensors[e->num_inputs + index] : NULL;
}

/* -- running ---------------------------------------------------------------------- */

static void format_bytes(int64_t n, char *out, size_t size) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = (double)n;
    int unit = -1;
    if (n < 1024) {
        snprintf(out, size, "%lld B", (long long)n);
        return;
    }
    while (value >= 1024 && unit < 5) {
        value /= 1024;
        unit++;
    }
    snprintf(out, size, "%.1f %s", value, units[unit]);
}

static int overlap(const void *a, size_t a_size, const void *b, size_t b_size) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return a_size && b_size && x < y + b_size && y < x + a_size;
}

dlc_status dlc_entry_run(const dlc_entry *e, void *const *inputs, void *const *outputs, dlc_error *error) {
    void *stack[32];
    void **args;
    size_t n, i, j;
    int32_t status;
    if (!e) return dlc_fail(error, DLC_ERR_ARGUMENT, "dlc_entry_run: entry is NULL");
    n = e->num_inputs + e->num_outputs;
    if (e->num_inputs && !inputs) return dlc_fail(error, DLC_ERR_ARGUMENT, "@%s: the inputs array is NULL", e->name);
    if (e->num_outputs && !outputs) return dlc_fail(error, DLC_ERR_ARGUMENT, "@%s: the outputs array is NULL", e->name);
    for (i = 0; i < n; i++) {
        const dlc_tensor_info *t = &e->tensors[i];
        void *buffer = i < e->num_inputs ? inputs[i] : outputs[i - e->num_inputs];
        if (!buffer && t->byte_size)
            return dlc_fail(error, DLC_ERR_ARGUMENT, "@%s: %s buffer '%s' is NULL", e->name,
                            i < e->num_inputs ? "input" : "output", t->name);
        if (i < e->num_inputs) continue;
        for (j = 0; j < i; j++) { /* an output against the inputs and the earlier outputs */
            void *other = j < e->num_inputs ? inputs[j] : outputs[j - e->num_inputs];
            if (overlap(buffer, t->byte_size, other, e->tensors[j].byte_size))
                return dlc_fail(error, DLC_ERR_ARGUMENT,
                                "@%s: output buffer '%s' overlaps %s '%s' (outputs must not alias inputs or each other)",
                                e->name, t->name, j < e->num_inputs ? "input" : "output", e->tensors[j].name);
        }
    }
    args = n <= sizeof stack / sizeof stack[0] ? stack : malloc(sizeof(void *) * n);
    if (!args) return dlc_fail(error, DLC_ERR_OUT_OF_MEMORY, "@%s: out of memory", e->name);
    for (i = 0; i < e->num_inputs; i++) args[i] = inputs[i];
    for (i = 0; i < e->num_outputs; i++) args[e->num_inputs + i] = outputs[i];
    status = e->packed(args);
    if (args != stack) free(args);
    if (status == 0) return ok(error);
    if (status == 1 || status == 2) {
        char amount[48] = "";
        int64_t bytes = e->model->alloc_failure_bytes();
        if (bytes > 0) {
            char size[32];
            format_bytes(bytes, size, sizeof size);
            snprintf(amount, sizeof amount, " of %s", size);
        }
        if (status == 1)
            return dlc_fail(error, DLC_ERR_OUT_OF_MEMORY, "out of memory: workspace%s for @%s could not be allocated",
                            amount, e->name);
        return dlc_fail(error, DLC_ERR_OUT_OF_MEMORY, "out of memory: a buffer%s in @%s could not be allocated", amount,
                        e->name);
    }
    return dlc_fail(error, DLC_ERR_MODEL, "@%s failed with unknown status %d", e->name, (int)status);
}
