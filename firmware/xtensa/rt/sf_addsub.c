/* binary32 addition and subtraction, correctly rounded (ties to even). */
#include "rvne_rt.h"
#include "rt_sf.h"

/* Both operands finite and not NaN. Significands carry 6 guard bits below
 * their least significant bit (leading one at bit 29), so a sum may carry
 * into bit 30 and the right-shifted smaller operand keeps a sticky bit. */
static uint32_t add_finite(uint32_t a, uint32_t b)
{
    uint32_t mag_a = a & ~SF_SIGN, mag_b = b & ~SF_SIGN, t;
    uint32_t ea, eb, siga, sigb, sign;
    if (mag_a < mag_b) {        /* |a| >= |b| from here on */
        t = a; a = b; b = t;
        t = mag_a; mag_a = mag_b; mag_b = t;
    }
    if (mag_b == 0) {
        if (mag_a == 0)         /* -0 + -0 = -0, any other mix of zeros +0 */
            return a & b & SF_SIGN;
        return a;
    }
    sign = a & SF_SIGN;
    ea = sf_exp(a);
    eb = sf_exp(b);
    /* Subnormals have no hidden bit and sit on the exponent-1 grid. */
    siga = ea ? (sf_frac(a) | SF_HIDDEN) : sf_frac(a);
    sigb = eb ? (sf_frac(b) | SF_HIDDEN) : sf_frac(b);
    if (!ea)
        ea = 1;
    if (!eb)
        eb = 1;
    siga <<= 6;
    sigb = rt_shr_jam32(sigb << 6, ea - eb);
    /* The value is sig / 2^29 * 2^(ea-127), i.e. sig / 2^30 at exponent ea+1. */
    if ((a ^ b) & SF_SIGN) {
        siga -= sigb;
        if (siga == 0)          /* x - x = +0 when rounding to nearest */
            return 0;
    } else {
        siga += sigb;
    }
    return sf_norm_round_pack(sign, (int32_t)ea + 1, siga);
}

static uint32_t add_special(uint32_t a, uint32_t b)
{
    if (sf_is_nan(a) || sf_is_nan(b))
        return sf_pick_nan(a, b);
    if ((a & ~SF_SIGN) == SF_INF) {
        if ((b & ~SF_SIGN) == SF_INF && ((a ^ b) & SF_SIGN))
            return SF_DEFAULT_NAN;      /* inf - inf */
        return a;
    }
    return b;                   /* b is the infinity */
}

uint32_t rvne_rt_addsf3(uint32_t a, uint32_t b)
{
    if (sf_exp(a) == 0xFFu || sf_exp(b) == 0xFFu)
        return add_special(a, b);
    return add_finite(a, b);
}

uint32_t rvne_rt_subsf3(uint32_t a, uint32_t b)
{
    /* NaNs before the sign flip: a NaN operand comes back with its own sign. */
    if (sf_is_nan(a) || sf_is_nan(b))
        return sf_pick_nan(a, b);
    return rvne_rt_addsf3(a, b ^ SF_SIGN);
}
