/* Reading and writing .npy files (numpy's format, NEP 1) for dlc-run.
 *
 * Read: the magic, versions 1.0 (u16 header length), 2.0 and 3.0 (u32), then the
 * header, a Python dict literal such as
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }
 * parsed strictly: exactly these three keys; descr little-endian ('<') or byte-wide
 * ('|'), of a type a dlc model can name (f2 f4 f8 i1..i8 u1..u8 b1); C order; then
 * exactly the bytes the shape needs. Anything else is a one-line error naming the
 * file: a garbage or truncated file never crashes dlc-run. The narrow types
 * (bfloat16, float8, int4...) have no numpy descr (ml_dtypes saves them as raw 'V'
 * bytes), so they are refused.
 */
#define _POSIX_C_SOURCE 200809L

#include "dlc_npy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_BYTES ((uint64_t)1 << 48)

static const struct {
    const char *descr;
    dlc_dtype dtype;
} DESCRS[] = {
    {"f2", DLC_FLOAT16}, {"f4", DLC_FLOAT32}, {"f8", DLC_FLOAT64}, {"i1", DLC_INT8},    {"i2", DLC_INT16},
    {"i4", DLC_INT32},   {"i8", DLC_INT64},   {"u1", DLC_UINT8},   {"u2", DLC_UINT16},  {"u4", DLC_UINT32},
    {"u8", DLC_UINT64},  {"b1", DLC_BOOL},
};
#define NUM_DESCRS (sizeof DESCRS / sizeof DESCRS[0])

static int fail(char *message, size_t size, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int fail(char *message, size_t size, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(message, size, format, args);
    va_end(args);
    return 1;
}

typedef struct cursor {
    const char *p, *end;
} cursor;

static void space(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int take(cursor *c, char ch) {
    space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* a quoted Python string of at most `size - 1` characters, without escapes */
static int quoted(cursor *c, char *out, size_t size) {
    char q;
    size_t n = 0;
    space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return 0;
    q = *c->p++;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || n + 1 >= size) return 0;
        out[n++] = *c->p++;
    }
    if (c->p >= c->end) return 0;
    c->p++;
    out[n] = '\0';
    return 1;
}

static int word(cursor *c, const char *w) {
    size_t n = strlen(w);
    space(c);
    if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
        c->p += n;
        return 1;
    }
    return 0;
}

static int header(const char *text, size_t length, const char *path, npy_array *a, char *message, size_t size) {
    cursor c;
    int have_descr = 0, have_order = 0, have_shape = 0;
    char key[32], descr[32];
    c.p = text;
    c.end = text + length;
    if (!take(&c, '{')) return fail(message, size, "%s: bad .npy header (expected '{')", path);
    while (!take(&c, '}')) {
        if (!quoted(&c, key, sizeof key) || !take(&c, ':'))
            return fail(message, size, "%s: bad .npy header (expected a quoted key and ':')", path);
        if (!strcmp(key, "descr") && !have_descr) {
            size_t i;
            if (!quoted(&c, descr, sizeof descr)) return fail(message, size, "%s: bad .npy header (descr is not a string)", path);
            if (descr[0] == '>' && strlen(descr) == 3 && descr[2] != '1')
                return fail(message, size, "%s: big-endian data ('%s') is not supported (save it little-endian)", path, descr);
            for (i = 0; i < NUM_DESCRS; i++) {
                const char *d = DESCRS[i].descr;
                int wide = d[1] != '1';
                if (strlen(descr) == 3 && !strcmp(descr + 1, d) &&
                    (descr[0] == '<' || descr[0] == '=' || (!wide && (descr[0] == '|' || descr[0] == '>'))))
                    break;
            }
            if (i == NUM_DESCRS)
                return fail(message, size,
                            "%s: element type '%s' is not supported (dlc-run reads f2/f4/f8, i1-i8, u1-u8 and b1; "
                            "narrow types such as bfloat16 have no numpy descr)", path, descr);
            a->dtype = DESCRS[i].dtype;
            have_descr = 1;
        } else if (!strcmp(key, "fortran_order") && !have_order) {
            if (word(&c, "True"))
                return fail(message, size, "%s: Fortran-order data is not supported (save a C-contiguous array)", path);
            if (!word(&c, "False")) return fail(message, size, "%s: bad .npy header (fortran_order)", path);
            have_order = 1;
        } else if (!strcmp(key, "shape") && !have_shape) {
            if (!take(&c, '(')) return fail(message, size, "%s: bad .npy header (shape is not a tuple)", path);
            a->ndim = 0;
            while (!take(&c, ')')) {
                int64_t dim = 0;
                const char *digits;
                space(&c);
                digits = c.p;
                while (c.p < c.end && *c.p >= '0' && *c.p <= '9') {
                    if (dim > ((int64_t)1 << 50)) return fail(message, size, "%s: a dim of the shape is too large", path);
                    dim = dim * 10 + (*c.p++ - '0');
                }
                if (c.p == digits) return fail(message, size, "%s: bad .npy header (shape holds a non-integer)", path);
                if (a->ndim == NPY_MAX_NDIM) return fail(message, size, "%s: more than %d dims", path, NPY_MAX_NDIM);
                a->shape[a->ndim++] = dim;
                if (!take(&c, ',')) {
                    if (!take(&c, ')')) return fail(message, size, "%s: bad .npy header (shape)", path);
                    break;
                }
            }
            have_shape = 1;
        } else {
            return fail(message, size, "%s: bad .npy header (%s key '%s')", path,
                        !strcmp(key, "descr") || !strcmp(key, "shape") || !strcmp(key, "fortran_order") ? "repeated"
                                                                                                       : "unknown",
                        key);
        }
        if (!take(&c, ',')) {
            if (!take(&c, '}')) return fail(message, size, "%s: bad .npy header (expected ',' or '}')", path);
            break;
        }
    }
    space(&c);
    if (c.p != c.end) return fail(message, size, "%s: bad .npy header (text after the dict)", path);
    if (!have_descr || !have_order || !have_shape)
        return fail(message, size, "%s: bad .npy header (no '%s')", path,
                    !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    return 0;
}

int npy_read(const char *path, npy_array *a, char *message, size_t size) {
    FILE *f;
    struct stat info;
    unsigned char *bytes;
    size_t length, header_length, offset;
    uint64_t count = 1;
    int i, version;
    memset(a, 0, sizeof *a);
    if (stat(path, &info) != 0)
        return fail(message, size, "%s: %s", path, errno == ENOENT ? "no such file" : strerror(errno));
    if (!S_ISREG(info.st_mode)) return fail(message, size, "%s: not a regular file", path);
    if ((uint64_t)info.st_size > MAX_BYTES) return fail(message, size, "%s: too large", path);
    length = (size_t)info.st_size;
    if (!(f = fopen(path, "rb"))) return fail(message, size, "%s: cannot open: %s", path, strerror(errno));
    if (!(bytes = malloc(length + 1))) {
        fclose(f);
        return fail(message, size, "%s: out of memory", path);
    }
    if (fread(bytes, 1, length, f) != length) {
        fclose(f);
        free(bytes);
        return fail(message, size, "%s: cannot read", path);
    }
    fclose(f);
    if (length < 10 || memcmp(bytes, "\223NUMPY", 6) != 0) {
        free(bytes);
        return fail(message, size, "%s: not a .npy file (bad magic)", path);
    }
    version = bytes[6];
    if (version < 1 || version > 3) {
        int minor = bytes[7];
        free(bytes);
        return fail(message, size, "%s: .npy format version %d.%d is not supported (1.0-3.0)", path, version, minor);
    }
    if (version == 1) {
        header_length = (size_t)(bytes[8] | bytes[9] << 8);
        offset = 10;
    } else {
        if (length < 12) {
            free(bytes);
            return fail(message, size, "%s: truncated .npy header", path);
        }
        header_length = (size_t)bytes[8] | (size_t)bytes[9] << 8 | (size_t)bytes[10] << 16 | (size_t)bytes[11] << 24;
        offset = 12;
    }
    if (header_length > length - offset) {
        free(bytes);
        return fail(message, size, "%s: truncated .npy header", path);
    }
    if (header((const char *)bytes + offset, header_length, path, a, message, size)) {
        free(bytes);
        return 1;
    }
    offset += header_length;
    for (i = 0; i < a->ndim; i++) {
        uint64_t dim = (uint64_t)a->shape[i];
        if (dim && count > MAX_BYTES / dim) {
            free(bytes);
            return fail(message, size, "%s: the shape is too large", path);
        }
        count *= dim;
    }
    a->byte_size = (size_t)(count * dlc_dtype_size(a->dtype));
    if (length - offset != a->byte_size) {
        free(bytes);
        return fail(message, size, "%s: %zu bytes of data, the header's %s shape needs %zu%s", path, length - offset,
                    dlc_dtype_name(a->dtype), a->byte_size, length - offset < a->byte_size ? " (truncated)" : "");
    }
    if (posix_memalign(&a->data, 64, a->byte_size ? a->byte_size : 1) != 0) {
        free(bytes);
        a->data = NULL;
        return fail(message, size, "%s: out of memory", path);
    }
    memcpy(a->data, bytes + offset, a->byte_size);
    free(bytes);
    return 0;
}

size_t npy_header(dlc_dtype dtype, int ndim, const int64_t *shape, char *out, size_t out_size) {
    char dict[4096];
    size_t used, total, prefix, i;
    int n;
    const char *descr = NULL;
    for (i = 0; i < NUM_DESCRS; i++)
        if (DESCRS[i].dtype == dtype) descr = DESCRS[i].descr;
    if (!descr) return 0;
    n = snprintf(dict, sizeof dict, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                 descr[1] == '1' ? '|' : '<', descr);
    used = (size_t)n;
    for (i = 0; i < (size_t)ndim; i++) {
        n = snprintf(dict + used, sizeof dict - used, "%lld%s", (long long)shape[i], ndim == 1 ? "," : i + 1 < (size_t)ndim ? ", " : "");
        if (n < 0 || (size_t)n >= sizeof dict - used) return 0;
        used += (size_t)n;
    }
    n = snprintf(dict + used, sizeof dict - used, "), }");
    if (n < 0 || (size_t)n >= sizeof dict - used) return 0;
    used += (size_t)n;
    prefix = used + 1 + 10 <= 65535 ? 10 : 12;       /* 1.0 unless the header needs 2.0 */
    total = (prefix + used + 1 + 63) / 64 * 64;      /* data 64-byte aligned, as numpy writes */
    if (total > out_size) return 0;
    memcpy(out, "\223NUMPY", 6);
    out[6] = prefix == 10 ? 1 : 2;
    out[7] = 0;
    {
        size_t hl = total - prefix;
        out[8] = (char)(hl & 0xff);
        out[9] = (char)((hl >> 8) & 0xff);
        if (prefix == 12) {
            out[10] = (char)((hl >> 16) & 0xff);
            out[11] = (char)((hl >> 24) & 0xff);
        }
    }
    memcpy(out + prefix, dict, used);
    memset(out + prefix + used, ' ', total - prefix - used - 1);
    out[total - 1] = '\n';
    return total;
}
