/* The softmax's exponentials (rvne/kernels.h), FP32 and int8 (the second
 * step in rvne_kernel_types.h). The C twins are the core's (rvne_kernels.c);
 * the assembly beside this file, selected by RVNE_HAVE_<NAME>_AE32, must
 * match them (ktest_exp.c, ktest_softmax_i8.c here). */
#ifndef RVNE_SOFTMAX_H
#define RVNE_SOFTMAX_H
#include <stdint.h>

/* att[j] = expf(att[j] - max_l att[l]) in place for j in [0, n); returns
 * their sum (0 for n = 0). The softmax's one division is the caller's. */
float rvne_softmax_exp_f32_c(float *att, uint32_t n);

void rvne_softmax_i8_c(int16_t *np16, int32_t *sc, uint32_t n, uint32_t len, const uint16_t *exp_tab, int32_t mx);

#if defined(RVNE_HAVE_SOFTMAX_EXP_F32_AE32)
float rvne_softmax_exp_f32_ae32(float *att, uint32_t n);
#define rvne_softmax_exp_f32 rvne_softmax_exp_f32_ae32
#else
#define rvne_softmax_exp_f32 rvne_softmax_exp_f32_c
#endif

#if defined(RVNE_HAVE_SOFTMAX_I8_AE32)
void rvne_softmax_i8_lx6(int16_t *np16, int32_t *sc, uint32_t n, uint32_t len, const uint16_t *exp_tab,
                         int32_t mx);
#define rvne_softmax_i8 rvne_softmax_i8_lx6
#else
#define rvne_softmax_i8 rvne_softmax_i8_c
#endif

#endif
