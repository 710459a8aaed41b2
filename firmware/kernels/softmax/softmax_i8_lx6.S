/* void rvne_softmax_i8_lx6(int16_t *np16, int32_t *sc, uint32_t n, uint32_t len,
 *                          const uint16_t *exp_tab, int32_t mx)
 * rvne/kernels.h's rvne_softmax_i8, the same bits as its C twin
 * rvne_softmax_i8_c (docs/model.md, integer model):
 *   mx = max sc[j] (the scores' kernel returns it: no pass here), e_j =
 *   exp_tab[min(mx - sc[j], 255)] (the difference
 *   unsigned: it can reach 2^32 - 1), S = sum e_j,
 *   np16[j] = -floor((e_j * 32768 + floor(S / 2)) / S), j < n;
 *   np16[j] = 0 for j in [n, 2 * RVNE_I8_ROW_WORDS(len)), then np16's
 *   word 0 again after that end.
 * a2 = np16, a3 = sc (read only), a4 = n, a5 = len, a6 = exp_tab, a7 = mx.
 *
 * Why assembly: llc keeps a counter and a branch in each of the C twin's
 * loops, about 8 instructions per element each; here the zero-overhead
 * loops, two elements a turn, and e_j parked in np16 itself (it fits:
 * e_j <= 65535) so the division pass walks one pointer: 14.5 per element.
 * The division stays quou, exact: e_j * 32768 + S / 2 < 2^31 + 2^31 (e_j
 * < 2^16, S / 2 <= W * 2^15 < 2^31), so the unsigned sum cannot wrap.
 *
 * With RVNE_DSP_DEFECT (the test's must-fail build) the floor(S / 2)
 * nudge goes: model.md's named "dividing without the nudge" defect. */
#include "dsp.h"

    .text

DSP_FUNC(rvne_softmax_i8_lx6)
    entry   a1, 32
    srli    a10, a4, 1          /* element pairs */
    beqz    a4, .Lpad

    mov     a8, a7              /* mx */

    /* e_j into np16 (as uint16), S */
    movi    a13, 255
    movi    a14, 0
    mov     a9, a3
    mov     a15, a2
    loopnez a10, 1f
    l32i    a11, a9, 0
    l32i    a12, a9, 4
    sub     a11, a8, a11
    sub     a12, a8, a12
    minu    a11, a11, a13
    minu    a12, a12, a13
    addx2   a11, a11, a6
    addx2   a12, a12, a6
    l16ui   a11, a11, 0
    l16ui   a12, a12, 0
    add     a14, a14, a11
    add     a14, a14, a12
    s16i    a11, a15, 0
    s16i    a12, a15, 2
    addi    a9, a9, 8
    addi    a15, a15, 4
1:
    bbci    a4, 0, 2f
    l32i    a11, a9, 0
    sub     a11, a8, a11
    minu    a11, a11, a13
    addx2   a11, a11, a6
    l16ui   a11, a11, 0
    add     a14, a14, a11
    s16i    a11, a15, 0
2:

    /* np16[j] = -p_j in place */
#if defined(RVNE_DSP_DEFECT)
    movi    a7, 0
#else
    srli    a7, a14, 1
#endif
    mov     a15, a2
    loopnez a10, 1f
    l16ui   a11, a15, 0
    l16ui   a12, a15, 2
    slli    a11, a11, 15
    slli    a12, a12, 15
    add     a11, a11, a7
    add     a12, a12, a7
    quou    a11, a11, a14
    quou    a12, a12, a14
    neg     a11, a11
    neg     a12, a12
    s16i    a11, a15, 0
    s16i    a12, a15, 2
    addi    a15, a15, 4
1:
    bbci    a4, 0, .Lpad
    l16ui   a11, a15, 0
    slli    a11, a11, 15
    add     a11, a11, a7
    quou    a11, a11, a14
    neg     a11, a11
    s16i    a11, a15, 0

.Lpad:
    /* zeros over [n, end), end = (len + 3) & ~3 = 2 * RVNE_I8_ROW_WORDS(len) */
    addi    a5, a5, 3
    srli    a5, a5, 2
    slli    a5, a5, 2
    addx2   a9, a4, a2
    addx2   a5, a5, a2
    movi    a8, 0
    bgeu    a9, a5, 2f
1:
    s16i    a8, a9, 0
    addi    a9, a9, 2
    bltu    a9, a5, 1b
2:
    l16ui   a8, a2, 0
    l16ui   a9, a2, 2
    s16i    a8, a5, 0
    s16i    a9, a5, 2
    retw
    .size   rvne_softmax_i8_lx6, . - rvne_softmax_i8_lx6
