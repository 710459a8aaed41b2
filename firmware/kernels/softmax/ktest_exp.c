/* The softmax kernel in assembly (softmax_exp_f32_ae32.S) on the
 * emulated core:
 *   1. madd.s rounds once here (fused): the premise of exp_neg.h's model,
 *      which writes it as fmaf;
 *   2. bit for bit against that model on the inputs tests/expf_table.bin
 *      holds (written on the host by test_expf from the same model: zeros,
 *      subnormals, the underflow and clamp boundaries, -inf, NaN, and every
 *      4099th float of [-104, 0]), the sum included;
 *   3. against its C twin rvne_softmax_exp_f32_c (libc expf) on random
 *      scores of awkward lengths, within the two exponentials' error bounds;
 *   4. those comparisons reject a kernel that drops the last element. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "rvne/kernels.h"

float rvne_lx6_madd_s(float acc, float a, float b);    /* fpu_probe.S */

#define CHUNK 64

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float f_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint32_t rng = 12345u;
static float uniform(float lo, float hi)
{
    rng = rng * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(rng >> 8) * 0x1p-24f;
}

/* Elements of two softmax outputs more than tol ulps apart, and their sums
 * more than the sum's share of that plus n roundings of each order. */
static int disagree(const float *a, float sa, const float *c, float sc, uint32_t n, float tol)
{
    int bad = 0;
    uint32_t j;
    for (j = 0; j < n; j++) {
        float ulp = fabsf(c[j]) * 0x1p-23f;
        if (ulp < 0x1p-149f)
            ulp = 0x1p-149f;
        bad += !(fabsf(a[j] - c[j]) <= tol * ulp);
    }
    bad += !(fabsf(sa - sc) <= sc * (tol + 2.0f * (float)n) * 0x1p-23f);
    return bad;
}

/* A wrong kernel for check 4: the last element left as it was. */
static float drops_last(float *att, uint32_t n)
{
    return rvne_softmax_exp_f32_ae32(att, n ? n - 1u : 0u);
}

static int table_check(const char *dir)
{
    char path[512];
    unsigned char rec[8];
    float att[CHUNK], xin[CHUNK];
    uint32_t want[CHUNK];
    uint32_t m = 0, total = 0, bad = 0, bad_sum = 0, j;
    int eof = 0;
    FILE *fp;
    snprintf(path, sizeof path, "%s/tests/expf_table.bin", dir);
    fp = fopen(path, "rb");
    if (fp == NULL) {
        fprintf(stderr, "ktest_exp: cannot open %s (make lx6-test writes it)\n", path);
        return -1;
    }
    att[0] = xin[0] = 0.0f;         /* the max: x - max is x itself */
    want[0] = 0x3F800000u;
    while (!eof) {
        eof = fread(rec, 1, sizeof rec, fp) != sizeof rec;
        if (!eof) {
            m++;
            att[m] = xin[m] = f_of(get32(rec));
            want[m] = get32(rec + 4);
        }
        if (m + 1u == CHUNK || (eof && m > 0u)) {
            float got_sum = rvne_softmax_exp_f32_ae32(att, m + 1u), sum = 0.0f;
            for (j = 0; j <= m; j++) {
                const int nan_ok = isnan(att[j]) && isnan(f_of(want[j]));
                if (bits_of(att[j]) != want[j] && !nan_ok && bad++ < 10)
                    printf("ktest_exp: x = 0x%08x: got 0x%08x, model 0x%08x\n", (unsigned)bits_of(xin[j]),
                           (unsigned)bits_of(att[j]), (unsigned)want[j]);
                sum += att[j];
            }
            bad_sum += bits_of(got_sum) != bits_of(sum) && !(isnan(got_sum) && isnan(sum));
            total += m;
            m = 0;
            att[0] = 0.0f;
        }
    }
    fclose(fp);
    printf("ktest_exp: %u inputs against exp_neg.h's model: %u differ, %u sums differ\n",
           (unsigned)total, (unsigned)bad, (unsigned)bad_sum);
    CHECK(total > 200000u);
    CHECK_EQ(bad, 0);
    CHECK_EQ(bad_sum, 0);
    return 0;
}

int main(int argc, char **argv)
{
    static const uint32_t lengths[] = {0, 1, 2, 3, 5, 8, 31, 64, 100, 257};
    static float a[300], c[300];
    size_t i;
    uint32_t j;

    CHECK_FATAL(argc >= 2);

    /* 1. (1 + 2^-12)^2 - (1 + 2^-11) = 2^-24 exactly; rounding the product
     * first gives 1 + 2^-11 (a tie, to even) and then 0. */
    {
        const float got = rvne_lx6_madd_s(-(1.0f + 0x1p-11f), 1.0f + 0x1p-12f, 1.0f + 0x1p-12f);
        printf("ktest_exp: madd.s (1+2^-12)^2 - (1+2^-11) = 0x%08x (fused: 2^-24 = 0x33800000, twice rounded: 0)\n",
               (unsigned)bits_of(got));
        CHECK(got == 0x1p-24f);
    }

    /* 2. */
    CHECK_FATAL(table_check(argv[1]) == 0);

    /* 3, 4. */
    for (i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        const uint32_t n = lengths[i];
        float sa, sc, sw;
        for (j = 0; j < n + 2u; j++)
            a[j] = c[j] = uniform(-30.0f, 30.0f);
        sa = rvne_softmax_exp_f32_ae32(a, n);
        sc = rvne_softmax_exp_f32_c(c, n);
        CHECK_EQ(disagree(a, sa, c, sc, n, 3.0f), 0);
        CHECK_EQ(bits_of(a[n]), bits_of(c[n]));     /* nothing written past n */
        CHECK_EQ(bits_of(a[n + 1u]), bits_of(c[n + 1u]));
        if (n == 0u)
            CHECK(sa == 0.0f);
        if (n > 1u) {
            for (j = 0; j < n; j++)
                a[j] = c[j] = uniform(-30.0f, 30.0f);
            sw = drops_last(a, n);
            sc = rvne_softmax_exp_f32_c(c, n);
            CHECK(disagree(a, sw, c, sc, n, 3.0f) > 0);
        }
    }
    return CHECK_DONE("ktest_exp");
}
