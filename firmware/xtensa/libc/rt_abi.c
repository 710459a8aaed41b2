/* The runtime calls LLVM emits for the esp32 CPU that this bare-metal port
 * must supply, over the portable, host-tested runtime of ../rt
 * (bit-exact against the host's IEEE-754 in firmware/tests/test_softfloat.c):
 * the FPU has no divide or square-root instruction, and de233_fpu has no
 * MULUH/MULSH, so 64-bit multiplies and divides are calls too. */
#include <math.h>
#include <stdint.h>
#include "rt_bits.h"
#include "rvne_rt.h"

/* Declared here because no header does; the prototypes are libgcc's. */
float __divsf3(float a, float b);
uint64_t __muldi3(uint64_t a, uint64_t b);
int64_t __divdi3(int64_t a, int64_t b);
uint64_t __udivdi3(uint64_t a, uint64_t b);
uint64_t __umoddi3(uint64_t a, uint64_t b);
int64_t __moddi3(int64_t a, int64_t b);

float __divsf3(float a, float b) { return bitsf(rvne_rt_divsf3(fbits(a), fbits(b))); }
float sqrtf(float x) { return bitsf(rvne_rt_sqrtsf(fbits(x))); }
uint64_t __muldi3(uint64_t a, uint64_t b) { return rvne_rt_muldi3(a, b); }
int64_t __divdi3(int64_t a, int64_t b) { return rvne_rt_divdi3(a, b); }
uint64_t __udivdi3(uint64_t a, uint64_t b) { return rvne_rt_udivdi3(a, b); }
uint64_t __umoddi3(uint64_t a, uint64_t b) { return rvne_rt_umoddi3(a, b); }
/* C's remainder: a - (a / b) * b, so its sign follows the dividend. */
int64_t __moddi3(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - rvne_rt_muldi3((uint64_t)rvne_rt_divdi3(a, b), (uint64_t)b)); }
