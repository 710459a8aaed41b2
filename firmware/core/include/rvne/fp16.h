#ifndef RVNE_FP16_H
#define RVNE_FP16_H
#include <stdint.h>
#include <string.h>

/* Exact IEEE binary16 -> binary32: subnormals, +-0, +-inf and NaN payloads. */
float rvne_fp16_to_f32(uint16_t h);

/* The same function, bit for bit, for the kernel's inner loop: normal halves
 * (nearly every weight) decode inline with a shift and an add; zeros,
 * subnormals, inf and NaN take rvne_fp16_to_f32. test_fp16 checks both on
 * all 65536 patterns. */
static inline float rvne_fp16_to_f32_inline(uint16_t h)
{
    const uint32_t e = (uint32_t)h & 0x7C00u;
    uint32_t bits;
    float f;
#if defined(RVNE_DEFECT_FP16_FTZ)
    if (e == 0u) /* test-only defect: subnormal weights flushed to zero */
        return (h & 0x8000u) ? -0.0f : 0.0f;
#endif
    if (e == 0u || e == 0x7C00u)
        return rvne_fp16_to_f32(h);
    /* Rebias 15 -> 127 by adding 112 to the exponent field in place. */
    bits = ((uint32_t)(h & 0x8000u) << 16) | ((((uint32_t)h & 0x7FFFu) << 13) + (112u << 23));
    memcpy(&f, &bits, sizeof f);
    return f;
}

#endif
