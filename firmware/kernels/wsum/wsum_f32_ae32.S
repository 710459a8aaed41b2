/* rvne_wsum_f32 for 4, 3 or 2 query heads (h4, h3, h2) or one (h1) of a
 * kv head (kernels_ae32.c drives them): out_m[i] = scale[m] * sum_j att[m*n + j] *
 * v_j[i], the sums over all n positions held in FP registers.
 *
 * h4 takes 3 elements i at a time: 12 sums in f0-f11; per position j, v_j's
 * 3 elements in f14, f12, f13 and each head's weight att[m*n + j] in turn
 * in f15, so 7 loads serve 12 madd.s (a value is loaded once for the 4
 * heads): 19/12 instructions per multiply-add, the floor of 16 FP
 * registers (docs/targets.md, "Kernels"). Two elements left over go as a
 * block of 2 (8 sums), one as a block of 1. Position 0 is multiplied
 * (mul.s), so no sum is zeroed, and the zero-overhead loop runs n - 1
 * times (n >= 1: the driver gives n = 0 to the C twin). h1 takes 12
 * elements at a time, then 4, then one. v_j's first element is loaded
 * last, by lsxp, which steps to v_{j+1}; the weights by post-increment
 * (lsip).
 *
 *   a2 = out (head m0), a3 = att (head m0's row), a4 = v (position 0),
 *   a5 = rvne_attn *, a6 = scale (head m0's)
 *
 * a0 is saved on the stack and counts the elements left. h4 then keeps
 * a5 = an att row, a7 = n - 1, a8 = the kv stride, a15 = the out stride
 * (bytes); a9-a12 walk the 4 heads' weights, a13 the values. */
#include "dsp.h"

    .text

/* Head m's weight (pointer ap) times the block's elements: op is mul.s
 * for position 0, madd.s after. */
    .macro  HEAD3 op, ap, f_a, f_b, f_c
    lsip    f15, \ap, 4
    \op     \f_a, f15, f14
    \op     \f_b, f15, f12
    \op     \f_c, f15, f13
    .endm
    .macro  HEAD2 op, ap, f_a, f_b
    lsip    f15, \ap, 4
    \op     \f_a, f15, f12
    \op     \f_b, f15, f13
    .endm
    .macro  HEAD1 op, ap, f_a
    lsip    f15, \ap, 4
    \op     \f_a, f15, f12
    .endm

/* One position j of a block of 3, 2 or 1 elements (v_j's at a13, which
 * then steps to v_{j+1}), for the 4 heads. */
    .macro  POS3 op
    lsi     f12, a13, 4
    lsi     f13, a13, 8
    lsxp    f14, a13, a8
    HEAD3   \op, a9, f0, f1, f2
    HEAD3   \op, a10, f3, f4, f5
    HEAD3   \op, a11, f6, f7, f8
    HEAD3   \op, a12, f9, f10, f11
    .endm
    .macro  POS2 op
    lsi     f13, a13, 4
    lsxp    f12, a13, a8
    HEAD2   \op, a9, f0, f1
    HEAD2   \op, a10, f2, f3
    HEAD2   \op, a11, f4, f5
    HEAD2   \op, a12, f6, f7
    .endm
    .macro  POS1 op
    lsxp    f12, a13, a8
    HEAD1   \op, a9, f0
    HEAD1   \op, a10, f1
    HEAD1   \op, a11, f2
    HEAD1   \op, a12, f3
    .endm

/* a0 (saved) = elements left, a7 = n, a8 = kv stride in bytes. */
    .macro  WSUM_ENTRY
    entry   a1, 32
    s32i    a0, a1, 0
    l32i    a0, a5, 0               /* elements left */
    l32i    a7, a5, 4               /* n */
    l32i    a8, a5, 16
    slli    a8, a8, 2               /* kv stride, bytes */
    .endm

/* A block's sums: the weight pointers a9-a12 at rows m0 .. m0 + 3 of att
 * (a5 = a row, bytes), position 0, then positions 1 .. n - 1 (a7 = n - 1). */
    .macro  SUMS pos
    mov     a13, a4
    PTRS4   a9, a10, a11, a12, a3, a5
    \pos    mul.s
    loopnez a7, 1f
    \pos    madd.s
1:
    .endm

/* The listed sums times head m's scale (scale + off). */
    .macro  SCALE off, regs:vararg
    lsi     f12, a6, \off
    MULS    f12, \regs
    .endm

/* h4's, h3's and h2's entry: WSUM_ENTRY, then a15 = the out (q) stride,
 * a5 = an att row (bytes), a7 = n - 1. */
    .macro  WSUM_ENTRY4
    WSUM_ENTRY
    l32i    a15, a5, 12
    slli    a15, a15, 2
    slli    a5, a7, 2
    addi    a7, a7, -1
    .endm

DSP_FUNC(rvne_dsp_wsum_h4)
    WSUM_ENTRY4
.Lw4_blk:
    bgeui   a0, 3, 1f
    j       .Lw4_rest               /* (bltui reaches 127 bytes) */
1:
    SUMS    POS3
    SCALE   0, f0, f1, f2
    SCALE   4, f3, f4, f5
    SCALE   8, f6, f7, f8
#if defined(RVNE_DSP_DEFECT)        /* test-only defect: one sum left unscaled */
    SCALE   12, f9, f10
#else
    SCALE   12, f9, f10, f11
#endif
    STORE_4x3 a2, a15, a14
    addi    a2, a2, 12
    addi    a4, a4, 12
    addi    a0, a0, -3
    j       .Lw4_blk
.Lw4_rest:                          /* 0, 1 or 2 elements left */
    beqz    a0, .Lw4_done
    beqi    a0, 2, 1f
    j       .Lw4_one
1:
    SUMS    POS2
    SCALE   0, f0, f1
    SCALE   4, f2, f3
    SCALE   8, f4, f5
    SCALE   12, f6, f7
    STORE2  a2, f0, f1
    add     a14, a2, a15
    STORE2  a14, f2, f3
    add     a14, a14, a15
    STORE2  a14, f4, f5
    add     a14, a14, a15
    STORE2  a14, f6, f7
    j       .Lw4_done
.Lw4_one:
    SUMS    POS1
    SCALE   0, f0
    SCALE   4, f1
    SCALE   8, f2
    SCALE   12, f3
    STORE_4x1 a2, a15, a14
.Lw4_done:
    l32i    a0, a1, 0
    retw

/* h3: 3 heads x 4 elements, h2: 2 heads x 6 elements, 12 sums in
 * f0-f11, but the heads' weights held (f12-f14) and v_j's elements
 * streamed through f15 (h2: f14), the first loaded last by lsxp: 7 loads
 * for 12 madd.s (h2: 8). Only whole blocks; the driver gives the elements
 * left over to h1. Registers as h4's; a9.. walk the heads' weights. */

/* The element of v_j at a13 + off (lsxp: off 0, then step to v_{j+1})
 * times the held weights of 3 (2) heads. */
    .macro  VAL3 op, off, f_a, f_b, f_c
    .ifeq   \off
    lsxp    f15, a13, a8
    .else
    lsi     f15, a13, \off
    .endif
    \op     \f_a, f12, f15
    \op     \f_b, f13, f15
    \op     \f_c, f14, f15
    .endm
    .macro  VAL2 op, off, f_a, f_b
    .ifeq   \off
    lsxp    f14, a13, a8
    .else
    lsi     f14, a13, \off
    .endif
    \op     \f_a, f12, f14
    \op     \f_b, f13, f14
    .endm
    .macro  POS_H3 op
    lsip    f12, a9, 4
    lsip    f13, a10, 4
    lsip    f14, a11, 4
    VAL3    \op, 4, f1, f5, f9
    VAL3    \op, 8, f2, f6, f10
    VAL3    \op, 12, f3, f7, f11
    VAL3    \op, 0, f0, f4, f8
    .endm
    .macro  POS_H2 op
    lsip    f12, a9, 4
    lsip    f13, a10, 4
    VAL2    \op, 4, f1, f7
    VAL2    \op, 8, f2, f8
    VAL2    \op, 12, f3, f9
    VAL2    \op, 16, f4, f10
    VAL2    \op, 20, f5, f11
    VAL2    \op, 0, f0, f6
    .endm

DSP_FUNC(rvne_dsp_wsum_h3)
    WSUM_ENTRY4
.Lw3_blk:
    bgeui   a0, 4, 1f
    j       .Lw3_done
1:
    mov     a13, a4
    mov     a9, a3
    add     a10, a9, a5
    add     a11, a10, a5
    POS_H3  mul.s
    loopnez a7, 2f
    POS_H3  madd.s
2:
    SCALE   0, f0, f1, f2, f3
    SCALE   4, f4, f5, f6, f7
#if defined(RVNE_DSP_DEFECT)        /* test-only defect: one sum left unscaled */
    SCALE   8, f8, f9, f10
#else
    SCALE   8, f8, f9, f10, f11
#endif
    STORE4  a2, f0, f1, f2, f3
    add     a14, a2, a15
    STORE4  a14, f4, f5, f6, f7
    add     a14, a14, a15
    STORE4  a14, f8, f9, f10, f11
    addi    a2, a2, 16
    addi    a4, a4, 16
    addi    a0, a0, -4
    j       .Lw3_blk
.Lw3_done:
    l32i    a0, a1, 0
    retw

DSP_FUNC(rvne_dsp_wsum_h2)
    WSUM_ENTRY4
.Lw2_blk:
    bgeui   a0, 6, 1f
    j       .Lw2_done
1:
    mov     a13, a4
    mov     a9, a3
    add     a10, a9, a5
    POS_H2  mul.s
    loopnez a7, 2f
    POS_H2  madd.s
2:
    SCALE   0, f0, f1, f2, f3, f4, f5
#if defined(RVNE_DSP_DEFECT)        /* test-only defect: one sum left unscaled */
    SCALE   4, f6, f7, f8, f9, f10
#else
    SCALE   4, f6, f7, f8, f9, f10, f11
#endif
    STORE4  a2, f0, f1, f2, f3
    ssi     f4, a2, 16
    ssi     f5, a2, 20
    add     a14, a2, a15
    STORE4  a14, f6, f7, f8, f9
    ssi     f10, a14, 16
    ssi     f11, a14, 20
    addi    a2, a2, 24
    addi    a4, a4, 24
    addi    a0, a0, -6
    j       .Lw2_blk
.Lw2_done:
    l32i    a0, a1, 0
    retw

/* One head: 12 elements at a time (the weight in f15, v_j's elements
 * through f12/f13: 13 loads for 12 madd.s), then 4, then one. */
    .macro  VAL1 op, off, f_s, f_v
    .ifeq   \off
    lsxp    \f_v, a13, a8
    .else
    lsi     \f_v, a13, \off
    .endif
    \op     \f_s, f15, \f_v
    .endm
    .macro  POS_H1 op
    lsip    f15, a9, 4
    VAL1    \op, 4, f1, f12
    VAL1    \op, 8, f2, f13
    VAL1    \op, 12, f3, f12
    VAL1    \op, 16, f4, f13
    VAL1    \op, 20, f5, f12
    VAL1    \op, 24, f6, f13
    VAL1    \op, 28, f7, f12
    VAL1    \op, 32, f8, f13
    VAL1    \op, 36, f9, f12
    VAL1    \op, 40, f10, f13
    VAL1    \op, 44, f11, f12
    VAL1    \op, 0, f0, f13
    .endm

DSP_FUNC(rvne_dsp_wsum_h1)
    WSUM_ENTRY
    lsi     f14, a6, 0              /* this head's scale, for the whole call */
    beqz    a7, .Lw1_blk            /* (n = 0: the 4s and ones zero the sums) */
    addi    a10, a7, -1             /* n - 1 */
.Lw1_b12:
    bgeui   a0, 12, 1f
    j       .Lw1_blk
1:
    mov     a9, a3
    mov     a13, a4
    POS_H1  mul.s
    loopnez a10, 2f
    POS_H1  madd.s
2:
    MULS    f14, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11
    STORE4  a2, f0, f1, f2, f3
    addi    a11, a2, 16
    STORE4  a11, f4, f5, f6, f7
    addi    a11, a2, 32
    STORE4  a11, f8, f9, f10, f11
    addi    a2, a2, 48
    addi    a4, a4, 48
    addi    a0, a0, -12
    j       .Lw1_b12
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
    MULS    f14, f0, f1, f2, f3
    STORE4  a2, f0, f1, f2, f3
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
