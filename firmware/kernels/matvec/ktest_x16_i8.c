/* The int8 widening in assembly (x16_i8_lx6.S, rvne_x16_i8_lx6)
 * against its C twin (rvne_x16_i8_c) and both against rvne/kernels.h's
 * words: x as int16, zeros up to 2 * RVNE_I8_ROW_WORDS(n), then x16[0],
 * x16[1] again. Lengths 0 .. 9 and around the kernel's four values a turn
 * and the heads it widens (15 .. 17, 31 .. 33, 127 .. 129), x at every
 * byte offset (a query head's q8 need not be aligned); values random, all
 * -128, all 127. The destination starts dirty (the padding must be
 * written, not assumed), and nothing around its 2 * RVNE_I8_ROW_WORDS(n)
 * + 2 values is written (canaries).
 *
 * tests.mk links it against the wrong kernel too (-DRVNE_DSP_DEFECT: every
 * fourth value zero-extended) and requires the FAILED line. */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "rvne/kernels.h"

#if !defined(RVNE_HAVE_X16_I8_AE32)
#error "ktest_x16_i8 checks the port's assembly kernel: build with LX6_KERNELS=ae32"
#endif

#define MAX_N 132
#define PAD 8
#define CANARY 0x5a5a
#define DIRTY 0x3c3c

static int8_t xs[MAX_N + 4];
static int16_t got[MAX_N + 8 + 2 * PAD] __attribute__((aligned(4)));
static int16_t twin[MAX_N + 8 + 2 * PAD] __attribute__((aligned(4)));
static int16_t want[MAX_N + 8];

static uint32_t rng = 0x85ebca6bu;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

/* got and twin: PAD canaries, the dirty span the kernel owns, PAD canaries. */
static void fill_out(int16_t *o, uint32_t span)
{
    uint32_t i;
    for (i = 0; i < span + 2u * PAD; i++)
        o[i] = (int16_t)(i < PAD || i >= PAD + span ? CANARY : DIRTY);
}

static unsigned run(uint32_t n, uint32_t off, unsigned kind)
{
    const uint32_t end = 2u * RVNE_I8_ROW_WORDS(n), span = end + 2u;
    const int8_t *x = xs + off;
    unsigned bad = 0, i;
    for (i = 0; i < n; i++)
        xs[off + i] = (int8_t)(kind == 0u ? (int32_t)(rnd() & 0xffu) - 128 : kind == 1u ? -128 : 127);
    for (i = 0; i < end; i++)
        want[i] = (int16_t)(i < n ? x[i] : 0);
    want[end] = n > 0u ? want[0] : DIRTY;     /* n = 0: x16[0], x16[1] copied onto themselves */
    want[end + 1u] = n > 0u ? want[1] : DIRTY;
    fill_out(got, span);
    fill_out(twin, span);
    rvne_x16_i8_lx6(got + PAD, x, n);
    rvne_x16_i8_c(twin + PAD, x, n);
    for (i = 0; i < span; i++) {
        int ok = got[PAD + i] == want[i] && twin[PAD + i] == want[i];
        CHECK(ok);
        if (!ok && bad++ < 2u)
            fprintf(stderr, "ktest_x16_i8: x16_i8 n=%u off=%u kind=%u [%u]: asm %d, C twin %d, want %d\n",
                    (unsigned)n, (unsigned)off, kind, i, got[PAD + i], twin[PAD + i], want[i]);
    }
    for (i = 0; i < PAD; i++) {
        int ok = got[i] == CANARY && got[PAD + span + i] == CANARY && twin[i] == CANARY &&
                 twin[PAD + span + i] == CANARY;
        CHECK(ok);
        if (!ok && bad++ < 2u)
            fprintf(stderr, "ktest_x16_i8: x16_i8 n=%u off=%u: wrote around x16\n", (unsigned)n, (unsigned)off);
    }
    return bad;
}

int main(void)
{
    static const uint32_t ns[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 127, 128, 129};
    unsigned a, off, kind, cases = 0, bad = 0;
    for (a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (off = 0; off < 4u; off++)
            for (kind = 0; kind < 3u; kind++) {
                bad += run(ns[a], off, kind);
                cases++;
            }
    fprintf(stderr, "ktest_x16_i8: x16_i8: %u cases%s\n", cases, bad ? ": FAILED" : "");
    return CHECK_DONE("ktest_x16_i8");
}
