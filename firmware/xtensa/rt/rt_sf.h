/* What every binary32 routine of the runtime shares: field access, NaN
 * handling and the one rounding step (round to nearest, ties to even), so
 * that rounding is written, and tested, once. Internal to rt/. */
#ifndef RVNE_RT_SF_H
#define RVNE_RT_SF_H
#include <stdint.h>

#define SF_SIGN 0x80000000u
#define SF_EXP_MASK 0x7F800000u
#define SF_FRAC_MASK 0x007FFFFFu
#define SF_HIDDEN 0x00800000u
#define SF_QUIET 0x00400000u
#define SF_INF 0x7F800000u
#define SF_DEFAULT_NAN 0xFFC00000u

static inline uint32_t sf_exp(uint32_t a) { return (a >> 23) & 0xFFu; }
static inline uint32_t sf_frac(uint32_t a) { return a & SF_FRAC_MASK; }
static inline int sf_is_nan(uint32_t a) { return (a & 0x7FFFFFFFu) > SF_INF; }

/* The SSE rule: the first NaN operand, quieted. */
static inline uint32_t sf_pick_nan(uint32_t a, uint32_t b)
{
    return (sf_is_nan(a) ? a : b) | SF_QUIET;
}

/* Leading zeros of a non-zero word. nsau on lx106, lzcnt/bsr on the host. */
static inline int rt_clz32(uint32_t x) { return __builtin_clz(x); }

/* Right shift keeping, in bit 0, whether anything non-zero was shifted out
 * (the sticky bit rounding needs). Any count, also >= 32. */
static inline uint32_t rt_shr_jam32(uint32_t x, uint32_t n)
{
    if (n == 0)
        return x;
    if (n >= 32)
        return x != 0;
    return (x >> n) | ((x << (32 - n)) != 0);
}

/* Round and pack sign | exp | sig where the value is sig / 2^30 * 2^(e-127):
 * sig has its leading one at bit 30 and 7 bits below the 24-bit significand
 * (bit 6 the round bit, bits 0-5 sticky). e may be out of range both ways:
 * e >= 255 after rounding overflows to infinity; e <= 0 denormalises first
 * and rounds once, so subnormal results are correctly rounded too. */
static inline uint32_t sf_round_pack(uint32_t sign, int32_t e, uint32_t sig)
{
    uint32_t rest, m;
    if (e <= 0) {
        /* Subnormal: scale to the e = 1 grid; no hidden bit remains. A carry
         * into bit 23 makes the result the smallest normal, which the packing
         * below produces by itself (0x00800000 is exponent 1). */
        sig = rt_shr_jam32(sig, (uint32_t)(1 - e));
        rest = sig & 0x7Fu;
        m = (sig >> 7) + (rest > 0x40u || (rest == 0x40u && ((sig >> 7) & 1u)));
        return sign | m;
    }
    rest = sig & 0x7Fu;
    m = (sig >> 7) + (rest > 0x40u || (rest == 0x40u && ((sig >> 7) & 1u)));
    if (m >> 24) {              /* rounded up to 2.0: exact, so just rescale */
        m >>= 1;
        e++;
    }
    if (e >= 255)
        return sign | SF_INF;
    return sign | ((uint32_t)e << 23) | (m & SF_FRAC_MASK);
}

/* Leading one of a finite non-zero operand moved to bit 23; returns the
 * biased exponent that goes with it (<= 0 for subnormals). */
static inline int32_t sf_unpack(uint32_t a, uint32_t *sig)
{
    uint32_t e = sf_exp(a), f = sf_frac(a);
    int sh;
    if (e) {
        *sig = f | SF_HIDDEN;
        return (int32_t)e;
    }
    sh = rt_clz32(f) - 8;
    *sig = f << sh;
    return 1 - sh;
}

/* sig != 0 anywhere in bits 0-30: normalise to bit 30, then round. */
static inline uint32_t sf_norm_round_pack(uint32_t sign, int32_t e, uint32_t sig)
{
    int sh = rt_clz32(sig) - 1;
    return sf_round_pack(sign, e - sh, sig << sh);
}

#endif
