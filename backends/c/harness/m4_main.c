/* Runs a dlc C archive (model name "model") once on fixed inputs (dlc_test_io.c, made by
 * dlc.backends.c.cortex_m: the inputs as const arrays, the output buffers) and prints, through semihosting, the status, the outputs as
 * hex bit patterns (exact) and the stack bytes the run used (the stack is painted first). */
#include <stdint.h>

#include "dlc_model.h"

extern const void *const dlc_test_inputs[];
extern void *const dlc_test_outputs[];
void dlc_semihost_write(const char *text);
extern uint32_t _stack_bottom[];

static uint8_t arena[DLC_MODEL_WORKSPACE_BYTES + 1] __attribute__((aligned(DLC_MODEL_WORKSPACE_ALIGN)));
static const uint32_t output_bytes[] = DLC_MODEL_OUTPUT_BYTES_LIST;
#define STACK_PAINT 0xA5A5A5A5u

static void put_hex(uint32_t value, char *out) {
  for (int i = 7; i >= 0; i--, value >>= 4) out[i] = "0123456789abcdef"[value & 15u];
}

static void print_number(const char *label, uint32_t value) {
  char text[32];
  int n = 0;
  while (label[n]) { text[n] = label[n]; n++; }
  char digits[11];
  int d = 0;
  do { digits[d++] = (char)('0' + value % 10u); value /= 10u; } while (value);
  while (d) text[n++] = digits[--d];
  text[n++] = '\n';
  text[n] = 0;
  dlc_semihost_write(text);
}

int main(void) {
  uint32_t sp;
  __asm volatile("mov %0, sp" : "=r"(sp));
  for (uint32_t *p = _stack_bottom; (uint32_t)p < sp - 64u; p++) *p = STACK_PAINT;
  int status = dlc_model_run_array(dlc_test_inputs, dlc_test_outputs, arena);
  uint32_t *low = _stack_bottom;
  while (*low == STACK_PAINT) low++;
  print_number("status ", (uint32_t)status);
  print_number("stack-bytes ", sp - (uint32_t)low);
  for (int i = 0; i < DLC_MODEL_NUM_OUTPUTS; i++) {
    print_number("output ", (uint32_t)i);
    const uint32_t *words = (const uint32_t *)dlc_test_outputs[i];
    char line[9 * 8 + 2];
    uint32_t count = (output_bytes[i] + 3u) / 4u, k = 0;
    while (k < count) {
      int n = 0;
      for (int j = 0; j < 8 && k < count; j++, k++) {
        put_hex(words[k], line + n);
        n += 8;
        line[n++] = ' ';
      }
      line[n - 1] = '\n';
      line[n] = 0;
      dlc_semihost_write(line);
    }
  }
  return status;
}
