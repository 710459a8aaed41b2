/* e^x for x <= 0, as the softmax needs it (x = score - max), in the
 * single-precision FPU's own operations: the arithmetic of
 * softmax_exp_f32_ae32.S, one line of C per instruction, so the host can test
 * it on every input (firmware/tests/test_expf.c) and the emulated core can
 * check the assembly against it bit for bit (test_kernels_lx6.c).
 *
 *   x < -104: x = -104         e^-104 < 2^-150: the result rounds to 0 either way
 *   t  = fma(x, log2e, S)      S = 1.5 * 2^23 + 191: t is k + S, k = round(x / ln 2),
 *                              and t's low bits are k + 191
 *   kf = t - S                 exactly k
 *   r  = fma(-kf, ln2_hi, x)   exact (k * ln2_hi is, in the fused operation)
 *   r  = fma(-kf, ln2_lo, r)   |r| <= ln(2)/2
 *   p  = P(r) * 2^-64          degree-6 fit of e^r, Horner in fused steps; every
 *                              coefficient carries 2^-64, so p stays normal
 *   e  = p * 2^(k + 64)        2^(k+64) = float with bits (t << 23): the one
 *                              rounding into a subnormal happens here, once
 *
 * Error: at most 1.07 ulp over every float in [-104, 0] (test_expf.c, which
 * prints the figure); docs/model.md states it. Not for x > 0, where
 * 2^(k + 64) overflows; NaN stays NaN. The macros are the bit patterns, so
 * the assembly (through the C preprocessor) and C share them. */
#ifndef RVNE_LX6_EXP_NEG_H
#define RVNE_LX6_EXP_NEG_H

#define EXPN_X_MIN  0xC2D00000u     /* -104.0 */
#define EXPN_SHIFT  0x4B4000BFu     /* 1.5 * 2^23 + 191 */
#define EXPN_LOG2E  0x3FB8AA3Bu     /* 1 / ln 2 */
#define EXPN_LN2_HI 0x3F317218u     /* ln 2 rounded to float */
#define EXPN_LN2_LO 0xB102E308u     /* ln 2 - EXPN_LN2_HI, rounded */
/* 2^-64 * (1, 1, 0.49999994, 0.16666430, 0.041668005, 0.0083741955,
 * 0.0013843607): a relative-error fit on |r| <= 0.3468 with c0 = 1. */
#define EXPN_C0 0x1F800000u
#define EXPN_C1 0x1F800000u
#define EXPN_C2 0x1EFFFFFEu
#define EXPN_C3 0x1E2AAA0Cu
#define EXPN_C4 0x1D2AAC12u
#define EXPN_C5 0x1C0933ECu
#define EXPN_C6 0x1AB57370u

#if !defined(__ASSEMBLER__)
#include <math.h>
#include <stdint.h>

/* Bits to float and back through a union: with memcpy, a sanitized host
 * build (test_expf) calls the library for every copy, several times slower. */
typedef union {
    float f;
    uint32_t u;
} expn_bits;

static inline float expn_f(uint32_t u)
{
    expn_bits b;
    b.u = u;
    return b.f;
}

/* The first step on its own, so test_expf can try it on every input below
 * -104 without the model's underflow, which is slow on the host's FPU. */
static inline float rvne_lx6_exp_neg_clamp(float x)
{
    return x < expn_f(EXPN_X_MIN) ? expn_f(EXPN_X_MIN) : x;
}

static inline float rvne_lx6_exp_neg_model(float x)
{
    float t, kf, r, p;
    expn_bits tb;
    x = rvne_lx6_exp_neg_clamp(x);
    t = fmaf(x, expn_f(EXPN_LOG2E), expn_f(EXPN_SHIFT));
    tb.f = t;
    kf = t - expn_f(EXPN_SHIFT);
    r = fmaf(-kf, expn_f(EXPN_LN2_HI), x);
    r = fmaf(-kf, expn_f(EXPN_LN2_LO), r);
    p = fmaf(expn_f(EXPN_C6), r, expn_f(EXPN_C5));
    p = fmaf(p, r, expn_f(EXPN_C4));
    p = fmaf(p, r, expn_f(EXPN_C3));
    p = fmaf(p, r, expn_f(EXPN_C2));
    p = fmaf(p, r, expn_f(EXPN_C1));
    p = fmaf(p, r, expn_f(EXPN_C0));
    return p * expn_f(tb.u << 23);
}
#endif
#endif
