/* Conversions between 32-bit integers and binary32. */
#include "rvne_rt.h"
#include "rt_sf.h"

/* |i| as a float with the given sign, rounded to nearest even. */
static uint32_t from_magnitude(uint32_t sign, uint32_t u)
{
    int lead;
    if (u == 0)
        return 0;               /* integer zero is +0 */
    lead = 31 - rt_clz32(u);
    /* Bring the leading one to bit 30 (value = sig / 2^30 * 2^lead). */
    if (lead == 31)
        return sf_round_pack(sign, 127 + lead, rt_shr_jam32(u, 1));
    return sf_round_pack(sign, 127 + lead, u << (30 - lead));
}

uint32_t rvne_rt_floatsisf(int32_t i)
{
    /* 0u - x: the magnitude of INT_MIN without signed overflow. */
    if (i < 0)
        return from_magnitude(SF_SIGN, 0u - (uint32_t)i);
    return from_magnitude(0, (uint32_t)i);
}

uint32_t rvne_rt_floatunsisf(uint32_t u)
{
    return from_magnitude(0, u);
}

uint32_t rvne_rt_fixunssfsi(uint32_t a)
{
    uint32_t e = sf_exp(a), sig;
    if (sf_is_nan(a))
        return 0;
    if (a & SF_SIGN)
        return 0;               /* (-1, -0] truncates to 0; the rest saturates */
    if (e < 127)
        return 0;               /* below 1.0 */
    if (e >= 127 + 32)
        return 0xFFFFFFFFu;     /* >= 2^32, or +inf */
    sig = sf_frac(a) | SF_HIDDEN;   /* value = sig * 2^(e-127-23) */
    if (e >= 127 + 23)
        return sig << (e - (127 + 23));
    return sig >> ((127 + 23) - e);
}
