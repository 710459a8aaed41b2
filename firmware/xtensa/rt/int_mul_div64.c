/* 64-bit multiply and division from 32-bit operations. */
#include "rvne_rt.h"
#include "rt_sf.h"

uint64_t rvne_rt_umulsidi3(uint32_t a, uint32_t b)
{
    uint32_t al = a & 0xFFFFu, ah = a >> 16, bl = b & 0xFFFFu, bh = b >> 16;
    uint32_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint32_t mid = lh + hl;
    uint32_t mid_carry = mid < lh;      /* the middle sum may carry into bit 48 */
    uint32_t lo = ll + (mid << 16);
    uint32_t hi = hh + (mid >> 16) + (mid_carry << 16) + (lo < ll);
    return ((uint64_t)hi << 32) | lo;
}

uint64_t rvne_rt_muldi3(uint64_t a, uint64_t b)
{
    uint32_t al = (uint32_t)a, ah = (uint32_t)(a >> 32);
    uint32_t bl = (uint32_t)b, bh = (uint32_t)(b >> 32);
    /* Only the low 64 bits: the high words meet only in the upper half. */
    uint64_t p = rvne_rt_umulsidi3(al, bl);
    return p + ((uint64_t)(al * bh + ah * bl) << 32);
}

static int clz64(uint64_t x)
{
    uint32_t hi = (uint32_t)(x >> 32);
    return hi ? rt_clz32(hi) : 32 + rt_clz32((uint32_t)x);
}

/* n / d and n % d for d != 0, one quotient bit per step from the dividend's
 * leading one. */
static uint64_t udivmod64(uint64_t n, uint64_t d, uint64_t *rem)
{
    uint64_t q = 0, r = 0;
    int i;
    if (n < d) {
        *rem = n;
        return 0;
    }
    for (i = 63 - clz64(n); i >= 0; i--) {
        /* r <= n >> (i + 1) < 2^63 here, so the shift loses nothing. */
        r = (r << 1) | ((n >> i) & 1u);
        if (r >= d) {
            r -= d;
            q |= 1ull << i;
        }
    }
    *rem = r;
    return q;
}

uint64_t rvne_rt_udivdi3(uint64_t a, uint64_t b)
{
    uint64_t r;
    if (b == 0)
        return ~0ull;
    return udivmod64(a, b, &r);
}

uint64_t rvne_rt_umoddi3(uint64_t a, uint64_t b)
{
    uint64_t r;
    if (b == 0)
        return a;
    udivmod64(a, b, &r);
    return r;
}

int64_t rvne_rt_divdi3(int64_t a, int64_t b)
{
    uint64_t ua, ub, q, r;
    if (b == 0)
        return -1;
    ua = a < 0 ? 0u - (uint64_t)a : (uint64_t)a;
    ub = b < 0 ? 0u - (uint64_t)b : (uint64_t)b;
    q = udivmod64(ua, ub, &r);
    if ((a < 0) != (b < 0))
        q = 0u - q;
    return (int64_t)q;          /* INT64_MIN / -1 wraps to INT64_MIN */
}
