/* binary32 multiplication, correctly rounded (ties to even). */
#include "rvne_rt.h"
#include "rt_sf.h"

/* 24 x 24 -> 48-bit product as hi:lo words from 16-bit halves, so that only
 * 32-bit multiplies are used (a 64-bit one is a libcall on lx106). */
static void mul24(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
    uint32_t al = a & 0xFFFFu, ah = a >> 16, bl = b & 0xFFFFu, bh = b >> 16;
    uint32_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint32_t mid = lh + hl;     /* < 2^25 for 24-bit inputs: no carry out */
    uint32_t l = ll + (mid << 16);
    *hi = hh + (mid >> 16) + (l < ll);
    *lo = l;
}

uint32_t rvne_rt_mulsf3(uint32_t a, uint32_t b)
{
    uint32_t sign = (a ^ b) & SF_SIGN, mag_a = a & ~SF_SIGN, mag_b = b & ~SF_SIGN;
    uint32_t siga, sigb, hi, lo, sig;
    int32_t ea, eb;
    if (sf_is_nan(a) || sf_is_nan(b))
        return sf_pick_nan(a, b);
    if (mag_a == SF_INF || mag_b == SF_INF) {
        if (mag_a == 0 || mag_b == 0)
            return SF_DEFAULT_NAN;      /* 0 * inf */
        return sign | SF_INF;
    }
    if (mag_a == 0 || mag_b == 0)
        return sign;
    ea = sf_unpack(a, &siga);
    eb = sf_unpack(b, &sigb);
    /* The product lies in [2^46, 2^48): keep its top bits with bit 29 or 30
     * leading, the 17 dropped bits folded into a sticky bit. */
    mul24(siga, sigb, &hi, &lo);
    sig = (hi << 15) | (lo >> 17) | ((lo & 0x1FFFFu) != 0);
    /* value = sig / 2^29 * 2^(ea+eb-254) = sig / 2^30 * 2^((ea+eb-126)-127) */
    return sf_norm_round_pack(sign, ea + eb - 126, sig);
}
