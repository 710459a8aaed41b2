/* The ESP32-S3's rvne_matvec_f32_ae32 (with RVNE_DSP_AES3, for the S3
 * only, in place of the LX6 driver in kernels_ae32.c): y[0, n_out) =
 * x[0, n_in) . W, the whole matrix in blocks of 8 columns (the last block
 * may have 4), each block's sums in f0-f7 over all n_in rows, the weights
 * loaded four at a time by EE.LDF.128, esp-dsp's *_aes3 pattern.
 *
 *   a2 = y, a3 = x, a4 = w, a5 = n_in, a6 = n_out
 *
 * It takes n_in >= 1, n_out a non-zero multiple of 4 (every row then
 * starts at the same alignment) and w, y 8-byte aligned, x at any float;
 * any other shape goes to the LX6 blocks (rvne_dsp_matvec_lx6), checked
 * here rather than in C because GCC's driver cost 25 instructions a call.
 *
 * Why this shape (docs/targets.md, "The kernels on the ESP32-S3's core"):
 * each MAC costs a madd.s and a quarter of a 128-bit load, 1.25
 * instructions, and nothing less is possible on this FPU. The 16 FP
 * registers hold 8 sums, the 4 floats of a weight load and the 4 of an x
 * load (one x load per 4 rows of a block), so 8 columns is the widest
 * block: 1.28 per MAC inside it, plus what a block costs once (set up its
 * loop, 4 stores, move on).
 *
 * EE.LDF.128 ignores an address's low four bits. An RVNE blob's weights sit
 * 8 bytes past a 16-byte boundary (docs/format.md), so a row's columns
 * 2, 3, 4, 5 are the first aligned four; columns n_out-2, n_out-1 of row i
 * and 0, 1 of row i+1 are contiguous and aligned too. The first block then
 * "wraps": its 128-bit load at the end of row i feeds columns n_out-2,
 * n_out-1 with x[i] and columns 0, 1 with x[i+1] (the latter two madds wait
 * for the next x load when row i ends a group of four), so a misaligned
 * matrix costs the same loads per row as an aligned one. Only the first
 * row's columns 0, 1 and the last row's n_out-2, n_out-1 are loaded apart
 * (EE.LDF.64): no load reads outside the matrix.
 *
 * x goes 4 floats at a time once 16-byte aligned: up to three rows first
 * one x at a time, then groups of four rows, then the rest one at a time.
 * `ee.ldf.128.ip f11, f10, f9, f8` puts the lowest-addressed float in f8;
 * the EE.LDF.64 / EE.STF.64 pairs likewise. */
#include "aes3.h"

    ZEROS16 matvec_zeros

    .text

/* Register use:
 *   a2  y at the current block (moves on by the stores)
 *   a3  x, a13 x[0]
 *   a4  w at the block's aligned chunk, a15 the wrap chunk / scratch
 *   a5  n_in, a6 row bytes, a7 row bytes - 16
 *   a8, a9, a10  rows one at a time before the groups, groups of 4, rows after
 *   a11 the zeros, a12 8-column blocks left, a14 w at the next block
 *   f0-f7 sums, f8-f11 weights, f12-f15 x */

/* Row counts over n rows of x from x[0] (a13): a8, a9, a10. */
    .macro  ROWCOUNTS n
    COUNTS  a13, \n, a8, a9, a10
    .endm

/* ---- aligned blocks: every chunk of the block 16-byte aligned ------------ */

/* One row of an 8-column block times fx (op: MAC4, or MUL4 for the first
 * row): w moves on to the next row. */
    .macro  ROW_A8 fx, op=MAC4
    ee.ldf.128.ip f11, f10, f9, f8, a4, 16
    \op    \fx, f0, f1, f2, f3
    ee.ldf.128.xp f11, f10, f9, f8, a4, a7
    \op    \fx, f4, f5, f6, f7
    .endm

/* A block's last row: w on to the next block's first row. */
    .macro  ROW_A8_LAST fx
    ee.ldf.128.ip f11, f10, f9, f8, a4, 16
    MAC4    \fx, f0, f1, f2, f3
    ee.ldf.128.xp f11, f10, f9, f8, a4, a8
    MAC4    \fx, f4, f5, f6, f7
    .endm

    .macro  ROW_A4 fx
    ee.ldf.128.xp f11, f10, f9, f8, a4, a6
    MAC4    \fx, f0, f1, f2, f3
    .endm

/* All n_in rows of one aligned block (w at a14) into f0-f7 (f0-f3 for
 * four columns); a3 and a4 end past x and the block's last row. */
    .macro  ROWS_A row
    mov     a3, a13
    mov     a4, a14
    ZERO8   a11
    loopnez a8, 1f
    lsip    f12, a3, 4
    \row    f12
1:  loopnez a9, 2f
    ee.ldf.128.ip f15, f14, f13, f12, a3, 16
    \row    f12
    \row    f13
    \row    f14
    \row    f15
2:  loopnez a10, 3f
    lsip    f12, a3, 4
    \row    f12
3:
    .endm

/* ---- the wrap block: columns n_out-2, n_out-1 and 0, 1 (+ 2 .. 5) --------- */

/* f0, f1 (columns 0, 1) += fx * the next row's two floats, left in f10,
 * f11 by the last wrap load. */
    .macro  WRAP_NEXT fx
    madd.s  f0, \fx, f10
    madd.s  f1, \fx, f11
    .endm

/* One row of the wrap block times fx: with `wide`, columns 2 .. 5 into
 * f2-f5 (a4), then the wrap chunk (a15): columns n_out-2, n_out-1 into
 * ca, cb; the next row's columns 0, 1 times fnext, or left in f10, f11
 * (fnext = none). */
    .macro  ROW_W wide, ca, cb, fx, fnext
    .if \wide
    ee.ldf.128.xp f11, f10, f9, f8, a4, a6
    MAC4    \fx, f2, f3, f4, f5
    .endif
    ee.ldf.128.xp f11, f10, f9, f8, a15, a6
    madd.s  \ca, \fx, f8
    madd.s  \cb, \fx, f9
    .ifnc \fnext, none
    WRAP_NEXT \fnext
    .endif
    .endm

/* The wrap block over rows 0 .. n_in-2 (counts in a8-a10), then the last
 * row with its own two-float load; sums for columns 0, 1 in f0, f1,
 * n_out-2, n_out-1 in ca, cb, 2 .. 5 in f2-f5 (wide). */
    .macro  ROWS_W wide, ca, cb
    ZERO8   a11
    ee.ldf.64.ip f11, f10, a4, 8        /* row 0's columns 0, 1; a4 at column 2 */
    add     a15, a4, a6
    addi    a15, a15, -16               /* row 0's column n_out-2 */
    loopnez a8, 1f
    lsip    f12, a3, 4
    WRAP_NEXT f12
    ROW_W   \wide, \ca, \cb, f12, none
1:  loopnez a9, 2f
    ee.ldf.128.ip f15, f14, f13, f12, a3, 16
    WRAP_NEXT f12
    ROW_W   \wide, \ca, \cb, f12, f13
    ROW_W   \wide, \ca, \cb, f13, f14
    ROW_W   \wide, \ca, \cb, f14, f15
    ROW_W   \wide, \ca, \cb, f15, none
2:  loopnez a10, 3f
    lsip    f12, a3, 4
    WRAP_NEXT f12
    ROW_W   \wide, \ca, \cb, f12, none
3:  lsi     f12, a3, 0                  /* the last row */
    WRAP_NEXT f12
    .if \wide
    ee.ldf.128.xp f11, f10, f9, f8, a4, a6
    MAC4    f12, f2, f3, f4, f5
    .endif
    ee.ldf.64.ip f9, f8, a15, 0
    madd.s  \ca, f12, f8
    madd.s  \cb, f12, f9
    .endm

/* The 8 sums of a block to y (a2, moving on 8 floats). */
    .macro  STORE8
#if defined(RVNE_DSP_DEFECT)
    mov.s   f7, f6              /* test-only defect: a block's last column gets the one before */
#endif
    ee.stf.64.ip f1, f0, a2, 8
    ee.stf.64.ip f3, f2, a2, 8
    ee.stf.64.ip f5, f4, a2, 8
    ee.stf.64.ip f7, f6, a2, 8
    .endm

DSP_FUNC(rvne_matvec_f32_ae32)
    entry   a1, 32
    or      a8, a2, a4
    extui   a8, a8, 0, 3
    extui   a9, a6, 0, 2
    or      a8, a8, a9
    bnez    a8, .Lother                 /* y or w not 8-byte aligned, or n_out % 4 != 0 */
    beqz    a5, .Lother
    beqz    a6, .Lother
    slli    a6, a6, 2
    addi    a7, a6, -16
    movi    a11, matvec_zeros
    mov     a13, a3
    mov     a14, a4
    mov     a15, a6                     /* bytes of a row the aligned blocks cover */
    bbci    a4, 3, .Laligned            /* w 16-byte aligned: no wrap block */

    addi    a9, a5, -1
    ROWCOUNTS a9                        /* over all rows but the last */
    bnei    a6, 16, .Lwrap8
    ROWS_W  0, f2, f3                   /* n_out = 4: the wrap block alone */
    ee.stf.64.ip f1, f0, a2, 8
    ee.stf.64.ip f3, f2, a2, 0
    retw
.Lwrap8:
    ROWS_W  1, f6, f7
    add     a15, a2, a6
    addi    a15, a15, -8                /* y[n_out-2] */
#if defined(RVNE_DSP_DEFECT)
    mov.s   f7, f6                      /* test-only defect, as in STORE8 */
#endif
    ee.stf.64.ip f7, f6, a15, 0
    ee.stf.64.ip f1, f0, a2, 8
    ee.stf.64.ip f3, f2, a2, 8
    ee.stf.64.ip f5, f4, a2, 8          /* y at column 6 */
    addi    a14, a14, 24                /* w at column 6 */
    addi    a15, a6, -32                /* columns 6 .. n_out-3 left */

.Laligned:
    ROWCOUNTS a5
    srli    a12, a15, 5                 /* 8-column blocks */
    beqz    a12, .Lb4
    bnez    a8, .Lb8
    bnez    a10, .Lb8
    bltui   a9, 2, .Lb8
    /* x 16-byte aligned, n_in a multiple of 4 and at least 8: the first
     * group starts the sums with mul.s, the block's loop runs the groups
     * between the first and the last, and the last group's loads step x
     * back to x[0] and w on to the next block (no pointer arithmetic per
     * block). */
    mull    a8, a5, a6
    sub     a8, a6, a8
    addi    a8, a8, 16                  /* w from the last row's second chunk to the next block */
    slli    a10, a5, 2
    movi    a3, 16
    sub     a10, a3, a10                /* x from its last four back to x[0] */
    addi    a9, a9, -2
    mov     a3, a13
    mov     a4, a14
    /* GNU as starts a loop body whose first instruction is 4 bytes long
     * on a 4-byte boundary, padding with nops before the loop instruction:
     * run once per block here. .Lb8x 3 bytes past a boundary (the padding
     * jumped over) puts the body there with no padding: 2 + 4 + 128 + 3
     * bytes on. */
    j       .Lb8x
    .balign 4
    .skip   3
.Lb8x:
    addi.n  a12, a12, -1
    ee.ldf.128.ip f15, f14, f13, f12, a3, 16
    ROW_A8  f12, MUL4
    ROW_A8  f13
    ROW_A8  f14
    ROW_A8  f15
    loopnez a9, 1f
    ee.ldf.128.ip f15, f14, f13, f12, a3, 16
    ROW_A8  f12
    ROW_A8  f13
    ROW_A8  f14
    ROW_A8  f15
1:  ee.ldf.128.xp f15, f14, f13, f12, a3, a10
    ROW_A8  f12
    ROW_A8  f13
    ROW_A8  f14
    ROW_A8_LAST f15
    STORE8
    bnez    a12, .Lb8x
    bbci    a15, 4, .Ldone              /* no 4 columns left */
    mov     a14, a4
    ROWCOUNTS a5
    j       .Lb4

.Lb8:
    ROWS_A  ROW_A8
    STORE8
    addi    a14, a14, 32
    addi    a12, a12, -1
    bnez    a12, .Lb8
.Lb4:
    bbci    a15, 4, .Ldone              /* no 4 columns left */
    ROWS_A  ROW_A4
    ee.stf.64.ip f1, f0, a2, 8
    ee.stf.64.ip f3, f2, a2, 0
.Ldone:
    retw

/* Every other shape: the LX6 blocks (kernels_ae32.c). */
.Lother:
    FALLBACK rvne_dsp_matvec_lx6
