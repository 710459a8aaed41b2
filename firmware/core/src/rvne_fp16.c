#include <string.h>
#include "rvne/fp16.h"

/* Bit manipulation rather than a float cast: exact on every compiler and
 * target (xtensa-lx106 has no FP16 type), and NaN payloads survive. */
float rvne_fp16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (uint32_t)(h >> 10) & 0x1Fu;
    uint32_t mant = (uint32_t)h & 0x3FFu;
    uint32_t bits;
    float f;

    if (exp == 0x1Fu) {
        bits = sign | 0x7F800000u | (mant << 13);
    } else if (exp != 0u) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13); /* rebias 15 -> 127 */
    } else if (mant == 0u) {
        bits = sign;
    } else {
        /* Subnormal half: every one is a normal float. Shift the leading 1
         * into the implicit bit and lower the exponent by as many places. */
        uint32_t e = 113u; /* 127 - 14: the exponent of a half subnormal's scale */
        while ((mant & 0x400u) == 0u) {
            mant <<= 1;
            e--;
        }
        bits = sign | (e << 23) | ((mant & 0x3FFu) << 13);
    }
    memcpy(&f, &bits, sizeof f);
    return f;
}

int rvne_fp16_all_finite(const uint16_t *w, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if ((w[i] & 0x7C00u) == 0x7C00u)
            return 0;
    return 1;
}

void rvne_fp16_expand(float *dst, const uint16_t *src, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        dst[i] = rvne_fp16_to_f32_inline(src[i]);
}
