/* The part of <math.h> the core and the unit tests use: expf (expf.c),
 * sqrtf (rt_abi.c, correctly rounded), and what the compiler provides; the
 * S3's GCC build links newlib's libm for both, as the app does
 * (ports/esp32s3-bare/s3.mk). */
#ifndef LX6_MATH_H
#define LX6_MATH_H
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define HUGE_VALF __builtin_huge_valf()
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf(x)
#define isfinite(x) __builtin_isfinite(x)
#define signbit(x) __builtin_signbit(x)
float expf(float x);
float sqrtf(float x);
static inline float fabsf(float x) { return __builtin_fabsf(x); }
static inline double fabs(double x) { return __builtin_fabs(x); }
#endif
