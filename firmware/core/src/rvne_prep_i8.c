/* The int8 projections' prepared layout (matvec/rvne_matvec.h): the weights
 * rearranged once at load into int16 rows per output, the input widened to
 * int16 once per vector, and the exact dot product and projection over that
 * layout. Apart from rvne_kernels.c, whose C twins the variant builds of
 * firmware/tests/defects.mk replace: these are not a second implementation
 * of the model, only of its storage, so every build keeps them. */
#include <string.h>
#include "matvec/rvne_matvec.h"

/* mult * 2^-shift rounded to the nearest float (ties to even), built from
 * its bits: no int-to-float conversion, which the soft-float cores lack.
 * mult > 0 (the blob's are in [2^30, 2^31)); the result is normal for the
 * blob's shifts. */
float rvne_i8_scale(int32_t mult, int32_t shift)
{
    uint32_t m = (uint32_t)mult, q, rem, bits;
    int32_t e = 30 - shift;             /* m in [2^30, 2^31): m * 2^-shift = (m / 2^30) * 2^e */
    float f;
    while (m < 0x40000000u) {
        m <<= 1;
        e--;
    }
    q = m >> 7;                         /* 24 bits */
    rem = m & 0x7fu;
    if (rem > 0x40u || (rem == 0x40u && (q & 1u)))
        q++;
    if (q == 0x1000000u) {
        q >>= 1;
        e++;
    }
    bits = ((uint32_t)(e + 127) << 23) | (q & 0x7fffffu);
    memcpy(&f, &bits, sizeof f);
    return f;
}

void rvne_i8_est_of(rvne_i8_est *est, int32_t mult, int32_t shift)
{
    /* B = round((2^13 + 15) * 2^(shift - 14) / mult): B * scale is then
     * 0.5 + 15 * 2^-14 within half the scale, inside [4, 26] * 2^-14 above
     * 0.5 for a scale up to 21 * 2^-14 (mult * 2^14 <= 21 * 2^shift). */
    const uint64_t m = (uint64_t)(uint32_t)mult;
    uint64_t b;
    est->scale = rvne_i8_scale(mult, shift);
    est->bias = 0;
    if (mult <= 0 || shift < 14 || shift > 62 || (shift < 45 && (m << 14) > ((uint64_t)21 << shift)))
        return;
    b = ((((uint64_t)8207) << (shift - 14)) + m / 2u) / m;
    if (b >= 1u && b < ((uint64_t)1 << 29))
        est->bias = (int32_t)b;
}

uint32_t rvne_prep_i8_size(uint32_t n_in, uint32_t n_out)
{
    return 4u * (n_out * RVNE_I8_ROW_WORDS(n_in) + 2u + 3u * n_out);
}

void rvne_prep_i8_c(uint32_t *prep, const int8_t *w, const int32_t *mult_shift_pairs, uint32_t n_in,
                    uint32_t n_out)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(n_in);
    uint32_t *pad = prep + (size_t)n_out * k;
    float *scale = (float *)(pad + 2);
    int32_t *pairs = (int32_t *)(scale + n_out);
    uint32_t c, i;
    for (c = 0; c < n_out; c++) {
        int16_t *row = (int16_t *)(prep + (size_t)c * k);
        for (i = 0; i < 2u * k; i++)
            row[i] = i < n_in ? w[(size_t)i * n_out + c] : 0;
        scale[c] = rvne_i8_scale(mult_shift_pairs[2 * c], mult_shift_pairs[2 * c + 1]);
        pairs[2 * c] = mult_shift_pairs[2 * c];
        pairs[2 * c + 1] = mult_shift_pairs[2 * c + 1];
    }
    pad[0] = pad[1] = 0;
}

void rvne_x16_i8_c(int16_t *x16, const int8_t *x, uint32_t n_in)
{
    const uint32_t end = 2u * RVNE_I8_ROW_WORDS(n_in);
    uint32_t i;
    /* Two loops, not one testing i < n_in per element: llc keeps that test
     * and its branches in the loop, and the push widens every q head, x and
     * o with this. */
    for (i = 0; i < n_in; i++)
        x16[i] = x[i];
    for (; i < end; i++)
        x16[i] = 0;
    x16[end] = x16[0];
    x16[end + 1u] = x16[1];
}

int32_t rvne_dot_i8_c(const int16_t *x16, const uint32_t *row, uint32_t n_in)
{
    const int16_t *w = (const int16_t *)row;
    int32_t acc = 0;
    uint32_t i;
    for (i = 0; i < n_in; i++)
        acc += x16[i] * w[i];
    return acc;
}

int8_t rvne_proj_i8_one_c(const int16_t *x16, const uint32_t *row, uint32_t n_in, int32_t mult, int32_t shift)
{
    return rvne_sat8(rvne_rq(rvne_dot_i8_c(x16, row, n_in), mult, shift));
}

void rvne_proj_i8_c(int8_t *y, const int16_t *x16, const uint32_t *prep, uint32_t n_in, uint32_t n_out)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(n_in);
    const int32_t *pairs = (const int32_t *)(prep + (size_t)n_out * k + 2u + n_out);
    uint32_t c;
    for (c = 0; c < n_out; c++)
        y[c] = rvne_proj_i8_one_c(x16, prep + (size_t)c * k, n_in, pairs[2 * c], pairs[2 * c + 1]);
}

void rvne_proj16_i8_c(int16_t *y16, const int16_t *x16, const uint32_t *prep, uint32_t n_in, uint32_t n_out,
                      uint32_t c0, uint32_t cn)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(n_in);
    const int32_t *pairs = (const int32_t *)(prep + (size_t)n_out * k + 2u + n_out);
    uint32_t c;
    for (c = c0; c < c0 + cn; c++)
        y16[c - c0] = rvne_proj_i8_one_c(x16, prep + (size_t)c * k, n_in, pairs[2 * c], pairs[2 * c + 1]);
}

void rvne_dots_i8_c(int32_t *y, const int16_t *x16, const uint32_t *rows, uint32_t n_in, uint32_t n_out)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(n_in);
    uint32_t c;
    for (c = 0; c < n_out; c++)
        y[c] = rvne_dot_i8_c(x16, rows + (size_t)c * k, n_in);
}
