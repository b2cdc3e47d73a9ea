/* What the C runtime's files share (not installed: dlc_runtime.h is the API). */
#ifndef DLC_INTERNAL_H
#define DLC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "dlc_runtime.h"

/* Limits of the metadata reader: far above any real model, low enough that sizes
 * cannot overflow (products are checked too). */
#define DLC_MAX_NDIM 64
#define DLC_MAX_NAME 4096
#define DLC_MAX_TENSORS 65536     /* inputs + outputs of one entry */
#define DLC_MAX_ENTRIES 65536
#define DLC_MAX_JSON_DEPTH 64
#define DLC_MAX_TENSOR_BYTES ((uint64_t)1 << 48) /* the 48-bit address space, as the compiler's limit */

struct dlc_entry {
    dlc_model *model;
    char *name;
    size_t num_inputs;
    size_t num_outputs;
    dlc_tensor_info *tensors; /* inputs, then outputs */
    int32_t (*packed)(void **args);
};

struct dlc_model {
    char *path;
    void *handle;
    size_t num_entries;
    dlc_entry *entries;
    size_t default_index;
    int num_threads;     /* the compile-time default from the metadata, or -1 */
    void (*set_num_threads)(int32_t);
    void (*release_workspaces)(void);
    int64_t (*alloc_failure_bytes)(void);
};

/* Sets *error (if not NULL) to `status` and the formatted message; returns `status`. */
dlc_status dlc_fail(dlc_error *error, dlc_status status, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Parses the metadata `text[0..length)` into model->entries, num_entries,
 * default_index and num_threads; messages are prefixed with `path`. On failure
 * whatever was allocated stays in `model` for dlc_free_entries. */
dlc_status dlc_parse_metadata(const char *text, size_t length, const char *path, dlc_model *model,
                              dlc_error *error);
void dlc_free_entries(dlc_model *model);

/* SHA-256 of data[0..length) into digest. */
void dlc_sha256(const unsigned char *data, size_t length, unsigned char digest[32]);

#endif /* DLC_INTERNAL_H */
