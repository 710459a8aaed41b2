/* void rvne_x16_i8_lx6(int16_t *x16, const int8_t *x, uint32_t n_in)
 * rvne/kernels.h's rvne_x16_i8, the same values as its C twin
 * rvne_x16_i8_c: x16[i] = x[i] for i < n_in, zeros up to end =
 * 2 * RVNE_I8_ROW_WORDS(n_in), then x16[0], x16[1] again after that end.
 * a2 = x16, a3 = x (any alignment), a4 = n_in.
 *
 * Why assembly: the push widens every query head, x and o with this (about
 * 550 values a push at the default head), and llc keeps a counter and a
 * branch in the C twin's loop, 7 instructions a value; here a zero-overhead
 * loop of four values a turn, 3.5 a value. Byte loads, not a word and
 * shifts: a query head's q8 need not be 4-byte aligned.
 *
 * With RVNE_DSP_DEFECT (the test's must-fail build) every fourth value is
 * zero-extended: negative values there come out 256 too large. */
#include "dsp.h"

    .text

DSP_FUNC(rvne_x16_i8_lx6)
    entry   a1, 32
    srli    a5, a4, 2           /* whole quads */
    mov     a9, a2
    loopnez a5, 1f
    l8ui    a6, a3, 0
    l8ui    a7, a3, 1
    l8ui    a8, a3, 2
    l8ui    a10, a3, 3
    sext    a6, a6, 7
    sext    a7, a7, 7
    sext    a8, a8, 7
#if !defined(RVNE_DSP_DEFECT)
    sext    a10, a10, 7
#endif
    s16i    a6, a9, 0
    s16i    a7, a9, 2
    s16i    a8, a9, 4
    s16i    a10, a9, 6
    addi    a3, a3, 4
    addi    a9, a9, 8
1:
    extui   a5, a4, 0, 2        /* values left, 0 .. 3 */
    beqz    a5, 3f
    /* the last quad: zeros first (its value 0 is never padding), then the values over them */
    movi    a6, 0
    s16i    a6, a9, 2
    s16i    a6, a9, 4
    s16i    a6, a9, 6
    loop    a5, 3f
    l8ui    a6, a3, 0
    sext    a6, a6, 7
    s16i    a6, a9, 0
    addi    a3, a3, 1
    addi    a9, a9, 2
3:
    addi    a5, a4, 3
    srli    a5, a5, 2
    addx8   a5, a5, a2          /* x16 + end */
    l16ui   a6, a2, 0
    l16ui   a7, a2, 2
    s16i    a6, a5, 0
    s16i    a7, a5, 2
    retw
    .size   rvne_x16_i8_lx6, . - rvne_x16_i8_lx6
