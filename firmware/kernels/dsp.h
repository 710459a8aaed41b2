/* Shared by the port's assembly kernels (the .S files here go through the C
 * preprocessor, then llvm-mc): what the C driver (kernels_ae32.c) calls,
 * and assembler helpers. */
#ifndef RVNE_LX6_DSP_H
#define RVNE_LX6_DSP_H

#ifdef __ASSEMBLER__

    .section .note.GNU-stack, "", @progbits

/* A global function, 4-byte aligned like the compiler's. */
#define DSP_FUNC(name) \
    .align 4; .global name; .type name, @function; name:

/* f0 .. f<N-1> = +0.0 (the sums' start), through scratch register ar. */
    .macro  ZERO1 ar
    movi    \ar, 0
    wfr     f0, \ar
    .endm
    .macro  ZERO4 ar
    ZERO1   \ar
    mov.s   f1, f0
    mov.s   f2, f0
    mov.s   f3, f0
    .endm
    .macro  ZERO12 ar
    ZERO4   \ar
    mov.s   f4, f0
    mov.s   f5, f0
    mov.s   f6, f0
    mov.s   f7, f0
    mov.s   f8, f0
    mov.s   f9, f0
    mov.s   f10, f0
    mov.s   f11, f0
    .endm

/* r *= fs for each listed FP register. */
    .macro  MULS fs, regs:vararg
    .irp    r, \regs
    mul.s   \r, \r, \fs
    .endr
    .endm

/* r0 .. r3 = base, base + stride, base + 2 stride, base + 3 stride. */
    .macro  PTRS4 r0, r1, r2, r3, base, stride
    mov     \r0, \base
    add     \r1, \r0, \stride
    add     \r2, \r1, \stride
    add     \r3, \r2, \stride
    .endm

/* Consecutive floats at base. */
    .macro  STORE2 base, f_a, f_b
    ssi     \f_a, \base, 0
    ssi     \f_b, \base, 4
    .endm
    .macro  STORE3 base, f_a, f_b, f_c
    STORE2  \base, \f_a, \f_b
    ssi     \f_c, \base, 8
    .endm
    .macro  STORE4 base, f_a, f_b, f_c, f_d
    STORE3  \base, \f_a, \f_b, \f_c
    ssi     \f_d, \base, 12
    .endm

/* 4 heads' results, head r's at base + r * stride (bytes), through the
 * scratch register tmp: f0-f11 as 4 rows of 3 (4x3), or f0-f3 one each. */
    .macro  STORE_4x3 base, stride, tmp
    STORE3  \base, f0, f1, f2
    add     \tmp, \base, \stride
    STORE3  \tmp, f3, f4, f5
    add     \tmp, \tmp, \stride
    STORE3  \tmp, f6, f7, f8
    add     \tmp, \tmp, \stride
    STORE3  \tmp, f9, f10, f11
    .endm
    .macro  STORE_4x1 base, stride, tmp
    ssi     f0, \base, 0
    add     \tmp, \base, \stride
    ssi     f1, \tmp, 0
    add     \tmp, \tmp, \stride
    ssi     f2, \tmp, 0
    add     \tmp, \tmp, \stride
    ssi     f3, \tmp, 0
    .endm

#else

#include <stddef.h>
#include <stdint.h>
#include "rvne/kernels.h"

/* y[0, B) = x[0, n_in) . W[:, j0 .. j0 + B) for w = &W[0][j0], row_bytes =
 * 4 * n_out: one block of B columns, its sums held in FP registers. */
void rvne_dsp_matvec_b12(float *y, const float *x, const float *w, uint32_t n_in, uint32_t row_bytes);
void rvne_dsp_matvec_b4(float *y, const float *x, const float *w, uint32_t n_in, uint32_t row_bytes);
void rvne_dsp_matvec_b1(float *y, const float *x, const float *w, uint32_t n_in, uint32_t row_bytes);
/* rvne_proj_i8's outputs [0, n_out) from rows = output 0's prepared row,
 * st->scale = its scale, iters = row words / 2 (matvec_i8_mac16.S): returns
 * how many it wrote, n_out or the index of one left to the caller, with
 * that one's exact sum in st->sum. */
typedef struct rvne_dsp_pj {
    const float *scale;         /* output 0's */
    int32_t sum;                /* the exact sum of the output handed back */
} rvne_dsp_pj;
uint32_t rvne_dsp_proj_i8(int8_t *y, const int16_t *x16, const uint32_t *rows, rvne_dsp_pj *st, uint32_t n_out,
                          uint32_t iters);
/* The weighted sum's outputs (matvec_i8_mac16.S): one scale, nscale =
 * -rvne_i8_scale(rq_o), and bias = -(rvne_i8_est's B) or 0; sum: that of
 * an output handed back, plus bias. */
typedef struct rvne_dsp_ws {
    float nscale;
    int32_t bias;
    int32_t sum;
} rvne_dsp_ws;
uint32_t rvne_dsp_wsum_i8(int16_t *o16, const int16_t *np16, const uint32_t *rows, rvne_dsp_ws *st, uint32_t hd,
                          uint32_t iters);
/* The sums alone of outputs [0, n_out), n_out >= 1 (matvec_i8_mac16.S). */
void rvne_dsp_dots_i8(int32_t *y, const int16_t *x16, const uint32_t *rows, uint32_t n_out, uint32_t iters);
/* The same outputs as int16 (matvec_i8_mac16.S assembles both). */
uint32_t rvne_dsp_proj16_i8(int16_t *y16, const int16_t *x16, const uint32_t *rows, rvne_dsp_pj *st,
                            uint32_t n_out, uint32_t iters);
/* rvne_scores_i8's scores [0, n) from rows = position 0's key row, st->scale
 * = rvne_i8_scale of rq_s, iters = row words / 2 (scores_i8_mac16.S):
 * returns how many it wrote, n or the index of one left to the caller (its
 * exact sum in that slot, to requantize); zmax is raised to the largest
 * estimate Z (score * 2^14) it stored: the caller starts it at INT32_MIN
 * and keeps it across its calls. */
typedef struct rvne_dsp_sc {
    float scale;
    int32_t zmax;
    int32_t bias;               /* rvne_i8_est's: the sum's start, 0 for the float offset */
} rvne_dsp_sc;
uint32_t rvne_dsp_scores_i8(int32_t *sc, const int16_t *q16, const uint32_t *rows, rvne_dsp_sc *st, uint32_t n,
                            uint32_t iters);
/* With RVNE_DSP_AES3 (the S3), the LX6 drivers under these names: the
 * S3's NAME_f32_aes3.S is rvne_NAME_f32_ae32 and calls them for the shapes
 * its 128-bit loads do not suit. */
void rvne_dsp_matvec_lx6(float *y, const float *x, const float *w, uint32_t n_in, uint32_t n_out);
void rvne_dsp_scores_lx6(float *att, const float *q, const float *k, const rvne_attn *a, float scale);
void rvne_dsp_wsum_lx6(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale);

/* rvne_scores_f32 / rvne_wsum_f32 for query heads m0 .. m0 + 3 (h4),
 * m0 .. m0 + 2 (h3), m0 and m0 + 1 (h2), or m0 alone (h1): att, q, out,
 * scale point at head m0's. h3 and h2 do whole blocks only: the keys
 * n - n % 4 (h3) or n - n % 5 (h2), the elements hd - hd % 4 (h3) or
 * hd - hd % 6 (h2); the caller gives the rest to h1. */
void rvne_dsp_scores_h4(float *att, const float *q, const float *k, const rvne_attn *a, float scale);
void rvne_dsp_scores_h3(float *att, const float *q, const float *k, const rvne_attn *a, float scale);
void rvne_dsp_scores_h2(float *att, const float *q, const float *k, const rvne_attn *a, float scale);
void rvne_dsp_scores_h1(float *att, const float *q, const float *k, const rvne_attn *a, float scale);
void rvne_dsp_wsum_h4(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale);
void rvne_dsp_wsum_h3(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale);
void rvne_dsp_wsum_h2(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale);
void rvne_dsp_wsum_h1(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale);

#endif
#endif
