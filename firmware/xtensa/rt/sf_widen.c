/* binary32 <-> binary64: widening is exact, narrowing rounds to nearest even. */
#include "rvne_rt.h"
#include "rt_sf.h"

#define DF_SIGN 0x8000000000000000ull
#define DF_FRAC_MASK 0x000FFFFFFFFFFFFFull
#define DF_QUIET 0x0008000000000000ull

uint64_t rvne_rt_extendsfdf2(uint32_t a)
{
    uint64_t sign = (uint64_t)(a & SF_SIGN) << 32;
    uint32_t e = sf_exp(a), f = sf_frac(a);
    int sh;
    if (e == 0xFFu) {
        if (f)                  /* NaN: payload kept, quieted (as cvtss2sd) */
            return sign | (0x7FFull << 52) | DF_QUIET | ((uint64_t)f << 29);
        return sign | (0x7FFull << 52);
    }
    if (e == 0) {
        if (f == 0)
            return sign;
        /* Subnormal: every binary32 subnormal is a normal binary64. */
        sh = rt_clz32(f) - 8;   /* moves the leading one to bit 23 */
        f = (f << sh) & SF_FRAC_MASK;
        return sign | ((uint64_t)(1 - sh - 127 + 1023) << 52) | ((uint64_t)f << 29);
    }
    return sign | ((uint64_t)(e - 127 + 1023) << 52) | ((uint64_t)f << 29);
}

uint32_t rvne_rt_truncdfsf2(uint64_t a)
{
    uint32_t sign = (uint32_t)(a >> 32) & SF_SIGN;
    uint32_t e = (uint32_t)(a >> 52) & 0x7FFu;
    uint64_t f = a & DF_FRAC_MASK;
    uint32_t sig;
    if (e == 0x7FFu) {
        if (f)                  /* NaN: top payload bits kept, quieted (as cvtsd2ss) */
            return sign | SF_INF | SF_QUIET | (uint32_t)(f >> 29);
        return sign | SF_INF;
    }
    if (e == 0) {
        /* Zero, or a binary64 subnormal: far below half the smallest binary32
         * subnormal, it rounds to a signed zero. */
        return sign;
    }
    /* 53-bit significand, leading one from bit 52 to bit 30, the 22 dropped
     * bits folded into a sticky bit. */
    f |= 1ull << 52;
    sig = (uint32_t)(f >> 22) | ((f & 0x3FFFFFull) != 0);
    return sf_round_pack(sign, (int32_t)e - 1023 + 127, sig);
}
