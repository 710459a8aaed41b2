/* Matrix-vector products (rvne/kernels.h): the projections and the
 * classifier, FP32, FP16 and int8 (on the blob's layout and on the layout
 * prepared at load). The C twins are the core's (rvne_kernels.c,
 * rvne_prep_i8.c); the assembly beside this file, selected by
 * RVNE_HAVE_<NAME>_AE32, must match them (ktest_*.c here, ../test_dsp.c). */
#ifndef RVNE_MATVEC_H
#define RVNE_MATVEC_H
#include <stdint.h>
#include "rvne_kernel_types.h"

/* y[0, n_out) = x[0, n_in) . W, W row-major n_in x n_out (FP32 or FP16
 * weights, FP16 decoded exactly). */
void rvne_matvec_f32_c(float *y, const float *x, const float *w, uint32_t n_in, uint32_t n_out);
void rvne_matvec_f16_c(float *y, const float *x, const uint16_t *w, uint32_t n_in, uint32_t n_out);
/* The same for weights with no inf or NaN half (rvne_fp16_all_finite, once
 * at load): each decoded without a branch (rvne_fp16_finite_to_f32), equal
 * bit for bit to rvne_matvec_f16_c on such weights; wrong on others. */
void rvne_matvec_f16_finite_c(float *y, const float *x, const uint16_t *w, uint32_t n_in, uint32_t n_out);

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
