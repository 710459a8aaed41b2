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

void rvne_matvec_f16_c(float *y, const float *x, const uint16_t *w, uint32_t n_in, uint32_t n_out)
{
    uint32_t i, j;
    memset(y, 0, (size_t)n_out * sizeof *y);
    for (i = 0; i < n_in; i++) {
        const float xi = x[i];
        const uint16_t *row = w + (size_t)i * n_out;
        for (j = 0; j < n_out; j++)
            y[j] += xi * rvne_fp16_to_f32_inline(row[j]);
    }
}

void rvne_scores_f32_c(float *att, const float *q, const float *k, uint32_t k_stride, uint32_t hd,
                       uint32_t n, float scale)
{
    uint32_t i, j;
    for (j = 0; j < n; j++) {
        const float *kj = k + (size_t)j * k_stride;
        float dot = 0.0f;
        for (i = 0; i < hd; i++)
            dot += q[i] * kj[i];
        att[j] = dot * scale;
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
        att[j] = expf(att[j] - max);
        sum += att[j];
    }
    return sum;
}

void rvne_wsum_f32_c(float *out, const float *att, const float *v, uint32_t v_stride, uint32_t hd,
                     uint32_t n, float scale)
{
    uint32_t i, j;
    memset(out, 0, (size_t)hd * sizeof *out);
    for (j = 0; j < n; j++) {
        const float a = att[j];
        const float *vj = v + (size_t)j * v_stride;
        for (i = 0; i < hd; i++)
            out[i] += a * vj[i];
    }
    for (i = 0; i < hd; i++)
        out[i] *= scale;
}
