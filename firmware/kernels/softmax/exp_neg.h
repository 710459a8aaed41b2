/* e^x for x <= 0, as the softmax needs it (x = score - max), in the
 * single-precision FPU's own operations: the arithmetic of
 * softmax_exp_f32_ae32.S, one line of C per instruction, so the host can test
 * it on every input (firmware/tests/test_expf.c) and the emulated core can
 * check the assembly against it bit for bit (ktest_exp.c). The kernel
 * takes y = max - score, which is -x exactly (IEEE subtraction is
 * antisymmetric), so no negation is spent:
 *
 *   k = round(y * 64)          round.s, ties to even; NaN and y >= 2^25
 *                              give an out-of-range k
 *   k = min(k, LAST)           minu: the table's last entry is 0, so every
 *                              y > 104 + 1/128 (e^-y < 2^-150) gives +0
 *   T = tab[k]                 e^(-k/64) rounded (exp_tab.h)
 *   r = k/64 - y               float.s, sub.s: exact, |r| <= 1/128
 *   e = T + (T r)(c1 + c2 r)   e^r ~ 1 + c1 r + c2 r^2 (relative error
 *                              2.0e-8, fit on |r| <= 1/128); the last step
 *                              fused, so e rounds once (into a subnormal
 *                              too, where T already is one)
 *
 * Error: at most EXPN_MAX_ULP over every float in [-104, 0] (test_expf,
 * which prints the figure); docs/model.md states it. Below -104 the result
 * is +0 (clamped: r stays finite, T = 0), except -inf, where r is -inf and
 * 0 * inf gives NaN: a score of -inf comes only from a dot product that
 * left the FP32 range, whose rows the verdict fails anyway (docs/model.md,
 * "Leaving the FP32 range"). NaN stays NaN. Not for x > 0. The macros are
 * bit patterns, so the assembly (through the C preprocessor) and C share
 * them. */
#ifndef RVNE_LX6_EXP_NEG_H
#define RVNE_LX6_EXP_NEG_H

#define EXPN_SCALE_LOG2 6           /* 64 table entries per unit of x */
#define EXPN_C1 0x3F800040u         /* 1.0000076 */
#define EXPN_C2 0x3F000007u         /* 0.50000042 */

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

#define EXPN_ROW(...) __VA_ARGS__,
static const uint32_t expn_tab[] = {
#include "exp_tab.h"
};
#undef EXPN_ROW

/* round.s then minu: the table index of y = -x (y >= +0 or NaN). A y whose
 * 64 y does not fit an int32 (or NaN) gives round.s an out-of-range result
 * that minu takes to EXPN_TAB_LAST, as anything above it. */
static inline uint32_t rvne_lx6_exp_neg_index(float y)
{
    const float v = y * (float)(1u << EXPN_SCALE_LOG2);
    return v < (float)EXPN_TAB_LAST ? (uint32_t)nearbyintf(v) : EXPN_TAB_LAST;
}

static inline float rvne_lx6_exp_neg_model(float x)
{
    const float y = -x;
    const uint32_t k = rvne_lx6_exp_neg_index(y);
    const float t = expn_f(expn_tab[k]);
    const float r = (float)k * (1.0f / (float)(1u << EXPN_SCALE_LOG2)) - y;
    const float tr = t * r;
    const float q = fmaf(expn_f(EXPN_C2), r, expn_f(EXPN_C1));
    return fmaf(tr, q, t);
}
#endif
#endif
