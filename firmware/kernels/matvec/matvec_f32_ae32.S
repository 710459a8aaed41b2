/* rvne_matvec_f32's blocks (kernels_ae32.c drives them): y[0, B) =
 * x[0, n_in) . W[:, j0 .. j0 + B), the B sums held in FP registers over all
 * n_in rows, so each weight costs one load and one madd.s: per row, x[i] by
 * post-increment, the block's weights at immediate offsets and the one at
 * offset 0 last, by lsxp, which steps w to the next row.
 *
 *   a2 = y, a3 = x, a4 = &W[0][j0], a5 = n_in, a6 = row bytes (4 * n_out)
 *
 * Two temporaries alternate so no load feeds the very next instruction. */
#include "dsp.h"

    .text

    .macro  MACW acc, tmp, off
    lsi     \tmp, a4, \off
    madd.s  \acc, f12, \tmp
    .endm

DSP_FUNC(rvne_dsp_matvec_b12)
    entry   a1, 32
    ZERO12  a7
    loopnez a5, .Lb12_end
    lsip    f12, a3, 4
    MACW    f1, f13, 4
    MACW    f2, f14, 8
    MACW    f3, f13, 12
    MACW    f4, f14, 16
    MACW    f5, f13, 20
    MACW    f6, f14, 24
    MACW    f7, f13, 28
    MACW    f8, f14, 32
    MACW    f9, f13, 36
    MACW    f10, f14, 40
    MACW    f11, f13, 44
    lsxp    f14, a4, a6
    madd.s  f0, f12, f14
.Lb12_end:
    STORE4  a2, f0, f1, f2, f3
    ssi     f4, a2, 16
    ssi     f5, a2, 20
    ssi     f6, a2, 24
    ssi     f7, a2, 28
    ssi     f8, a2, 32
    ssi     f9, a2, 36
    ssi     f10, a2, 40
#if defined(RVNE_DSP_DEFECT)
    ssi     f10, a2, 44         /* test-only defect: column 11 gets column 10's sum */
#else
    ssi     f11, a2, 44
#endif
    retw

DSP_FUNC(rvne_dsp_matvec_b4)
    entry   a1, 32
    ZERO4   a7
    loopnez a5, .Lb4_end
    lsip    f12, a3, 4
    MACW    f1, f13, 4
    MACW    f2, f14, 8
    MACW    f3, f13, 12
    lsxp    f14, a4, a6
    madd.s  f0, f12, f14
.Lb4_end:
    STORE4  a2, f0, f1, f2, f3
    retw

DSP_FUNC(rvne_dsp_matvec_b1)
    entry   a1, 32
    ZERO1   a7
    loopnez a5, .Lb1_end
    lsip    f12, a3, 4
    lsxp    f13, a4, a6
    madd.s  f0, f12, f13
.Lb1_end:
    ssi     f0, a2, 0
    retw
