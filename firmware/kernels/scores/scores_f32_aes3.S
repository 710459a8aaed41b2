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
 * Every pointer step is the post-increment of a load: a key's by
 * kv_stride to the next key, from the tile's last key back to the first
 * one's next 4 elements, and after the tile's last 4 elements on to the
 * next tile; q's back to the head's start after its last 4 (so the first
 * and the last 4 elements are loaded outside the loop, hd >= 8). 8 keys'
 * scores are stored by fours where att is 16-byte aligned, by pairs where
 * it is 8-byte aligned.
 *
 * It takes what the head's arena gives (docs/targets.md): q and k 16-byte
 * aligned, hd, q_stride and kv_stride multiples of 4 and hd >= 8, n >= 1;
 * att at any float. Any other shape goes to the LX6 kernels
 * (rvne_dsp_scores_lx6). */
#include "aes3.h"

    .text

/* Register use in the head loop:
 *   a2  att (moves on by each tile's scores: a head's row ends where the
 *       next one starts), a3 q, a13 this head's q, a4 k
 *   a5  kv_stride bytes, a6 scale, a7 groups of 4 elements but the first
 *       and the last,
 *   a8  the step from a tile's last key back to its first, 4 elements on,
 *   a9  the step from the tile's last key's last 4 elements to the next
 *       tile (kv_stride + 16 - hd bytes), a10 q's from its last 4 elements
 *       back to its first (16 - hd bytes),
 *   a11 tiles left, a14 heads left, a15 n
 * and on the stack the steps per tile size, q_stride bytes, k. */
#define ST_LAST8 0
#define ST_LAST4 4
#define ST_QS 8
#define ST_K 12

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

/* The tile's last key: k back to the first key's next 4 elements, or on
 * to the next tile after the last 4. */
    .macro  LASTKEY acc, first, last
    .if \last
    KEY     \acc, a9, \first
    .else
    KEY     \acc, a8, \first
    .endif
    .endm

/* q_m's next 4 elements against the tile's keys (1, 4 or 8); after the
 * last 4, q back to the head's start. */
    .macro  CHUNK keys, first, last
    .if \last
    ee.ldf.128.xp f15, f14, f13, f12, a3, a10
    .else
    ee.ldf.128.ip f15, f14, f13, f12, a3, 16
    .endif
    .if \keys == 1
    LASTKEY f0, \first, \last
    .else
    KEY     f0, a5, \first
    KEY     f1, a5, \first
    KEY     f2, a5, \first
    .if \keys == 4
    LASTKEY f3, \first, \last
    .else
    KEY     f3, a5, \first
    KEY     f4, a5, \first
    KEY     f5, a5, \first
    KEY     f6, a5, \first
    LASTKEY f7, \first, \last
    .endif
    .endif
    .endm

/* One tile: the keys' dot products over all hd elements, scaled, stored
 * at att (8 keys: by fours, EE.STF.128, when `stores` is 4: att 16-byte
 * aligned; by pairs, EE.STF.64, when 2: 8-byte aligned; one by one when 1)
 * and att moved on; q ends back at the head's start, k at the next tile. */
    .macro  TILE keys, stores=1
    CHUNK   \keys, 1, 0
    loopnez a7, 1f
    CHUNK   \keys, 0, 0
1:  CHUNK   \keys, 0, 1
    wfr     f12, a6
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
    .if \stores == 4
    ee.stf.128.ip f3, f2, f1, f0, a2, 16
    ee.stf.128.ip f7, f6, f5, f4, a2, 16
    .elseif \stores == 2
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
    bltui   a7, 8, .Lother
    beqz    a15, .Lother
    beqz    a14, .Ldone

    slli    a5, a11, 2                  /* kv_stride bytes */
    slli    a10, a10, 2
    s32i    a10, a1, ST_QS
    s32i    a4, a1, ST_K
    slli    a10, a7, 2                  /* hd bytes */
    movi    a8, 16
    slli    a12, a5, 1
    add     a12, a12, a5                /* 3 kv_stride */
    sub     a9, a8, a12
    s32i    a9, a1, ST_LAST4            /* 16 - 3 kv_stride */
    slli    a12, a5, 3
    sub     a12, a12, a5
    sub     a9, a8, a12
    s32i    a9, a1, ST_LAST8            /* 16 - 7 kv_stride */
    sub     a9, a5, a10
    addi    a9, a9, 16                  /* kv_stride + 16 - hd */
    sub     a10, a8, a10                /* 16 - hd */
    srli    a7, a7, 2
    addi    a7, a7, -2                  /* groups of 4 elements between the first and the last */
    mov     a13, a3

.Lhead:
    mov     a3, a13
    l32i    a4, a1, ST_K
    srli    a11, a15, 3
    beqz    a11, .Lkeys4
    l32i    a8, a1, ST_LAST8
    bbsi    a2, 2, .Ltile8
    bbsi    a2, 3, .Ltile8p
.Ltile8q:                               /* att 16-byte aligned: scores stored by fours */
    TILE    8, 4
    addi    a11, a11, -1
    bnez    a11, .Ltile8q
    j       .Lkeys4
.Ltile8p:                               /* att 8-byte aligned: scores stored by pairs */
    TILE    8, 2
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
    TILE    4
.Lkeys1:
    extui   a11, a15, 0, 2
    beqz    a11, .Lnext
    movi    a8, 16
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
