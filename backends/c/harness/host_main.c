/* Host harness of a dlc C archive (model name "model"): runs dlc_model_run on inputs read
 * from raw files and writes the outputs as raw files (C order, the header's dtypes).
 *
 *   cc -std=c99 -I include src/model.c src/weights.c host_main.c -lm -o run
 *   ./run in0.bin ... out0.bin ...
 *
 * Exit status: 0, 1 (usage or I/O), 2 + the model's status when it refuses to run. The
 * workspace is filled with 0xFF bytes (NaN as floats) first: the model must write what
 * it reads. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlc_model.h"

static const size_t input_bytes[] = DLC_MODEL_INPUT_BYTES_LIST;
static const size_t output_bytes[] = DLC_MODEL_OUTPUT_BYTES_LIST;

static void *read_file(const char *path, size_t expected) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) { fprintf(stderr, "harness: cannot open %s\n", path); return NULL; }
  void *data = malloc(expected ? expected : 1);
  size_t got = fread(data, 1, expected, f);
  int extra = fgetc(f);
  fclose(f);
  if (got != expected || extra != EOF) {
    fprintf(stderr, "harness: %s: expected %zu bytes\n", path, expected);
    free(data);
    return NULL;
  }
  return data;
}

int main(int argc, char **argv) {
  const int n_in = DLC_MODEL_NUM_INPUTS, n_out = DLC_MODEL_NUM_OUTPUTS;
  if (argc != 1 + n_in + n_out) {
    fprintf(stderr, "usage: %s <%d input files> <%d output files>\n", argv[0], n_in, n_out);
    return 1;
  }
  void *inputs[DLC_MODEL_NUM_INPUTS + 1];
  void *outputs[DLC_MODEL_NUM_OUTPUTS + 1];
  for (int i = 0; i < n_in; i++) {
    inputs[i] = read_file(argv[1 + i], input_bytes[i]);
    if (inputs[i] == NULL) return 1;
  }
  for (int i = 0; i < n_out; i++) outputs[i] = calloc(output_bytes[i] ? output_bytes[i] : 1, 1);
  size_t align = DLC_MODEL_WORKSPACE_ALIGN;
  unsigned char *block = malloc(DLC_MODEL_WORKSPACE_BYTES + align);
  memset(block, 0xFF, DLC_MODEL_WORKSPACE_BYTES + align);
  void *workspace = block + (align - (uintptr_t)block % align) % align;
  int status = dlc_model_run_array((const void *const *)inputs, outputs, workspace);
  if (status != DLC_STATUS_OK) {
    fprintf(stderr, "harness: dlc_model_run returned %d\n", status);
    return 2 + status;
  }
  for (int i = 0; i < n_out; i++) {
    FILE *f = fopen(argv[1 + n_in + i], "wb");
    if (f == NULL || fwrite(outputs[i], 1, output_bytes[i], f) != output_bytes[i]) {
      fprintf(stderr, "harness: cannot write %s\n", argv[1 + n_in + i]);
      return 1;
    }
    fclose(f);
  }
  return 0;
}
