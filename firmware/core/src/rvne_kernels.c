/* The plain-C twins of the kernels in rvne/kernels.h: the reference every
 * faster port kernel is tested against, and what runs where there is none. */
#include <math.h>
#include <string.h>
#include "rvne/fp16.h"
#include "rvne/kernels.h"

/* The loops run over W in storage order: on the MCU the weights stream
 * through the flash cache once, front to back. */
void rvne_matvec_f32_c(float *y, const float *x, const float *w, uint32_t n_in, uint32_t n_out)
{
    uint32_t i, j;
    memset(y, 0, (size_t)n_out * sizeof *y);
    for (i = 0; i < n_in; i++) {
        const float xi = x[i];
        const float *row = w + (size_t)i * n_out;
        for (j = 0; j < n_out; j++)
            y[j] += xi * row[j];
    }
}

/* The FP16 product's one loop, for either decode of a half. Each twin below
 * passes its decoder as a constant; always inlined, so that the decoder is
 * too (at -Os gcc would otherwise call it through the pointer per weight):
 * the twins compile to what each did with its own copy of the loop. */
static inline __attribute__((always_inline)) void matvec_f16(float *y, const float *x, const uint16_t *w,
                                                              uint32_t n_in, uint32_t n_out,
                                                              float (*decode)(uint16_t))
{
    uint32_t i, j;
    memset(y, 0, (size_t)n_out * sizeof *y);
    for (i = 0; i < n_in; i++) {
        const float xi = x[i];
        const uint16_t *row = w + (size_t)i * n_out;
        for (j = 0; j < n_out; j++)
            y[j] += xi * decode(row[j]);
    }
}

void rvne_matvec_f16_c(float *y, const float *x, const uint16_t *w, uint32_t n_in, uint32_t n_out)
{
    matvec_f16(y, x, w, n_in, n_out, rvne_fp16_to_f32_inline);
}

void rvne_matvec_f16_finite_c(float *y, const float *x, const uint16_t *w, uint32_t n_in, uint32_t n_out)
{
    matvec_f16(y, x, w, n_in, n_out, rvne_fp16_finite_to_f32);
}

void rvne_scores_f32_c(float *att, const float *q, const float *k, const rvne_attn *a, float scale)
{
    uint32_t m, j, i;
    for (m = 0; m < a->g; m++) {
        const float *qm = q + (size_t)m * a->q_stride;
        for (j = 0; j < a->n; j++) {
            const float *kj = k + (size_t)j * a->kv_stride;
            float dot = 0.0f;
            for (i = 0; i < a->hd; i++)
                dot += qm[i] * kj[i];
            att[(size_t)m * a->n + j] = dot * scale;
        }
    }
}

float rvne_softmax_exp_f32_c(float *att, uint32_t n)
{
    float max = -INFINITY, sum = 0.0f;
    uint32_t j;
    for (j = 0; j < n; j++)
        if (att[j] > max)
            max = att[j];
    /* Subtracting the max keeps expf in range; the softmax is unchanged. */
    for (j = 0; j < n; j++) {
#if defined(RVNE_DEFECT_EXP_ERR)
        /* Test-only defect (firmware/tests/defects.mk): relative error up
         * to 1e-4 that varies with the argument, like an exp polynomial's
         * error within each octave (a constant factor would cancel in the
         * normalisation). */
        const float arg = att[j] - max;
        att[j] = expf(arg) * (1.0f + 1e-4f * sinf(9.0647203f * arg));
#else
        att[j] = expf(att[j] - max);
#endif
        sum += att[j];
    }
    return sum;
}

void rvne_wsum_f32_c(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale)
{
    uint32_t m, j, i;
    for (m = 0; m < a->g; m++) {
        float *om = out + (size_t)m * a->q_stride;
        const float *am = att + (size_t)m * a->n;
        memset(om, 0, (size_t)a->hd * sizeof *om);
        for (j = 0; j < a->n; j++) {
            const float *vj = v + (size_t)j * a->kv_stride;
            for (i = 0; i < a->hd; i++)
                om[i] += am[j] * vj[i];
        }
        for (i = 0; i < a->hd; i++)
            om[i] *= scale[m];
    }
}

/* ---- int8 ------------------------------------------------------------------ */

/* In storage order like the float product; the sums are exact, so the order
 * is free (kernels.h). */
void rvne_matvec_i8_c(int32_t *acc, const int8_t *x, const int8_t *w, uint32_t n_in, uint32_t n_out)
{
    uint32_t i, c;
    memset(acc, 0, (size_t)n_out * sizeof *acc);
    for (i = 0; i < n_in; i++) {
        const int32_t xi = x[i];
        const int8_t *row = w + (size_t)i * n_out;
        for (c = 0; c < n_out; c++)
#if defined(RVNE_DEFECT_I8_ACC16)
            /* Test-only defect (firmware/tests/defects.mk): a 16-bit accumulator, which wraps. */
            acc[c] = (int16_t)(acc[c] + xi * row[c]);
#else
            acc[c] += xi * row[c];
#endif
    }
}

void rvne_requant_i8_c(int8_t *y, const int32_t *acc, const int32_t *mult_shift_pairs, uint32_t n)
{
    uint32_t c;
    for (c = 0; c < n; c++) {
#if defined(RVNE_DEFECT_I8_RQ_NEIGHBOUR)
        /* Test-only defect (firmware/tests/defects.mk): channel 1 scaled by channel 0's pair. */
        const uint32_t at = c == 1u ? 0u : c;
#else
        const uint32_t at = c;
#endif
#if defined(RVNE_DEFECT_I8_NO_SAT)
        /* Test-only defect: the int8 cast without sat8, so an out-of-range value wraps. */
        y[c] = (int8_t)rvne_rq(acc[c], mult_shift_pairs[2u * at], mult_shift_pairs[2u * at + 1u]);
#else
        y[c] = rvne_sat8(rvne_rq(acc[c], mult_shift_pairs[2u * at], mult_shift_pairs[2u * at + 1u]));
#endif
    }
}

void rvne_residual_i8_c(int8_t *x, const int32_t *acc, const int32_t *mult_shift_pairs, const int32_t *rq_x,
                        uint32_t n)
{
    uint32_t c;
    for (c = 0; c < n; c++) {
        int32_t r = rvne_rq(acc[c], mult_shift_pairs[2u * c], mult_shift_pairs[2u * c + 1u]);
        r = r > RVNE_I8_RESIDUAL_CLAMP ? RVNE_I8_RESIDUAL_CLAMP : r < -RVNE_I8_RESIDUAL_CLAMP ? -RVNE_I8_RESIDUAL_CLAMP : r;
        x[c] = rvne_sat8(rvne_rq(x[c], rq_x[0], rq_x[1]) + r);
    }
}

int32_t rvne_scores_i8_c(int32_t *sc, const int16_t *q16, const uint32_t *rows, uint32_t hd, uint32_t n,
                         const int32_t *rq_s, const rvne_i8_est *est)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(hd);
    int32_t mx = INT32_MIN;
    uint32_t j;
    (void)est;
    for (j = 0; j < n; j++) {
        sc[j] = rvne_rq(rvne_dot_i8_c(q16, rows + (size_t)j * k, hd), rq_s[0], rq_s[1]);
        if (sc[j] > mx)
            mx = sc[j];
    }
    return mx;
}

void rvne_softmax_i8_c(int16_t *np16, int32_t *sc, uint32_t n, uint32_t len, const uint16_t *exp_tab, int32_t mx)
{
    const uint32_t end = 2u * RVNE_I8_ROW_WORDS(len);
    uint32_t j, sum = 0u, half;
    for (j = 0; j < n; j++) {
        /* mx - sc[j] in [0, 2^32): unsigned, where the int32 difference could overflow. */
        const uint32_t d = (uint32_t)mx - (uint32_t)sc[j];
#if defined(RVNE_DEFECT_I8_EXP_SHIFT)
        /* Test-only defect (firmware/tests/defects.mk): the table read one
         * entry early, so the maximum's neighbours weigh as much as it. (One
         * entry late would scale every weight alike, nearly cancelling.) */
        sc[j] = exp_tab[d == 0u ? 0u : d < 256u ? d - 1u : 254u];
#else
        sc[j] = exp_tab[d < 255u ? d : 255u];
#endif
        sum += (uint32_t)sc[j]; /* <= 65535 * 32768 < 2^31 */
    }
    half = sum / 2u;
    /* p_j = 32768 (one weight takes all) does not fit an int16; -p_j does. */
    for (j = 0; j < n; j++)
        np16[j] = (int16_t)-(int32_t)(((uint32_t)sc[j] * 32768u + half) / sum);
    for (; j < end; j++)
        np16[j] = 0;
    np16[end] = np16[0];
    np16[end + 1u] = np16[1];
}

void rvne_wsum_i8_c(int16_t *o16, const int16_t *np16, const uint32_t *rows, uint32_t len, uint32_t hd,
                    const int32_t *rq_o, const rvne_i8_est *est)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(len);
    uint32_t d;
    (void)est;
    /* The dot product is -sum(p_j v_j), |sum| < 2^31 (docs/model.md's bound):
     * negate it before rq, not after. rq(-a) = -rq(a) holds for the rounding
     * but not for rvne_rq's int32 saturation (INT32_MIN has no negation:
     * a large positive sum would come out -128). */
    for (d = 0; d < hd; d++)
        o16[d] = rvne_sat8(rvne_rq((int32_t)(0u - (uint32_t)rvne_dot_i8_c(np16, rows + (size_t)d * k, len)), rq_o[0],
                                 rq_o[1]));
}
