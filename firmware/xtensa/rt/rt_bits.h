/* Floats and doubles as bit patterns and back, through memcpy (never a
 * float operation, which on a soft-float core would call back into the
 * runtime). For the files that put libgcc's names over the runtime. */
#ifndef RVNE_RT_BITS_H
#define RVNE_RT_BITS_H
#include <stdint.h>
#include <string.h>

static inline uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }
static inline float bitsf(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }
static inline uint64_t dbits(double d) { uint64_t u; memcpy(&u, &d, sizeof u); return u; }
static inline double bitsd(uint64_t u) { double d; memcpy(&d, &u, sizeof d); return d; }

#endif
