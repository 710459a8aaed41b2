/* The ESP32-S3's blocks of rvne_matvec_f32 (kernels_ae32.c drives them,
 * built with RVNE_DSP_AES3 for the S3 only): y[0, 8) = x[0, n_in) .
 * W[:, j0 .. j0 + 8), the 8 sums in f0-f7, the weights loaded by the S3's
 * EE.LDF.128 (four floats) and EE.LDF.64 (two), esp-dsp's *_aes3 pattern.
 * GNU as only: llvm-mc has no EE.* instructions, and the LX6 has none.
 *
 *   a2 = y, a3 = x, a4 = &W[0][j0], a5 = n_in, a6 = row bytes (4 * n_out)
 *
 * Both loads ignore the address's low bits (four for EE.LDF.128, three for
 * EE.LDF.64), so the caller picks the block for w's alignment, the same in
 * every row (row bytes a multiple of 16): rvne_dsp_matvec_b8_aes3 for w
 * 16-byte aligned (two 4-float loads per row), rvne_dsp_matvec_b8h_aes3
 * for w 8 bytes past it (2 + 4 + 2 floats: where an RVNE blob's weights
 * sit, 24 bytes into a 64 KiB-aligned partition). x is only float-aligned:
 * up to three rows go one x at a time until it is 16-byte aligned, then
 * four rows per x load, then the rest one at a time. The register listed
 * first gets the highest word: `ee.ldf.128.ip f11, f10, f9, f8` puts the
 * lowest-addressed float in f8. Per four rows 41 instructions for 32 MACs
 * (45 for the b8h block). */
#include "dsp.h"

    .text

    /* One row of the block times \fx into f0-f7; w moves on to the next
     * row's block (a7 = row bytes minus the block's 32 bytes). */
    .macro  ROW8 fx, half
    .if \half
    ee.ldf.64.ip f9, f8, a4, 8
    madd.s  f0, \fx, f8
    madd.s  f1, \fx, f9
    ee.ldf.128.ip f11, f10, f9, f8, a4, 16
    madd.s  f2, \fx, f8
    madd.s  f3, \fx, f9
    madd.s  f4, \fx, f10
    madd.s  f5, \fx, f11
    ee.ldf.64.xp f9, f8, a4, a7
    madd.s  f6, \fx, f8
    madd.s  f7, \fx, f9
    .else
    ee.ldf.128.ip f11, f10, f9, f8, a4, 16
    madd.s  f0, \fx, f8
    madd.s  f1, \fx, f9
    madd.s  f2, \fx, f10
    madd.s  f3, \fx, f11
    ee.ldf.128.xp f11, f10, f9, f8, a4, a7
    madd.s  f4, \fx, f8
    madd.s  f5, \fx, f9
    madd.s  f6, \fx, f10
    madd.s  f7, \fx, f11
    .endif
    .endm

    .macro  MATVEC_B8 half
    entry   a1, 32
    ZERO4   a8
    mov.s   f4, f0
    mov.s   f5, f0
    mov.s   f6, f0
    mov.s   f7, f0
    .if \half
    addi    a7, a6, -24
    .else
    addi    a7, a6, -16
    .endif
    neg     a8, a3              /* rows until x is 16-byte aligned, at most n_in */
    extui   a8, a8, 2, 2
    minu    a8, a8, a5
    sub     a5, a5, a8
    loopnez a8, 1f
    lsip    f12, a3, 4
    ROW8    f12, \half
1:  srli    a9, a5, 2
    loopnez a9, 2f
    ee.ldf.128.ip f15, f14, f13, f12, a3, 16
    ROW8    f12, \half
    ROW8    f13, \half
    ROW8    f14, \half
    ROW8    f15, \half
2:  extui   a9, a5, 0, 2
    loopnez a9, 3f
    lsip    f12, a3, 4
    ROW8    f12, \half
3:  STORE4  a2, f0, f1, f2, f3
    ssi     f4, a2, 16
    ssi     f5, a2, 20
    ssi     f6, a2, 24
#if defined(RVNE_DSP_DEFECT)
    ssi     f6, a2, 28          /* test-only defect: column 7 gets column 6's sum */
#else
    ssi     f7, a2, 28
#endif
    retw
    .endm

DSP_FUNC(rvne_dsp_matvec_b8_aes3)
    MATVEC_B8 0

DSP_FUNC(rvne_dsp_matvec_b8h_aes3)
    MATVEC_B8 1
