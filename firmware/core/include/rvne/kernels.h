/* The inner loops of the forward pass (docs/model.md), esp-dsp style: each
 * kernel rvne_<name> has a plain-C twin rvne_<name>_c (rvne_kernels.c), the
 * readable reference and the fallback on every target, and a port may supply
 * a faster rvne_<name>_ae32 with the same signature by defining
 * RVNE_HAVE_<NAME>_AE32 when it compiles the core. The port's tests check
 * each one against its twin on awkward lengths. Today the esp32-class port
 * (firmware/ports/lx6/dsp/) has every kernel here in Xtensa assembly;
 * every other target runs the C twins (docs/targets.md, "Kernels").
 *
 * Shapes: vectors are contiguous floats; a matrix is row-major; a "stride"
 * is the distance in floats between consecutive rows of the key or value
 * cache (one row per position). No output may alias an input. */
#ifndef RVNE_KERNELS_H
#define RVNE_KERNELS_H
#include <stdint.h>

/* y[0, n_out) = x[0, n_in) . W, W row-major n_in x n_out (FP32 or FP16
 * weights, FP16 decoded exactly). */
void rvne_matvec_f32_c(float *y, const float *x, const float *w, uint32_t n_in, uint32_t n_out);
void rvne_matvec_f16_c(float *y, const float *x, const uint16_t *w, uint32_t n_in, uint32_t n_out);
/* The same for weights with no inf or NaN half (rvne_fp16_all_finite, once
 * at load): each decoded without a branch (rvne_fp16_finite_to_f32), equal
 * bit for bit to rvne_matvec_f16_c on such weights; wrong on others. */
void rvne_matvec_f16_finite_c(float *y, const float *x, const uint16_t *w, uint32_t n_in, uint32_t n_out);

/* One kv head's attention: its g query heads at q + m*q_stride (m < g; their
 * outputs go to the same places), n positions of the key and value caches
 * kv_stride floats apart, head_dim hd. The scores of head m are the row
 * att[m*n, +n). Taking all g heads at once, a kernel loads each key and
 * value once for all of them. */
typedef struct rvne_attn {
    uint32_t hd, n, g;
    uint32_t q_stride, kv_stride;
} rvne_attn;

/* att[m*n + j] = scale * (q[m*q_stride, +hd) . k[j*kv_stride, +hd)). */
void rvne_scores_f32_c(float *att, const float *q, const float *k, const rvne_attn *a, float scale);

/* att[j] = expf(att[j] - max_l att[l]) in place for j in [0, n); returns
 * their sum (0 for n = 0). The softmax's one division is the caller's. */
float rvne_softmax_exp_f32_c(float *att, uint32_t n);

/* out[m*q_stride + i] = scale[m] * sum_j att[m*n + j] * v[j*kv_stride + i]
 * for i < hd: the attention's weighted sum, normalised once at the end
 * (scale[m] = 1/sum of head m's exponentials: one division per head,
 * docs/model.md). */
void rvne_wsum_f32_c(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale);

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

/* acc[c] = sum_i x[i] * w[i*n_out + c], c < n_out: W row-major n_in x n_out
 * (input-major, as stored in the blob). */
void rvne_matvec_i8_c(int32_t *acc, const int8_t *x, const int8_t *w, uint32_t n_in, uint32_t n_out);

/* y[c] = sat8(rq(acc[c], pairs[2c], pairs[2c+1])), c < n. */
void rvne_requant_i8_c(int8_t *y, const int32_t *acc, const int32_t *mult_shift_pairs, uint32_t n);

/* The residual, into the next layer's scale: x[c] = sat8(rq(x[c], rq_x[0],
 * rq_x[1]) + rq(acc[c], pairs[2c], pairs[2c+1])), c < n, both rq results
 * added as integers before the one saturation. */
void rvne_residual_i8_c(int8_t *x, const int32_t *acc, const int32_t *mult_shift_pairs, const int32_t *rq_x,
                        uint32_t n);

/* The same projection and requantization in one pass over weights prepared
 * once at load (the fast path's layout; MAC16 multiplies 16-bit halves, and
 * one output's weights must be one contiguous stream):
 *   rows  n_out rows of RVNE_I8_ROW_WORDS(n_in) words: output c's weights
 *         w[i*n_out + c], i < n_in, as int16, element 2k in word k's low
 *         half, zero padded; then 2 zero words (a kernel may read ahead);
 *   scale n_out floats m * 2^-s (round to nearest; a fast path's estimate);
 *   pairs n_out (m, s) pairs as given (the exact requantization).
 * rvne_prep_i8_size gives its bytes; prep must be 4-byte aligned. x goes
 * in as x16 (rvne_x16_i8_c, once per input vector, shared by every
 * projection of it): RVNE_I8_ROW_WORDS(n_in) + 1 words, 4-byte aligned: x
 * as int16 pairs like a row, then word 0 again (read ahead).
 * rvne_proj_i8 = rvne_requant_i8 of rvne_matvec_i8, bit for bit, for
 * n_in <= RVNE_I8_MAX_IN (every |acc| < 2^31). */
#define RVNE_I8_ROW_WORDS(n_in) ((((uint32_t)(n_in) + 3u) / 4u) * 2u)
#define RVNE_I8_MAX_IN 132104u          /* 132104 * 128 * 127 < 2^31 */
uint32_t rvne_prep_i8_size(uint32_t n_in, uint32_t n_out);
void rvne_prep_i8_c(uint32_t *prep, const int8_t *w, const int32_t *mult_shift_pairs, uint32_t n_in,
                    uint32_t n_out);
void rvne_x16_i8_c(int16_t *x16, const int8_t *x, uint32_t n_in);
#if defined(RVNE_HAVE_X16_I8_AE32)
void rvne_x16_i8_lx6(int16_t *x16, const int8_t *x, uint32_t n_in);
#define rvne_x16_i8 rvne_x16_i8_lx6
#else
#define rvne_x16_i8 rvne_x16_i8_c
#endif
void rvne_proj_i8_c(int8_t *y, const int16_t *x16, const uint32_t *prep, uint32_t n_in, uint32_t n_out);
/* Its outputs [c0, c0 + cn) alone, as int16 (the same values) in y16[0,
 * cn): written where the next step reads int16 (a query head's q16, a key
 * head's ring row, the heads' outputs as the residual's x16), nothing is
 * widened after. */
void rvne_proj16_i8_c(int16_t *y16, const int16_t *x16, const uint32_t *prep, uint32_t n_in, uint32_t n_out,
                      uint32_t c0, uint32_t cn);
/* One output of it: a prepared row against x16, requantized exactly (the
 * fast kernels hand it the outputs their estimate cannot settle). */
int8_t rvne_proj_i8_one_c(const int16_t *x16, const uint32_t *row, uint32_t n_in, int32_t mult, int32_t shift);
/* Its int32 sum alone: a prepared row against x16 (the residual needs rq's
 * value where the saturated one hides it). */
int32_t rvne_dot_i8_c(const int16_t *x16, const uint32_t *row, uint32_t n_in);
/* The sums of n_out such rows (the classifier's logits, not requantized):
 * rvne_matvec_i8 bit for bit on rows prepared likewise (their scales and
 * pairs unused, the 2 zero words after the last row read ahead). */
void rvne_dots_i8_c(int32_t *y, const int16_t *x16, const uint32_t *rows, uint32_t n_in, uint32_t n_out);

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
int32_t rvne_scores_i8_c(int32_t *sc, const int16_t *q16, const uint32_t *rows, uint32_t hd, uint32_t n,
                         const int32_t *rq_s, const rvne_i8_est *est);
void rvne_softmax_i8_c(int16_t *np16, int32_t *sc, uint32_t n, uint32_t len, const uint16_t *exp_tab, int32_t mx);
void rvne_wsum_i8_c(int16_t *o16, const int16_t *np16, const uint32_t *rows, uint32_t len, uint32_t hd,
                    const int32_t *rq_o, const rvne_i8_est *est);

#if defined(RVNE_HAVE_SOFTMAX_I8_AE32)
void rvne_softmax_i8_lx6(int16_t *np16, int32_t *sc, uint32_t n, uint32_t len, const uint16_t *exp_tab,
                         int32_t mx);
#define rvne_softmax_i8 rvne_softmax_i8_lx6
#else
#define rvne_softmax_i8 rvne_softmax_i8_c
#endif

#if defined(RVNE_HAVE_SCORES_I8_AE32)
int32_t rvne_scores_i8_ae32(int32_t *sc, const int16_t *q16, const uint32_t *rows, uint32_t hd, uint32_t n,
                            const int32_t *rq_s, const rvne_i8_est *est);
#define rvne_scores_i8 rvne_scores_i8_ae32
#else
#define rvne_scores_i8 rvne_scores_i8_c
#endif

#if defined(RVNE_HAVE_MATVEC_I8_AE32)
/* The weighted sum is the projection's kernel on -p and the value rows. */
void rvne_wsum_i8_ae32(int16_t *o16, const int16_t *np16, const uint32_t *rows, uint32_t len, uint32_t hd,
                       const int32_t *rq_o, const rvne_i8_est *est);
#define rvne_wsum_i8 rvne_wsum_i8_ae32
#else
#define rvne_wsum_i8 rvne_wsum_i8_c
#endif

#if defined(RVNE_HAVE_MATVEC_I8_AE32)
void rvne_proj_i8_ae32(int8_t *y, const int16_t *x16, const uint32_t *prep, uint32_t n_in, uint32_t n_out);
void rvne_proj16_i8_ae32(int16_t *y16, const int16_t *x16, const uint32_t *prep, uint32_t n_in, uint32_t n_out,
                         uint32_t c0, uint32_t cn);
void rvne_dots_i8_ae32(int32_t *y, const int16_t *x16, const uint32_t *rows, uint32_t n_in, uint32_t n_out);
#define rvne_proj_i8 rvne_proj_i8_ae32
#define rvne_proj16_i8 rvne_proj16_i8_ae32
#define rvne_dots_i8 rvne_dots_i8_ae32
/* The prepared layout pays for its RAM only with a kernel that reads it
 * faster than rvne_matvec_i8 reads the blob: the loader prepares then. */
#define RVNE_PROJ_I8_FAST 1
#else
#define rvne_proj_i8 rvne_proj_i8_c
#define rvne_proj16_i8 rvne_proj16_i8_c
#define rvne_dots_i8 rvne_dots_i8_c
#endif

#if defined(RVNE_HAVE_MATVEC_F32_AE32)
void rvne_matvec_f32_ae32(float *y, const float *x, const float *w, uint32_t n_in, uint32_t n_out);
#define rvne_matvec_f32 rvne_matvec_f32_ae32
#else
#define rvne_matvec_f32 rvne_matvec_f32_c
#endif

#if defined(RVNE_HAVE_MATVEC_F16_AE32)
void rvne_matvec_f16_ae32(float *y, const float *x, const uint16_t *w, uint32_t n_in, uint32_t n_out);
#define rvne_matvec_f16 rvne_matvec_f16_ae32
#else
#define rvne_matvec_f16 rvne_matvec_f16_c
#endif

/* Without the assembly the exact decode runs for finite weights too: in C,
 * on a core without an FPU (lx106), the finite decode's multiply would cost
 * more than the branch it saves. */
#if defined(RVNE_HAVE_MATVEC_F16_FINITE_AE32)
void rvne_matvec_f16_finite_ae32(float *y, const float *x, const uint16_t *w, uint32_t n_in, uint32_t n_out);
#define rvne_matvec_f16_finite rvne_matvec_f16_finite_ae32
#else
#define rvne_matvec_f16_finite rvne_matvec_f16
#endif

#if defined(RVNE_HAVE_SCORES_F32_AE32)
void rvne_scores_f32_ae32(float *att, const float *q, const float *k, const rvne_attn *a, float scale);
#define rvne_scores_f32 rvne_scores_f32_ae32
#else
#define rvne_scores_f32 rvne_scores_f32_c
#endif

#if defined(RVNE_HAVE_SOFTMAX_EXP_F32_AE32)
float rvne_softmax_exp_f32_ae32(float *att, uint32_t n);
#define rvne_softmax_exp_f32 rvne_softmax_exp_f32_ae32
#else
#define rvne_softmax_exp_f32 rvne_softmax_exp_f32_c
#endif

#if defined(RVNE_HAVE_WSUM_F32_AE32)
void rvne_wsum_f32_ae32(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale);
#define rvne_wsum_f32 rvne_wsum_f32_ae32
#else
#define rvne_wsum_f32 rvne_wsum_f32_c
#endif

/* The blob's int8 layout has no assembly kernel: RVNE_HAVE_MATVEC_I8_AE32
 * names the prepared layout's (rvne_proj_i8 above). */
#define rvne_matvec_i8 rvne_matvec_i8_c

#if defined(RVNE_HAVE_REQUANT_I8_AE32)
void rvne_requant_i8_ae32(int8_t *y, const int32_t *acc, const int32_t *mult_shift_pairs, uint32_t n);
#define rvne_requant_i8 rvne_requant_i8_ae32
#else
#define rvne_requant_i8 rvne_requant_i8_c
#endif

#if defined(RVNE_HAVE_RESIDUAL_I8_AE32)
void rvne_residual_i8_ae32(int8_t *x, const int32_t *acc, const int32_t *mult_shift_pairs, const int32_t *rq_x,
                           uint32_t n);
#define rvne_residual_i8 rvne_residual_i8_ae32
#else
#define rvne_residual_i8 rvne_residual_i8_c
#endif


#endif
