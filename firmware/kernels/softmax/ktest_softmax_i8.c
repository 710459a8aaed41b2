/* The int8 softmax in assembly (softmax_i8_lx6.S, rvne_softmax_i8_lx6)
 * against its C twin (rvne_softmax_i8_c) and both against docs/model.md's
 * formula computed here in 64 bits, bit for bit. Lengths: every n of 0 .. 9
 * and odd and even ones around the kernel's two elements a turn and the
 * window (15 .. 17, 31, 33, 99 .. 101, 255, 256), each with len = n and a
 * few past it (the zero padding, then word 0 again). Scores: random near
 * each other, the int32 extremes together (mx - sc_j up to 2^32 - 1, where
 * a signed difference or a missing clamp at 255 goes wrong), all equal,
 * one far above the rest; mx (the scores kernel's maximum) passed in as
 * computed here. Tables: random, all 65535 (S near 2^32 / 2, where
 * e_j * 32768 + S / 2 passes 2^31: a signed division goes wrong), and
 * entry 0 = 1 with the rest 0 (one weight takes all: -32768). Nothing
 * around np16's 2 * RVNE_I8_ROW_WORDS(len) + 2 values is written
 * (canaries), and the kernel leaves sc as it found it.
 *
 * tests.mk links it against the wrong kernel too (-DRVNE_DSP_DEFECT: no
 * floor(S / 2) nudge) and requires the FAILED line. */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "rvne/kernels.h"

#if !defined(RVNE_HAVE_SOFTMAX_I8_AE32)
#error "ktest_softmax_i8 checks the port's assembly kernel: build with LX6_KERNELS=ae32"
#endif

#define MAX_N 264
#define PAD 8
#define CANARY 0x5a5a

static int32_t sc[MAX_N], sc_in[MAX_N], sc_twin[MAX_N];
static uint16_t tab[256];
static int16_t got[MAX_N + 8 + 2 * PAD] __attribute__((aligned(4)));
static int16_t twin[MAX_N + 8 + 2 * PAD] __attribute__((aligned(4)));
static int16_t want[MAX_N + 8];

static uint32_t rng = 0x9e3779b9u;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

/* docs/model.md's p_j, negated, and the x16 tail, from the spec's words. */
static void reference(int16_t *np, const int32_t *s, uint32_t n, uint32_t end)
{
    int64_t mx = s[0], sum = 0;
    uint32_t j;
    for (j = 1; j < n; j++)
        if (s[j] > mx)
            mx = s[j];
    for (j = 0; j < n; j++) {
        int64_t d = mx - s[j];
        sum += tab[d < 255 ? d : 255];
    }
    for (j = 0; j < n; j++) {
        int64_t d = mx - s[j];
        np[j] = (int16_t)-(((int64_t)tab[d < 255 ? d : 255] * 32768 + sum / 2) / sum);
    }
    for (; j < end; j++)
        np[j] = 0;
    np[end] = np[0];
    np[end + 1] = np[1];
}

static void fill_scores(uint32_t n, unsigned kind)
{
    uint32_t j;
    for (j = 0; j < n; j++) {
        switch (kind) {
        case 0: sc_in[j] = (int32_t)(rnd() % 600u) - 300; break;
        case 1: sc_in[j] = (rnd() & 1u) ? INT32_MAX - (int32_t)(rnd() % 4u) : INT32_MIN + (int32_t)(rnd() % 4u); break;
        case 2: sc_in[j] = -7; break;
        default: sc_in[j] = j == n / 2u ? 100000 : (int32_t)(rnd() % 300u); break;
        }
    }
}

static void fill_table(unsigned kind)
{
    uint32_t i;
    for (i = 0; i < 256u; i++)
        tab[i] = kind == 0u ? (uint16_t)(rnd() | (i == 0u)) : kind == 1u ? 65535u : (uint16_t)(i == 0u);
}

/* 1 when np16 (PAD values in) matches want over [0, end + 2) and its
 * canaries stand. */
static int same(const int16_t *np, uint32_t end)
{
    uint32_t j;
    for (j = 0; j < PAD; j++)
        if ((uint16_t)np[j] != CANARY || (uint16_t)np[PAD + end + 2u + j] != CANARY)
            return 0;
    return memcmp(np + PAD, want, (end + 2u) * sizeof want[0]) == 0;
}

int main(void)
{
    static const uint32_t ns[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 33, 99, 100, 101, 255, 256};
    static const uint32_t extra[] = {0, 1, 2, 3, 5};
    unsigned a, b, kind, tk, cases = 0, bad = 0;
    uint32_t j;
    int32_t mx;
    for (tk = 0; tk < 3u; tk++) {
        fill_table(tk);
        for (a = 0; a < sizeof ns / sizeof ns[0]; a++)
            for (b = 0; b < sizeof extra / sizeof extra[0]; b++)
                for (kind = 0; kind < 4u; kind++) {
                    const uint32_t n = ns[a], len = n + extra[b], end = 2u * RVNE_I8_ROW_WORDS(len);
                    int ok;
                    if (n == 0u) {
                        sc_in[0] = 0;    /* both may read sc[0] for n = 0 */
                        want[0] = want[1] = (int16_t)CANARY; /* len 0: word 0 copied onto itself */
                    } else
                        fill_scores(n, kind);
                    memcpy(sc, sc_in, sizeof sc);
                    memcpy(sc_twin, sc_in, sizeof sc);
                    memset(got, 0x5a, sizeof got);
                    memset(twin, 0x5a, sizeof twin);
                    reference(want, sc_in, n, end);
                    mx = INT32_MIN;
                    for (j = 0; j < n; j++)
                        mx = sc_in[j] > mx ? sc_in[j] : mx;
                    rvne_softmax_i8_lx6(got + PAD, sc, n, len, tab, mx);
                    rvne_softmax_i8_c(twin + PAD, sc_twin, n, len, tab, mx);
                    ok = same(got, end) && memcmp(sc, sc_in, sizeof sc) == 0;
                    CHECK(ok);
                    CHECK(same(twin, end));
                    if (!ok && bad++ < 3u)
                        fprintf(stderr, "ktest_softmax_i8: n=%u len=%u scores %u table %u: np16[0] %d want %d\n",
                                (unsigned)n, (unsigned)len, kind, tk, got[PAD], want[0]);
                    cases++;
                }
    }
    fprintf(stderr, "ktest_softmax_i8: softmax_i8: %u cases%s\n", cases, bad ? ": FAILED" : "");
    return CHECK_DONE("ktest_softmax_i8");
}
