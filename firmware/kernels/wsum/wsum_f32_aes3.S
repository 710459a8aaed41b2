/* The ESP32-S3's rvne_wsum_f32_ae32 (with RVNE_DSP_AES3, in place of the
 * LX6 driver in kernels_ae32.c): out_m[i] = scale[m] * sum_j att[m*n + j] *
 * v_j[i] for the g query heads of one kv head.
 *
 *   a2 = out (head 0), a3 = att (head 0's row), a4 = v (position 0),
 *   a5 = rvne_attn *, a6 = scale (head 0's)
 *
 * Each head's sum is a matrix-vector product, x = its row of att (n
 * floats), the matrix the value cache (n rows kv_stride floats apart, hd
 * columns), the way matvec_f32_aes3.S computes it: blocks of 8 columns
 * whose 8 sums stay in f0-f7 over all n positions, the values loaded four
 * at a time by EE.LDF.128 (1.25 instructions per MAC: a madd.s and a
 * quarter of a load), att four positions at a time once 16-byte aligned
 * (up to three positions first, the rest last, one at a time), then the 8
 * sums times the head's scale and stored. hd mod 8 = 4 ends each head
 * with a block of 4. Each value is loaded once per head: no register is
 * left to share a load between heads (8 sums, 4 values, 4 weights).
 *
 * It takes what the head's arena gives (docs/targets.md): v 16-byte
 * aligned, kv_stride and hd multiples of 4 (every value row then starts
 * aligned), out 8-byte aligned with q_stride even, n >= 1; any att. Any
 * other shape goes to the LX6 kernels (rvne_dsp_wsum_lx6). */
#include "aes3.h"

    ZEROS16 wsum_zeros

    .text

/* Register use in the head loop:
 *   a2  out at the current block (moves on by the stores)
 *   a3  att, a12 this head's row
 *   a4  v at the block's columns, a13 where this block's columns start
 *   a5  kv_stride bytes - 16, a6 this head's scale
 *   a7, a8, a9  positions one at a time before the groups, groups of 4, after
 *   a10 the zeros, a11 blocks left, a14 out from past a head to the next,
 *   a15 heads left
 * and on the stack: n, v, hd / 8, hd mod 8 = 4. */
#define ST_N 0
#define ST_V 4
#define ST_B8 8
#define ST_B4 12

/* One position of an 8-column block times fx; v moves to the next row. */
    .macro  ROW_V8 fx
    ee.ldf.128.ip f11, f10, f9, f8, a4, 16
    MAC4    \fx, f0, f1, f2, f3
    ee.ldf.128.xp f11, f10, f9, f8, a4, a5
    MAC4    \fx, f4, f5, f6, f7
    .endm

    .macro  ROW_V4 fx
    ee.ldf.128.xp f11, f10, f9, f8, a4, a5
    addi    a4, a4, 16
    MAC4    \fx, f0, f1, f2, f3
    .endm

/* All n positions of one block into f0-f7 (f0-f3 for ROW_V4). */
    .macro  POSITIONS row
    mov     a3, a12
    mov     a4, a13
    ZERO8   a10
    loopnez a7, 1f
    lsip    f12, a3, 4
    \row    f12
1:  loopnez a8, 2f
    ee.ldf.128.ip f15, f14, f13, f12, a3, 16
    \row    f12
    \row    f13
    \row    f14
    \row    f15
2:  loopnez a9, 3f
    lsip    f12, a3, 4
    \row    f12
3:  lsi     f12, a6, 0
    .endm

DSP_FUNC(rvne_wsum_f32_ae32)
    entry   a1, 48
    ATTN_FIELDS a5, a7, a8, a9, a10, a11
    extui   a12, a2, 0, 3
    extui   a13, a4, 0, 4
    or      a12, a12, a13
    extui   a13, a11, 0, 2
    or      a12, a12, a13
    extui   a13, a7, 0, 2
    or      a12, a12, a13
    extui   a13, a10, 0, 1
    or      a12, a12, a13
    bnez    a12, .Lother
    beqz    a7, .Lother
    beqz    a8, .Lother
    beqz    a9, .Ldone

    s32i    a8, a1, ST_N
    s32i    a4, a1, ST_V
    srli    a13, a7, 3
    s32i    a13, a1, ST_B8
    extui   a13, a7, 2, 1
    s32i    a13, a1, ST_B4
    sub     a14, a10, a7
    slli    a14, a14, 2
    slli    a5, a11, 2
    addi    a5, a5, -16
    movi    a10, wsum_zeros
    mov     a15, a9
    mov     a12, a3

.Lhead:
    l32i    a11, a1, ST_N
    COUNTS  a12, a11, a7, a8, a9
    l32i    a13, a1, ST_V
    l32i    a11, a1, ST_B8
    beqz    a11, .Ltail
.Lblk:
    POSITIONS ROW_V8
#if defined(RVNE_DSP_DEFECT)
    MULS    f12, f0, f1, f2, f3, f4, f5, f6     /* test-only defect: one sum left unscaled */
#else
    MULS    f12, f0, f1, f2, f3, f4, f5, f6, f7
#endif
    ee.stf.64.ip f1, f0, a2, 8
    ee.stf.64.ip f3, f2, a2, 8
    ee.stf.64.ip f5, f4, a2, 8
    ee.stf.64.ip f7, f6, a2, 8
    addi    a13, a13, 32
    addi    a11, a11, -1
    bnez    a11, .Lblk
.Ltail:
    l32i    a11, a1, ST_B4
    beqz    a11, .Lnext
    POSITIONS ROW_V4
    MULS    f12, f0, f1, f2, f3
    ee.stf.64.ip f1, f0, a2, 8
    ee.stf.64.ip f3, f2, a2, 8
.Lnext:
    add     a2, a2, a14
    addi    a6, a6, 4
    l32i    a11, a1, ST_N
    addx4   a12, a11, a12               /* the next head's row of att */
    addi    a15, a15, -1
    bnez    a15, .Lhead
.Ldone:
    retw

/* Every other shape: the LX6 kernels (kernels_ae32.c). */
.Lother:
    FALLBACK rvne_dsp_wsum_lx6
