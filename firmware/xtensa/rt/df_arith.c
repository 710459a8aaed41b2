/* binary64 add, subtract, multiply, divide and compare, correctly rounded
 * (ties to even), on bit patterns. For cores without a double unit whose
 * compiler emits the libgcc calls (the esp32-class port's unit tests: the
 * firmware itself uses no double). The same rules as the binary32 routines
 * (rvne_rt.h): SSE NaN results, subnormals kept. 64-bit values are only
 * shifted, added and compared here; products come from rvne_rt_umulsidi3. */
#include "rvne_rt.h"
#include "rt_sf.h"

#define DF_SIGN 0x8000000000000000ull
#define DF_FRAC 0x000FFFFFFFFFFFFFull
#define DF_HIDDEN 0x0010000000000000ull
#define DF_QUIET 0x0008000000000000ull
#define DF_INF 0x7FF0000000000000ull
#define DF_DEFAULT_NAN 0xFFF8000000000000ull

static uint32_t df_exp(uint64_t a) { return (uint32_t)(a >> 52) & 0x7FFu; }
static int df_is_nan(uint64_t a) { return (a & ~DF_SIGN) > DF_INF; }
static uint64_t df_pick_nan(uint64_t a, uint64_t b) { return (df_is_nan(a) ? a : b) | DF_QUIET; }

static int clz64(uint64_t x)
{
    uint32_t hi = (uint32_t)(x >> 32);
    return hi ? rt_clz32(hi) : 32 + rt_clz32((uint32_t)x);
}

static uint64_t shr_jam64(uint64_t x, uint32_t n)
{
    if (n == 0)
        return x;
    if (n >= 64)
        return x != 0;
    return (x >> n) | ((x << (64 - n)) != 0);
}

/* sign | exp | sig for the value sig / 2^62 * 2^(e-1023): leading one at bit
 * 62, 10 bits below the 53-bit significand (bit 9 the round bit). e out of
 * range either way is handled: overflow to infinity, subnormals rounded once. */
static uint64_t df_round_pack(uint64_t sign, int32_t e, uint64_t sig)
{
    uint64_t rest, m;
    if (e <= 0) {
        sig = shr_jam64(sig, (uint32_t)(1 - e));
        rest = sig & 0x3FFu;
        m = (sig >> 10) + (rest > 0x200u || (rest == 0x200u && ((sig >> 10) & 1u)));
        return sign | m;
    }
    rest = sig & 0x3FFu;
    m = (sig >> 10) + (rest > 0x200u || (rest == 0x200u && ((sig >> 10) & 1u)));
    if (m >> 53) {
        m >>= 1;
        e++;
    }
    if (e >= 2047)
        return sign | DF_INF;
    return sign | ((uint64_t)e << 52) | (m & DF_FRAC);
}

static uint64_t df_norm_round_pack(uint64_t sign, int32_t e, uint64_t sig)
{
    int sh = clz64(sig) - 1;
    return df_round_pack(sign, e - sh, sig << sh);
}

/* Leading one of a finite non-zero operand at bit 52; its biased exponent
 * (<= 0 for subnormals). */
static int32_t unpack(uint64_t a, uint64_t *sig)
{
    uint32_t e = df_exp(a);
    uint64_t f = a & DF_FRAC;
    int sh;
    if (e) {
        *sig = f | DF_HIDDEN;
        return (int32_t)e;
    }
    sh = clz64(f) - 11;
    *sig = f << sh;
    return 1 - sh;
}

uint64_t rvne_rt_adddf3(uint64_t a, uint64_t b)
{
    uint64_t mag_a = a & ~DF_SIGN, mag_b = b & ~DF_SIGN, t, siga, sigb;
    uint32_t ea, eb;
    if (df_exp(a) == 0x7FFu || df_exp(b) == 0x7FFu) {
        if (df_is_nan(a) || df_is_nan(b))
            return df_pick_nan(a, b);
        if (mag_a == DF_INF)
            return (mag_b == DF_INF && ((a ^ b) & DF_SIGN)) ? DF_DEFAULT_NAN : a;
        return b;
    }
    if (mag_a < mag_b) {
        t = a; a = b; b = t;
        t = mag_a; mag_a = mag_b; mag_b = t;
    }
    if (mag_b == 0)
        return mag_a == 0 ? (a & b & DF_SIGN) : a;
    ea = df_exp(a);
    eb = df_exp(b);
    siga = ea ? ((a & DF_FRAC) | DF_HIDDEN) : (a & DF_FRAC);
    sigb = eb ? ((b & DF_FRAC) | DF_HIDDEN) : (b & DF_FRAC);
    if (!ea)
        ea = 1;
    if (!eb)
        eb = 1;
    /* 9 guard bits: leading one at bit 61, a carry reaches bit 62. */
    siga <<= 9;
    sigb = shr_jam64(sigb << 9, ea - eb);
    if ((a ^ b) & DF_SIGN) {
        siga -= sigb;
        if (siga == 0)
            return 0;
    } else {
        siga += sigb;
    }
    return df_norm_round_pack(a & DF_SIGN, (int32_t)ea + 1, siga);
}

uint64_t rvne_rt_subdf3(uint64_t a, uint64_t b)
{
    if (df_is_nan(a) || df_is_nan(b))
        return df_pick_nan(a, b);
    return rvne_rt_adddf3(a, b ^ DF_SIGN);
}

uint64_t rvne_rt_muldf3(uint64_t a, uint64_t b)
{
    uint64_t sign = (a ^ b) & DF_SIGN, mag_a = a & ~DF_SIGN, mag_b = b & ~DF_SIGN;
    uint64_t siga, sigb, ll, lh, hl, hh, mid, lo, hi;
    int32_t ea, eb;
    if (df_is_nan(a) || df_is_nan(b))
        return df_pick_nan(a, b);
    if (mag_a == DF_INF || mag_b == DF_INF)
        return (mag_a == 0 || mag_b == 0) ? DF_DEFAULT_NAN : (sign | DF_INF);
    if (mag_a == 0 || mag_b == 0)
        return sign;
    ea = unpack(a, &siga);
    eb = unpack(b, &sigb);
    /* 53 x 53 -> 106-bit product from 32-bit halves, as hi:lo. */
    ll = rvne_rt_umulsidi3((uint32_t)siga, (uint32_t)sigb);
    lh = rvne_rt_umulsidi3((uint32_t)siga, (uint32_t)(sigb >> 32));
    hl = rvne_rt_umulsidi3((uint32_t)(siga >> 32), (uint32_t)sigb);
    hh = rvne_rt_umulsidi3((uint32_t)(siga >> 32), (uint32_t)(sigb >> 32));
    mid = lh + hl;              /* < 2^54: no carry out */
    lo = ll + (mid << 32);
    hi = hh + (mid >> 32) + (lo < ll);
    /* The product lies in [2^104, 2^106): keep its top bits with the leading
     * one at bit 60 or 61 (hi has it at bit 40 or 41), the rest sticky. */
    hi = (hi << 20) | (lo >> 44) | ((lo & 0xFFFFFFFFFFFull) != 0);
    /* value = hi / 2^60 * 2^(ea+eb-2046) = hi / 2^62 * 2^((ea+eb-1021)-1023) */
    return df_norm_round_pack(sign, ea + eb - 1021, hi);
}

uint64_t rvne_rt_divdf3(uint64_t a, uint64_t b)
{
    uint64_t sign = (a ^ b) & DF_SIGN, mag_a = a & ~DF_SIGN, mag_b = b & ~DF_SIGN;
    uint64_t siga, sigb, q = 0, r;
    int32_t ea, eb;
    int i;
    if (df_is_nan(a) || df_is_nan(b))
        return df_pick_nan(a, b);
    if (mag_a == DF_INF)
        return mag_b == DF_INF ? DF_DEFAULT_NAN : (sign | DF_INF);
    if (mag_b == DF_INF)
        return sign;
    if (mag_b == 0)
        return mag_a == 0 ? DF_DEFAULT_NAN : (sign | DF_INF);
    if (mag_a == 0)
        return sign;
    ea = unpack(a, &siga);
    eb = unpack(b, &sigb);
    if (siga < sigb) {          /* quotient of the significands in [1, 2) */
        siga <<= 1;
        ea--;
    }
    /* Restoring division, one quotient bit per step, 63 bits: the leading
     * one lands on bit 62. r < 2 * sigb < 2^55 throughout. */
    r = siga;
    for (i = 0; i < 63; i++) {
        q <<= 1;
        if (r >= sigb) {
            r -= sigb;
            q |= 1u;
        }
        r <<= 1;
    }
    return df_round_pack(sign, ea - eb + 1023, q | (r != 0));
}

/* libgcc's comparison convention: <0, 0, >0 for less, equal, greater, and
 * `unordered` (either NaN) as given by the caller (+1 for __ledf2/__ltdf2,
 * -1 for __gedf2/__gtdf2, so that the comparison is false). */
int32_t rvne_rt_cmpdf2(uint64_t a, uint64_t b, int32_t unordered)
{
    if (df_is_nan(a) || df_is_nan(b))
        return unordered;
    if (((a | b) & ~DF_SIGN) == 0)
        return 0;               /* +0 == -0 */
    if ((a ^ b) & DF_SIGN)
        return (a & DF_SIGN) ? -1 : 1;
    if (a == b)
        return 0;
    return ((a < b) != !!(a & DF_SIGN)) ? -1 : 1;
}
