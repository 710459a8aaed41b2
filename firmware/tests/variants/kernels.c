/* Correct variants of the plain-C kernels of rvne/kernels.h, one per test
 * build of the virtual device (firmware/tests/defects.mk): each is another
 * correct FP32 implementation of docs/model.md, which the verdict must pass
 * with room (tests/test_defects.py, tools/bench_verdict.py). Exactly one of
 * these replaces core/src/rvne_kernels.c in a build:
 *   RVNE_VARIANT_REVERSED  every sum taken back to front
 *   RVNE_VARIANT_FMA       every multiply-add fused (fmaf: one rounding)
 *   RVNE_VARIANT_DOUBLE    every sum accumulated in double
 *   RVNE_VARIANT_ONLINE    the softmax in one pass over the window, rescaling
 *                          the running sum and output at each new maximum
 * Every product is a dot product per output here (the core walks W's rows):
 * the same sums, another loop order. */
#include <math.h>
#include <string.h>
#include "rvne/fp16.h"
#include "rvne/kernels.h"

#if defined(RVNE_VARIANT_DOUBLE)
typedef double acc_t;
#define MAC(acc, a, b) ((acc) += (double)(a) * (double)(b))
#elif defined(RVNE_VARIANT_FMA)
typedef float acc_t;
#define MAC(acc, a, b) ((acc) = fmaf((a), (b), (acc)))
#else
typedef float acc_t;
#define MAC(acc, a, b) ((acc) += (a) * (b))
#endif

/* The k-th term of n in summation order. */
#if defined(RVNE_VARIANT_REVERSED)
#define AT(k, n) ((n) - 1u - (k))
#else
#define AT(k, n) (k)
#endif

static void matvec(float *y, const float *x, const float *w32, const uint16_t *w16, uint32_t n_in, uint32_t n_out)
{
    uint32_t j, k;
    for (j = 0; j < n_out; j++) {
        acc_t acc = 0;
        for (k = 0; k < n_in; k++) {
            const size_t at = (size_t)AT(k, n_in) * n_out + j;
            MAC(acc, x[AT(k, n_in)], w32 ? w32[at] : rvne_fp16_to_f32(w16[at]));
        }
        y[j] = (float)acc;
    }
}

void rvne_matvec_f32_c(float *y, const float *x, const float *w, uint32_t n_in, uint32_t n_out)
{
    matvec(y, x, w, 0, n_in, n_out);
}

void rvne_matvec_f16_c(float *y, const float *x, const uint16_t *w, uint32_t n_in, uint32_t n_out)
{
    matvec(y, x, 0, w, n_in, n_out);
}

void rvne_scores_f32_c(float *att, const float *q, const float *k, const rvne_attn *a, float scale)
{
    uint32_t m, j, i;
    for (m = 0; m < a->g; m++) {
        const float *qm = q + (size_t)m * a->q_stride;
        for (j = 0; j < a->n; j++) {
            const float *kj = k + (size_t)j * a->kv_stride;
            acc_t dot = 0;
            for (i = 0; i < a->hd; i++)
                MAC(dot, qm[AT(i, a->hd)], kj[AT(i, a->hd)]);
            att[(size_t)m * a->n + j] = (float)dot * scale;
        }
    }
}

#if defined(RVNE_VARIANT_ONLINE)
/* The scores stay as they are: the weighted sum below takes the softmax in
 * the same pass. Returning 1 makes the caller's scale 1/1. */
float rvne_softmax_exp_f32_c(float *att, uint32_t n)
{
    (void)att;
    (void)n;
    return 1.0f;
}

void rvne_wsum_f32_c(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale)
{
    uint32_t m, k, i;
    for (m = 0; m < a->g; m++) {
        float *om = out + (size_t)m * a->q_stride;
        const float *sm = att + (size_t)m * a->n;
        float max = -INFINITY, sum = 0.0f;
        memset(om, 0, (size_t)a->hd * sizeof *om);
        for (k = 0; k < a->n; k++) {
            const uint32_t j = AT(k, a->n);
            const float *vj = v + (size_t)j * a->kv_stride;
            float e;
            if (sm[j] > max) { /* a new maximum: rescale what was summed against the old one */
                const float r = expf(max - sm[j]);
                sum *= r;
                for (i = 0; i < a->hd; i++)
                    om[i] *= r;
                max = sm[j];
            }
            e = expf(sm[j] - max);
            sum += e;
            for (i = 0; i < a->hd; i++)
                om[i] += e * vj[i];
        }
        for (i = 0; i < a->hd; i++)
            om[i] = om[i] / sum * scale[m];
    }
}
#else
float rvne_softmax_exp_f32_c(float *att, uint32_t n)
{
    float max = -INFINITY;
    acc_t sum = 0;
    uint32_t k;
    for (k = 0; k < n; k++)
        if (att[k] > max)
            max = att[k];
    for (k = 0; k < n; k++) {
        const uint32_t j = AT(k, n);
        att[j] = expf(att[j] - max);
        sum += att[j];
    }
    return (float)sum;
}

void rvne_wsum_f32_c(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale)
{
    uint32_t m, k, i;
    for (m = 0; m < a->g; m++) {
        float *om = out + (size_t)m * a->q_stride;
        const float *am = att + (size_t)m * a->n;
        for (i = 0; i < a->hd; i++) {
            acc_t acc = 0;
            for (k = 0; k < a->n; k++) {
                const uint32_t j = AT(k, a->n);
                MAC(acc, am[j], v[(size_t)j * a->kv_stride + i]);
            }
            om[i] = (float)acc * scale[m];
        }
    }
}
#endif
