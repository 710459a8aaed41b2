/* The ESP32-S3's rvne_scores_f32_ae32 (with RVNE_DSP_AES3, in place of
 * the LX6 driver in kernels_ae32.c): att[m*n + j] = scale * (q_m . k_j)
 * for the g query heads of one kv head.
 *
 *   a2 = att (head 0's row), a3 = q (head 0), a4 = k (position 0),
 *   a5 = rvne_attn *, a6 = scale (its bits)
 *
 * One head at a time, 8 keys at a time (then 4, then one): the 8 dot
 * products in f0-f7, per 4 elements one EE.LDF.128 of q_m into f12-f15
 * and one of each key into f8-f11, each followed by its 4 madd.s: 41
 * instructions per 32 MACs (a madd.s and a quarter of a key load each,
 * plus q's load shared by the 8 keys), the first 4 elements by mul.s so
 * no sum needs zeroing. A key is loaded once per head: 8 sums, 4 key and
 * 4 query floats fill the 16 FP registers, none is left to share it.
 * The 4 madd.s of one key chain on its sum (a stall on silicon if madd.s
 * takes more than a cycle; these are instruction counts, not cycles).
 * Every key pointer step is one EE.LDF.128.XP: by kv_stride to the next
 * key, from the tile's last key back to the first one's next 4 elements.
 *
 * It takes what the head's arena gives (docs/targets.md): q and k 16-byte
 * aligned, hd, q_stride and kv_stride multiples of 4, n >= 1; att at any
 * float (8-byte aligned, 8 keys' scores are stored by pairs). Any other
 * shape goes to the LX6 kernels (rvne_dsp_scores_lx6). */
#include "aes3.h"

    .text

/* Register use in the head loop:
 *   a2  att (moves on by each tile's scores: a head's row ends where the
 *       next one starts), a3 q, a13 this head's q, a4 k
 *   a5  kv_stride bytes, a6 scale, a7 groups of 4 elements but the first,
 *   a8  the step from a tile's last key back to its first, 4 elements on,
 *   a9  k from past a tile's last element to the next tile, a10 hd bytes,
 *   a11 tiles left, a14 heads left, a15 n
 * and on the stack the steps per tile size, n, q_stride bytes, k. */
#define ST_LAST8 0
#define ST_NEXT8 4
#define ST_LAST4 8
#define ST_NEXT4 12
#define ST_NEXT1 16
#define ST_QS 20
#define ST_K 24

/* Key t's 4 elements (k moves by `step`) into sum acc: op is mul.s for a
 * tile's first 4 elements, madd.s after. */
    .macro  KEY acc, step, first
    ee.ldf.128.xp f11, f10, f9, f8, a4, \step
    .if \first
    mul.s   \acc, f12, f8
    .else
    madd.s  \acc, f12, f8
    .endif
    madd.s  \acc, f13, f9
    madd.s  \acc, f14, f10
    madd.s  \acc, f15, f11
    .endm

/* q_m's next 4 elements against the tile's keys (1, 4 or 8). */
    .macro  CHUNK keys, first
    ee.ldf.128.ip f15, f14, f13, f12, a3, 16
    .if \keys == 1
    KEY     f0, a8, \first
    .else
    KEY     f0, a5, \first
    KEY     f1, a5, \first
    KEY     f2, a5, \first
    .if \keys == 4
    KEY     f3, a8, \first
    .else
    KEY     f3, a5, \first
    KEY     f4, a5, \first
    KEY     f5, a5, \first
    KEY     f6, a5, \first
    KEY     f7, a8, \first
    .endif
    .endif
    .endm

/* One tile: the keys' dot products over all hd elements, scaled, stored
 * at att (by pairs, EE.STF.64, when `pairs`: att 8-byte aligned) and att
 * moved on; q back to the head's start, k on to the next tile. */
    .macro  TILE keys, pairs=0
    CHUNK   \keys, 1
    loopnez a7, 1f
    CHUNK   \keys, 0
1:  wfr     f12, a6
    .if \keys == 1
    mul.s   f0, f0, f12
    ssi     f0, a2, 0
    addi    a2, a2, 4
    .else
    MULS    f12, f0, f1, f2, f3
    .if \keys == 8
#if defined(RVNE_DSP_DEFECT)
    MULS    f12, f4, f5, f6     /* test-only defect: one score left unscaled */
#else
    MULS    f12, f4, f5, f6, f7
#endif
    .endif
    .if \pairs
    ee.stf.64.ip f1, f0, a2, 8
    ee.stf.64.ip f3, f2, a2, 8
    ee.stf.64.ip f5, f4, a2, 8
    ee.stf.64.ip f7, f6, a2, 8
    .else
    STORE4  a2, f0, f1, f2, f3
    .if \keys == 8
    ssi     f4, a2, 16
    ssi     f5, a2, 20
    ssi     f6, a2, 24
    ssi     f7, a2, 28
    .endif
    addi    a2, a2, 4 * \keys
    .endif
    .endif
    sub     a3, a3, a10
    add     a4, a4, a9
    .endm

DSP_FUNC(rvne_scores_f32_ae32)
    entry   a1, 64
    ATTN_FIELDS a5, a7, a15, a14, a10, a11
    extui   a12, a3, 0, 4
    extui   a13, a4, 0, 4
    or      a12, a12, a13
    or      a13, a7, a10
    or      a13, a13, a11
    extui   a13, a13, 0, 2
    or      a12, a12, a13
    bnez    a12, .Lother
    beqz    a7, .Lother
    beqz    a15, .Lother
    beqz    a14, .Ldone

    slli    a5, a11, 2                  /* kv_stride bytes */
    slli    a10, a10, 2
    s32i    a10, a1, ST_QS
    s32i    a4, a1, ST_K
    slli    a10, a7, 2                  /* hd bytes */
    movi    a8, 16
    sub     a9, a5, a10
    s32i    a9, a1, ST_NEXT1            /* kv_stride - hd */
    slli    a12, a5, 1
    add     a12, a12, a5                /* 3 kv_stride */
    sub     a9, a8, a12
    s32i    a9, a1, ST_LAST4            /* 16 - 3 kv_stride */
    slli    a12, a5, 2
    sub     a9, a12, a10
    s32i    a9, a1, ST_NEXT4            /* 4 kv_stride - hd */
    slli    a12, a5, 3
    sub     a9, a12, a10
    s32i    a9, a1, ST_NEXT8            /* 8 kv_stride - hd */
    sub     a12, a12, a5
    sub     a9, a8, a12
    s32i    a9, a1, ST_LAST8            /* 16 - 7 kv_stride */
    srli    a7, a7, 2
    addi    a7, a7, -1                  /* groups of 4 elements after the first */
    mov     a13, a3

.Lhead:
    mov     a3, a13
    l32i    a4, a1, ST_K
    srli    a11, a15, 3
    beqz    a11, .Lkeys4
    l32i    a8, a1, ST_LAST8
    l32i    a9, a1, ST_NEXT8
    bbsi    a2, 2, .Ltile8
.Ltile8p:                               /* att 8-byte aligned: scores stored by pairs */
    TILE    8, 1
    addi    a11, a11, -1
    bnez    a11, .Ltile8p
    j       .Lkeys4
.Ltile8:
    TILE    8
    addi    a11, a11, -1
    bnez    a11, .Ltile8
.Lkeys4:
    bbci    a15, 2, .Lkeys1
    l32i    a8, a1, ST_LAST4
    l32i    a9, a1, ST_NEXT4
    TILE    4
.Lkeys1:
    extui   a11, a15, 0, 2
    beqz    a11, .Lnext
    movi    a8, 16
    l32i    a9, a1, ST_NEXT1
.Ltile1:
    TILE    1
    addi    a11, a11, -1
    bnez    a11, .Ltile1
.Lnext:
    l32i    a12, a1, ST_QS
    add     a13, a13, a12
    addi    a14, a14, -1
    bnez    a14, .Lhead
.Ldone:
    retw

/* Every other shape: the LX6 kernels (kernels_ae32.c). */
.Lother:
    FALLBACK rvne_dsp_scores_lx6
