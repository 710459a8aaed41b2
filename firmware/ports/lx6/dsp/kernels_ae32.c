/* The esp32-class port's FP32 kernels (rvne/kernels.h): the C twins'
 * signatures, the work cut into the blocks the assembly in this directory
 * computes with madd.s, the zero-overhead loop and post-increment loads
 * (docs/targets.md, "Kernels"). */
#include "dsp.h"

#if defined(RVNE_DSP_AES3)
/* On the S3, rvne_matvec_f32_ae32 is matvec_f32_aes3.S: it hands the
 * shapes its 128-bit loads do not suit to this. */
void rvne_dsp_matvec_lx6(float *y, const float *x, const float *w, uint32_t n_in, uint32_t n_out)
#else
void rvne_matvec_f32_ae32(float *y, const float *x, const float *w, uint32_t n_in, uint32_t n_out)
#endif
{
    const uint32_t row_bytes = n_out * (uint32_t)sizeof *w;
    uint32_t j = 0;
    for (; j + 12u <= n_out; j += 12u)
        rvne_dsp_matvec_b12(y + j, x, w + j, n_in, row_bytes);
    for (; j + 4u <= n_out; j += 4u)
        rvne_dsp_matvec_b4(y + j, x, w + j, n_in, row_bytes);
    for (; j < n_out; j++)
        rvne_dsp_matvec_b1(y + j, x, w + j, n_in, row_bytes);
}

/* Four query heads at a time share every key and value load; a group of
 * fewer (or the rest) goes one head at a time. The 4-head blocks start
 * their sums with a product, so a dot product of no terms (hd = 0 for the
 * scores, n = 0 for the weighted sum) is the C twin's. */
#if defined(RVNE_DSP_AES3)
/* On the S3, rvne_scores_f32_ae32 is scores_f32_aes3.S: it hands the
 * shapes its 128-bit loads do not suit to this. */
void rvne_dsp_scores_lx6(float *att, const float *q, const float *k, const rvne_attn *a, float scale)
#else
void rvne_scores_f32_ae32(float *att, const float *q, const float *k, const rvne_attn *a, float scale)
#endif
{
    uint32_t m = 0;
    if (a->hd == 0u) {
        rvne_scores_f32_c(att, q, k, a, scale);
        return;
    }
    for (; m + 4u <= a->g; m += 4u)
        rvne_dsp_scores_h4(att + (size_t)m * a->n, q + (size_t)m * a->q_stride, k, a, scale);
    for (; m < a->g; m++)
        rvne_dsp_scores_h1(att + (size_t)m * a->n, q + (size_t)m * a->q_stride, k, a, scale);
}

#if defined(RVNE_DSP_AES3)
/* On the S3, rvne_wsum_f32_ae32 is wsum_f32_aes3.S: it hands the shapes
 * its 128-bit loads do not suit to this. */
void rvne_dsp_wsum_lx6(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale)
#else
void rvne_wsum_f32_ae32(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale)
#endif
{
    uint32_t m = 0;
    if (a->n == 0u) {
        rvne_wsum_f32_c(out, att, v, a, scale);
        return;
    }
    for (; m + 4u <= a->g; m += 4u)
        rvne_dsp_wsum_h4(out + (size_t)m * a->q_stride, att + (size_t)m * a->n, v, a, scale + m);
    for (; m < a->g; m++)
        rvne_dsp_wsum_h1(out + (size_t)m * a->q_stride, att + (size_t)m * a->n, v, a, scale + m);
}
