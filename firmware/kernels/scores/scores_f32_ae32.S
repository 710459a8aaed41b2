/* rvne_scores_f32 for 4, 3 or 2 query heads (h4, h3, h2) or one (h1) of
 * a kv head (kernels_ae32.c drives them): att[m*n + j] = scale * (q_m . k_j).
 *
 * h4 takes 3 keys at a time: 12 dot products in f0-f11; per element i, the
 * 3 keys' k_j[i] in f12-f14 and each head's q_m[i] in turn in f15, so 7
 * loads serve 12 madd.s (a key is loaded once for the 4 heads): 19/12
 * instructions per multiply-add, the floor of 16 FP registers
 * (docs/targets.md, "Kernels"). Two keys left over go as a block of 2 (8
 * sums), one as a block of 1. Element 0 is multiplied (mul.s), so no sum
 * is zeroed, and the zero-overhead loop runs hd - 1 times (hd >= 1: the
 * driver gives hd = 0 to the C twin). h1 takes 7 keys at a time, then 4,
 * then one.
 * Every pointer moves by post-increment (lsip).
 *
 *   a2 = att (head m0's row), a3 = q (head m0), a4 = k (position 0),
 *   a5 = rvne_attn *, a6 = scale (its bits)
 *
 * h4 keeps a0 (saved on the stack) for the keys left and the att row
 * stride at a1 + 4; a5 becomes the kv stride, a7 = hd - 1, a8 the q
 * stride (bytes); a9-a12 walk the 4 heads' q, a13-a15 the block's keys. */
#include "dsp.h"

    .text

/* Head m's q_m[i] (pointer qp) times the block's keys: op is mul.s for
 * element 0, madd.s after. */
    .macro  HEAD3 op, qp, f_a, f_b, f_c
    lsip    f15, \qp, 4
    \op     \f_a, f15, f12
    \op     \f_b, f15, f13
    \op     \f_c, f15, f14
    .endm
    .macro  HEAD2 op, qp, f_a, f_b
    lsip    f15, \qp, 4
    \op     \f_a, f15, f12
    \op     \f_b, f15, f13
    .endm
    .macro  HEAD1 op, qp, f_a
    lsip    f15, \qp, 4
    \op     \f_a, f15, f12
    .endm

/* One element i of a block of 3, 2 or 1 keys, for the 4 heads. */
    .macro  ELEM3 op
    lsip    f12, a13, 4
    lsip    f13, a14, 4
    lsip    f14, a15, 4
    HEAD3   \op, a9, f0, f1, f2
    HEAD3   \op, a10, f3, f4, f5
    HEAD3   \op, a11, f6, f7, f8
    HEAD3   \op, a12, f9, f10, f11
    .endm
    .macro  ELEM2 op
    lsip    f12, a13, 4
    lsip    f13, a14, 4
    HEAD2   \op, a9, f0, f1
    HEAD2   \op, a10, f2, f3
    HEAD2   \op, a11, f4, f5
    HEAD2   \op, a12, f6, f7
    .endm
    .macro  ELEM1 op
    lsip    f12, a13, 4
    HEAD1   \op, a9, f0
    HEAD1   \op, a10, f1
    HEAD1   \op, a11, f2
    HEAD1   \op, a12, f3
    .endm

/* A block's q pointers, element 0, then elements 1 .. hd - 1. */
    .macro  DOTS elem
    PTRS4   a9, a10, a11, a12, a3, a8
    \elem   mul.s
    loopnez a7, 1f
    \elem   madd.s
1:
    .endm

/* h4's, h3's and h2's entry: a0 keys left, att row stride at a1 + 4, a5 kv stride,
 * a7 = hd - 1, a8 q stride (bytes). */
    .macro  SCORES_ENTRY
    entry   a1, 32
    s32i    a0, a1, 0
    l32i    a7, a5, 0
    addi    a7, a7, -1
    l32i    a8, a5, 12
    slli    a8, a8, 2
    l32i    a0, a5, 4
    slli    a9, a0, 2
    s32i    a9, a1, 4
    l32i    a5, a5, 16
    slli    a5, a5, 2
    .endm

DSP_FUNC(rvne_dsp_scores_h4)
    SCORES_ENTRY
.Ls4_blk:
    bgeui   a0, 3, 1f
    j       .Ls4_rest               /* (bltui reaches 127 bytes) */
1:
    mov     a13, a4
    add     a14, a13, a5
    add     a15, a14, a5
    add     a4, a15, a5             /* the next block's first key */
    DOTS    ELEM3
    wfr     f12, a6
    MULS    f12, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10
#if !defined(RVNE_DSP_DEFECT)       /* test-only defect: one score left unscaled */
    mul.s   f11, f11, f12
#endif
    l32i    a9, a1, 4
    STORE_4x3 a2, a9, a10
    addi    a2, a2, 12
    addi    a0, a0, -3
    j       .Ls4_blk
.Ls4_rest:                          /* 0, 1 or 2 keys left */
    beqz    a0, .Ls4_done
    beqi    a0, 2, 1f
    j       .Ls4_one
1:
    mov     a13, a4
    add     a14, a13, a5
    DOTS    ELEM2
    wfr     f12, a6
    MULS    f12, f0, f1, f2, f3, f4, f5, f6, f7
    l32i    a9, a1, 4
    STORE2  a2, f0, f1
    add     a10, a2, a9
    STORE2  a10, f2, f3
    add     a10, a10, a9
    STORE2  a10, f4, f5
    add     a10, a10, a9
    STORE2  a10, f6, f7
    j       .Ls4_done
.Ls4_one:
    mov     a13, a4
    DOTS    ELEM1
    wfr     f12, a6
    MULS    f12, f0, f1, f2, f3
    l32i    a9, a1, 4
    STORE_4x1 a2, a9, a10
.Ls4_done:
    l32i    a0, a1, 0
    retw

/* h3: 3 heads x 4 keys, h2: 2 heads x 5 keys, the same 12 (10) sums in
 * f0-f11, but the heads' q_m[i] held (f12-f14) and the keys streamed
 * through f15 (h2: f14): 7 loads for 12 madd.s (h2: 7 for 10). Only whole
 * blocks; the driver gives the keys left over to h1. Registers as h4's,
 * but a9.. walk the heads' q, then the block's keys. */

/* Key pointer kp's k_j[i] times the held q of 3 (2) heads. */
    .macro  KEY3 op, kp, f_a, f_b, f_c
    lsip    f15, \kp, 4
    \op     \f_a, f12, f15
    \op     \f_b, f13, f15
    \op     \f_c, f14, f15
    .endm
    .macro  KEY2 op, kp, f_a, f_b
    lsip    f14, \kp, 4
    \op     \f_a, f12, f14
    \op     \f_b, f13, f14
    .endm
    .macro  ELEM_H3 op
    lsip    f12, a9, 4
    lsip    f13, a10, 4
    lsip    f14, a11, 4
    KEY3    \op, a12, f0, f4, f8
    KEY3    \op, a13, f1, f5, f9
    KEY3    \op, a14, f2, f6, f10
    KEY3    \op, a15, f3, f7, f11
    .endm
    .macro  ELEM_H2 op
    lsip    f12, a9, 4
    lsip    f13, a10, 4
    KEY2    \op, a11, f0, f5
    KEY2    \op, a12, f1, f6
    KEY2    \op, a13, f2, f7
    KEY2    \op, a14, f3, f8
    KEY2    \op, a15, f4, f9
    .endm

DSP_FUNC(rvne_dsp_scores_h3)
    SCORES_ENTRY
.Ls3_blk:
    bgeui   a0, 4, 1f
    j       .Ls3_done
1:
    mov     a9, a3
    add     a10, a9, a8
    add     a11, a10, a8
    PTRS4   a12, a13, a14, a15, a4, a5
    add     a4, a15, a5
    ELEM_H3 mul.s
    loopnez a7, 2f
    ELEM_H3 madd.s
2:
    wfr     f12, a6
    MULS    f12, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10
#if !defined(RVNE_DSP_DEFECT)       /* test-only defect: one score left unscaled */
    mul.s   f11, f11, f12
#endif
    l32i    a9, a1, 4
    STORE4  a2, f0, f1, f2, f3
    add     a10, a2, a9
    STORE4  a10, f4, f5, f6, f7
    add     a10, a10, a9
    STORE4  a10, f8, f9, f10, f11
    addi    a2, a2, 16
    addi    a0, a0, -4
    j       .Ls3_blk
.Ls3_done:
    l32i    a0, a1, 0
    retw

DSP_FUNC(rvne_dsp_scores_h2)
    SCORES_ENTRY
.Ls2_blk:
    bgeui   a0, 5, 1f
    j       .Ls2_done
1:
    mov     a9, a3
    add     a10, a9, a8
    mov     a11, a4
    add     a12, a11, a5
    add     a13, a12, a5
    add     a14, a13, a5
    add     a15, a14, a5
    add     a4, a15, a5
    ELEM_H2 mul.s
    loopnez a7, 2f
    ELEM_H2 madd.s
2:
    wfr     f12, a6
    MULS    f12, f0, f1, f2, f3, f4, f5, f6, f7, f8
#if !defined(RVNE_DSP_DEFECT)       /* test-only defect: one score left unscaled */
    mul.s   f9, f9, f12
#endif
    l32i    a9, a1, 4
    STORE4  a2, f0, f1, f2, f3
    ssi     f4, a2, 16
    add     a10, a2, a9
    STORE4  a10, f5, f6, f7, f8
    ssi     f9, a10, 16
    addi    a2, a2, 20
    addi    a0, a0, -5
    j       .Ls2_blk
.Ls2_done:
    l32i    a0, a1, 0
    retw

/* One head: 7 keys at a time (q_m[i] in f15, the keys through f12/f13:
 * 8 loads for 7 madd.s; a8 walks q, a9-a15 the keys, a7 = hd - 1), then
 * 4 (a8 = the kv stride, a7 = hd), then one. */
    .macro  KEY1 op, kp, f_s, f_k
    lsip    \f_k, \kp, 4
    \op     \f_s, f15, \f_k
    .endm
    .macro  ELEM_H1 op
    lsip    f15, a8, 4
    KEY1    \op, a9, f0, f12
    KEY1    \op, a10, f1, f13
    KEY1    \op, a11, f2, f12
    KEY1    \op, a12, f3, f13
    KEY1    \op, a13, f4, f12
    KEY1    \op, a14, f5, f13
    KEY1    \op, a15, f6, f12
    .endm

DSP_FUNC(rvne_dsp_scores_h1)
    entry   a1, 32
    s32i    a0, a1, 0
    l32i    a7, a5, 0               /* hd (>= 1: the driver) */
    l32i    a0, a5, 4               /* keys left */
    l32i    a5, a5, 16
    slli    a5, a5, 2               /* kv stride, bytes */
    addi    a7, a7, -1
.Ls1_b7:
    bgeui   a0, 7, 1f
    j       .Ls1_b7_done
1:
    mov     a8, a3
    mov     a9, a4
    add     a10, a9, a5
    add     a11, a10, a5
    add     a12, a11, a5
    add     a13, a12, a5
    add     a14, a13, a5
    add     a15, a14, a5
    add     a4, a15, a5
    ELEM_H1 mul.s
    loopnez a7, 2f
    ELEM_H1 madd.s
2:
    wfr     f12, a6
    MULS    f12, f0, f1, f2, f3, f4, f5, f6
    STORE4  a2, f0, f1, f2, f3
    ssi     f4, a2, 16
    ssi     f5, a2, 20
    ssi     f6, a2, 24
    addi    a2, a2, 28
    addi    a0, a0, -7
    j       .Ls1_b7
.Ls1_b7_done:
    addi    a7, a7, 1               /* hd */
    mov     a8, a5
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
