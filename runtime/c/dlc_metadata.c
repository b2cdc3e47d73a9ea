/* The `dlc_metadata` string of an exported model, read strictly.
 *
 * The format is what dlc.runtime.native.metadata_json writes (json.dumps, so ASCII
 * with \uXXXX escapes):
 *
 *   {"format": "dlc-2", "default_entry": "main", "num_threads": 4,      (num_threads optional)
 *    "entries": {"main": {"inputs":  [{"name": "x", "shape": [1, 3], "dtype": "float32"}],
 *                         "outputs": [{"name": "y", "shape": [1, 3], "dtype": "float32"}]}}}
 *
 * Why a reader of our own: libc has no JSON parser and the device may have nothing
 * else; this grammar is small. Everything the runtime uses is checked: each known
 * key once, of its type; an entry or tensor spec with an unknown key, a non-integer or
 * negative dim, an unknown dtype, a size past 2**48 bytes, a name with a NUL, bad
 * escapes or surrogates, nesting past DLC_MAX_JSON_DEPTH, or trailing text is an
 * error naming what is wrong. Unknown keys of the top-level object only are parsed
 * (syntax checked) and skipped, so a later dlc may add a top-level field (a target
 * description, say) without breaking this runtime. Every read is bounded by
 * `length`, every allocation checked: a hostile string gives an error, never an
 * overflow.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlc_internal.h"

typedef struct reader {
    const char *p;
    const char *end;
    const char *start;
    const char *path;
    dlc_error *error;
} reader;

static dlc_status bad(reader *r, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static dlc_status bad(reader *r, const char *format, ...) {
    char what[256];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof what, format, args);
    va_end(args);
    return dlc_fail(r->error, DLC_ERR_FORMAT, "%s: corrupt dlc_metadata at byte %ld: %s", r->path,
                    (long)(r->p - r->start), what);
}

static void skip_space(reader *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

/* After whitespace, the next character is `c` (consumed). */
static int accept(reader *r, char c) {
    skip_space(r);
    if (r->p < r->end && *r->p == c) {
        r->p++;
        return 1;
    }
    return 0;
}

static dlc_status expect(reader *r, char c) {
    if (accept(r, c)) return DLC_OK;
    if (r->p >= r->end) return bad(r, "expected '%c', found the end", c);
    return bad(r, "expected '%c', found '%c'", c, *r->p);
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_hex4(reader *r, unsigned *out) {
    unsigned value = 0;
    int i;
    if (r->end - r->p < 4) return 0;
    for (i = 0; i < 4; i++) {
        int d = hex_digit(r->p[i]);
        if (d < 0) return 0;
        value = value * 16 + (unsigned)d;
    }
    r->p += 4;
    *out = value;
    return 1;
}

/* A JSON string into a fresh NUL-terminated UTF-8 buffer (*out, NULL when `out` is
 * NULL: only checked). Names hold no NUL (they are C strings). */
static dlc_status read_string(reader *r, char **out) {
    size_t capacity = 16, size = 0;
    char *buffer = NULL;
    if (out) *out = NULL;
    skip_space(r);
    if (r->p >= r->end || *r->p != '"') return bad(r, "expected a string");
    r->p++;
    if (out && !(buffer = malloc(capacity))) return dlc_fail(r->error, DLC_ERR_OUT_OF_MEMORY, "out of memory");
    for (;;) {
        unsigned char bytes[4];
        size_t n = 0;
        unsigned c;
        if (r->p >= r->end) {
            free(buffer);
            return bad(r, "unterminated string");
        }
        c = (unsigned char)*r->p++;
        if (c == '"') break;
        if (c < 0x20) {
            free(buffer);
            return bad(r, "control character 0x%02x in a string", c);
        }
        if (c != '\\') {
            bytes[n++] = (unsigned char)c;
        } else {
            char e;
            if (r->p >= r->end) {
                free(buffer);
                return bad(r, "unterminated string");
            }
            e = *r->p++;
            switch (e) {
            case '"': case '\\': case '/': bytes[n++] = (unsigned char)e; break;
            case 'b': bytes[n++] = '\b'; break;
            case 'f': bytes[n++] = '\f'; break;
            case 'n': bytes[n++] = '\n'; break;
            case 'r': bytes[n++] = '\r'; break;
            case 't': bytes[n++] = '\t'; break;
            case 'u': {
                unsigned code;
                if (!read_hex4(r, &code)) {
                    free(buffer);
                    return bad(r, "bad \\u escape");
                }
                if (code >= 0xD800 && code <= 0xDBFF) { /* a surrogate pair */
                    unsigned low;
                    if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u') {
                        free(buffer);
                        return bad(r, "unpaired surrogate in a \\u escape");
                    }
                    r->p += 2;
                    if (!read_hex4(r, &low) || low < 0xDC00 || low > 0xDFFF) {
                        free(buffer);
                        return bad(r, "unpaired surrogate in a \\u escape");
                    }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                } else if (code >= 0xDC00 && code <= 0xDFFF) {
                    free(buffer);
                    return bad(r, "unpaired surrogate in a \\u escape");
                }
                if (code == 0) {
                    free(buffer);
                    return bad(r, "NUL character in a string");
                }
                if (code < 0x80) {
                    bytes[n++] = (unsigned char)code;
                } else if (code < 0x800) {
                    bytes[n++] = (unsigned char)(0xC0 | (code >> 6));
                    bytes[n++] = (unsigned char)(0x80 | (code & 0x3F));
                } else if (code < 0x10000) {
                    bytes[n++] = (unsigned char)(0xE0 | (code >> 12));
                    bytes[n++] = (unsigned char)(0x80 | ((code >> 6) & 0x3F));
                    bytes[n++] = (unsigned char)(0x80 | (code & 0x3F));
                } else {
                    bytes[n++] = (unsigned char)(0xF0 | (code >> 18));
                    bytes[n++] = (unsigned char)(0x80 | ((code >> 12) & 0x3F));
                    bytes[n++] = (unsigned char)(0x80 | ((code >> 6) & 0x3F));
                    bytes[n++] = (unsigned char)(0x80 | (code & 0x3F));
                }
                break;
            }
            default:
                free(buffer);
                return bad(r, "bad escape '\\%c' in a string", e);
            }
        }
        if (!out) continue;
        if (size + n + 1 > DLC_MAX_NAME) {
            free(buffer);
            return bad(r, "string longer than %d bytes", DLC_MAX_NAME);
        }
        if (size + n + 1 > capacity) {
            char *bigger;
            capacity *= 2;
            if (!(bigger = realloc(buffer, capacity))) {
                free(buffer);
                return dlc_fail(r->error, DLC_ERR_OUT_OF_MEMORY, "out of memory");
            }
            buffer = bigger;
        }
        memcpy(buffer + size, bytes, n);
        size += n;
    }
    if (out) {
        buffer[size] = '\0';
        *out = buffer;
    }
    return DLC_OK;
}

/* A JSON integer (no fraction or exponent) in [0, 2**62]. */
static dlc_status read_count(reader *r, const char *what, int64_t *out) {
    int64_t value = 0;
    const char *digits;
    skip_space(r);
    if (r->p < r->end && *r->p == '-') return bad(r, "%s is negative", what);
    digits = r->p;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
        if (value > ((int64_t)1 << 62) / 10) return bad(r, "%s is too large", what);
        value = value * 10 + (*r->p - '0');
        r->p++;
    }
    if (r->p == digits) return bad(r, "%s: expected an integer", what);
    if (*digits == '0' && r->p - digits > 1) return bad(r, "%s: leading zero", what);
    if (r->p < r->end && (*r->p == '.' || *r->p == 'e' || *r->p == 'E'))
        return bad(r, "%s: expected an integer, found a fraction or exponent", what);
    *out = value;
    return DLC_OK;
}

static int accept_word(reader *r, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) >= n && memcmp(r->p, word, n) == 0) {
        r->p += n;
        return 1;
    }
    return 0;
}

/* Any JSON value, checked and skipped (unknown top-level keys). */
static dlc_status skip_value(reader *r, int depth) {
    dlc_status s;
    if (depth > DLC_MAX_JSON_DEPTH) return bad(r, "nested deeper than %d levels", DLC_MAX_JSON_DEPTH);
    skip_space(r);
    if (r->p >= r->end) return bad(r, "expected a value, found the end");
    if (*r->p == '"') return read_string(r, NULL);
    if (*r->p == '{' || *r->p == '[') {
        char close = *r->p == '{' ? '}' : ']';
        int object = *r->p == '{';
        r->p++;
        if (accept(r, close)) return DLC_OK;
        do {
            if (object) {
                if ((s = read_string(r, NULL)) != DLC_OK) return s;
                if ((s = expect(r, ':')) != DLC_OK) return s;
            }
            if ((s = skip_value(r, depth + 1)) != DLC_OK) return s;
        } while (accept(r, ','));
        return expect(r, close);
    }
    if (accept_word(r, "true") || accept_word(r, "false") || accept_word(r, "null")) return DLC_OK;
    /* a number: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)? */
    {
        const char *digits;
        if (r->p < r->end && *r->p == '-') r->p++;
        digits = r->p;
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
        if (r->p == digits || (*digits == '0' && r->p - digits > 1)) return bad(r, "expected a value");
        if (r->p < r->end && *r->p == '.') {
            r->p++;
            digits = r->p;
            while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
            if (r->p == digits) return bad(r, "bad number");
        }
        if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
            r->p++;
            if (r->p < r->end && (*r->p == '+' || *r->p == '-')) r->p++;
            digits = r->p;
            while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
            if (r->p == digits) return bad(r, "bad number");
        }
    }
    return DLC_OK;
}

static const char *const DTYPE_NAMES[DLC_DTYPE_COUNT] = {
    "float16", "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "bool",
    "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
    "float8_e8m0fnu", "float4_e2m1fn", "int4", "uint4", "int2", "uint2",
};
static const unsigned char DTYPE_SIZES[DLC_DTYPE_COUNT] = {
    2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

const char *dlc_dtype_name(dlc_dtype dtype) {
    return (unsigned)dtype < DLC_DTYPE_COUNT ? DTYPE_NAMES[dtype] : "?";
}

size_t dlc_dtype_size(dlc_dtype dtype) {
    return (unsigned)dtype < DLC_DTYPE_COUNT ? DTYPE_SIZES[dtype] : 0;
}

/* {"name": ..., "shape": [...], "dtype": ...}, each key exactly once. */
static dlc_status read_tensor(reader *r, const char *entry, dlc_tensor_info *t) {
    int have_name = 0, have_shape = 0, have_dtype = 0;
    dlc_status s;
    char *key = NULL;
    if ((s = expect(r, '{')) != DLC_OK) return s;
    do {
        if ((s = read_string(r, &key)) != DLC_OK) return s;
        if ((s = expect(r, ':')) != DLC_OK) goto done;
        if (strcmp(key, "name") == 0 && !have_name) {
            char *name;
            if ((s = read_string(r, &name)) != DLC_OK) goto done;
            t->name = name;
            have_name = 1;
        } else if (strcmp(key, "dtype") == 0 && !have_dtype) {
            char *dtype;
            int i;
            if ((s = read_string(r, &dtype)) != DLC_OK) goto done;
            for (i = 0; i < DLC_DTYPE_COUNT && strcmp(dtype, DTYPE_NAMES[i]) != 0; i++) {}
            if (i == DLC_DTYPE_COUNT) {
                s = bad(r, "@%s: unknown dtype '%.64s'", entry, dtype);
                free(dtype);
                goto done;
            }
            free(dtype);
            t->dtype = (dlc_dtype)i;
            have_dtype = 1;
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            int64_t dims[DLC_MAX_NDIM];
            int ndim = 0;
            int64_t *shape;
            if ((s = expect(r, '[')) != DLC_OK) goto done;
            if (!accept(r, ']')) {
                do {
                    if (ndim == DLC_MAX_NDIM) {
                        s = bad(r, "@%s: more than %d dims", entry, DLC_MAX_NDIM);
                        goto done;
                    }
                    if ((s = read_count(r, "a dim", &dims[ndim])) != DLC_OK) goto done;
                    ndim++;
                } while (accept(r, ','));
                if ((s = expect(r, ']')) != DLC_OK) goto done;
            }
            if (!(shape = malloc(sizeof(int64_t) * (size_t)(ndim ? ndim : 1)))) {
                s = dlc_fail(r->error, DLC_ERR_OUT_OF_MEMORY, "out of memory");
                goto done;
            }
            memcpy(shape, dims, sizeof(int64_t) * (size_t)ndim);
            t->shape = shape;
            t->ndim = ndim;
            have_shape = 1;
        } else {
            s = bad(r, "@%s: %s key '%.64s' in a tensor spec",
                    entry, (have_name && !strcmp(key, "name")) || (have_shape && !strcmp(key, "shape")) ||
                    (have_dtype && !strcmp(key, "dtype")) ? "repeated" : "unknown", key);
            goto done;
        }
        free(key);
        key = NULL;
    } while (accept(r, ','));
    if ((s = expect(r, '}')) != DLC_OK) return s;
    if (!have_name || !have_shape || !have_dtype)
        return bad(r, "@%s: a tensor spec lacks '%s'", entry, !have_name ? "name" : !have_shape ? "shape" : "dtype");
    {
        uint64_t count = 1;
        int i;
        for (i = 0; i < t->ndim; i++) {
            uint64_t dim = (uint64_t)t->shape[i];
            if (dim && count > DLC_MAX_TENSOR_BYTES / dim) return bad(r, "@%s: tensor '%.64s' is too large", entry, t->name);
            count *= dim;
        }
        if (count * DTYPE_SIZES[t->dtype] > DLC_MAX_TENSOR_BYTES)
            return bad(r, "@%s: tensor '%.64s' is too large", entry, t->name);
        t->num_elements = (size_t)count;
        t->byte_size = (size_t)(count * DTYPE_SIZES[t->dtype]);
    }
    return DLC_OK;
done:
    free(key);
    return s;
}

/* [spec, ...] appended to entry->tensors (its count in *count). */
static dlc_status read_tensors(reader *r, dlc_entry *e, size_t *count) {
    dlc_status s;
    if ((s = expect(r, '[')) != DLC_OK) return s;
    if (accept(r, ']')) return DLC_OK;
    do {
        size_t total = e->num_inputs + e->num_outputs;
        dlc_tensor_info *bigger;
        if (total >= DLC_MAX_TENSORS) return bad(r, "@%s: more than %d tensors", e->name, DLC_MAX_TENSORS);
        if (!(bigger = realloc(e->tensors, sizeof(dlc_tensor_info) * (total + 1))))
            return dlc_fail(r->error, DLC_ERR_OUT_OF_MEMORY, "out of memory");
        e->tensors = bigger;
        memset(&e->tensors[total], 0, sizeof(dlc_tensor_info));
        (*count)++;
        if ((s = read_tensor(r, e->name, &e->tensors[total])) != DLC_OK) return s;
    } while (accept(r, ','));
    return expect(r, ']');
}

/* {"inputs": [...], "outputs": [...]}: inputs first (the call's argument order). */
static dlc_status read_entry(reader *r, dlc_entry *e) {
    int have_inputs = 0, have_outputs = 0;
    dlc_status s;
    if ((s = expect(r, '{')) != DLC_OK) return s;
    do {
        char *key;
        if ((s = read_string(r, &key)) != DLC_OK) return s;
        if ((s = expect(r, ':')) != DLC_OK) {
            free(key);
            return s;
        }
        if (strcmp(key, "inputs") == 0 && !have_inputs && !have_outputs) {
            have_inputs = 1;
            s = read_tensors(r, e, &e->num_inputs);
        } else if (strcmp(key, "outputs") == 0 && have_inputs && !have_outputs) {
            have_outputs = 1;
            s = read_tensors(r, e, &e->num_outputs);
        } else {
            s = bad(r, "@%s: unexpected key '%.64s' (an entry holds \"inputs\" then \"outputs\")", e->name, key);
        }
        free(key);
        if (s != DLC_OK) return s;
    } while (accept(r, ','));
    if ((s = expect(r, '}')) != DLC_OK) return s;
    if (!have_outputs) return bad(r, "@%s lacks \"%s\"", e->name, have_inputs ? "outputs" : "inputs");
    return DLC_OK;
}

static dlc_status read_entries(reader *r, dlc_model *m) {
    dlc_status s;
    if ((s = expect(r, '{')) != DLC_OK) return s;
    if (accept(r, '}')) return bad(r, "no entries");
    do {
        dlc_entry *bigger;
        dlc_entry *e;
        size_t i;
        if (m->num_entries >= DLC_MAX_ENTRIES) return bad(r, "more than %d entries", DLC_MAX_ENTRIES);
        if (!(bigger = realloc(m->entries, sizeof(dlc_entry) * (m->num_entries + 1))))
            return dlc_fail(r->error, DLC_ERR_OUT_OF_MEMORY, "out of memory");
        m->entries = bigger;
        e = &m->entries[m->num_entries++];
        memset(e, 0, sizeof *e);
        e->model = m;
        if ((s = read_string(r, &e->name)) != DLC_OK) return s;
        if (!e->name[0]) return bad(r, "an entry with an empty name");
        for (i = 0; i + 1 < m->num_entries; i++)
            if (strcmp(m->entries[i].name, e->name) == 0) return bad(r, "entry @%.64s named twice", e->name);
        if ((s = expect(r, ':')) != DLC_OK) return s;
        if ((s = read_entry(r, e)) != DLC_OK) return s;
    } while (accept(r, ','));
    return expect(r, '}');
}

dlc_status dlc_parse_metadata(const char *text, size_t length, const char *path, dlc_model *m,
                              dlc_error *error) {
    reader r;
    dlc_status s;
    char *format = NULL, *default_entry = NULL;
    int have_entries = 0, have_threads = 0;
    size_t i;
    r.p = r.start = text;
    r.end = text + length;
    r.path = path;
    r.error = error;
    m->num_threads = -1;
    if ((s = expect(&r, '{')) != DLC_OK) return s;
    do {
        char *key;
        if ((s = read_string(&r, &key)) != DLC_OK) goto done;
        if ((s = expect(&r, ':')) != DLC_OK) {
            free(key);
            goto done;
        }
        if (strcmp(key, "format") == 0 && !format) {
            s = read_string(&r, &format);
        } else if (strcmp(key, "default_entry") == 0 && !default_entry) {
            s = read_string(&r, &default_entry);
        } else if (strcmp(key, "entries") == 0 && !have_entries) {
            have_entries = 1;
            s = read_entries(&r, m);
        } else if (strcmp(key, "num_threads") == 0 && !have_threads) {
            int64_t n;
            have_threads = 1;
            if ((s = read_count(&r, "num_threads", &n)) == DLC_OK) {
                if (n > DLC_MAX_THREADS) s = bad(&r, "num_threads %lld is above %d", (long long)n, DLC_MAX_THREADS);
                m->num_threads = (int)n;
            }
        } else if (!strcmp(key, "format") || !strcmp(key, "default_entry") || !strcmp(key, "entries") ||
                   !strcmp(key, "num_threads")) {
            s = bad(&r, "key '%s' repeated", key);
        } else {
            s = skip_value(&r, 1); /* a field of a later dlc (see the top of this file) */
        }
        free(key);
        if (s != DLC_OK) goto done;
    } while (accept(&r, ','));
    if ((s = expect(&r, '}')) != DLC_OK) goto done;
    skip_space(&r);
    if (r.p != r.end) {
        s = bad(&r, "text after the metadata object");
        goto done;
    }
    if (!format || !default_entry || !have_entries) {
        s = bad(&r, "no \"%s\" key", !format ? "format" : !default_entry ? "default_entry" : "entries");
        goto done;
    }
    if (strcmp(format, DLC_METADATA_FORMAT) != 0) {
        s = dlc_fail(error, DLC_ERR_FORMAT, "%s: metadata format '%.64s', this runtime reads '%s' (re-export the model)",
                     path, format, DLC_METADATA_FORMAT);
        goto done;
    }
    for (i = 0; i < m->num_entries && strcmp(m->entries[i].name, default_entry) != 0; i++) {}
    if (i == m->num_entries) {
        s = bad(&r, "the default entry @%.64s is not among the entries", default_entry);
        goto done;
    }
    m->default_index = i;
done:
    free(format);
    free(default_entry);
    return s;
}

void dlc_free_entries(dlc_model *m) {
    size_t i, j;
    for (i = 0; i < m->num_entries; i++) {
        dlc_entry *e = &m->entries[i];
        for (j = 0; j < e->num_inputs + e->num_outputs; j++) {
            free((char *)e->tensors[j].name);
            free((int64_t *)e->tensors[j].shape);
        }
        free(e->tensors);
        free(e->name);
    }
    free(m->entries);
    m->entries = NULL;
    m->num_entries = 0;
}
