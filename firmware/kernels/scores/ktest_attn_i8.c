/* The int8 attention's MAC16 steps on the 16-bit rings (rvne/kernels.h):
 * the scores (scores_i8_mac16.S, rvne_scores_i8_ae32) and the weighted
 * sum (the projection's kernel, ../matvec/matvec_i8_mac16.S, on -p_j:
 * rvne_wsum_i8_ae32), each against its C twin (rvne_scores_i8_c,
 * rvne_wsum_i8_c) and all against a plain int64 recomputation of
 * docs/model.md's formulas from the int8 values, written here without the
 * kernels' helpers (no rvne_rq, no rvne_dot_i8_c): a shared helper's bug
 * would otherwise pass on both sides.
 *
 * The rings are laid out as rvne_head.c's append_i8 lays them out: a key
 * row per position (int16, zero padded to a multiple of 4), a value row per
 * channel (one int16 per ring slot); the words a kernel may read past the
 * last row hold garbage, and so do the value slots past n (the head's ring
 * keeps stale values there; -p_j = 0 must cancel them). p_j comes from the
 * spec's softmax computed here in int64 on the reference scores, not from
 * rvne_softmax_i8_c, so this test does not depend on that function.
 *
 * Shapes: head_dim 1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 32, 33, 64; positions n
 * 1, 2, 3, 5, 16, 17, 99, 100; g 1..4 query heads per kv head; a ring
 * longer than n (len > n) too. Inputs: random, the extremes (-128/127
 * everywhere). Pairs: random near the values' scale (scores past int8 and
 * past the kernel's 2^8 range, which it hands back to the exact C path),
 * the extremes (shift 16 and 62), and exact halves on both signs: the
 * scores' with mult 2^30 and a key value nudged so the dot product is an
 * odd multiple of half the divisor; the weighted sum's with one position
 * taking all the weight (p = 32768, also every n = 1) or 2^b positions
 * 32768 / 2^b each, and rq_o = (2^30, 46 - b) or (3 * 2^29, 47 - b).
 * The maximum the scores return (the softmax's mx) is checked too, and a
 * score the assembly leaves inexact must lie, as its exact value does, 255
 * or more below it (rvne/kernels.h).
 * Canaries around every output buffer.
 *
 * tests.mk links it against the wrong kernels too (-DRVNE_DSP_DEFECT:
 * exact negative halves round up, in both .S files) and requires the
 * scores_i8 and wsum_i8 FAILED lines (the weighted sum's kernel sums -p_j
 * but scales by -scale: its estimate is of z itself, so the defect shows
 * on z's negative halves there too). */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "rvne/kernels.h"

#if !defined(RVNE_HAVE_SCORES_I8_AE32) || !defined(RVNE_HAVE_MATVEC_I8_AE32)
#error "ktest_attn_i8 checks the port's assembly kernels: build with LX6_KERNELS=ae32"
#endif

#define MAX_HD 64
#define MAX_N 100
#define MAX_LEN 112
#define MAX_G 4
#define PAD 8
#define CANARY8 0x5a
#define CANARY16 0x5a5a /* int16 outputs set by memset(CANARY8) */
#define CANARY32 0x5a5a5a5a
#define GARBAGE16 0x7abc /* read-ahead and unused slots: must not matter */

static int8_t qs[MAX_G][MAX_HD], ks[MAX_N][MAX_HD], vs[MAX_N][MAX_HD];
static uint32_t keys[MAX_N * (MAX_HD / 2) + 2], vals[MAX_HD * (MAX_LEN / 2) + 2];
static int16_t q16[MAX_HD + 8] __attribute__((aligned(4)));
static int16_t np16[MAX_LEN + 8] __attribute__((aligned(4)));
static int32_t sc_asm[MAX_N + 2 * PAD], sc_twin[MAX_N + 2 * PAD];
static int64_t sc_ref[MAX_N];
static int64_t p_ref[MAX_N];
static int16_t o_asm[MAX_HD + 2 * PAD], o_twin[MAX_HD + 2 * PAD];
static uint16_t exp_tab[256];

static uint32_t rng = 0x1f2e3d4cu;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}
static int32_t range(int32_t lo, int32_t hi) { return lo + (int32_t)(rnd() % (uint32_t)(hi - lo + 1)); }

typedef struct tally {
    unsigned cases, scores, outputs, wide, bad_s, bad_w, flat, kept, biased;
} tally;

/* docs/model.md's rq in int64: p = acc*m, sign(p) * ((|p| + 2^(s-1)) >> s).
 * *wide is set when the result does not fit int32: docs/model.md then
 * takes the C cast (two's complement) but the firmware's rvne_rq
 * saturates (rvne/kernels.h); this test follows the firmware, saturating,
 * and counts those cases. */
static int64_t ref_rq(int64_t acc, int32_t m, int32_t s, int *wide)
{
    const int64_t p = acc * m;
    const int64_t mag = p < 0 ? -p : p;
    const int64_t r = (mag + ((int64_t)1 << (s - 1))) >> s;
    const int64_t v = p < 0 ? -r : r;
    if (v > INT32_MAX || v < INT32_MIN) {
        *wide = 1;
        return v > 0 ? INT32_MAX : INT32_MIN;
    }
    return v;
}
static int8_t ref_sat8(int64_t v) { return (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v); }

static unsigned bitlen(uint64_t v)
{
    unsigned n = 0;
    while (v) {
        n++;
        v >>= 1;
    }
    return n;
}

/* A (mult, shift) of kind `kind` for sums up to amax: most kinds put
 * |z| = amax * m * 2^-s near 2^(6 + jitter) (some past int8, some past
 * the kernels' 2^8 range), the rest the extremes or mult 2^30 (halves). */
/* Scores up to about 2^17 (not 2^6): past the estimate's exact range,
 * where the assembly may leave those far below the maximum inexact. */
static int far_scores;

static void pick_pair(int32_t *pair, unsigned kind, uint64_t amax)
{
    int32_t m = (int32_t)(0x40000000u | (rnd() & 0x3fffffffu));
    int32_t s = (int32_t)bitlen(amax ? amax : 1u) + 31 - (far_scores ? 17 : 6) + range(-3, 4);
    switch (kind % 6u) {
    case 0: case 1:
        break;
    case 2:
        m = 0x40000001; /* just off the halves */
        break;
    case 3:
        s = (rnd() & 1u) ? 16 : 62;
        m = (rnd() & 1u) ? 0x7fffffff : 0x40000000;
        break;
    default:
        m = 0x40000000; /* with run_case's nudge: exact halves */
        break;
    }
    pair[0] = m;
    pair[1] = s < 16 ? 16 : s > 62 ? 62 : s;
}

/* Key rows as append_i8 writes them, then 2 garbage words. */
static void build_keys(uint32_t hd, uint32_t n)
{
    const uint32_t kr = RVNE_I8_ROW_WORDS(hd);
    uint32_t j, d;
    for (j = 0; j < n; j++) {
        int16_t *row = (int16_t *)(void *)(keys + (size_t)j * kr);
        for (d = 0; d < 2u * kr; d++)
            row[d] = d < hd ? ks[j][d] : 0;
    }
    keys[n * kr] = GARBAGE16 * 0x10001u;
    keys[n * kr + 1u] = GARBAGE16 * 0x10001u;
}

/* Value rows, channel d's slot j at row d: garbage past n (stale slots)
 * and past len (the row's padding), and 2 garbage words after. */
static void build_vals(uint32_t hd, uint32_t n, uint32_t len)
{
    const uint32_t vr = RVNE_I8_ROW_WORDS(len);
    uint32_t j, d;
    for (d = 0; d < hd; d++) {
        int16_t *row = (int16_t *)(void *)(vals + (size_t)d * vr);
        for (j = 0; j < 2u * vr; j++)
            row[j] = j < n ? vs[j][d] : (int16_t)range(-128, 127);
    }
    vals[hd * vr] = GARBAGE16 * 0x10001u;
    vals[hd * vr + 1u] = GARBAGE16 * 0x10001u;
}

/* np16 as the head hands it to rvne_wsum_i8: -p_j for j < n, 0 to the
 * x16 length of len, word 0 again. */
static void build_np16(uint32_t n, uint32_t len)
{
    const uint32_t end = 2u * RVNE_I8_ROW_WORDS(len);
    uint32_t j;
    for (j = 0; j < end; j++)
        np16[j] = j < n ? (int16_t)-p_ref[j] : 0;
    np16[end] = np16[0];
    np16[end + 1u] = np16[1];
}

/* The spec's p_j from the reference scores (every step in int64). */
static void ref_softmax(uint32_t n)
{
    static int64_t e[MAX_N];
    int64_t mx = sc_ref[0], sum = 0;
    uint32_t j;
    for (j = 1; j < n; j++)
        if (sc_ref[j] > mx)
            mx = sc_ref[j];
    for (j = 0; j < n; j++) {
        const int64_t dlt = mx - sc_ref[j];
        e[j] = exp_tab[dlt < 255 ? dlt : 255];
        sum += e[j];
    }
    for (j = 0; j < n; j++)
        p_ref[j] = (e[j] * 32768 + sum / 2) / sum;
}

/* A layer's exponential table: non-increasing, entry 0 >= 1. */
static void make_exp_tab(void)
{
    uint32_t i, v = (uint32_t)range(1, 65535), step = (uint32_t)range(1, 2048);
    for (i = 0; i < 256u; i++) {
        exp_tab[i] = (uint16_t)v;
        v = v > step ? v - step : (rnd() & 1u);
        if (v > exp_tab[i])
            v = exp_tab[i];
    }
}

/* One weighted sum: asm and twin against the int64 formula on p_ref. */
static void check_wsum(tally *t, uint32_t hd, uint32_t n, uint32_t len, const int32_t *rq_o, const char *what)
{
    uint32_t d, j;
    unsigned bad = 0;
    static unsigned calls;
    rvne_i8_est est;
    rvne_i8_est_of(&est, rq_o[0], rq_o[1]);
    if (calls++ % 2u)
        est.bias = 0; /* the kernel's other form, the offset added in float */
    t->biased += est.bias != 0;
    build_np16(n, len);
    memset(o_asm, CANARY8, sizeof o_asm);
    memset(o_twin, CANARY8, sizeof o_twin);
    rvne_wsum_i8_ae32(o_asm + PAD, np16, vals, len, hd, rq_o, &est);
    rvne_wsum_i8_c(o_twin + PAD, np16, vals, len, hd, rq_o, &est);
    for (d = 0; d < hd; d++) {
        int64_t sum = 0;
        int wide = 0;
        int8_t want;
        int ok;
        for (j = 0; j < n; j++)
            sum += p_ref[j] * vs[j][d];
        want = ref_sat8(ref_rq(sum, rq_o[0], rq_o[1], &wide));
        ok = o_asm[PAD + d] == want && o_twin[PAD + d] == want;
        t->wide += (unsigned)wide;
        CHECK(ok);
        if (!ok && bad++ < 2u)
            fprintf(stderr, "ktest_attn_i8: wsum_i8 %s hd=%u n=%u len=%u [%u]: asm %d, C twin %d, reference %d "
                            "(sum %lld, mult %ld, shift %ld)\n", what, (unsigned)hd, (unsigned)n, (unsigned)len,
                    (unsigned)d, o_asm[PAD + d], o_twin[PAD + d], want, (long long)sum, (long)rq_o[0],
                    (long)rq_o[1]);
    }
    for (d = 0; d < PAD; d++) {
        int ok = o_asm[d] == CANARY16 && o_asm[PAD + hd + d] == CANARY16 && o_twin[d] == CANARY16 &&
                 o_twin[PAD + hd + d] == CANARY16;
        CHECK(ok);
        if (!ok && bad++ < 2u)
            fprintf(stderr, "ktest_attn_i8: wsum_i8 hd=%u: wrote around o\n", (unsigned)hd);
    }
    t->outputs += hd;
    t->bad_w += bad;
}

/* A crafted p: all weight on 2^b positions (32768 >> b each), b = 0 is
 * p = 32768; rq_o then makes z = sum(v) / 2 (mult 2^30) or 3 sum(v) / 8
 * (3 * 2^29): exact halves for odd sums (sums = 4 mod 8), both signs. */
static void crafted_wsum(tally *t, uint32_t hd, uint32_t n, uint32_t len, unsigned b)
{
    static const int32_t kinds[2][2] = {{0x40000000, 46}, {0x60000000, 47}};
    int32_t rq_o[2];
    uint32_t j, w = 1u << b, first = (uint32_t)range(0, (int32_t)(n - w));
    unsigned kind;
    for (j = 0; j < n; j++)
        p_ref[j] = j >= first && j < first + w ? (32768 >> b) : 0;
    for (kind = 0; kind < 2u; kind++) {
        rq_o[0] = kinds[kind][0];
        rq_o[1] = kinds[kind][1] - (int32_t)b;
        check_wsum(t, hd, n, len, rq_o, kind ? "p=32768/2^b, 3*2^29" : "p=32768/2^b, 2^30");
    }
}

static void run_case(tally *t, uint32_t hd, uint32_t n, uint32_t g, unsigned fill, unsigned kind)
{
    const uint32_t len = (kind & 1u) && n + 7u <= MAX_LEN ? n + (uint32_t)range(1, 7) : n;
    const int halves = kind % 6u >= 4u;
    int32_t rq_s[2], rq_o[2];
    uint32_t m, j, d;
    uint64_t amax = 0;
    unsigned bad = 0;
    int32_t mx_asm, mx_twin;
    int64_t mx_ref;

    for (m = 0; m < g; m++)
        for (d = 0; d < hd; d++) {
            switch (fill) {
            case 0: case 4: qs[m][d] = (int8_t)range(-128, 127); break;
            case 1: qs[m][d] = -128; break;
            case 2: qs[m][d] = 127; break;
            default: qs[m][d] = (int8_t)range(-9, 9); break; /* small: halves within the kernel's range */
            }
        }
    for (j = 0; j < n; j++)
        for (d = 0; d < hd; d++) {
            switch (fill) {
            case 0: case 3: ks[j][d] = (int8_t)range(-128, 127); vs[j][d] = (int8_t)range(-128, 127); break;
            case 4: /* against every query head but at position 0 (score 0, the maximum): far below it */
                ks[j][d] = (int8_t)(j == 0u ? 0 : qs[0][d] < 0 ? range(16, 127) : -range(16, 127));
                vs[j][d] = (int8_t)range(-128, 127);
                break;
            case 1: ks[j][d] = -128; vs[j][d] = -128; break;
            default: ks[j][d] = 127; vs[j][d] = (j & 1u) ? 127 : -128; break;
            }
        }
    if (halves)
        for (m = 0; m < g; m++)
            qs[m][0] = 1; /* so that key value 0 moves the dot product by one */
    for (m = 0; m < g; m++)
        for (j = 0; j < n; j++) {
            int64_t dot = 0;
            for (d = 0; d < hd; d++)
                dot += (int64_t)qs[m][d] * ks[j][d];
            if ((uint64_t)(dot < 0 ? -dot : dot) > amax)
                amax = (uint64_t)(dot < 0 ? -dot : dot);
        }
    pick_pair(rq_s, kind, amax);
    if (halves) {
        /* z = dot / 2^(t+1), t <= 7 (a key value's reach), |z| mostly < 2^8 */
        const int32_t tt = (int32_t)bitlen(amax) - 9;
        rq_s[1] = 31 + (tt < 0 ? 0 : tt > 7 ? 7 : tt);
    }
    make_exp_tab();

    for (m = 0; m < g; m++) {
        rvne_i8_est est;
        if (halves && m == 0) {
            /* Nudge key value 0 so q_0 . k_j = 2^t mod 2^(t+1), t = shift - 31:
             * z = dot / 2^(t+1) lands on a half, its sign the dot's. Only the
             * first query head is nudged for; the others see the same keys. */
            const int64_t mod = (int64_t)1 << (rq_s[1] - 30);
            if (mod <= 256)
                for (j = 0; j < n; j++) {
                    int64_t dot = 0, delta;
                    for (d = 0; d < hd; d++)
                        dot += (int64_t)qs[0][d] * ks[j][d];
                    delta = ((mod / 2 - dot) % mod + mod) % mod;
                    if (ks[j][0] + delta > 127)
                        delta -= mod;
                    ks[j][0] = (int8_t)(ks[j][0] + delta);
                }
        }
        if (m == 0) {
            build_keys(hd, n);
            build_vals(hd, n, len);
        }
        memset(q16, 0x77, sizeof q16);
        rvne_x16_i8_c(q16, qs[m], hd);
        memset(sc_asm, 0x5a, sizeof sc_asm);
        memset(sc_twin, 0x5a, sizeof sc_twin);
        rvne_i8_est_of(&est, rq_s[0], rq_s[1]);
        if (m % 2u)
            est.bias = 0; /* the kernel's other form, the offset added in float */
        t->biased += est.bias != 0;
        mx_asm = rvne_scores_i8_ae32(sc_asm + PAD, q16, keys, hd, n, rq_s, &est);
        mx_twin = rvne_scores_i8_c(sc_twin + PAD, q16, keys, hd, n, rq_s, &est);
        mx_ref = INT64_MIN;
        for (j = 0; j < n; j++) {
            int64_t dot = 0;
            int wide = 0, ok;
            for (d = 0; d < hd; d++)
                dot += (int64_t)qs[m][d] * ks[j][d];
            sc_ref[j] = ref_rq(dot, rq_s[0], rq_s[1], &wide);
            mx_ref = sc_ref[j] > mx_ref ? sc_ref[j] : mx_ref;
            ok = sc_twin[PAD + j] == sc_ref[j];
            t->flat += sc_asm[PAD + j] != sc_ref[j];
            t->wide += (unsigned)wide;
            CHECK(ok);
            if (!ok && bad++ < 2u)
                fprintf(stderr, "ktest_attn_i8: scores_i8 hd=%u n=%u fill=%u kind=%u [%u]: asm %ld, C twin %ld, "
                                "reference %lld (dot %lld, mult %ld, shift %ld)\n", (unsigned)hd, (unsigned)n, fill,
                        kind, (unsigned)j, (long)sc_asm[PAD + j], (long)sc_twin[PAD + j], (long long)sc_ref[j],
                        (long long)dot, (long)rq_s[0], (long)rq_s[1]);
        }
        for (j = 0; j < n; j++) {
            /* rvne/kernels.h: exact, or both at least 255 below the maximum */
            const int ok = sc_asm[PAD + j] == sc_ref[j] ||
                           (sc_ref[j] <= mx_ref - 255 && (int64_t)sc_asm[PAD + j] <= mx_ref - 255);
            /* estimates the kernel keeps past its exact range (its maximum in range, >= 0) */
            t->kept += mx_ref >= 0 && mx_ref < 256 && sc_ref[j] < -512 && sc_ref[j] > -(1 << 16);
            CHECK(ok);
            if (!ok && bad++ < 2u)
                fprintf(stderr, "ktest_attn_i8: scores_i8 hd=%u n=%u fill=%u kind=%u [%u]: asm %ld, reference %lld, "
                                "max %lld\n", (unsigned)hd, (unsigned)n, fill, kind, (unsigned)j,
                        (long)sc_asm[PAD + j], (long long)sc_ref[j], (long long)mx_ref);
        }
        {
            /* the maximum they return, the softmax's mx */
            int ok = mx_asm == mx_ref && mx_twin == mx_ref;
            CHECK(ok);
            if (!ok && bad++ < 2u)
                fprintf(stderr, "ktest_attn_i8: scores_i8 hd=%u n=%u fill=%u kind=%u: max asm %ld, C twin %ld, "
                                "reference %lld\n", (unsigned)hd, (unsigned)n, fill, kind, (long)mx_asm,
                        (long)mx_twin, (long long)mx_ref);
        }
        for (j = 0; j < PAD; j++) {
            int ok = sc_asm[j] == CANARY32 && sc_asm[PAD + n + j] == CANARY32 && sc_twin[j] == CANARY32 &&
                     sc_twin[PAD + n + j] == CANARY32;
            CHECK(ok);
            if (!ok && bad++ < 2u)
                fprintf(stderr, "ktest_attn_i8: scores_i8 hd=%u n=%u: wrote around sc\n", (unsigned)hd, (unsigned)n);
        }
        t->scores += n;
        t->bad_s += bad;
        bad = 0;

        /* The weighted sum as the head calls it, on this head's spec p. */
        {
            uint64_t vmax = 0;
            ref_softmax(n);
            for (d = 0; d < hd; d++) {
                int64_t s = 0;
                for (j = 0; j < n; j++)
                    s += p_ref[j] * vs[j][d];
                if ((uint64_t)(s < 0 ? -s : s) > vmax)
                    vmax = (uint64_t)(s < 0 ? -s : s);
            }
            pick_pair(rq_o, kind + m + 1u, vmax);
            check_wsum(t, hd, n, len, rq_o, "softmax p");
        }
    }
    /* And the crafted weights: p = 32768 on one position, then 2^b. */
    {
        unsigned b;
        for (b = 0; (1u << b) <= n && b < 3u; b++)
            crafted_wsum(t, hd, n, len, b);
    }
    t->cases++;
}

/* Exact halves of both signs where the scores' kernel starts its sums at a
 * bias (rvne_i8_est, a scale of 2^-10 and 2^-11: too fine for run_case's
 * nudge): q = 16 everywhere, key sums 64t + 32 (z = t + 1/2) and one off
 * either side, t in [-4, 3]. */
static unsigned bias_halves(void)
{
    static const int32_t shifts[] = {40, 41};
    const uint32_t hd = 4u, n = 24u;
    unsigned bad = 0, i, j, d;
    for (i = 0; i < 2u; i++) {
        const int32_t rq_s[2] = {0x40000000, shifts[i]};
        const int32_t unit = (int32_t)1 << (shifts[i] - 30 - 4 - 1); /* key sum per half a score */
        rvne_i8_est est;
        int32_t mx;
        int64_t mx_ref = INT64_MIN;
        rvne_i8_est_of(&est, rq_s[0], rq_s[1]);
        CHECK(est.bias != 0);
        for (d = 0; d < hd; d++)
            qs[0][d] = 16;
        for (j = 0; j < n; j++) {
            const int32_t t = (int32_t)(j / 3u) - 4, sum = (2 * t + 1) * unit + (int32_t)(j % 3u) - 1;
            for (d = 0; d < hd; d++)
                ks[j][d] = (int8_t)(sum / 4 + (d == 0u ? sum % 4 : 0));
        }
        build_keys(hd, n);
        rvne_x16_i8_c(q16, qs[0], hd);
        memset(sc_asm, 0x5a, sizeof sc_asm);
        mx = rvne_scores_i8_ae32(sc_asm + PAD, q16, keys, hd, n, rq_s, &est);
        for (j = 0; j < n; j++) {
            int64_t dot = 0, want;
            int wide = 0;
            for (d = 0; d < hd; d++)
                dot += (int64_t)qs[0][d] * ks[j][d];
            want = ref_rq(dot, rq_s[0], rq_s[1], &wide);
            mx_ref = want > mx_ref ? want : mx_ref;
            CHECK(sc_asm[PAD + j] == want);
            if (sc_asm[PAD + j] != want && bad++ < 2u)
                fprintf(stderr, "ktest_attn_i8: scores_i8 biased halves shift %ld [%u]: asm %ld, reference %lld "
                                "(dot %lld)\n", (long)rq_s[1], j, (long)sc_asm[PAD + j], (long long)want,
                        (long long)dot);
        }
        CHECK(mx == mx_ref);
        bad += mx != mx_ref;
    }
    return bad;
}

int main(void)
{
    static const uint32_t hds[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 32, 33, 64};
    static const uint32_t ns[] = {1, 2, 3, 5, 16, 17, 99, 100};
    const unsigned nh = sizeof hds / sizeof hds[0], nn = sizeof ns / sizeof ns[0];
    tally t = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    unsigned a, b, fill, i = 0;
    for (a = 0; a < nh; a++)
        for (b = 0; b < nn; b++)
            for (fill = 0; fill < 4u; fill++) {
                /* every shape random and with small queries; the extremes on a
                 * third of them, the big ones (many positions) all fills */
                if (fill == 1u || fill == 2u)
                    if ((a + b + fill) % 3u != 0u && ns[b] < 99u)
                        continue;
                run_case(&t, hds[a], ns[b], 1u + i % 4u, fill, i);
                i++;
            }
    far_scores = 1;
    for (i = 0; i < 24u; i++)
        run_case(&t, i % 2u ? 64u : 33u, 100u, 1u, 4u, i % 3u);
    far_scores = 0;
    CHECK(t.kept > 1000u); /* that case was met */
    CHECK(t.biased > 100u);
    t.bad_s += bias_halves();
    fprintf(stderr, "ktest_attn_i8: scores_i8: %u cases, %u scores (%u kept past the exact range, %u of them "
                    "inexact)%s\n", t.cases, t.scores, t.kept, t.flat, t.bad_s ? ": FAILED" : "");
    fprintf(stderr, "ktest_attn_i8: wsum_i8: %u outputs (%u results past int32, saturated)%s\n",
            t.outputs, t.wide, t.bad_w ? ": FAILED" : "");
    return CHECK_DONE("ktest_attn_i8");
}
