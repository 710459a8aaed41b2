/* float rvne_softmax_exp_f32_ae32(float *att, uint32_t n): rvne/kernels.h's
 * rvne_softmax_exp_f32 on the LX6 FPU. att[j] = e^(att[j] - max) in place,
 * returns their sum, added in order as the C twin does. The exponential is
 * exp_neg.h's sequence inline, one instruction per line of its C model
 * (madd.s/msub.s are its fmaf: QEMU's are fused, docs/model.md), 27
 * instructions per element with no call and no branch; the C twin calls
 * the libc expf instead, so the two agree within their two error bounds,
 * and this file agrees with exp_neg.h bit for bit (lx6-test checks both).
 *
 * a2 att (walks), a3 n, a4 constants, a5 k's bits, a6 walks (the max, the
 * stores);
 * f0 max, f1 -104, f2 shift, f3 log2e, f4 ln2_hi, f5 ln2_lo, f6 c6, f7 sum,
 * f8 x then r, f9 t then k, f10/f11 the polynomial and the scale. */
#include "exp_neg.h"

    .section .note.GNU-stack, "", @progbits

    .section .rodata.rvne_softmax_exp_f32_ae32, "a"
    .balign 4
expn_tab:
    .long   EXPN_X_MIN, EXPN_SHIFT, EXPN_LOG2E, EXPN_LN2_HI, EXPN_LN2_LO, EXPN_C6
    .long   EXPN_C5, EXPN_C4, EXPN_C3, EXPN_C2, EXPN_C1, EXPN_C0
#define TAB_C5 24
#define TAB_C4 28
#define TAB_C3 32
#define TAB_C2 36
#define TAB_C1 40
#define TAB_C0 44

    .section .text.rvne_softmax_exp_f32_ae32, "ax"
    .literal_position
    .literal .Lneg_inf, 0xFF800000
    .literal .Ltab, expn_tab
    .balign 4
    .global rvne_softmax_exp_f32_ae32
    .type   rvne_softmax_exp_f32_ae32, @function
rvne_softmax_exp_f32_ae32:
    entry   a1, 32
    movi    a4, 0
    wfr     f7, a4                  /* sum = +0 */
    beqz    a3, .Ldone
    /* The max as the C twin takes it: from -inf, a NaN never wins. */
    l32r    a4, .Lneg_inf
    wfr     f0, a4
    mov     a6, a2
    loop    a3, .Lmax_end
    lsip    f8, a6, 4
    olt.s   b0, f0, f8
    movt.s  f0, f8, b0
.Lmax_end:
    l32r    a4, .Ltab
    lsi     f1, a4, 0
    lsi     f2, a4, 4
    lsi     f3, a4, 8
    lsi     f4, a4, 12
    lsi     f5, a4, 16
    lsi     f6, a4, 20
    mov     a6, a2
    loop    a3, .Lexp_end
    lsip    f8, a2, 4
    sub.s   f8, f8, f0              /* x = att[j] - max */
    olt.s   b0, f8, f1
    movt.s  f8, f1, b0              /* x < -104: -104 */
    mov.s   f9, f2
    madd.s  f9, f8, f3              /* t = fma(x, log2e, S) */
    rfr     a5, f9
    sub.s   f9, f9, f2              /* k */
    msub.s  f8, f9, f4              /* r = fma(-k, ln2_hi, x) */
#if !defined(RVNE_DSP_DEFECT)
    msub.s  f8, f9, f5              /* r = fma(-k, ln2_lo, r) */
#endif                              /* (test-only defect: ln 2's low part forgotten) */
    lsi     f10, a4, TAB_C5
    madd.s  f10, f6, f8
    lsi     f11, a4, TAB_C4
    madd.s  f11, f10, f8
    lsi     f10, a4, TAB_C3
    madd.s  f10, f11, f8
    lsi     f11, a4, TAB_C2
    madd.s  f11, f10, f8
    lsi     f10, a4, TAB_C1
    madd.s  f10, f11, f8
    lsi     f11, a4, TAB_C0
    madd.s  f11, f10, f8            /* p */
    slli    a5, a5, 23
    wfr     f10, a5                 /* 2^(k + 64) */
    mul.s   f11, f11, f10
    ssip    f11, a6, 4
    add.s   f7, f7, f11
.Lexp_end:
.Ldone:
    rfr     a2, f7
    retw
    .size   rvne_softmax_exp_f32_ae32, . - rvne_softmax_exp_f32_ae32
