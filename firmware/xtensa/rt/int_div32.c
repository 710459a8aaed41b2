/* 32-bit integer division by shift and subtract (lx106 has no divider). */
#include "rvne_rt.h"
#include "rt_sf.h"

/* n / d and n % d for d != 0. Only the bits from the dividend's leading one
 * down are walked, so small quotients are cheap. */
static uint32_t udivmod32(uint32_t n, uint32_t d, uint32_t *rem)
{
    uint32_t q = 0, r = 0;
    int i;
    if (n < d) {
        *rem = n;
        return 0;
    }
    for (i = 31 - rt_clz32(n); i >= 0; i--) {
        /* r <= n >> (i + 1) < 2^31 here, so the shift loses nothing. */
        r = (r << 1) | ((n >> i) & 1u);
        if (r >= d) {
            r -= d;
            q |= 1u << i;
        }
    }
    *rem = r;
    return q;
}

uint32_t rvne_rt_udivsi3(uint32_t a, uint32_t b)
{
    uint32_t r;
    if (b == 0)
        return 0xFFFFFFFFu;
    return udivmod32(a, b, &r);
}

uint32_t rvne_rt_umodsi3(uint32_t a, uint32_t b)
{
    uint32_t r;
    if (b == 0)
        return a;
    udivmod32(a, b, &r);
    return r;
}

int32_t rvne_rt_divsi3(int32_t a, int32_t b)
{
    uint32_t ua, ub, q, r;
    if (b == 0)
        return -1;
    /* Magnitudes in unsigned arithmetic: INT_MIN has no positive int32. */
    ua = a < 0 ? 0u - (uint32_t)a : (uint32_t)a;
    ub = b < 0 ? 0u - (uint32_t)b : (uint32_t)b;
    q = udivmod32(ua, ub, &r);
    if ((a < 0) != (b < 0))
        q = 0u - q;
    /* INT_MIN / -1: q = 2^31, which wraps to INT_MIN (gcc's conversion is
     * modulo 2^32, as C99 6.3.1.3 lets the implementation define). */
    return (int32_t)q;
}
