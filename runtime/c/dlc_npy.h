/* .npy files for dlc-run (not part of the runtime library's API). */
#ifndef DLC_NPY_H
#define DLC_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "dlc_runtime.h"

#define NPY_MAX_NDIM 64

typedef struct npy_array {
    dlc_dtype dtype;
    int ndim;
    int64_t shape[NPY_MAX_NDIM];
    size_t byte_size;
    void *data; /* 64-byte aligned, at least 1 byte; free() it */
} npy_array;

/* Reads `path` (format versions 1-3, little-endian or single-byte descr, C order).
 * On failure returns non-zero with a one-line message (naming the file) in `message`. */
int npy_read(const char *path, npy_array *array, char *message, size_t message_size);

/* The .npy bytes of a C-contiguous array: the header (format 1.0, or 2.0 when it is
 * longer than 65535 bytes) into `header` (at most `header_size` bytes); returns the
 * header's length, 0 when the dtype has no numpy descr (the narrow types) or it does
 * not fit. */
size_t npy_header(dlc_dtype dtype, int ndim, const int64_t *shape, char *header, size_t header_size);

#endif /* DLC_NPY_H */
