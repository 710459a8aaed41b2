/* The attention's weighted sum of the cached values (rvne/kernels.h), FP32
 * and int8 (the third step in rvne_kernel_types.h). The C twins are the
 * core's (rvne_kernels.c); the assembly beside this file (the int8 one is
 * the projection's, ../matvec/), selected by RVNE_HAVE_<NAME>_AE32, must
 * match them (../test_dsp.c, ../scores/ktest_attn_i8.c). */
#ifndef RVNE_WSUM_H
#define RVNE_WSUM_H
#include <stdint.h>
#include "rvne_kernel_types.h"

/* out[m*q_stride + i] = scale[m] * sum_j att[m*n + j] * v[j*kv_stride + i]
 * for i < hd: the attention's weighted sum, normalised once at the end
 * (scale[m] = 1/sum of head m's exponentials: one division per head,
 * docs/model.md). */
void rvne_wsum_f32_c(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale);

void rvne_wsum_i8_c(int16_t *o16, const int16_t *np16, const uint32_t *rows, uint32_t len, uint32_t hd,
                    const int32_t *rq_o, const rvne_i8_est *est);

#if defined(RVNE_HAVE_WSUM_F32_AE32)
void rvne_wsum_f32_ae32(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale);
#define rvne_wsum_f32 rvne_wsum_f32_ae32
#else
#define rvne_wsum_f32 rvne_wsum_f32_c
#endif

#if defined(RVNE_HAVE_MATVEC_I8_AE32)
/* The weighted sum is the projection's kernel on -p and the value rows. */
void rvne_wsum_i8_ae32(int16_t *o16, const int16_t *np16, const uint32_t *rows, uint32_t len, uint32_t hd,
                       const int32_t *rq_o, const rvne_i8_est *est);
#define rvne_wsum_i8 rvne_wsum_i8_ae32
#else
#define rvne_wsum_i8 rvne_wsum_i8_c
#endif

#endif
