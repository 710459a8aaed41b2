/* What the kernels of several operations share (rvne/kernels.h): the
 * attention's shapes, and the int8 model's requantisation and the fast
 * paths' estimate of it. */
#ifndef RVNE_KERNEL_TYPES_H
#define RVNE_KERNEL_TYPES_H
#include <stdint.h>

/* One kv head's attention: its g query heads at q + m*q_stride (m < g; their
 * outputs go to the same places), n positions of the key and value caches
 * kv_stride floats apart, head_dim hd. The scores of head m are the row
 * att[m*n, +n). Taking all g heads at once, a kernel loads each key and
 * value once for all of them. */
typedef struct rvne_attn {
    uint32_t hd, n, g;
    uint32_t q_stride, kv_stride;
} rvne_attn;

/* ---- int8 (docs/model.md, integer model) ---------------------------------
 * Every value is an integer and every sum exact in int32 within the bounds
 * the loader and head enforce (D <= 1024, Q*128*127 < 2^31, W <= 65535),
 * so any summation order gives the same bits: an assembly kernel may
 * reorder freely but must keep 32-bit accumulators (16 bits wrap). Weights
 * are in [-127, 127]; activations in [-128, 127]. A requantisation pair
 * (mult, shift) is two int32 as stored in the blob: mult in [2^30, 2^31),
 * shift in [16, 62] (the loader refuses others; these helpers trust it). */

/* rq of docs/model.md: acc*mult exactly in 64 bits, scaled by 2^-shift with
 * one rounding, half away from zero (rounding half up would give -2 for
 * -2.5: a named defect). The result is saturated to int32: it exceeds 32
 * bits only when mult*2^-shift*|acc| >= 2^31, which int8 and score uses
 * clamp further anyway. */
static inline int32_t rvne_rq(int32_t acc, int32_t mult, int32_t shift)
{
    const int64_t p = (int64_t)acc * mult;
    const uint64_t mag = p < 0 ? 0u - (uint64_t)p : (uint64_t)p; /* |p| < 2^62 */
    const uint64_t r = (mag + ((uint64_t)1u << (shift - 1))) >> shift;
#if defined(RVNE_DEFECT_I8_HALF_UP)
    /* Test-only defect (firmware/tests/defects.mk): floor((p + 2^(s-1)) / 2^s),
     * half up, which differs on exact negative halves. */
    if (p < 0) {
        const int64_t up = (p + ((int64_t)1 << (shift - 1))) >> shift;
        return up < INT32_MIN ? INT32_MIN : (int32_t)up;
    }
#endif
    if (p < 0)
        return r >= 0x80000000u ? INT32_MIN : -(int32_t)r;
    return r > 0x7FFFFFFFu ? INT32_MAX : (int32_t)r;
}

/* A residual's rq(acc) clamped to this leaves sat8(rq(x, rq_x) + rq(acc))
 * unchanged, since |rq(x, rq_x)| <= 2^22, and the sum cannot overflow. */
#define RVNE_I8_RESIDUAL_CLAMP (1 << 23)

static inline int8_t rvne_sat8(int32_t v)
{
    return (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
}

/* The attention on 16-bit rings, in three steps a kernel can stream
 * (docs/model.md's integer attention, in any order: every sum is exact):
 *   scores  sc[j] = rq(q16 . row_j, rq_s), j < n: row_j = rows +
 *           j*RVNE_I8_ROW_WORDS(hd) words, a position's hd keys as int16
 *           like a prepared row (rvne_prep_i8_c), then 2 readable words;
 *           q16 = rvne_x16_i8_c of the query head's hd values. est =
 *           rvne_i8_est_of rq_s (a fast path's estimate). Returns max_j
 *           sc[j] (INT32_MIN for n = 0): a kernel that has the scores in
 *           registers takes it for an instruction each, the softmax's own
 *           pass for about three. A score 255 or more below that maximum
 *           may be left as any value as far below (the softmax's table is
 *           flat there: min(mx - sc[j], 255) is the same); the C twin
 *           leaves every one exact.
 *   softmax np16[j] = -p_j (j < n; p_j in [0, 32768], so -p_j is an int16;
 *           mx = max_j sc[j], as the scores returned it),
 *           0 for j in [n, 2*RVNE_I8_ROW_WORDS(len)), then word 0 again: an
 *           x16 of length len >= n.
 *   wsum    o16[d] = sat8(rq(-(np16 . row_d), rq_o)), d < hd, as int16 (the
 *           heads' outputs then are the residual's x16): row_d = rows +
 *           d*RVNE_I8_ROW_WORDS(len) words, channel d's values at every ring
 *           slot as int16 (slots past n are multiplied by 0), then 2
 *           readable words. est = rvne_i8_est_of rq_o. */
float rvne_i8_scale(int32_t mult, int32_t shift);
/* A fast path's estimate of rq(acc, (mult, shift)) for one scale: the
 * float scale, and bias, an integer B with B * mult * 2^-shift within
 * (21 - 15) * 2^-14 of 0.5 + 15 * 2^-14 (0 where the scale is too coarse
 * for one, above 21 * 2^-14, or B would pass 2^29): a sum started at B
 * instead of 0 then carries the rounding's half itself (no float add).
 * rvne_i8_est_of divides in 64 bits: once per layer at load. */
typedef struct rvne_i8_est {
    float scale;
    int32_t bias;
} rvne_i8_est;
void rvne_i8_est_of(rvne_i8_est *est, int32_t mult, int32_t shift);

#endif
