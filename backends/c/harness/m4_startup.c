/* Cortex-M4 startup for qemu-system-arm -M mps2-an386: the vector table (initial stack
 * pointer, reset handler), .data copied from flash, .bss zeroed, the FPU enabled (the
 * model is built with -mfloat-abi=hard), then main(); its status ends qemu through
 * semihosting. No C library is needed. */
#include <stdint.h>

extern uint32_t _data_start[], _data_end[], _data_load[], _bss_start[], _bss_end[], _stack_top[];
int main(void);
void dlc_semihost_exit(int status);
void dlc_reset(void);

static void dlc_fault(void) { dlc_semihost_exit(99); }

__attribute__((section(".vectors"), used)) static void *const vectors[16] = {
    _stack_top, (void *)dlc_reset, (void *)dlc_fault, (void *)dlc_fault, (void *)dlc_fault,
    (void *)dlc_fault, (void *)dlc_fault, 0, 0, 0, 0, (void *)dlc_fault, (void *)dlc_fault, 0,
    (void *)dlc_fault, (void *)dlc_fault,
};

void dlc_reset(void) {
  volatile uint32_t *cpacr = (volatile uint32_t *)0xE000ED88u;
  *cpacr |= 0xFu << 20; /* CP10, CP11: full access to the FPU */
  __asm volatile("dsb\n\tisb" ::: "memory");
  for (uint32_t *src = _data_load, *dst = _data_start; dst < _data_end;) *dst++ = *src++;
  for (uint32_t *dst = _bss_start; dst < _bss_end;) *dst++ = 0;
  dlc_semihost_exit(main());
}

/* ARM semihosting (bkpt 0xab on M-profile): r0 the operation, r1 its argument. */
static int semihost(int op, const void *arg) {
  register int r0 __asm__("r0") = op;
  register const void *r1 __asm__("r1") = arg;
  __asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

void dlc_semihost_write(const char *text) { semihost(0x04, text); /* SYS_WRITE0 */ }

void dlc_semihost_exit(int status) {
  /* SYS_EXIT: ApplicationExit (qemu exits 0) or RunTimeError (qemu exits 1) */
  semihost(0x18, (const void *)(status == 0 ? 0x20026u : 0x20023u));
  for (;;) {
  }
}
