/* float rvne_softmax_exp_f32_ae32(float *att, uint32_t n): rvne/kernels.h's
 * rvne_softmax_exp_f32 on the LX6 FPU. att[j] = e^(att[j] - max) in place,
 * returns their sum, added in order as the C twin does. The exponential is
 * exp_neg.h's sequence inline, one instruction per line of its C model
 * (madd.s is its fmaf: QEMU's is fused, docs/model.md): a table of
 * e^(-k/64) and a quadratic, 10 instructions, 14 per element with the
 * load, the shift, the store and the sum, no call and no branch. The C
 * twin calls the libc expf instead, so the two agree within their two
 * error bounds, and this file agrees with exp_neg.h bit for bit (lx6-test
 * checks both).
 *
 * a2 att (loads), a3 n, a4 the table, a5 its last index, a6 att (stores),
 * a7 k, a8 &tab[k];
 * f0 max, f1 y = max - att[j], f2 T then e, f3 k/64 then r, f4 T r,
 * f5 the quadratic's factor, f6 c1, f7 c2, f8 the sum. */
#include "exp_neg.h"

    .section .note.GNU-stack, "", @progbits

    .section .rodata.rvne_softmax_exp_f32_ae32, "a"
    .balign 4
expn_tab:
#define EXPN_ROW(...) .long __VA_ARGS__
#include "exp_tab.h"

    .section .text.rvne_softmax_exp_f32_ae32, "ax"
    .literal_position
    .literal .Lneg_inf, 0xFF800000
    .literal .Ltab, expn_tab
    .literal .Lc1, EXPN_C1
    .literal .Lc2, EXPN_C2
    .balign 4
    .global rvne_softmax_exp_f32_ae32
    .type   rvne_softmax_exp_f32_ae32, @function
rvne_softmax_exp_f32_ae32:
    entry   a1, 32
    movi    a4, 0
    wfr     f8, a4                  /* sum = +0 */
    beqz    a3, .Ldone
    /* The max as the C twin takes it: from -inf, a NaN never wins. */
    l32r    a4, .Lneg_inf
    wfr     f0, a4
    mov     a6, a2
    loop    a3, .Lmax_end
    lsip    f1, a6, 4
    olt.s   b0, f0, f1
    movt.s  f0, f1, b0
.Lmax_end:
    l32r    a4, .Lc1
    wfr     f6, a4
    l32r    a4, .Lc2
    wfr     f7, a4
    l32r    a4, .Ltab
    movi    a5, EXPN_TAB_LAST
    mov     a6, a2
    loop    a3, .Lexp_end
    lsip    f1, a2, 4
    sub.s   f1, f0, f1              /* y = max - att[j] = -x */
    round.s a7, f1, EXPN_SCALE_LOG2 /* k = round(64 y) */
    minu    a7, a7, a5              /* past the table (NaN too): its 0 */
    addx4   a8, a7, a4
    lsi     f2, a8, 0               /* T = e^(-k/64) */
    float.s f3, a7, EXPN_SCALE_LOG2
#if !defined(RVNE_DSP_DEFECT)
    sub.s   f3, f3, f1              /* r = k/64 - y */
#else
    sub.s   f3, f1, f3              /* (test-only defect: r's sign flipped) */
#endif
    mul.s   f4, f2, f3
    mov.s   f5, f6
    madd.s  f5, f7, f3              /* c1 + c2 r */
    madd.s  f2, f4, f5              /* e = T + T r (c1 + c2 r) */
    ssip    f2, a6, 4
    add.s   f8, f8, f2
.Lexp_end:
.Ldone:
    rfr     a2, f8
    retw
    .size   rvne_softmax_exp_f32_ae32, . - rvne_softmax_exp_f32_ae32
