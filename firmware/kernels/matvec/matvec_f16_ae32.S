/* void rvne_matvec_f16_ae32(float *y, const float *x, const uint16_t *w,
 *                           uint32_t n_in, uint32_t n_out):
 * rvne/kernels.h's rvne_matvec_f16 on the LX6 FPU. y = x . W, W row-major
 * n_in x n_out IEEE halves, in blocks of 8 columns (then 1), the block's
 * sums in f0..f7 over all rows, each weight decoded in registers:
 *
 *   l16si, slli 13, and 0x8FFFFFFF   the half's sign at bit 31, its exponent
 *                                    and mantissa at bits 13..27: as a float,
 *                                    exactly half * 2^-112 for every finite
 *                                    half (normal, subnormal, zero)
 *   bnall / or 0x7F800000            exponent all ones (inf, NaN): the float
 *                                    one, payload kept
 *   wfr, madd.s                      y_j += (x_i * 2^112) * that
 *
 * so six instructions per weight and no literal load in the loop. x_i * 2^112
 * is exact while |x_i| < 2^16; if any |x_i| is larger (or NaN) the whole call
 * takes the second copy of the loops, which multiplies the weight by 2^112
 * instead (exact too) and x_i is used as is. madd.s rounds once: the sums
 * differ from the C twin's (multiply, then add) within the dot-product
 * bound of docs/model.md. ktest_matvec_f16 checks every half pattern and
 * awkward shapes on the emulated core.
 *
 * a2 y, a3 x, a4 w at the block's first column, a5 n_in, a6 columns left,
 * a7 row bytes, a8/a9 walk x and the block's rows, a10/a11 one weight,
 * a12..a14 the decode's masks, a15 scratch; f0..f7 sums, f8 x_i (scaled),
 * f9 the weight, f10 2^112, f11 2^16, f12 scratch. */

    .section .note.GNU-stack, "", @progbits

/* matvec_f16_finite_ae32.S assembles this file again with RVNE_F16_FINITE:
 * rvne_matvec_f16_finite_ae32, for blobs whose one-time scan at load found
 * no inf or NaN half (rvne_fp16_all_finite). It drops the bnall/or pair:
 * four instructions decode a weight, with no branch. */
#if defined(RVNE_F16_FINITE)
#define F16_FN rvne_matvec_f16_finite_ae32
#else
#define F16_FN rvne_matvec_f16_ae32
#endif

    /* acc += x_i * w[off / 2] of the current row; slow = 1: the weight is
     * scaled to its value first. */
    .macro  WF16 acc, off, slow
    l16si   a10, a9, \off
    slli    a11, a10, 13
#if defined(RVNE_F16_FINITE) && defined(RVNE_DSP_DEFECT)
    slli    a11, a11, 4             /* test-only defect: the weight's sign dropped */
    srli    a11, a11, 4
#else
    and     a11, a11, a12
#endif
#if !defined(RVNE_F16_FINITE)
    bnall   a10, a13, 1f
#if !defined(RVNE_DSP_DEFECT)
    or      a11, a11, a14
#endif                              /* (test-only defect: inf and NaN halves finite) */
1:
#endif
    wfr     f9, a11
    .if \slow
    mul.s   f9, f9, f10
    .endif
    madd.s  \acc, f8, f9
    .endm

    /* x_i, scaled by 2^112 on the fast path. */
    .macro  XI slow
    lsip    f8, a8, 4
    .if !\slow
    mul.s   f8, f8, f10
    .endif
    .endm

    /* One row of a block of 8 or 1 columns. */
    .macro  ROW8 slow
    XI      \slow
    WF16    f0, 0, \slow
    WF16    f1, 2, \slow
    WF16    f2, 4, \slow
    WF16    f3, 6, \slow
    WF16    f4, 8, \slow
    WF16    f5, 10, \slow
    WF16    f6, 12, \slow
    WF16    f7, 14, \slow
    add     a9, a9, a7
    .endm

    .macro  ROW1 slow
    XI      \slow
    WF16    f0, 0, \slow
    add     a9, a9, a7
    .endm

    .macro  START
    movi    a15, 0
    wfr     f0, a15
    mov     a8, a3
    mov     a9, a4
    .endm

    .macro  ZERO8
    mov.s   f1, f0
    mov.s   f2, f0
    mov.s   f3, f0
    mov.s   f4, f0
    mov.s   f5, f0
    mov.s   f6, f0
    mov.s   f7, f0
    .endm

    .macro  STORE8
    ssi     f0, a2, 0
    ssi     f1, a2, 4
    ssi     f2, a2, 8
    ssi     f3, a2, 12
    ssi     f4, a2, 16
    ssi     f5, a2, 20
    ssi     f6, a2, 24
    ssi     f7, a2, 28
    addi    a2, a2, 32
    addi    a4, a4, 16
    addi    a6, a6, -8
    .endm

    .macro  STORE1
    ssi     f0, a2, 0
    addi    a2, a2, 4
    addi    a4, a4, 2
    addi    a6, a6, -1
    .endm

#if defined(RVNE_F16_FINITE)
    .section .text.rvne_matvec_f16_finite_ae32, "ax"
#else
    .section .text.rvne_matvec_f16_ae32, "ax"
#endif
    .literal_position
    .literal .Lmask, 0x8FFFFFFF
    .literal .Linf, 0x7F800000
    .literal .Lexp_all, 0x7C00
    .literal .Lpow112, 0x77800000
    .literal .Lpow16, 0x47800000
    .balign 4
    .global F16_FN
    .type   F16_FN, @function
F16_FN:
    entry   a1, 32
    l32r    a12, .Lmask
    l32r    a13, .Lexp_all
    l32r    a14, .Linf
    l32r    a15, .Lpow112
    wfr     f10, a15
    l32r    a15, .Lpow16
    wfr     f11, a15
    slli    a7, a6, 1
    /* Any |x_i| >= 2^16, or NaN: the slow copy. */
    movi    a15, 0
    mov     a8, a3
    loopnez a5, .Lcheck_end
    lsip    f12, a8, 4
    abs.s   f12, f12
    olt.s   b0, f12, f11
    movf    a15, a14, b0
.Lcheck_end:
    bnez    a15, .Lslow8

.Lfast8:
    bgeui   a6, 8, 1f               /* the block is too long for bltui to skip */
    j       .Lfast1
1:  START
    ZERO8
    loopnez a5, .Lfast8_rows
    ROW8    0
.Lfast8_rows:
    STORE8
    j       .Lfast8
.Lfast1:
    beqz    a6, .Ldone
    START
    loopnez a5, .Lfast1_rows
    ROW1    0
.Lfast1_rows:
    STORE1
    j       .Lfast1

.Lslow8:
    bgeui   a6, 8, 1f               /* the block is too long for bltui to skip */
    j       .Lslow1
1:  START
    ZERO8
    loopnez a5, .Lslow8_rows
    ROW8    1
.Lslow8_rows:
    STORE8
    j       .Lslow8
.Lslow1:
    beqz    a6, .Ldone
    START
    loopnez a5, .Lslow1_rows
    ROW1    1
.Lslow1_rows:
    STORE1
    j       .Lslow1

.Ldone:
    retw
    .size   F16_FN, . - F16_FN
