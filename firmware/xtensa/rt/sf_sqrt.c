/* binary32 square root, correctly rounded, by the bit-by-bit integer square
 * root of the significand. Used where the FPU has no sqrt instruction (the
 * esp32-class port's sqrtf); the core calls it once per push. */
#include "rvne_rt.h"
#include "rt_sf.h"

uint32_t rvne_rt_sqrtsf(uint32_t a)
{
    uint32_t e = sf_exp(a), sig = sf_frac(a), root = 0, rem = 0, m;
    int32_t exp, ex;
    int i;
    if (sf_is_nan(a))
        return a | SF_QUIET;
    if ((a & ~SF_SIGN) == 0)
        return a;                       /* sqrt(+-0) = +-0 */
    if (a & SF_SIGN)
        return SF_DEFAULT_NAN;
    if (a == SF_INF)
        return a;
    if (e == 0) {                       /* subnormal: normalise */
        int sh = rt_clz32(sig) - 8;
        sig <<= sh;
        exp = 1 - sh - 127;
    } else {
        sig |= SF_HIDDEN;
        exp = (int32_t)e - 127;
    }
    /* value = sig * 2^(exp-23) = M * 2^E with E even, M in [2^24, 2^26). */
    if (exp & 1) {
        m = sig << 2;
        ex = exp - 25;
    } else {
        m = sig << 1;
        ex = exp - 24;
    }
    /* root = floor(sqrt(M * 2^26)), 26 bits, two dividend bits per step:
     * M's 13 pairs, then 13 pairs of zeros. rem < 2 * root + 1 < 2^27. */
    for (i = 0; i < 26; i++) {
        uint32_t pair = i < 13 ? (m >> (24 - 2 * i)) & 3u : 0u;
        uint32_t trial = (root << 2) | 1u;
        rem = (rem << 2) | pair;
        root <<= 1;
        if (rem >= trial) {
            rem -= trial;
            root |= 1u;
        }
    }
    /* sqrt = root / 2^13 * 2^(E/2): 24 significand bits, a round bit, one
     * more bit, and the remainder as sticky (never exactly half-way). */
    return sf_round_pack(0, ex / 2 + 12 + 127, (root << 5) | (rem != 0));
}
