/* The int8 projection on MAC16 (matvec_i8_mac16.S, rvne_proj_i8_ae32)
 * against its C twin (rvne_proj_i8_c, the same prepared weights) and both
 * against the plain reference, rvne_requant_i8_c of rvne_matvec_i8_c on
 * the blob's layout: all three must agree bit for bit (the int8 model is
 * exact). Shapes: every n_in x n_out of 1, 2, 3, 5, 7, 8, 9, 15, 16, 17,
 * 31, 33, 64, 128 (odd, not a multiple of the kernel's 4 values a turn or
 * its 2 outputs a pass), and sums past 2^24 (n_in 1024, 2048: the float
 * estimate's input rounds). Inputs: random, the extremes (x -128 and 127,
 * weights -127 and 127, all one sign), and per channel a (mult, shift):
 * random near the outputs' scale, the extremes 16 and 62, and ones whose
 * products land exactly on halves (mult a power of two or 3 * 2^29) or one
 * off, where rounding half away from zero must hold on both signs. Every
 * output is written, nothing around y is (canaries). The int16 form
 * (proj16_i8: rvne_proj16_i8_ae32, rvne_proj16_i8_c) on every shape's
 * whole range and on a random range inside it, the same values. The sums
 * alone (dots_i8: rvne_dots_i8_ae32, rvne_dots_i8_c, the classifier's) on
 * every shape against rvne_matvec_i8_c's.
 *
 * tests.mk links it against the wrong kernel too (-DRVNE_DSP_DEFECT: exact
 * negative halves round up; the sums through a 16-bit accumulator) and
 * requires the proj_i8, proj16_i8 and dots_i8 FAILED lines. */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "rvne/kernels.h"

#if !defined(RVNE_HAVE_MATVEC_I8_AE32)
#error "ktest_i8 checks the port's assembly kernel: build with LX6_KERNELS=ae32"
#endif

#define MAX_IN 2048
#define MAX_OUT 128
#define MAX_W (128 * 128)
#define PAD 8
#define CANARY 0x5a
#define CANARY16 0x5a5a
#define CANARY32 0x5a5a5a5a

static int8_t xs[MAX_IN], ws[MAX_W];
static int32_t pairs[2 * MAX_OUT], acc[MAX_OUT];
static uint32_t prep[MAX_W / 2 + 2 * MAX_OUT + 2 + 3 * MAX_OUT + 64];
static int16_t x16[MAX_IN + 8] __attribute__((aligned(4)));
static int8_t got[MAX_OUT + 2 * PAD], twin[MAX_OUT + 2 * PAD], want[MAX_OUT];
static int16_t got16[MAX_OUT + 2 * PAD], twin16[MAX_OUT + 2 * PAD];
static int32_t dots[MAX_OUT + 2 * PAD], dots_twin[MAX_OUT + 2 * PAD];

static uint32_t rng = 0x2545f491u;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}
static int32_t range(int32_t lo, int32_t hi) { return lo + (int32_t)(rnd() % (uint32_t)(hi - lo + 1)); }

typedef struct tally {
    unsigned shapes, outputs, failed, outputs16, failed16, dots, failed_dots;
} tally;

static unsigned bitlen(uint32_t v)
{
    unsigned n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n;
}

/* Channel c's (mult, shift) of kind `kind`, for sums up to about amax. */
static void pick_pair(uint32_t c, unsigned kind, uint32_t amax)
{
    int32_t m = (int32_t)(0x40000000u | (rnd() & 0x3fffffffu)), s;
    /* s so that amax * m * 2^-s is about 2^(6 + jitter): most outputs in range. */
    s = (int32_t)bitlen(amax ? amax : 1u) + 31 - 6 + range(-2, 3);
    switch (kind % 8u) {
    case 0: case 1: case 2:
        break;
    case 3:
        m = 0x40000000;                 /* 2^30: z = acc / 2^(s - 30), halves for odd multiples */
        s = 31 + range(0, 2);
        break;
    case 4:
        m = 0x60000000;                 /* 3 * 2^29 */
        s = 32 + range(0, 2);
        break;
    case 5:
        m = 0x40000001;                 /* one above a power of two: just off the halves */
        s = 31 + range(0, 2);
        break;
    case 6:
        s = (rnd() & 1u) ? 16 : 62;
        if (rnd() & 1u)
            m = 0x7fffffff;
        break;
    default:
        m = 0x7fffffff;
        break;
    }
    if (s < 16)
        s = 16;
    if (s > 62)
        s = 62;
    pairs[2 * c] = m;
    pairs[2 * c + 1] = s;
}

/* dots_i8 on the shape's rows: the plain reference's sums themselves. */
static void run_dots(tally *t, uint32_t n_in, uint32_t n_out)
{
    uint32_t c, i;
    unsigned bad = 0;
    memset(dots, CANARY, sizeof dots);
    memset(dots_twin, CANARY, sizeof dots_twin);
    rvne_dots_i8_ae32(dots + PAD, x16, prep, n_in, n_out);
    rvne_dots_i8_c(dots_twin + PAD, x16, prep, n_in, n_out);
    for (c = 0; c < n_out; c++) {
        int ok = dots[PAD + c] == acc[c] && dots_twin[PAD + c] == acc[c];
        CHECK(ok);
        if (!ok && bad++ < 2u)
            fprintf(stderr, "ktest_i8: dots_i8 n_in=%u n_out=%u [%u]: asm %ld, C twin %ld, reference %ld\n",
                    (unsigned)n_in, (unsigned)n_out, (unsigned)c, (long)dots[PAD + c], (long)dots_twin[PAD + c],
                    (long)acc[c]);
    }
    for (i = 0; i < PAD; i++) {
        int ok = dots[i] == CANARY32 && dots[PAD + n_out + i] == CANARY32 && dots_twin[i] == CANARY32 &&
                 dots_twin[PAD + n_out + i] == CANARY32;
        CHECK(ok);
        if (!ok && bad++ < 2u)
            fprintf(stderr, "ktest_i8: dots_i8 n_in=%u n_out=%u: wrote around y\n", (unsigned)n_in, (unsigned)n_out);
    }
    t->dots += n_out;
    t->failed_dots += bad;
}

/* proj16_i8 on outputs [c0, c0 + cn) of the shape run_shape set up:
 * want's values as int16, canaries around. */
static void run_range16(tally *t, uint32_t n_in, uint32_t n_out, uint32_t c0, uint32_t cn)
{
    uint32_t c, i;
    unsigned bad = 0;
    memset(got16, CANARY, sizeof got16);
    memset(twin16, CANARY, sizeof twin16);
    rvne_proj16_i8_ae32(got16 + PAD, x16, prep, n_in, n_out, c0, cn);
    rvne_proj16_i8_c(twin16 + PAD, x16, prep, n_in, n_out, c0, cn);
    for (c = 0; c < cn; c++) {
        int ok = got16[PAD + c] == want[c0 + c] && twin16[PAD + c] == want[c0 + c];
        CHECK(ok);
        if (!ok && bad++ < 2u)
            fprintf(stderr, "ktest_i8: proj16_i8 n_in=%u n_out=%u [%u of %u..%u]: asm %d, C twin %d, reference %d\n",
                    (unsigned)n_in, (unsigned)n_out, (unsigned)(c0 + c), (unsigned)c0, (unsigned)(c0 + cn),
                    got16[PAD + c], twin16[PAD + c], want[c0 + c]);
    }
    for (i = 0; i < PAD; i++) {
        int ok = got16[i] == CANARY16 && got16[PAD + cn + i] == CANARY16 && twin16[i] == CANARY16 &&
                 twin16[PAD + cn + i] == CANARY16;
        CHECK(ok);
        if (!ok && bad++ < 2u)
            fprintf(stderr, "ktest_i8: proj16_i8 n_in=%u n_out=%u: wrote around y16\n", (unsigned)n_in,
                    (unsigned)n_out);
    }
    t->outputs16 += cn;
    t->failed16 += bad;
}

static void run_shape(tally *t, uint32_t n_in, uint32_t n_out, unsigned fill)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(n_in);
    uint32_t i, c, amax = 0;
    unsigned bad = 0;
    for (i = 0; i < n_in; i++) {
        switch (fill) {
        case 0: xs[i] = (int8_t)range(-128, 127); break;
        case 1: xs[i] = -128; break;
        case 2: xs[i] = 127; break;
        default: xs[i] = (int8_t)((i & 1u) ? -128 : 127); break;
        }
    }
    for (i = 0; i < n_in * n_out; i++) {
        switch (fill) {
        case 0: ws[i] = (int8_t)range(-127, 127); break;
        case 1: ws[i] = -127; break;
        case 2: ws[i] = (i & 2u) ? 127 : -127; break;
        default: ws[i] = (int8_t)((i & 1u) ? -127 : 127); break;
        }
    }
    rvne_matvec_i8_c(acc, xs, ws, n_in, n_out);
    for (c = 0; c < n_out; c++) {
        uint32_t a = (uint32_t)(acc[c] < 0 ? -acc[c] : acc[c]);
        if (a > amax)
            amax = a;
    }
    for (c = 0; c < n_out; c++)
        pick_pair(c, (unsigned)(c + fill + n_in), amax);
    CHECK(rvne_prep_i8_size(n_in, n_out) <= sizeof prep);
    memset(prep, 0xee, sizeof prep);
    rvne_prep_i8_c(prep, ws, pairs, n_in, n_out);
    memset(x16, 0x77, sizeof x16);
    rvne_x16_i8_c(x16, xs, n_in);
    CHECK_EQ(x16[2 * k], x16[0]);
    rvne_requant_i8_c(want, acc, pairs, n_out);
    memset(got, CANARY, sizeof got);
    memset(twin, CANARY, sizeof twin);
    rvne_proj_i8_ae32(got + PAD, x16, prep, n_in, n_out);
    rvne_proj_i8_c(twin + PAD, x16, prep, n_in, n_out);
    for (c = 0; c < n_out; c++) {
        int ok = got[PAD + c] == want[c] && twin[PAD + c] == want[c];
        CHECK(ok);
        if (!ok && bad++ < 2u)
            fprintf(stderr, "ktest_i8: proj_i8 n_in=%u n_out=%u fill=%u [%u]: asm %d, C twin %d, reference %d "
                            "(acc %ld, mult %ld, shift %ld)\n", (unsigned)n_in, (unsigned)n_out, fill, (unsigned)c,
                    got[PAD + c], twin[PAD + c], want[c], (long)acc[c], (long)pairs[2 * c], (long)pairs[2 * c + 1]);
    }
    for (i = 0; i < PAD; i++) {
        int ok = got[i] == CANARY && got[PAD + n_out + i] == CANARY && twin[i] == CANARY &&
                 twin[PAD + n_out + i] == CANARY;
        CHECK(ok);
        if (!ok && bad++ < 2u)
            fprintf(stderr, "ktest_i8: proj_i8 n_in=%u n_out=%u: wrote around y\n", (unsigned)n_in, (unsigned)n_out);
    }
    t->shapes++;
    t->outputs += n_out;
    t->failed += bad;
    run_dots(t, n_in, n_out);
    run_range16(t, n_in, n_out, 0u, n_out);
    if (n_out > 2u) {
        /* a range inside: the kernel reads the next row ahead, not past it */
        const uint32_t c0 = (uint32_t)range(1, (int32_t)n_out - 1);
        run_range16(t, n_in, n_out, c0, (uint32_t)range(1, (int32_t)(n_out - c0)));
    }
}

/* The scale the fast path estimates with is m * 2^-s to the nearest float. */
static void test_scale(void)
{
    static const int32_t ms[][2] = {{0x40000000, 16}, {0x7fffffff, 62}, {0x40000040, 30}, {0x400000c0, 40},
                                    {0x5555557f, 33}, {0x7fffffc0, 20}};
    unsigned i;
    for (i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        float want_f = (float)ms[i][0], got_f;
        int32_t s;
        uint32_t u;
        for (s = 0; s < ms[i][1]; s++)
            want_f *= 0.5f;
        rvne_prep_i8_c(prep, ws, ms[i], 1, 1);
        memcpy(&got_f, prep + 2 + 2, sizeof got_f);
        memcpy(&u, &got_f, sizeof u);
        CHECK(got_f == want_f);
        if (got_f != want_f)
            fprintf(stderr, "ktest_i8: scale of (%ld, %ld) = %08x\n", (long)ms[i][0], (long)ms[i][1], (unsigned)u);
    }
}

int main(void)
{
    static const uint32_t dims[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 128};
    const unsigned nd = sizeof dims / sizeof dims[0];
    tally t = {0, 0, 0, 0, 0, 0, 0};
    unsigned a, b, fill;
    test_scale();
    for (a = 0; a < nd; a++)
        for (b = 0; b < nd; b++)
            for (fill = 0; fill < 4u; fill++)
                if (fill == 0u || (a + b + fill) % 3u == 0u || dims[a] >= 64u)
                    run_shape(&t, dims[a], dims[b], fill);
    for (fill = 0; fill < 4u; fill++) {
        run_shape(&t, 1024, 3, fill);
        run_shape(&t, 2048, 5, fill);
        run_shape(&t, 2048, 8, fill);
    }
    fprintf(stderr, "ktest_i8: proj_i8: %u shapes, %u outputs%s\n", t.shapes, t.outputs, t.failed ? ": FAILED" : "");
    fprintf(stderr, "ktest_i8: proj16_i8: %u outputs%s\n", t.outputs16, t.failed16 ? ": FAILED" : "");
    fprintf(stderr, "ktest_i8: dots_i8: %u sums%s\n", t.dots, t.failed_dots ? ": FAILED" : "");
    return CHECK_DONE("ktest_i8");
}
