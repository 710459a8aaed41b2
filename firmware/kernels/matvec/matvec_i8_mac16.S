/* rvne_proj_i8's outputs on MAC16 (kernels_ae32.c drives it): y[c] =
 * sat8(rq(x . row_c, m_c, s_c)), one output at a time, its dot product in
 * the 40-bit accumulator, one mula.dd.*.ldinc per multiply-accumulate
 * (rvne/kernels.h: rows and x16 as int16 pairs, a row's words contiguous,
 * x16's word 0 repeated after its end).
 *
 *   uint32_t rvne_dsp_proj_i8(int8_t *y, const int16_t *x16, const uint32_t *rows,
 *                             rvne_dsp_pj *st, uint32_t n_out, uint32_t iters)
 *   a2 = y, a3 = x16, a4 = rows (output 0's), a5 = st (dsp.h: st->scale,
 *   output 0's scale), a6 = n_out, a7 = iters = row words / 2 (>= 1).
 *   Returns the outputs written: n_out, or the index of one the estimate
 *   below cannot settle, whose exact int32 sum it leaves in st->sum for the
 *   caller to requantize before calling again after (recomputing the sum
 *   in C would cost a weighted sum's 100 products 7 instructions each).
 *
 *   uint32_t rvne_dsp_proj16_i8(int16_t *y16, ...the same...)
 *   the same outputs as int16 (sign-extended): a query head's straight into
 *   its q16, a key head's into its ring row, the weighted sum's into the
 *   concatenated heads' x16, none widened after (the same count a value).
 *
 * The inner loop, two words (4 MACs) per turn: m0/m1 take x words (the
 * .dd forms' first operand), m2/m3 the row's; word A in m0/m2, word B in
 * m1/m3. Every load lands in a register whose reads in this turn are done
 * (the multiply in the same instruction reads first), or in one not yet read
 * in this turn (m1, loaded by the first multiply, read by the third). QEMU
 * 7.2 keeps an m register read by a multiply in a host register for the
 * rest of the translated block and does not see a later load into it
 * (ports/lx6/ktests/ktest_mac16.c pins it); the loop body is a translated block of
 * its own (the loop instruction ends the one before, the loop-back the body),
 * so no register is read, reloaded and read again in one block, and the
 * result is the ISA's on silicon and on QEMU alike. Unrolling the turn
 * further would reload and re-read within one block.
 *
 * The loads run one word ahead: the last turn of a row brings x16's extra
 * word (= word 0: the next output's first x word, in m0 already) and the
 * next row's first two words (m2, m3) - the prepared layout's 2 zero words
 * after the last row.
 *
 * Requantization, exact without a 64-bit product (this core has neither
 * MULSH nor MULUH): f = 0.5 + 2^-10 + float(acc) * scale_c (one madd.s),
 * Z = trunc(f * 2^14). With z = acc * m * 2^-s exact, the wanted rq is
 * floor(z + 1/2) except on exact negative halves, which lie in the band
 * below. |Z - (z + 0.5 + 2^-10) * 2^14| < 4 for |z| < 2^9: acc to float and
 * scale each carry 2^-24 relatively (|z| 2^-23 <= 2^-14), the madd.s's
 * rounding half an ulp of f (<= 2^-14; 2^-13 unfused), trunc under 2^-14.
 * So floor(Z / 2^14) is floor(z + 1/2) unless Z's low 14 bits are below
 * 16 + 4: those with bits 5..13 all clear (a band of 32 of 2^14, where
 * every exact half falls) go back to the caller. |z| >= 2^9 saturates
 * either way (trunc.s saturates too; Z = -2^31 lands in the band).
 *
 * With RVNE_DSP_DEFECT (the test's must-fail build) the band goes: exact
 * negative halves then round up, the spec's named rounding defect. */
#include "dsp.h"

    .text

    /* One output: its dot product, requantized, stored by `st` at a2 +
     * yo; to amb when the estimate is in the band. */
    .macro  OUTPUT st, yo, amb
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
    lsip    f1, a5, 4
    mov.s   f2, f15
    madd.s  f2, f0, f1
    trunc.s a14, f2, 14
#if !defined(RVNE_DSP_DEFECT)
    bnone   a14, a9, \amb
#endif
    srai    a14, a14, 14
    clamps  a14, a14, 7
    \st     a14, a2, \yo
    .endm

    /* The function: outputs of `size` bytes (log2 `lg`), stored by `st`,
     * their end y + n_out * size by `endop`. */
    .macro  PROJ name, st, size, lg, endop
DSP_FUNC(\name)
    entry   a1, 32
    mov     a15, a5             /* st: the scales, then the sum handed back */
    l32i    a5, a15, 0
    mov     a12, a2
    \endop  a6, a6, a2          /* y end */
    movi    a9, 0x3fe
    slli    a9, a9, 4           /* 0x3fe0: Z's bits 5..13, the band */
    movi    a10, 0x3f0
    slli    a10, a10, 20
    addmi   a10, a10, 0x4000    /* 0x3f004000 = 0.5 + 2^-10 */
    wfr     f15, a10
    movi    a13, 0
    addi    a4, a4, -4
    ldinc   m2, a4
    ldinc   m3, a4
    addi    a8, a3, -4
    ldinc   m0, a8
    beq     a2, a6, .Ldone\@
    sub     a10, a6, a2
    bbsi    a10, \lg, .Lodd\@
.Lpair\@:
    OUTPUT  \st, 0, .Lamb0\@
.Lsecond\@:
    OUTPUT  \st, \size, .Lamb1\@
    addi    a2, a2, 2 * \size
    bltu    a2, a6, .Lpair\@
.Ldone\@:
    sub     a2, a2, a12
    srli    a2, a2, \lg
    retw
.Lodd\@:                        /* an odd count starts in the pair's second half */
    addi    a2, a2, -\size
    j       .Lsecond\@
.Lamb1\@:
    addi    a2, a2, \size
.Lamb0\@:
    s32i    a10, a15, 4         /* the exact sum, for the caller's rq */
    sub     a2, a2, a12
    srli    a2, a2, \lg
    retw
    .size   \name, . - \name
    .endm

    PROJ    rvne_dsp_proj_i8, s8i, 1, 0, add
    PROJ    rvne_dsp_proj16_i8, s16i, 2, 1, addx2

/* void rvne_dsp_dots_i8(int32_t *y, const int16_t *x16, const uint32_t *rows,
 *                       uint32_t n_out, uint32_t iters)
 * The sums alone, y[c] = x . row_c in int32 (the classifier's logits are
 * not requantized): the same loop and loads, the accumulator's low word
 * stored. a2 = y, a3 = x16, a4 = rows, a5 = n_out (>= 1), a6 = iters.
 * With RVNE_DSP_DEFECT, a 16-bit accumulator (model.md's named defect). */
DSP_FUNC(rvne_dsp_dots_i8)
    entry   a1, 32
    addx4   a5, a5, a2          /* y end */
    movi    a13, 0
    addi    a4, a4, -4
    ldinc   m2, a4
    ldinc   m3, a4
    addi    a8, a3, -4
    ldinc   m0, a8
1:
    mov     a8, a3
    wsr     a13, acclo
    loop    a6, 2f
    mula.dd.ll.ldinc    m1, a8, m0, m2
    mula.dd.hh.ldinc    m0, a8, m0, m2
    mula.dd.ll.ldinc    m2, a4, m1, m3
    mula.dd.hh.ldinc    m3, a4, m1, m3
2:
    rsr     a10, acclo
#if defined(RVNE_DSP_DEFECT)
    sext    a10, a10, 15
#endif
    s32i    a10, a2, 0
    addi    a2, a2, 4
    bltu    a2, a5, 1b
    retw
    .size   rvne_dsp_dots_i8, . - rvne_dsp_dots_i8

/* uint32_t rvne_dsp_wsum_i8(int16_t *o16, const int16_t *np16, const uint32_t *rows,
 *                           rvne_dsp_ws *st, uint32_t hd, uint32_t iters)
 * The weighted sum's outputs (rvne_wsum_i8_ae32): rvne_dsp_proj16_i8 on
 * -p_j with one scale for all, st->nscale = -rvne_i8_scale(rq_o), held in
 * f1 (no load an output), and with st->bias = -B != 0 (rvne_i8_est of
 * rq_o) each sum starting at -B: (acc - B) * -scale = z + B * scale, the
 * offset with the sum as in scores_i8_mac16.S, no float add. Returns the
 * outputs written, or the index of one handed back with its sum (plus
 * st->bias) in st->sum. */
    .macro  WOUT yo, amb, biased
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
    trunc.s a14, f2, 14
#if !defined(RVNE_DSP_DEFECT)
    bnone   a14, a9, \amb
#endif
    srai    a14, a14, 14
    clamps  a14, a14, 7
    s16i    a14, a2, \yo
    .endm

    .macro  WPASSES biased
    beq     a2, a6, .Lwdone\@
    sub     a10, a6, a2
    bbsi    a10, 1, .Lwodd\@
.Lwpair\@:
    WOUT    0, .Lwamb0\@, \biased
.Lwsecond\@:
    WOUT    2, .Lwamb1\@, \biased
    addi    a2, a2, 4
    bltu    a2, a6, .Lwpair\@
.Lwdone\@:
    sub     a2, a2, a12
    srli    a2, a2, 1
    retw
.Lwodd\@:
    addi    a2, a2, -2
    j       .Lwsecond\@
.Lwamb1\@:
    addi    a2, a2, 2
.Lwamb0\@:
    s32i    a10, a5, 8          /* the sum (plus the bias), for the caller's rq */
    sub     a2, a2, a12
    srli    a2, a2, 1
    retw
    .endm

DSP_FUNC(rvne_dsp_wsum_i8)
    entry   a1, 32
    mov     a12, a2
    addx2   a6, a6, a2          /* o16 end */
    movi    a9, 0x3fe
    slli    a9, a9, 4           /* 0x3fe0: Z's bits 5..13, the band */
    movi    a10, 0x3f0
    slli    a10, a10, 20
    addmi   a10, a10, 0x4000    /* 0x3f004000 = 0.5 + 2^-10 */
    wfr     f15, a10
    lsi     f1, a5, 0           /* -scale */
    l32i    a13, a5, 4          /* -B, or 0 */
    addi    a4, a4, -4
    ldinc   m2, a4
    ldinc   m3, a4
    addi    a8, a3, -4
    ldinc   m0, a8
    bnez    a13, .Lwbiased
    WPASSES 0
.Lwbiased:
    WPASSES 1
    .size   rvne_dsp_wsum_i8, . - rvne_dsp_wsum_i8
