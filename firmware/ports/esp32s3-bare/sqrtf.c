/* sqrtf for the GCC build of this harness, which links the float division
 * and square root the ESP-IDF app links: libgcc's (in the app, the S3 ROM's
 * copy of the same code), the FPU's sqrt0.s/divn.s sequences, not the lx6
 * port's soft-float runtime (ports/lx6/libc/rt_abi.c, kept for the LLVM
 * build). The app's sqrtf is newlib's wrapper over the same
 * __ieee754_sqrtf; the errno it sets for a negative argument is nothing the
 * core reads. */
#include <math.h>

float __ieee754_sqrtf(float x);

float sqrtf(float x) { return __ieee754_sqrtf(x); }
