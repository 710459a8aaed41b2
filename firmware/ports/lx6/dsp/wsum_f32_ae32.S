/* rvne_wsum_f32 for 4 query heads (h4) or one (h1) of a kv head
 * (kernels_ae32.c drives them): out_m[i] = scale[m] * sum_j att[m*n + j] *
 * v_j[i], the sums over all n positions held in FP registers.
 *
 * h4 takes 3 elements i at a time: 12 sums in f0-f11; per position j, v_j's
 * 3 elements in f14, f12, f13 and each head's weight att[m*n + j] in turn
 * in f15, so 7 loads serve 12 madd.s (a value is loaded once for the 4
 * heads). Elements left over (hd mod 3) go one at a time. h1 takes 4
 * elements at a time, then one. v_j's first element is loaded last, by
 * lsxp, which steps to v_{j+1}; the weights by post-increment (lsip).
 *
 *   a2 = out (head m0), a3 = att (head m0's row), a4 = v (position 0),
 *   a5 = rvne_attn *, a6 = scale (head m0's)
 *
 * a0 is saved on the stack and counts the elements left. */
#include "dsp.h"

    .text

/* Head m's weight (pointer ap) times the elements in f14, f12, f13. */
    .macro  HEAD3 ap, f_a, f_b, f_c
    lsip    f15, \ap, 4
    madd.s  \f_a, f15, f14
    madd.s  \f_b, f15, f12
    madd.s  \f_c, f15, f13
    .endm

/* The weight pointers a9-a12 at rows m0 .. m0 + 3 of att. */
    .macro  ROWS4
    slli    a14, a7, 2
    mov     a9, a3
    add     a10, a9, a14
    add     a11, a10, a14
    add     a12, a11, a14
    .endm

DSP_FUNC(rvne_dsp_wsum_h4)
    entry   a1, 32
    s32i    a0, a1, 0
    l32i    a0, a5, 0               /* elements left */
    l32i    a7, a5, 4               /* n */
    l32i    a8, a5, 16
    slli    a8, a8, 2               /* kv stride, bytes */
.Lw4_blk:
    bgeui   a0, 3, 1f
    j       .Lw4_one                /* (bltui reaches 127 bytes) */
1:
    ZERO12  a9
    ROWS4
    mov     a13, a4
    loopnez a7, .Lw4_blk_end
    lsi     f12, a13, 4
    lsi     f13, a13, 8
    lsxp    f14, a13, a8
    HEAD3   a9, f0, f1, f2
    HEAD3   a10, f3, f4, f5
    HEAD3   a11, f6, f7, f8
    HEAD3   a12, f9, f10, f11
.Lw4_blk_end:
    lsi     f12, a6, 0
    mul.s   f0, f0, f12
    mul.s   f1, f1, f12
    mul.s   f2, f2, f12
    lsi     f12, a6, 4
    mul.s   f3, f3, f12
    mul.s   f4, f4, f12
    mul.s   f5, f5, f12
    lsi     f12, a6, 8
    mul.s   f6, f6, f12
    mul.s   f7, f7, f12
    mul.s   f8, f8, f12
    lsi     f12, a6, 12
    mul.s   f9, f9, f12
    mul.s   f10, f10, f12
#if !defined(RVNE_DSP_DEFECT)       /* test-only defect: one sum left unscaled */
    mul.s   f11, f11, f12
#endif
    l32i    a15, a5, 12
    slli    a15, a15, 2             /* q (out) stride, bytes */
    ssi     f0, a2, 0
    ssi     f1, a2, 4
    ssi     f2, a2, 8
    add     a14, a2, a15
    ssi     f3, a14, 0
    ssi     f4, a14, 4
    ssi     f5, a14, 8
    add     a14, a14, a15
    ssi     f6, a14, 0
    ssi     f7, a14, 4
    ssi     f8, a14, 8
    add     a14, a14, a15
    ssi     f9, a14, 0
    ssi     f10, a14, 4
    ssi     f11, a14, 8
    addi    a2, a2, 12
    addi    a4, a4, 12
    addi    a0, a0, -3
    j       .Lw4_blk
.Lw4_one:                           /* 0 .. 2 elements left, one at a time */
    beqz    a0, .Lw4_done
    ZERO4   a9
    ROWS4
    mov     a13, a4
    loopnez a7, .Lw4_one_end
    lsxp    f12, a13, a8
    lsip    f15, a9, 4
    madd.s  f0, f15, f12
    lsip    f15, a10, 4
    madd.s  f1, f15, f12
    lsip    f15, a11, 4
    madd.s  f2, f15, f12
    lsip    f15, a12, 4
    madd.s  f3, f15, f12
.Lw4_one_end:
    lsi     f12, a6, 0
    mul.s   f0, f0, f12
    lsi     f12, a6, 4
    mul.s   f1, f1, f12
    lsi     f12, a6, 8
    mul.s   f2, f2, f12
    lsi     f12, a6, 12
    mul.s   f3, f3, f12
    l32i    a15, a5, 12
    slli    a15, a15, 2
    ssi     f0, a2, 0
    add     a14, a2, a15
    ssi     f1, a14, 0
    add     a14, a14, a15
    ssi     f2, a14, 0
    add     a14, a14, a15
    ssi     f3, a14, 0
    addi    a2, a2, 4
    addi    a4, a4, 4
    addi    a0, a0, -1
    j       .Lw4_one
.Lw4_done:
    l32i    a0, a1, 0
    retw

DSP_FUNC(rvne_dsp_wsum_h1)
    entry   a1, 32
    s32i    a0, a1, 0
    l32i    a0, a5, 0               /* elements left */
    l32i    a7, a5, 4               /* n */
    l32i    a8, a5, 16
    slli    a8, a8, 2               /* kv stride, bytes */
    lsi     f14, a6, 0              /* this head's scale, for the whole call */
.Lw1_blk:
    bgeui   a0, 4, 1f
    j       .Lw1_one
1:
    ZERO4   a9
    mov     a9, a3
    mov     a13, a4
    loopnez a7, .Lw1_blk_end
    lsip    f15, a9, 4
    lsi     f12, a13, 4
    madd.s  f1, f15, f12
    lsi     f13, a13, 8
    madd.s  f2, f15, f13
    lsi     f12, a13, 12
    madd.s  f3, f15, f12
    lsxp    f13, a13, a8
    madd.s  f0, f15, f13
.Lw1_blk_end:
    mul.s   f0, f0, f14
    mul.s   f1, f1, f14
    mul.s   f2, f2, f14
    mul.s   f3, f3, f14
    ssi     f0, a2, 0
    ssi     f1, a2, 4
    ssi     f2, a2, 8
    ssi     f3, a2, 12
    addi    a2, a2, 16
    addi    a4, a4, 16
    addi    a0, a0, -4
    j       .Lw1_blk
.Lw1_one:
    beqz    a0, .Lw1_done
    ZERO1   a9
    mov     a9, a3
    mov     a13, a4
    loopnez a7, .Lw1_one_end
    lsip    f15, a9, 4
    lsxp    f12, a13, a8
    madd.s  f0, f15, f12
.Lw1_one_end:
    mul.s   f0, f0, f14
    ssi     f0, a2, 0
    addi    a2, a2, 4
    addi    a4, a4, 4
    addi    a0, a0, -1
    j       .Lw1_one
.Lw1_done:
    l32i    a0, a1, 0
    retw
