/* The esp32-class kernels' e^x for the softmax (kernels/softmax/exp_neg.h, the
 * C model of softmax_exp_f32_ae32.S) on every float the softmax can give it:
 * x = score - max is +0, -0, a negative normal or subnormal, -inf or NaN.
 * All 2^31 + 1 such floats are tried:
 *   [-104, 0]   error against e^x in double, in ulps of the exact value
 *               (subnormal results: ulps of 2^-149); at most EXPN_MAX_ULP
 *               (above -2^-25: 1 or the float below it, both within an ulp
 *               of e^x in (1 - 2^-25, 1])
 *   below -104  e^x < 2^-150: the result must be +0, as correct rounding
 *               gives (the table index is clamped to its last entry, 0);
 *               -inf gives NaN (exp_neg.h says why that is harmless)
 *   NaN         stays NaN
 * First, every entry of the model's table (exp_tab.h) must be e^(-i/64)
 * rounded to float as the host's exp and conversion give it.
 * The reference (exact_exp) is within about 2^-28 of a float ulp: the
 * printed maxima carry that uncertainty, far inside the margin checked. How
 * many results are the correctly rounded float is printed, not asserted.
 *
 * The port's libc expf (xtensa/libc/expf.c, what the C kernels call on
 * that board) is checked against LIBC_MAX_ULP on every 31st
 * float of [-104, 88.72].
 *
 * `test_expf --table FILE` writes sampled (x, e^x) pairs of the model for
 * the emulated core's bit-exact check of the assembly (make lx6-test). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "exp_neg.h"

#define EXPN_MAX_ULP 1.78        /* docs/model.md states this bound */
#define ONE_END 0xB3000000u      /* -2^-25 */
#define SCAN_MIN 0xC2D00000u        /* -104 */
#define LIBC_MAX_ULP 1.25        /* measured 1.19: its comment said 1 */

/* xtensa/libc/expf.c under another name: the host's libm keeps expf
 * (math.h above is already in, so its guard keeps it from being renamed). */
#define expf rvne_lx6_libc_expf
#include "../xtensa/libc/expf.c"
#undef expf

static float f_of(uint32_t u)
{
    return expn_f(u);
}

static uint32_t bits_of(float f)
{
    expn_bits b;
    b.f = f;
    return b.u;
}

/* |got - want| in ulps of want (a float's ulp at want's binade; 2^-149
 * below 2^-126), want > 0. The binade comes from want's bits: frexp would
 * double the scan's time. */
static double ulp_error(float got, double want)
{
    union {
        double d;
        uint64_t u;
    } w, ulp;
    ulp.d = 0x1p-149;
    if (want >= 0x1p-126) {
        w.d = want;
        ulp.u = ((w.u >> 52) - 23u) << 52;
    }
    return fabs((double)got - want) / ulp.d;
}

/* e^x in double for the scan: exp() itself, except for |x| < 2^-10 (most of
 * the floats of [-104, 0]), where 1 + x + x^2/2 + x^3/6 + x^4/24 is within
 * 2^-52 relative (the next term is below 2^-56) and three times faster. Both
 * are within about 2^-28 of a float ulp. */
static double exact_exp(float xf)
{
    const double x = (double)xf;
    if (fabs(x) < 0x1p-10)
        return 1.0 + x * (1.0 + x * (0.5 + x * (1.0 / 6.0 + x * (1.0 / 24.0))));
    return exp(x);
}

enum { ACCURACY, LIBC_ACCURACY, MUST_BE_ONE, MUST_BE_ZERO, MUST_BE_NAN };

typedef struct {
    uint32_t lo, hi, step;      /* float bit patterns [lo, hi], every step-th */
    int mode;
    double max_ulp;
    uint32_t worst;
    uint64_t n, rounded_ok, bad;
} scan;

static void *scan_run(void *arg)
{
    scan *s = arg;
    /* Locals in the loop: the sanitizers then have no memory to watch. */
    const int mode = s->mode;
    const uint32_t hi = s->hi, step = s->step;
    double max_ulp = 0.0;
    uint64_t n = 0, rounded_ok = 0, bad = 0;
    uint32_t u = s->lo, worst = 0;
    for (;;) {
        const float x = f_of(u);
        const float y = mode == LIBC_ACCURACY ? rvne_lx6_libc_expf(x)
                                                  : rvne_lx6_exp_neg_model(x);
        n++;
        if (mode == MUST_BE_ONE) {
            bad += bits_of(y) != 0x3F800000u && bits_of(y) != 0x3F7FFFFFu;
        } else if (mode == MUST_BE_ZERO) {
            bad += bits_of(y) != 0u;
        } else if (mode == MUST_BE_NAN) {
            bad += !isnan(y);
        } else if (!isfinite(y)) {
            bad++;
        } else {
            const double want = exact_exp(x);
            const double err = ulp_error(y, want);
            if (err > max_ulp) {
                max_ulp = err;
                worst = u;
            }
            rounded_ok += (y == (float)want);
        }
        if (hi - u < step)
            break;
        u += step;
    }
    s->max_ulp = max_ulp;
    s->worst = worst;
    s->n = n;
    s->rounded_ok = rounded_ok;
    s->bad = bad;
    return NULL;
}

/* Two threads (the CI machine has two cores), each over half the range. */
static scan scan_range(uint32_t lo, uint32_t hi, uint32_t step, int mode)
{
    scan part[2], total;
    pthread_t th[2];
    const uint32_t mid = lo + ((hi - lo) / 2u / step) * step;
    int i, started[2];
    memset(part, 0, sizeof part);
    part[0].lo = lo;
    part[0].hi = mid > lo ? mid - 1u : lo;
    part[1].lo = mid > lo ? mid : lo + step;
    part[1].hi = hi;
    for (i = 0; i < 2; i++) {
        part[i].step = step;
        part[i].mode = mode;
        started[i] = pthread_create(&th[i], NULL, scan_run, &part[i]) == 0;
        if (!started[i])
            scan_run(&part[i]);
    }
    memset(&total, 0, sizeof total);
    for (i = 0; i < 2; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        if (part[i].max_ulp >= total.max_ulp) {
            total.max_ulp = part[i].max_ulp;
            total.worst = part[i].worst;
        }
        total.n += part[i].n;
        total.rounded_ok += part[i].rounded_ok;
        total.bad += part[i].bad;
    }
    return total;
}

static int write_table(const char *path)
{
    /* Inputs worth seeing on the core: zeros, the subnormal and underflow
     * boundaries, ties of the index's rounding (-(k + 1/2)/64: to even),
     * the table's end and the clamp, 64 x beyond an int32, -inf, NaN; then
     * a stride over [-104, 0]. */
    static const uint32_t special[] = {
        0x00000000u, 0x80000000u, 0x80000001u, 0x807FFFFFu, 0x80800000u, 0xB3800000u,
        0xBC000000u, 0xBCC00000u, 0xBD200000u, 0xC0C94000u, 0xC0C98000u,
        0xBF317218u, 0xC2AEAC50u, 0xC2AEAC4Fu, 0xC2CE8ED0u, 0xC2CFF1B5u, 0xC2CFFFFFu, 0xC2D00000u,
        0xC2D00001u, 0xC2D00200u, 0xC2D00400u, 0xC2D00600u, 0xC2D00800u, 0xCC000000u, 0xCC000001u,
        0xF149F2CAu, 0xFF7FFFFFu, 0xFF800000u, 0xFFC00000u, 0x7FC00000u,
    };
    FILE *fp = fopen(path, "wb");
    uint32_t u;
    size_t i;
    uint8_t rec[8];
    if (fp == NULL) {
        fprintf(stderr, "test_expf: cannot write %s\n", path);
        return 1;
    }
    for (i = 0; i < sizeof special / sizeof special[0]; i++) {
        put32(rec, special[i]);
        put32(rec + 4, bits_of(rvne_lx6_exp_neg_model(f_of(special[i]))));
        fwrite(rec, 1, sizeof rec, fp);
    }
    for (u = 0x80000000u; u <= SCAN_MIN; u += 4099u) {
        put32(rec, u);
        put32(rec + 4, bits_of(rvne_lx6_exp_neg_model(f_of(u))));
        fwrite(rec, 1, sizeof rec, fp);
    }
    return fclose(fp) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    scan s, one, under, nan_neg;

    if (argc == 3 && strcmp(argv[1], "--table") == 0)
        return write_table(argv[2]);

    /* The table: entry i is e^(-i/64) as the host rounds it, the last 0. */
    {
        uint32_t i, bad = 0;
        for (i = 0; i < EXPN_TAB_LAST; i++)
            bad += expn_tab[i] != bits_of((float)exp(-(double)i / (double)(1u << EXPN_SCALE_LOG2)));
        bad += expn_tab[EXPN_TAB_LAST] != 0u;
        printf("test_expf: table, %u entries: %u not e^(-i/64) rounded\n", (unsigned)EXPN_TAB_LAST + 1u,
               (unsigned)bad);
        CHECK_EQ(sizeof expn_tab / sizeof expn_tab[0], EXPN_TAB_LAST + 1u);
        CHECK_EQ(bad, 0);
    }

    /* -0 and every negative float down to -104; +0 alone. Above -2^-25
     * (three quarters of them) e^x is in (1 - 2^-25, 1]: the result must be
     * 1 or 1 - 2^-24 (c1 > 1 gives the latter next to -2^-25), within an
     * ulp, which is all that needs checking there. */
    one = scan_range(0x80000000u, ONE_END - 1u, 1u, MUST_BE_ONE);
    s = scan_range(ONE_END, SCAN_MIN, 1u, ACCURACY);
    printf("test_expf: model on (-2^-25, -0], %llu floats: %llu neither 1 nor 1 - 2^-24 (within 1 ulp)\n",
           (unsigned long long)one.n, (unsigned long long)one.bad);
    printf("test_expf: model on [-104, -2^-25], %llu floats: max error %.4f ulp at %a; "
           "%.3f%% correctly rounded\n", (unsigned long long)s.n, s.max_ulp, (double)f_of(s.worst),
           100.0 * (double)s.rounded_ok / (double)s.n);
    CHECK_EQ(one.n + s.n, (uint64_t)SCAN_MIN - 0x80000000u + 1u);
    CHECK_EQ(one.bad, 0);
    CHECK_EQ(s.bad, 0);
    CHECK(s.max_ulp <= EXPN_MAX_ULP);
    CHECK_EQ(bits_of(rvne_lx6_exp_neg_model(0.0f)), 0x3F800000u);
    CHECK_EQ(bits_of(rvne_lx6_exp_neg_model(-0.0f)), 0x3F800000u);

    /* Below -104, down to the largest finite: +0 (e^-104 < 2^-150), as
     * correct rounding gives. -inf gives NaN (exp_neg.h). Then every
     * negative NaN, and the positive quiet NaN a subtraction may produce. */
    CHECK_EQ(bits_of(rvne_lx6_exp_neg_model(f_of(SCAN_MIN + 1u))), 0u);
    CHECK(isnan(rvne_lx6_exp_neg_model(-INFINITY)));
    under = scan_range(SCAN_MIN + 1u, 0xFF7FFFFFu, 1u, MUST_BE_ZERO);
    nan_neg = scan_range(0xFF800001u, 0xFFFFFFFFu, 1u, MUST_BE_NAN);
    printf("test_expf: model below -104 (%llu finite floats): %llu not +0; "
           "%llu NaN in: %llu not NaN\n", (unsigned long long)under.n, (unsigned long long)under.bad,
           (unsigned long long)nan_neg.n, (unsigned long long)nan_neg.bad);
    CHECK_EQ(under.n, 0xFF7FFFFFu - SCAN_MIN);
    CHECK_EQ(under.bad, 0);
    CHECK_EQ(nan_neg.n, 0xFFFFFFFFu - 0xFF800000u);
    CHECK_EQ(nan_neg.bad, 0);
    CHECK(isnan(rvne_lx6_exp_neg_model(f_of(0x7FC00000u))));

    /* A model that is wrong must be seen to be: the scan's own check. */
    {
        const float x = -1.0f, y = rvne_lx6_exp_neg_model(x);
        CHECK(ulp_error(f_of(bits_of(y) + 2u), exp((double)x)) > EXPN_MAX_ULP);
        CHECK(ulp_error(y, exp((double)x)) <= EXPN_MAX_ULP);
    }

    {
        scan neg = scan_range(0x80000000u, SCAN_MIN, 31u, LIBC_ACCURACY);
        scan pos = scan_range(0x00000000u, 0x42B17217u, 31u, LIBC_ACCURACY);   /* up to 88.72 */
        printf("test_expf: libc expf, every 31st float: [-104, 0] max %.4f ulp at %a, "
               "[0, 88.72] max %.4f ulp at %a\n", neg.max_ulp, (double)f_of(neg.worst),
               pos.max_ulp, (double)f_of(pos.worst));
        CHECK(neg.max_ulp <= LIBC_MAX_ULP);
        CHECK(pos.max_ulp <= LIBC_MAX_ULP);
        CHECK_EQ(neg.bad + pos.bad, 0);
    }
    return CHECK_DONE("test_expf");
}
