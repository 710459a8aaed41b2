/* What the two FP16 kernel tests (ktest_matvec_f16.c, ktest_f16_finite.c)
 * share: the inputs they drive the kernels with. Each test seeds its own
 * generator, so its cases stay what they were. */
#ifndef KTEST_F16_H
#define KTEST_F16_H
#include <stdint.h>
#include <string.h>

/* Half patterns go through the kernels as 1-row matrices of this many
 * columns (the same code path as one long row), so the tests fit the
 * ESP32-S3's internal RAM too (ports/esp32s3-bare). */
#define CHUNK 8192u

/* The pattern sweeps' inputs: 1 (the decode itself), -3 and 2^-100 (the
 * kernels' fast path) and 2^20 (their path for |x| >= 2^16). */
static const float ktest_f16_xs[4] = {1.0f, -3.0f, 0x1p-100f, 0x1p20f};

static inline uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static uint32_t rng;
static inline uint32_t next_u32(void)
{
    rng = rng * 1664525u + 1013904223u;
    return rng;
}

/* A random finite half of either sign: exponent e_lo + [0, e_span), or
 * zero/subnormal (exponent 0) when the low bits under sub_mask are all 0. */
static inline uint16_t random_half(uint32_t e_lo, uint32_t e_span, uint32_t sub_mask)
{
    const uint32_t r = next_u32();
    uint32_t e = e_lo + ((r >> 8) % e_span);
    if ((r & sub_mask) == 0u)
        e = 0u;
    return (uint16_t)(((r >> 31) << 15) | (e << 10) | ((r >> 12) & 0x3FFu));
}

/* An input in [-8, 8) on a 2^-20 grid. */
static inline float random_x(void)
{
    return (float)((int32_t)(next_u32() >> 8) - (1 << 23)) * 0x1p-20f;
}

#endif
