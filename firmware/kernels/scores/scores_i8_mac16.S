/* rvne_scores_i8's scores on MAC16 (kernels_ae32.c drives it): sc[j] =
 * rq(q16 . row_j, rq_s), unsaturated int32, one position at a time, the
 * dot product in the 40-bit accumulator (rvne/kernels.h: rows as int16
 * pairs RVNE_I8_ROW_WORDS(hd) words apart, q16 with its word 0 repeated
 * after its end, 2 readable words after the last row).
 *
 *   uint32_t rvne_dsp_scores_i8(int32_t *sc, const int16_t *q16, const uint32_t *rows,
 *                               rvne_dsp_sc *st, uint32_t n, uint32_t iters)
 *   a2 = sc, a3 = q16, a4 = rows (position 0's), a5 = st (dsp.h: scale =
 *   rvne_i8_scale of rq_s; zmax, which it updates; bias), a6 = n, a7 =
 *   iters = row words / 2 (>= 1). Returns the scores written: n, or the
 *   index of one the estimate cannot settle, whose exact int32 sum it leaves
 *   in that sc slot for the caller to requantize before calling again
 *   after (the sum is what a C recomputation would cost most for).
 *
 * The inner loop and its loads are matvec_i8_mac16.S's, for the same
 * reason: QEMU 7.2 does not see a reload of an m register already read by
 * a multiply in the same translated block; each turn is its own block and
 * reloads only registers whose reads in it are done or not yet made, so
 * the result is the ISA's on silicon and QEMU alike.
 *
 * The requantization is matvec_i8_mac16.S's estimate, Z = trunc((0.5 +
 * 2^-10 + acc * scale) * 2^14), floor(Z / 2^14) = rq exactly unless Z's
 * bits 5..13 are all clear (the band, which holds every exact half), for
 * |z| < 2^9. A score is not saturated, so the range must hold instead:
 * the kernel keeps the largest Z it stored (st's zmax), one instruction
 * where a test per score took two, and the caller redoes the scores
 * outside [-256, 256) exactly when zmax leaves [-2^22, 2^22) (|z| above
 * about 2^8, trunc.s's own saturation included) or the maximum is below 0.
 * Else zmax >> 14 is the scores' maximum, which the softmax needs (its own
 * pass over them goes), and one stored below -2^22 is still within 2 of
 * its exact value (|z| < 2^17, the error |z| 2^-23 and under 2^-13 more;
 * from 2^17 trunc.s saturates to -2^31, in the band): both are at least
 * 255 below a maximum >= 0, where the softmax's table is flat.
 *
 * With st->bias = B != 0 (rvne_i8_est_of: B * scale within 11 * 2^-14 of
 * 0.5 + 15 * 2^-14) the sum starts at B instead of 0, and Z = trunc((acc +
 * B) * scale * 2^14): the offset comes with the sum, no float add, one
 * instruction a score less. Its exact halves land at 4 .. 26 of Z's low
 * 14 bits, inside the same band, the error of the product alone (|z + 0.5|
 * 2^-23 <= 2^-14 for |z| < 2^9) the same bound; a score handed back leaves
 * acc + B in its slot.
 *
 * With RVNE_DSP_DEFECT (the test's must-fail build) the band goes: exact
 * negative halves then round up, the spec's named rounding defect. */
#include "dsp.h"

    .text

    /* One score; `biased`: the sum started at B (a13) carries the offset. */
    .macro  SCORE yo, amb, biased
    mov     a8, a3
    wsr     a13, acclo
    loop    a7, 2f
    mula.dd.ll.ldinc    m1, a8, m0, m2
    mula.dd.hh.ldinc    m0, a8, m0, m2
    mula.dd.ll.ldinc    m2, a4, m1, m3
    mula.dd.hh.ldinc    m3, a4, m1, m3
2:
    rsr     a10, acclo
    float.s f0, a10, 0
    .if \biased
    mul.s   f2, f0, f1
    .else
    mov.s   f2, f15
    madd.s  f2, f0, f1
    .endif
    trunc.s a15, f2, 14
#if !defined(RVNE_DSP_DEFECT)
    bnone   a15, a9, \amb
#endif
    max     a11, a11, a15
    srai    a15, a15, 14
    s32i    a15, a2, \yo
    .endm

    /* The positions, two a pass; from the caller's prologue below. */
    .macro  PASSES biased
    beq     a2, a6, .Ldone\@
    sub     a10, a6, a2
    bbsi    a10, 2, .Lodd\@
.Lpair\@:
    SCORE   0, .Lamb0\@, \biased
.Lsecond\@:
    SCORE   4, .Lamb1\@, \biased
    addi    a2, a2, 8
    bltu    a2, a6, .Lpair\@
.Ldone\@:
    sub     a2, a2, a12
    srli    a2, a2, 2
    s32i    a11, a5, 4
    retw
.Lodd\@:                        /* an odd count starts in the pair's second half */
    addi    a2, a2, -4
    j       .Lsecond\@
.Lamb1\@:
    addi    a2, a2, 4
.Lamb0\@:
    s32i    a10, a2, 0          /* the sum (plus B), for the caller's rq */
    sub     a2, a2, a12
    srli    a2, a2, 2
    s32i    a11, a5, 4
    retw
    .endm

DSP_FUNC(rvne_dsp_scores_i8)
    entry   a1, 32
    mov     a12, a2
    addx4   a6, a6, a2          /* sc end */
    movi    a9, 0x3fe
    slli    a9, a9, 4           /* 0x3fe0: Z's bits 5..13, the band */
    movi    a10, 0x3f0
    slli    a10, a10, 20
    addmi   a10, a10, 0x4000    /* 0x3f004000 = 0.5 + 2^-10 */
    wfr     f15, a10
    lsi     f1, a5, 0
    l32i    a11, a5, 4          /* zmax */
    l32i    a13, a5, 8          /* B, or 0 */
    addi    a4, a4, -4
    ldinc   m2, a4
    ldinc   m3, a4
    addi    a8, a3, -4
    ldinc   m0, a8
    bnez    a13, .Lbiased
    PASSES  0
.Lbiased:
    PASSES  1
    .size   rvne_dsp_scores_i8, . - rvne_dsp_scores_i8
