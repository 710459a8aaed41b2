/* rvne_scores_f32 for 4 query heads (h4) or one (h1) of a kv head
 * (kernels_ae32.c drives them): att[m*n + j] = scale * (q_m . k_j).
 *
 * h4 takes 3 keys at a time: 12 dot products in f0-f11; per element i, the
 * 3 keys' k_j[i] in f12-f14 and each head's q_m[i] in turn in f15, so 7
 * loads serve 12 madd.s (a key is loaded once for the 4 heads). Keys left
 * over (n mod 3) go one at a time, 4 heads each. h1 takes 4 keys at a time,
 * then one. Every pointer moves by post-increment (lsip).
 *
 *   a2 = att (head m0's row), a3 = q (head m0), a4 = k (position 0),
 *   a5 = rvne_attn *, a6 = scale (its bits)
 *
 * a0 is saved on the stack and counts the keys left. */
#include "dsp.h"

    .text

/* The q_m[i] of head m (pointer qp) against the keys in f12..: acc += q*k. */
    .macro  HEAD3 qp, f_a, f_b, f_c
    lsip    f15, \qp, 4
    madd.s  \f_a, f15, f12
    madd.s  \f_b, f15, f13
    madd.s  \f_c, f15, f14
    .endm


DSP_FUNC(rvne_dsp_scores_h4)
    entry   a1, 32
    s32i    a0, a1, 0
    l32i    a7, a5, 0               /* hd */
    l32i    a8, a5, 12
    slli    a8, a8, 2               /* q stride, bytes */
    l32i    a0, a5, 4               /* keys left */
.Ls4_blk:
    bgeui   a0, 3, 1f
    j       .Ls4_one                /* (bltui reaches 127 bytes) */
1:
    ZERO12  a9
    l32i    a9, a5, 16
    slli    a9, a9, 2               /* kv stride, bytes */
    mov     a13, a4
    add     a14, a13, a9
    add     a15, a14, a9
    add     a4, a15, a9             /* the next block's first key */
    PTRS4   a9, a10, a11, a12, a3, a8
    loopnez a7, .Ls4_blk_end
    lsip    f12, a13, 4
    lsip    f13, a14, 4
    lsip    f14, a15, 4
    HEAD3   a9, f0, f1, f2
    HEAD3   a10, f3, f4, f5
    HEAD3   a11, f6, f7, f8
    HEAD3   a12, f9, f10, f11
.Ls4_blk_end:
    wfr     f12, a6
    MULS    f12, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10
#if !defined(RVNE_DSP_DEFECT)       /* test-only defect: one score left unscaled */
    mul.s   f11, f11, f12
#endif
    l32i    a9, a5, 4
    slli    a9, a9, 2               /* att row stride, bytes */
    STORE_4x3 a2, a9, a10
    addi    a2, a2, 12
    addi    a0, a0, -3
    j       .Ls4_blk
.Ls4_one:                           /* 0 .. 2 keys left, one at a time */
    beqz    a0, .Ls4_done
    ZERO4   a9
    l32i    a9, a5, 16
    slli    a9, a9, 2
    mov     a13, a4
    add     a4, a4, a9
    PTRS4   a9, a10, a11, a12, a3, a8
    loopnez a7, .Ls4_one_end
    lsip    f12, a13, 4
    MADD_4x1 f12
.Ls4_one_end:
    wfr     f12, a6
    MULS    f12, f0, f1, f2, f3
    l32i    a9, a5, 4
    slli    a9, a9, 2
    STORE_4x1 a2, a9, a10
    addi    a2, a2, 4
    addi    a0, a0, -1
    j       .Ls4_one
.Ls4_done:
    l32i    a0, a1, 0
    retw

DSP_FUNC(rvne_dsp_scores_h1)
    entry   a1, 32
    s32i    a0, a1, 0
    l32i    a7, a5, 0               /* hd */
    l32i    a8, a5, 16
    slli    a8, a8, 2               /* kv stride, bytes */
    l32i    a0, a5, 4               /* keys left */
.Ls1_blk:
    bgeui   a0, 4, 1f
    j       .Ls1_one
1:
    ZERO4   a9
    mov     a9, a3
    PTRS4   a10, a11, a12, a13, a4, a8
    add     a4, a13, a8
    loopnez a7, .Ls1_blk_end
    lsip    f15, a9, 4
    lsip    f12, a10, 4
    madd.s  f0, f15, f12
    lsip    f13, a11, 4
    madd.s  f1, f15, f13
    lsip    f12, a12, 4
    madd.s  f2, f15, f12
    lsip    f13, a13, 4
    madd.s  f3, f15, f13
.Ls1_blk_end:
    wfr     f12, a6
    MULS    f12, f0, f1, f2, f3
    STORE4  a2, f0, f1, f2, f3
    addi    a2, a2, 16
    addi    a0, a0, -4
    j       .Ls1_blk
.Ls1_one:
    beqz    a0, .Ls1_done
    ZERO1   a9
    mov     a9, a3
    mov     a10, a4
    add     a4, a4, a8
    loopnez a7, .Ls1_one_end
    lsip    f15, a9, 4
    lsip    f12, a10, 4
    madd.s  f0, f15, f12
.Ls1_one_end:
    wfr     f12, a6
    mul.s   f0, f0, f12
    ssi     f0, a2, 0
    addi    a2, a2, 4
    addi    a0, a0, -1
    j       .Ls1_one
.Ls1_done:
    l32i    a0, a1, 0
    retw
