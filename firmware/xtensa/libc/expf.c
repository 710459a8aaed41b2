/* expf for the esp32-class port, in single precision on the FPU: e^x =
 * 2^k * e^r with k = round(x / ln 2) and |r| <= ln(2)/2, e^r from its Taylor
 * series to r^7 (truncation error below 6e-9 relative, under a tenth of an
 * ulp), ln 2 split in two so k * ln2_hi is exact. Within 1.25 ulp of the
 * exact value (1.19 at worst on the floats firmware/tests/test_expf.c tries:
 * the Horner steps' roundings add to the truncation). The softmax kernel of
 * this port has its own exponential (kernels/softmax/exp_neg.h); this one serves the C
 * kernels and any other caller. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#define LOG2E 1.44269504f
#define LN2_HI 0.693145751953125f       /* 12 significant bits: k * LN2_HI exact */
#define LN2_LO 1.42860677e-06f
#define X_MAX 88.7228394f               /* above: overflow to +inf */
#define X_MIN -103.972084f              /* below: underflow to +0 */
#define ROUND_SHIFT 12582912.0f          /* 1.5 * 2^23 */
#define ROUND_SHIFT_BITS 0x4B400000u

static float pow2i(int k)               /* 2^k, -126 <= k <= 127 */
{
    uint32_t u = (uint32_t)(k + 127) << 23;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float expf(float x)
{
    float r, p, t;
    uint32_t tb;
    int k;
    if (x != x)
        return x + x;                   /* NaN, quieted */
    if (x > X_MAX)
        return INFINITY;
    if (x < X_MIN)
        return 0.0f;
    /* Round to nearest by the 1.5 * 2^23 shift: the integer lands in the low
     * significand bits. (A float select here, x < 0 ? -0.5f : 0.5f, crashes
     * llc-22's instruction selection: docs/targets.md.) */
    t = x * LOG2E + ROUND_SHIFT;
    memcpy(&tb, &t, sizeof tb);
    k = (int)(tb - ROUND_SHIFT_BITS);
    r = (x - (float)k * LN2_HI) - (float)k * LN2_LO;
    p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 +
        r * (1.0f / 720 + r * (1.0f / 5040)))))));
    /* k runs from -150 to 128: scale in two steps where 2^k itself is not a
     * normal float. */
    if (k > 127)
        return p * 2.0f * pow2i(k - 1);
    if (k < -126)
        return p * pow2i(k + 64) * pow2i(-64);
    return p * pow2i(k);
}
