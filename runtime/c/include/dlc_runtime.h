/* dlc_runtime.h: run a model exported by dlc (`dlc compile`, CompiledModule.export)
 * from C, without Python. C99; the library needs only libc and libdl.
 *
 *     dlc_error err;
 *     dlc_model *model;
 *     if (dlc_model_open("model.so", &model, &err) != DLC_OK) {
 *         fprintf(stderr, "%s\n", err.message);
 *         return 1;
 *     }
 *     const dlc_entry *main_fn = dlc_model_default_entry(model);
 *     const dlc_tensor_info *x = dlc_entry_input(main_fn, 0);   // name, dtype, shape, byte_size
 *     void *inputs[] = {x_data};
 *     void *outputs[] = {y_data};                               // caller-allocated
 *     if (dlc_entry_run(main_fn, inputs, outputs, &err) != DLC_OK) ...
 *     dlc_model_close(model);
 *
 * Errors: every function that can fail returns a dlc_status and, when `error` is not
 * NULL, fills it with the same status and a one-line message naming the file, entry,
 * tensor or value at fault ("model.so: checksum mismatch: ..."). There is no global
 * error state, so the library is safe to use from several threads: distinct models
 * independently, one model's entries concurrently (the generated code gives each
 * concurrent call a workspace of its own). dlc_model_set_num_threads and
 * dlc_model_close must not race with running calls of that model.
 *
 * Buffers are C-contiguous (row-major), of exactly dlc_tensor_info.byte_size bytes,
 * in the element type's little-endian storage layout (bf16 as 2 bytes, the 8/4/2-bit
 * narrow types as one byte per element). Outputs are written by the call and must
 * overlap neither the inputs nor each other (the generated kernels take them as
 * `noalias`): dlc_entry_run refuses overlapping buffers.
 *
 * What dlc_model_open checks before anything of the file is mapped: a regular file;
 * a 64-bit little-endian ELF shared object for this machine, every segment and
 * section inside the file (a truncated file would fault inside dlopen); dlc's
 * 48-byte trailer ("DLCSUM01", payload length, sha256 of the payload); the
 * `dlc_metadata` string (read from the file through its symbol, so its size is
 * bounded) parsed strictly (format "dlc-2"). The verified bytes are then written to
 * a fresh private temporary directory (under $TMPDIR, else /tmp), dlopened from
 * there and removed at once: dlopen never hands back an older library cached under
 * the same path, and the file cannot change between the check and the load.
 */
#ifndef DLC_RUNTIME_H
#define DLC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DLC_RUNTIME_VERSION 1
#define DLC_METADATA_FORMAT "dlc-2"
#define DLC_MAX_THREADS 1024 /* as dlc.runtime.MAX_THREADS */
#define DLC_ERROR_SIZE 512

typedef enum dlc_status {
    DLC_OK = 0,
    DLC_ERR_IO = 1,            /* a file cannot be opened, read or written */
    DLC_ERR_FORMAT = 2,        /* not a dlc model, or a corrupt one (ELF, trailer, metadata) */
    DLC_ERR_LOAD = 3,          /* dlopen or a symbol lookup failed */
    DLC_ERR_ARGUMENT = 4,      /* a bad argument: unknown entry, NULL or overlapping buffer, thread count */
    DLC_ERR_OUT_OF_MEMORY = 5, /* this library's malloc, or the model's workspace/buffer (statuses 1, 2) */
    DLC_ERR_MODEL = 6          /* the model returned a status this runtime does not know */
} dlc_status;

typedef struct dlc_error {
    dlc_status status;
    char message[DLC_ERROR_SIZE]; /* one line, NUL-terminated; "" after success */
} dlc_error;

/* Element types: the names of the metadata (numpy's names). */
typedef enum dlc_dtype {
    DLC_FLOAT16, DLC_FLOAT32, DLC_FLOAT64,
    DLC_INT8, DLC_INT16, DLC_INT32, DLC_INT64,
    DLC_UINT8, DLC_UINT16, DLC_UINT32, DLC_UINT64,
    DLC_BOOL,
    /* storage-only narrow types (ml_dtypes layouts) */
    DLC_BFLOAT16, DLC_FLOAT8_E4M3FN, DLC_FLOAT8_E4M3FNUZ, DLC_FLOAT8_E5M2, DLC_FLOAT8_E5M2FNUZ,
    DLC_FLOAT8_E8M0FNU, DLC_FLOAT4_E2M1FN, DLC_INT4, DLC_UINT4, DLC_INT2, DLC_UINT2,
    DLC_DTYPE_COUNT
} dlc_dtype;

typedef struct dlc_tensor_info {
    const char *name;       /* the model's name of the tensor (may hold any character) */
    dlc_dtype dtype;
    int ndim;               /* 0 for a scalar */
    const int64_t *shape;   /* ndim dims, each >= 0 */
    size_t num_elements;
    size_t byte_size;       /* num_elements * dlc_dtype_size(dtype) */
} dlc_tensor_info;

typedef struct dlc_model dlc_model;
typedef struct dlc_entry dlc_entry;

/* Open, check and load the exported library at `path` (see above); applies the
 * thread count baked in at compile time, if any. On failure *model is NULL. */
dlc_status dlc_model_open(const char *path, dlc_model **model, dlc_error *error);

/* Free the model's cached workspaces (dlc_release_workspaces) and unload it; the
 * entries and tensor infos of the model are invalid afterwards. NULL is a no-op. */
void dlc_model_close(dlc_model *model);

size_t dlc_model_num_entries(const dlc_model *model);
const dlc_entry *dlc_model_entry(const dlc_model *model, size_t index); /* NULL when out of range */
const dlc_entry *dlc_model_default_entry(const dlc_model *model);
/* The entry called `name` (NULL: the default entry); an unknown name is
 * DLC_ERR_ARGUMENT, the message lists the entries. */
dlc_status dlc_model_find_entry(const dlc_model *model, const char *name, const dlc_entry **entry,
                                dlc_error *error);

/* Threads for the model's parallel loops: 0 (libgomp's default: OMP_NUM_THREADS, else
 * all cores) to DLC_MAX_THREADS. */
dlc_status dlc_model_set_num_threads(dlc_model *model, int num_threads, dlc_error *error);

const char *dlc_entry_name(const dlc_entry *entry);
size_t dlc_entry_num_inputs(const dlc_entry *entry);
size_t dlc_entry_num_outputs(const dlc_entry *entry);
const dlc_tensor_info *dlc_entry_input(const dlc_entry *entry, size_t index);  /* NULL when out of range */
const dlc_tensor_info *dlc_entry_output(const dlc_entry *entry, size_t index); /* NULL when out of range */

/* Run `entry` on inputs[0..num_inputs) writing outputs[0..num_outputs) (see above
 * for the buffer rules). A model out of memory is DLC_ERR_OUT_OF_MEMORY with the size
 * asked for in the message. */
dlc_status dlc_entry_run(const dlc_entry *entry, void *const *inputs, void *const *outputs,
                         dlc_error *error);

const char *dlc_status_name(dlc_status status); /* "DLC_ERR_FORMAT" ... */
const char *dlc_dtype_name(dlc_dtype dtype);    /* "float32" ...; "?" when out of range */
size_t dlc_dtype_size(dlc_dtype dtype);         /* storage bytes per element; 0 when out of range */

#ifdef __cplusplus
}
#endif

#endif /* DLC_RUNTIME_H */
