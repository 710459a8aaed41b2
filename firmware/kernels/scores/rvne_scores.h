/* The attention's scores, a query against every cached key (rvne/kernels.h),
 * FP32 and int8 (the first of the three steps in rvne_kernel_types.h). The C
 * twins are the core's (rvne_kernels.c); the assembly beside this file,
 * selected by RVNE_HAVE_<NAME>_AE32, must match them (ktest_attn_i8.c here,
 * ../test_dsp.c). */
#ifndef RVNE_SCORES_H
#define RVNE_SCORES_H
#include <stdint.h>
#include "rvne_kernel_types.h"

/* att[m*n + j] = scale * (q[m*q_stride, +hd) . k[j*kv_stride, +hd)). */
void rvne_scores_f32_c(float *att, const float *q, const float *k, const rvne_attn *a, float scale);

int32_t rvne_scores_i8_c(int32_t *sc, const int16_t *q16, const uint32_t *rows, uint32_t hd, uint32_t n,
                         const int32_t *rq_s, const rvne_i8_est *est);

#if defined(RVNE_HAVE_SCORES_F32_AE32)
void rvne_scores_f32_ae32(float *att, const float *q, const float *k, const rvne_attn *a, float scale);
#define rvne_scores_f32 rvne_scores_f32_ae32
#else
#define rvne_scores_f32 rvne_scores_f32_c
#endif

#if defined(RVNE_HAVE_SCORES_I8_AE32)
int32_t rvne_scores_i8_ae32(int32_t *sc, const int16_t *q16, const uint32_t *rows, uint32_t hd, uint32_t n,
                            const int32_t *rq_s, const rvne_i8_est *est);
#define rvne_scores_i8 rvne_scores_i8_ae32
#else
#define rvne_scores_i8 rvne_scores_i8_c
#endif

#endif
