#ifndef RVNE_FP16_H
#define RVNE_FP16_H
#include <stddef.h>
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

/* A finite half without a branch: its sign, exponent and mantissa fields
 * moved into a float's as they are give the half times 2^-112 exactly
 * (normal or subnormal: a subnormal half lands as a subnormal float), and the
 * multiply by 2^112 is exact. An inf or NaN half comes out finite (2^16 and
 * up), so this is only for weights rvne_fp16_all_finite vouched for. */
static inline float rvne_fp16_finite_to_f32(uint16_t h)
{
    const uint32_t bits = ((uint32_t)(h & 0x8000u) << 16) | (((uint32_t)h & 0x7FFFu) << 13);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f * 0x1p112f;
}

/* 1 when none of the n halves at w is an inf or a NaN (exponent all ones). */
int rvne_fp16_all_finite(const uint16_t *w, size_t n);

/* dst[i] = rvne_fp16_to_f32(src[i]) for i < n: FP16 weights expanded once
 * to FP32, exactly (docs/model.md, "FP16 weights"). */
void rvne_fp16_expand(float *dst, const uint16_t *src, size_t n);

#endif
