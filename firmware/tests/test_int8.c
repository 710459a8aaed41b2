/* The int8 integer path (docs/format.md and docs/model.md, int8): the
 * kernels' C twins against plain references on awkward lengths, rq's
 * rounding of exact negative halves, saturation, every loader rule of an
 * int8 blob, and the head's pushes on blobs built here against an
 * independent re-computation of the integer model (int64, other loop
 * orders, division-based rounding, the whole history kept instead of a
 * ring). No golden data from Python: this stands on its own. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "rvne/blob.h"
#include "rvne/crc32.h"
#include "rvne/head.h"
#include "rvne/kernels.h"
#include "rvne/proto.h"
#include "rvne/status.h"

static uint32_t g_rng = 1u;

static uint32_t rng(void)
{
    /* xorshift32: seeded, so a failure is reproducible. */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 17;
    g_rng ^= g_rng << 5;
    return g_rng;
}

static int32_t rng_in(int32_t lo, int32_t hi) { return lo + (int32_t)(rng() % (uint32_t)(hi - lo + 1)); }

/* ---- references, written plainly -------------------------------------------- */

/* rq by truncating division and a look at the remainder. */
static int64_t ref_rq(int64_t acc, int64_t mult, int shift)
{
    const int64_t p = acc * mult, unit = (int64_t)1 << shift;
    int64_t q = p / unit, r = p % unit;
    if (r < 0)
        r = -r;
    if (2 * r >= unit)
        q += p < 0 ? -1 : 1;
    return q;
}

/* The spec's int64 -> int32 step, read as saturation (see rvne_rq). */
static int64_t ref_clamp32(int64_t v) { return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : v; }

static int64_t ref_sat8(int64_t v) { return v > 127 ? 127 : v < -128 ? -128 : v; }

/* round half away from zero of an in-range float, by looking at every
 * candidate integer: nothing shared with the firmware's arithmetic. */
static int ref_quantize(float f, float scale_inv)
{
    const float p = f * scale_inv;
    int n, best = 0;
    float best_d = 1e30f;
    if (p != p)
        return 0;
    if (p > 200.0f)
        return 127;
    if (p < -200.0f)
        return -128;
    for (n = -200; n <= 200; n++) {
        const float d = p > (float)n ? p - (float)n : (float)n - p;
        if (d < best_d || (d == best_d && (n < 0 ? -n : n) > (best < 0 ? -best : best))) {
            best_d = d;
            best = n;
        }
    }
    return (int)ref_sat8(best);
}

/* ---- rq and saturation ------------------------------------------------------- */

static void test_rq(void)
{
    const int32_t half = 1 << 30; /* mult 2^30 over shift 31: acc/2 */
    uint32_t i;
    /* Exact halves go away from zero; half-up would give -1, -2, -3 here. */
    CHECK_EQ(rvne_rq(-3, half, 31), -2);
    CHECK_EQ(rvne_rq(-5, half, 31), -3);
    CHECK_EQ(rvne_rq(-1, half, 31), -1);
    CHECK(rvne_rq(-3, half, 31) != -1); /* floor((p + 2^(s-1)) / 2^s) */
    CHECK_EQ(rvne_rq(3, half, 31), 2);
    CHECK_EQ(rvne_rq(1, half, 31), 1);
    CHECK_EQ(rvne_rq(0, half, 31), 0);
    /* Just below and above a half. */
    CHECK_EQ(rvne_rq(-5, half, 32), -1);          /* -1.25 */
    CHECK_EQ(rvne_rq(-7, half, 32), -2);          /* -1.75 */
    CHECK_EQ(rvne_rq(-6, half, 32), -2);          /* -1.5 */
    /* The extremes of the validated ranges: |p| near 2^62, shifts 16 and 62. */
    CHECK_EQ(rvne_rq(INT32_MIN, INT32_MAX, 62), -1);
    CHECK_EQ(rvne_rq(INT32_MAX, INT32_MAX, 62), 1);
    CHECK_EQ(rvne_rq(INT32_MAX, INT32_MAX, 16), INT32_MAX); /* saturates to int32 */
    CHECK_EQ(rvne_rq(INT32_MIN, INT32_MAX, 16), INT32_MIN);
    CHECK_EQ(rvne_rq(INT32_MIN, 1 << 30, 31), -(1 << 30));
    for (i = 0; i < 20000u; i++) {
        const int32_t acc = (int32_t)rng() >> (rng() % 32u);
        const int32_t m = (int32_t)(0x40000000u | (rng() & 0x3FFFFFFFu));
        const int s = (int)(16u + rng() % 47u);
        const int32_t got = rvne_rq(acc, m, s);
        if (got != ref_clamp32(ref_rq(acc, m, s))) {
            fprintf(stderr, "rq(%ld, %ld, %d) = %ld\n", (long)acc, (long)m, s, (long)got);
            CHECK(0);
            break;
        }
    }
    CHECK_EQ(rvne_sat8(128), 127);
    CHECK_EQ(rvne_sat8(-129), -128);
    CHECK_EQ(rvne_sat8(INT32_MIN), -128);
    CHECK_EQ(rvne_sat8(-128), -128);
    CHECK_EQ(rvne_sat8(127), 127);
}

/* ---- kernels on awkward lengths ------------------------------------------------ */

static const uint32_t k_lens[] = {1, 3, 5, 7, 17, 33};
#define N_LENS (sizeof k_lens / sizeof k_lens[0])
#define KMAX 33u

static int8_t g_x[KMAX + 1], g_w[KMAX * KMAX + 1];
static int32_t g_acc[KMAX + 1], g_pairs[2 * KMAX], g_rq_x[2];

/* Activations and weights with their extremes (-128, +-127) well represented. */
static int8_t rnd_act(void)
{
    const uint32_t r = rng() % 8u;
    return r == 0 ? -128 : r == 1 ? 127 : (int8_t)rng_in(-128, 127);
}

static int8_t rnd_w(void)
{
    const uint32_t r = rng() % 8u;
    return r == 0 ? -127 : r == 1 ? 127 : (int8_t)rng_in(-127, 127);
}

static void rnd_pairs(int32_t *pairs, uint32_t n, int shift_lo, int shift_hi)
{
    uint32_t c;
    for (c = 0; c < n; c++) {
        pairs[2 * c] = (int32_t)(0x40000000u | (rng() & 0x3FFFFFFFu));
        pairs[2 * c + 1] = rng_in(shift_lo, shift_hi);
    }
}

static void test_matvec_requant(void)
{
    uint32_t a, b, i, c;
    for (a = 0; a < N_LENS; a++)
        for (b = 0; b < N_LENS; b++) {
            const uint32_t n_in = k_lens[a], n_out = k_lens[b];
            int8_t y[KMAX], x2[KMAX], x_before[KMAX];
            int bad = 0;
            for (i = 0; i < n_in; i++)
                g_x[i] = rnd_act();
            for (i = 0; i < n_in * n_out; i++)
                g_w[i] = rnd_w();
            g_acc[n_out] = 0x5A5A5A5A; /* the word after: never written */
            rvne_matvec_i8_c(g_acc, g_x, g_w, n_in, n_out);
            CHECK_EQ(g_acc[n_out], 0x5A5A5A5A);
            for (c = 0; c < n_out; c++) {
                int64_t want = 0;
                for (i = n_in; i-- > 0;) /* the other order */
                    want += (int64_t)g_x[i] * g_w[i * n_out + c];
                bad |= g_acc[c] != want;
            }
            CHECK(!bad);
            /* Shifts that saturate some channels and round others. */
            rnd_pairs(g_pairs, n_out, 30, 46);
            rvne_requant_i8_c(y, g_acc, g_pairs, n_out);
            for (c = 0; c < n_out; c++)
                bad |= y[c] != ref_sat8(ref_rq(g_acc[c], g_pairs[2 * c], g_pairs[2 * c + 1]));
            CHECK(!bad);
            for (c = 0; c < n_out; c++)
                x2[c] = x_before[c] = rnd_act();
            /* x's own factor from 2^-1 (most stay inside) to 2^15 (all saturate). */
            rnd_pairs(g_rq_x, 1u, 16 + (int)(a + b) % 16, 31);
            rvne_residual_i8_c(x2, g_acc, g_pairs, g_rq_x, n_out);
            for (c = 0; c < n_out; c++)
                bad |= x2[c] != ref_sat8(ref_clamp32(ref_rq(x_before[c], g_rq_x[0], g_rq_x[1])) +
                                         ref_clamp32(ref_rq(g_acc[c], g_pairs[2 * c], g_pairs[2 * c + 1])));
            CHECK(!bad);
        }
    /* The saturation both ways, and a residual whose rq alone is past int8. */
    {
        int32_t acc[2] = {1000000, -1000000}, pairs[4] = {1 << 30, 30, 1 << 30, 30}, one[2] = {1 << 30, 30};
        int32_t half[2] = {1 << 30, 31};
        int8_t y[2], x[2] = {-100, 100};
        rvne_requant_i8_c(y, acc, pairs, 2);
        CHECK_EQ(y[0], 127);
        CHECK_EQ(y[1], -128);
        acc[0] = 200;
        acc[1] = -200;
        rvne_residual_i8_c(x, acc, pairs, one, 2);
        CHECK_EQ(x[0], 100);
        CHECK_EQ(x[1], -100);
        /* x halved first: 50 + 20, -50 - 20 (and -25.5 rounds away to -26). */
        acc[0] = 20;
        acc[1] = -20;
        rvne_residual_i8_c(x, acc, pairs, half, 2);
        CHECK_EQ(x[0], 70);
        CHECK_EQ(x[1], -70);
        x[1] = -51;
        acc[1] = 0;
        rvne_residual_i8_c(x, acc, pairs, half, 2);
        CHECK_EQ(x[1], -26);
        /* rq(x) at its largest (x -128, M near 2^15) against rq(acc) past int32's. */
        acc[0] = INT32_MAX;
        acc[1] = INT32_MIN;
        pairs[1] = pairs[3] = 16;
        x[0] = -128;
        x[1] = 127;
        {
            const int32_t big[2] = {INT32_MAX, 16};
            rvne_residual_i8_c(x, acc, pairs, big, 2);
        }
        CHECK_EQ(x[0], 127);
        CHECK_EQ(x[1], -128);
    }
}

/* One query head's attention over n positions, straight from the formulas. */
static void ref_attn_head(int8_t *o, const int8_t *q, const int8_t *k, const int8_t *v, uint32_t hd, uint32_t n,
                          uint32_t stride, const int32_t *rq_s, const int32_t *rq_o, const uint16_t *tab)
{
    int64_t sc[KMAX], e[KMAX], p[KMAX], mx, sum = 0;
    uint32_t j, d;
    for (j = 0; j < n; j++) {
        int64_t dot = 0;
        for (d = 0; d < hd; d++)
            dot += (int64_t)q[d] * k[j * stride + d];
        sc[j] = ref_clamp32(ref_rq(dot, rq_s[0], rq_s[1]));
    }
    mx = sc[0];
    for (j = 0; j < n; j++)
        mx = sc[j] > mx ? sc[j] : mx;
    for (j = 0; j < n; j++) {
        e[j] = tab[mx - sc[j] < 255 ? mx - sc[j] : 255];
        sum += e[j];
    }
    for (j = 0; j < n; j++)
        p[j] = (e[j] * 32768 + sum / 2) / sum;
    for (d = 0; d < hd; d++) {
        int64_t acc = 0;
        for (j = 0; j < n; j++)
            acc += p[j] * v[j * stride + d];
        o[d] = (int8_t)ref_sat8(ref_rq(acc, rq_o[0], rq_o[1]));
    }
}

static uint16_t g_tab[256];

/* A table like a decaying exponential: EXP[i] ~ 32768 * 2^(-i/8). */
static void make_table(uint16_t *tab, uint32_t first)
{
    uint32_t i;
    for (i = 0; i < 256u; i++)
        tab[i] = (uint16_t)((first - (first / 16u) * (i % 8u)) >> (i / 8u));
}

/* The product's attention for one query head: its three steps (rvne/kernels.h)
 * on 16-bit rings laid out as the head lays them, padding and read-ahead
 * words included. */
static void attn_steps(int8_t *o, const int8_t *qm, const int8_t *k, const int8_t *v, uint32_t hd, uint32_t n,
                       uint32_t kv_stride, const int32_t *rq_s, const int32_t *rq_o, const uint16_t *tab)
{
    static uint32_t keys[KMAX * RVNE_I8_ROW_WORDS(5) + 2], vals[5 * RVNE_I8_ROW_WORDS(KMAX) + 2];
    static int16_t q16[2 * RVNE_I8_ROW_WORDS(5) + 2], np16[2 * RVNE_I8_ROW_WORDS(KMAX) + 2], o16[5];
    static int32_t sc[KMAX];
    const uint32_t kr = RVNE_I8_ROW_WORDS(hd), vr = RVNE_I8_ROW_WORDS(n);
    rvne_i8_est es, eo;
    uint32_t j, d;
    int32_t mx;
    for (j = 0; j < n; j++) {
        int16_t *row = (int16_t *)(void *)(keys + (size_t)j * kr);
        for (d = 0; d < 2u * kr; d++)
            row[d] = d < hd ? k[(size_t)j * kv_stride + d] : 0;
    }
    keys[n * kr] = keys[n * kr + 1u] = 0u;
    for (d = 0; d < hd; d++) {
        int16_t *row = (int16_t *)(void *)(vals + (size_t)d * vr);
        for (j = 0; j < 2u * vr; j++)
            row[j] = j < n ? v[(size_t)j * kv_stride + d] : 0;
    }
    vals[hd * vr] = vals[hd * vr + 1u] = 0u;
    rvne_x16_i8_c(q16, qm, hd);
    rvne_i8_est_of(&es, rq_s[0], rq_s[1]);
    rvne_i8_est_of(&eo, rq_o[0], rq_o[1]);
    mx = rvne_scores_i8_c(sc, q16, keys, hd, n, rq_s, &es);
    rvne_softmax_i8_c(np16, sc, n, n, tab, mx);
    rvne_wsum_i8_c(o16, np16, vals, n, hd, rq_o, &eo);
    for (d = 0; d < hd; d++)
        o[d] = (int8_t)o16[d];
}

static void test_attn(void)
{
    static const uint32_t hds[] = {1, 3, 5};
    static const uint32_t ns[] = {1, 2, 3, 7, 17, 33};
    static const uint32_t gs[] = {1, 2, 3};
    static int8_t q[3 * 5], kc[KMAX * 5 * 2], vc[KMAX * 5 * 2], o[3 * 5], want[5];
    uint32_t a, b, c, r, i, m;
    make_table(g_tab, 32768u);
    for (a = 0; a < 3; a++)
        for (b = 0; b < sizeof ns / sizeof ns[0]; b++)
            for (c = 0; c < 3; c++)
                for (r = 0; r < 3; r++) {
                    rvne_attn at;
                    int32_t rq_s[2], rq_o[2];
                    int bad = 0;
                    at.hd = hds[a];
                    at.n = ns[b];
                    at.g = gs[c];
                    at.q_stride = at.hd;
                    at.kv_stride = 2u * at.hd; /* two kv heads interleaved: read one */
                    for (i = 0; i < at.g * at.hd; i++)
                        q[i] = rnd_act();
                    for (i = 0; i < at.n * at.kv_stride; i++) {
                        kc[i] = rnd_act();
                        vc[i] = rnd_act();
                    }
                    if (r == 2) /* equal keys: ties for the max */
                        for (i = at.kv_stride; i < at.n * at.kv_stride; i++)
                            kc[i] = kc[i % at.kv_stride];
                    /* Scores from the table's top to well past its end (r = 1). */
                    rq_s[0] = (int32_t)(0x40000000u | (rng() & 0x3FFFFFFFu));
                    rq_s[1] = r == 1 ? 36 : 40;
                    rq_o[0] = (int32_t)(0x40000000u | (rng() & 0x3FFFFFFFu));
                    rq_o[1] = 45;
                    for (m = 0; m < at.g; m++)
                        attn_steps(o + m * at.hd, q + m * at.hd, kc, vc, at.hd, at.n, at.kv_stride, rq_s, rq_o, g_tab);
                    for (m = 0; m < at.g; m++) {
                        ref_attn_head(want, q + m * at.hd, kc, vc, at.hd, at.n, at.kv_stride, rq_s, rq_o, g_tab);
                        bad |= memcmp(want, o + m * at.hd, at.hd) != 0;
                    }
                    if (bad)
                        fprintf(stderr, "attn hd %u n %u g %u case %u differs\n", (unsigned)at.hd, (unsigned)at.n,
                                (unsigned)at.g, (unsigned)r);
                    CHECK(!bad);
                }
    /* A table with a zero tail: far positions weigh nothing, S stays >= 1. */
    {
        rvne_attn at = {1, 2, 1, 1, 1};
        int8_t q1 = 127, k2[2] = {127, -127}, v2[2] = {100, -100}, o1 = 0;
        int32_t rq_s[2] = {1 << 30, 20}, rq_o[2] = {1 << 30, 45};
        uint16_t tab[256];
        memset(tab, 0, sizeof tab);
        tab[0] = 1;
        attn_steps(&o1, &q1, k2, v2, at.hd, at.n, at.kv_stride, rq_s, rq_o, tab);
        CHECK_EQ(o1, 100); /* p = (1, 0) * 32768: o = 100 * 32768 / 2^15 */
    }
}

/* ---- blobs ------------------------------------------------------------------------ */

typedef struct dims {
    uint16_t d, hq, hkv, hd, l, c;
} dims;

/* Where each part of an int8 blob's weights lies, computed here from the
 * format's text (bytes from the first weight byte). */
typedef struct layout {
    uint32_t q, k, pairs, p_len, t_len, w_len, total;
} layout;

static layout layout_of(dims m)
{
    layout y;
    y.q = (uint32_t)m.hq * m.hd;
    y.k = (uint32_t)m.hkv * m.hd;
    y.pairs = y.q + 2u * y.k + 3u + m.d;
    y.p_len = 4u * (2u + m.l * 2u * y.pairs + m.c);
    y.t_len = 512u * m.l;
    y.w_len = m.l * (2u * m.d * y.q + 2u * m.d * y.k) + (uint32_t)m.d * m.c;
    y.total = y.p_len + y.t_len + y.w_len;
    return y;
}

static uint32_t rq_at(dims m, uint32_t l) { return 8u + l * 8u * layout_of(m).pairs; }

static void put_f32(uint8_t *p, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    put32(p, u);
}

static int32_t rd_i32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24));
}

static uint16_t rd_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static void fix_crc(uint8_t *p)
{
    const uint32_t wl = (uint32_t)p[20] | ((uint32_t)p[21] << 8) | ((uint32_t)p[22] << 16) | ((uint32_t)p[23] << 24);
    put32(p + 24 + wl, rvne_crc32(0u, p, 24u + wl));
}

/* Shifts per block (q, k, v, s, o, wo, x) chosen for the dims so that values
 * spread over int8 instead of all saturating. */
typedef struct shifts {
    int q, k, v, s, o, wo, x;
} shifts;

static void put_pairs(uint8_t *p, uint32_t n, int shift)
{
    uint32_t i;
    for (i = 0; i < n; i++) {
        put32(p + 8u * i, 0x40000000u | (rng() & 0x3FFFFFFFu));
        put32(p + 8u * i + 4u, (uint32_t)shift);
    }
}

/* A valid int8 blob at p; returns its length. in_scale_inv 20, x_scale 1/20. */
static size_t build_i8(uint8_t *p, dims m, shifts sh, uint32_t seed)
{
    const layout y = layout_of(m);
    uint8_t *w = p + 24;
    uint32_t l, i;
    g_rng = seed;
    put32(p, RVNE_MAGIC);
    put16(p + 4, 1u);
    p[6] = RVNE_FLAG_INT8;
    p[7] = 0u;
    put16(p + 8, m.d);
    put16(p + 10, m.hq);
    put16(p + 12, m.hkv);
    put16(p + 14, m.hd);
    put16(p + 16, m.l);
    put16(p + 18, m.c);
    put32(p + 20, y.total);
    put_f32(w, 20.0f);
    put_f32(w + 4, 0.05f);
    for (l = 0; l < m.l; l++) {
        uint8_t *r = w + rq_at(m, l);
        put_pairs(r, y.q, sh.q);
        put_pairs(r + 8u * y.q, y.k, sh.k);
        put_pairs(r + 8u * (y.q + y.k), y.k, sh.v);
        put_pairs(r + 8u * (y.q + 2u * y.k), 1u, sh.s);
        put_pairs(r + 8u * (y.q + 2u * y.k + 1u), 1u, sh.o);
        put_pairs(r + 8u * (y.q + 2u * y.k + 2u), m.d, sh.wo);
        put_pairs(r + 8u * (y.q + 2u * y.k + 2u + m.d), 1u, sh.x);
    }
    for (i = 0; i < m.c; i++)
        put_f32(w + y.p_len - 4u * m.c + 4u * i, 0.001f * (float)(i + 1u));
    for (l = 0; l < m.l; l++) {
        make_table(g_tab, 32768u - 1000u * l);
        for (i = 0; i < 256u; i++)
            put16(w + y.p_len + 512u * l + 2u * i, g_tab[i]);
    }
    for (i = 0; i < y.w_len; i++)
        w[y.p_len + y.t_len + i] = (uint8_t)rnd_w();
    fix_crc(p);
    return 28u + y.total;
}

static uint64_t g_store[(64u << 10) / 8];
#define STORE ((uint8_t *)g_store)
static uint64_t g_arena[(64u << 10) / 8];

static const dims k_dims = {5, 4, 2, 3, 2, 3};   /* G = 2, Q 12, K 6 */
static const shifts k_shifts = {39, 39, 39, 38, 45, 40, 31};
static const rvne_load_cfg k_file = {NULL, {0, 0, 0, 0, 0, 0}, 1, 0, NULL};

static int open_i8(size_t n, rvne_qparam_fault *why)
{
    rvne_blob b;
    int rc = rvne_blob_open(&b, STORE, n, &k_file);
    if (why != NULL && b.crc_valid)
        (void)rvne_blob_check_qparams(&b.hdr, b.weights, why);
    return rc;
}

/* Sets the 32-bit word at weights offset off, re-CRCs, opens: the error and
 * the named parameter. */
static void expect_qparam(size_t n, uint32_t off, uint32_t v, const char *param, uint32_t layer, uint32_t index)
{
    rvne_qparam_fault why;
    uint8_t save[4];
    memcpy(save, STORE + 24 + off, 4);
    put32(STORE + 24 + off, v);
    fix_crc(STORE);
    memset(&why, 0, sizeof why);
    CHECK_STATUS(open_i8(n, &why), RVNE_E_QPARAM);
    if (why.param == NULL || strcmp(why.param, param) != 0 || why.layer != layer || why.index != index) {
        fprintf(stderr, "want %s layer %u index %u, got %s layer %u index %u\n", param, (unsigned)layer,
                (unsigned)index, why.param ? why.param : "(none)", (unsigned)why.layer, (unsigned)why.index);
        CHECK(0);
    }
    memcpy(STORE + 24 + off, save, 4);
    fix_crc(STORE);
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void test_loader(void)
{
    const dims m = k_dims;
    const layout y = layout_of(m);
    const uint32_t r1 = rq_at(m, 1); /* layer 1's pairs */
    size_t n = build_i8(STORE, m, k_shifts, 7u);
    rvne_blob b;
    rvne_header h;
    uint32_t len = 0, params = 0, tables = 0;

    CHECK_STATUS(rvne_blob_open(&b, STORE, n, &k_file), RVNE_OK);
    CHECK_EQ(rvne_elem_size(&b.hdr), 1);
    CHECK_STATUS(rvne_expected_weights_len(&b.hdr, &len), RVNE_OK);
    CHECK_EQ(len, y.total);
    CHECK_STATUS(rvne_int8_sizes(&b.hdr, &params, &tables), RVNE_OK);
    CHECK_EQ(params, y.p_len);
    CHECK_EQ(tables, y.t_len);
    CHECK(strcmp(rvne_status_name(RVNE_E_QPARAM), "E_QPARAM") == 0);

    /* Flags: int8 and FP16 at once, and a reserved bit beside int8. */
    STORE[6] = RVNE_FLAG_INT8 | RVNE_FLAG_FP16;
    CHECK_STATUS(open_i8(n, NULL), RVNE_E_BAD_FLAGS);
    STORE[6] = RVNE_FLAG_INT8 | 0x04u;
    CHECK_STATUS(open_i8(n, NULL), RVNE_E_BAD_FLAGS);
    STORE[6] = RVNE_FLAG_INT8;

    /* Rule 14: a byte more or less (rule 13 passes any count of bytes). */
    put32(STORE + 20, y.total + 1u);
    fix_crc(STORE);
    CHECK_STATUS(rvne_blob_open(&b, STORE, n + 1u, &k_file), RVNE_E_CONTRACT);
    CHECK_STATUS(rvne_blob_check_container(&b), RVNE_OK);
    put32(STORE + 20, y.total - 1u);
    fix_crc(STORE);
    CHECK_STATUS(rvne_blob_open(&b, STORE, n - 1u, &k_file), RVNE_E_CONTRACT);
    /* The same bytes read as FP32: rule 13 (their count is no multiple of 4, or no contract). */
    n = build_i8(STORE, m, k_shifts, 7u);
    STORE[6] = 0u;
    fix_crc(STORE);
    CHECK(open_i8(n, NULL) == RVNE_E_ELEM_SIZE || open_i8(n, NULL) == RVNE_E_CONTRACT);
    n = build_i8(STORE, m, k_shifts, 7u);

    /* D <= 1024: 1025 with its exact length is refused, 1024 taken. */
    {
        dims big = {1025, 1, 1, 1, 1, 2};
        shifts sh = {30, 30, 30, 30, 30, 30, 30};
        size_t nb = build_i8(STORE, big, sh, 3u);
        CHECK_STATUS(open_i8(nb, NULL), RVNE_E_CONTRACT);
        CHECK_STATUS(rvne_blob_check_contract(&((rvne_header){RVNE_MAGIC, 1, RVNE_FLAG_INT8, 0, 1025, 1, 1, 1, 1, 2,
                                                              layout_of(big).total})),
                     RVNE_E_CONTRACT);
        big.d = 1024;
        nb = build_i8(STORE, big, sh, 3u);
        CHECK_STATUS(open_i8(nb, NULL), RVNE_OK);
    }
    n = build_i8(STORE, m, k_shifts, 7u);

    /* Every parameter rule, in the order of docs/format.md. */
    expect_qparam(n, 0, 0u, "in_scale_inv", 0, 0);
    expect_qparam(n, 0, f32_bits(-20.0f), "in_scale_inv", 0, 0);
    expect_qparam(n, 0, 0x7FC00000u, "in_scale_inv", 0, 0);   /* NaN */
    expect_qparam(n, 0, 0x7F800000u, "in_scale_inv", 0, 0);   /* inf */
    expect_qparam(n, 0, f32_bits(0x1p41f), "in_scale_inv", 0, 0);
    expect_qparam(n, 4, f32_bits(0x1p-41f), "x_scale", 0, 0);
    expect_qparam(n, 4, 1u, "x_scale", 0, 0);                  /* subnormal */
    expect_qparam(n, y.p_len - 4u, f32_bits(0.0f), "logit_scale", 0, 2);
    expect_qparam(n, y.p_len - 12u, f32_bits(-1.0f), "logit_scale", 0, 0);
    /* The bounds themselves are taken. */
    put_f32(STORE + 24 + y.p_len - 4u, 0x1p40f);
    put_f32(STORE + 24 + y.p_len - 8u, 0x1p-40f);
    fix_crc(STORE);
    CHECK_STATUS(open_i8(n, NULL), RVNE_OK);
    n = build_i8(STORE, m, k_shifts, 7u);
    /* The product in_scale_inv * x_scale: 1e-3 off is in, 1.1e-3 out (with
     * in_scale_inv 1: the product is x_scale exactly). */
    put_f32(STORE + 24, 1.0f);
    put_f32(STORE + 28, 1.0009f);
    fix_crc(STORE);
    CHECK_STATUS(open_i8(n, NULL), RVNE_OK);
    put_f32(STORE + 28, 0.9991f);
    fix_crc(STORE);
    CHECK_STATUS(open_i8(n, NULL), RVNE_OK);
    expect_qparam(n, 4, f32_bits(1.0011f), "scale_product", 0, 0);
    expect_qparam(n, 4, f32_bits(0.9989f), "scale_product", 0, 0);
    expect_qparam(n, 4, f32_bits(2.0f), "scale_product", 0, 0);
    /* Scales fail before pairs: a bad scale and a bad mult name the scale. */
    put32(STORE + 24 + 8, 0u);
    expect_qparam(n, 0, 0u, "in_scale_inv", 0, 0);
    n = build_i8(STORE, m, k_shifts, 7u);

    /* mult in [2^30, 2^31 - 1], shift in [16, 62], each block named. */
    expect_qparam(n, 8, 0x3FFFFFFFu, "rq_q.mult", 0, 0);
    expect_qparam(n, 8, 0x80000000u, "rq_q.mult", 0, 0);
    expect_qparam(n, 12, 15u, "rq_q.shift", 0, 0);
    expect_qparam(n, 12, 63u, "rq_q.shift", 0, 0);
    expect_qparam(n, 12, 0xFFFFFFFFu, "rq_q.shift", 0, 0);
    expect_qparam(n, r1 + 8u * (y.q + 1u), 0u, "rq_k.mult", 1, 1);
    expect_qparam(n, r1 + 8u * (y.q + y.k + 5u) + 4u, 7u, "rq_v.shift", 1, 5);
    expect_qparam(n, r1 + 8u * (y.q + 2u * y.k), 1u, "rq_s.mult", 1, 0);
    expect_qparam(n, r1 + 8u * (y.q + 2u * y.k + 1u) + 4u, 99u, "rq_o.shift", 1, 0);
    expect_qparam(n, r1 + 8u * (y.q + 2u * y.k + 2u + 4u), 5u, "rq_wo.mult", 1, 4);
    expect_qparam(n, 8u + 8u * (y.q + 2u * y.k + 2u + m.d), 0u, "rq_x.mult", 0, 0);
    expect_qparam(n, r1 + 8u * (y.q + 2u * y.k + 2u + m.d) + 4u, 63u, "rq_x.shift", 1, 0);
    /* The bounds themselves are taken. */
    put32(STORE + 24 + 8, 0x40000000u);
    put32(STORE + 24 + 12, 16u);
    put32(STORE + 24 + 16, 0x7FFFFFFFu);
    put32(STORE + 24 + 20, 62u);
    fix_crc(STORE);
    CHECK_STATUS(open_i8(n, NULL), RVNE_OK);
    n = build_i8(STORE, m, k_shifts, 7u);

    /* EXP[0] in [1, 32768], never increasing; checked after the pairs. */
    {
        const uint32_t t1 = y.p_len + 512u; /* layer 1's table */
        rvne_qparam_fault why;
        put16(STORE + 24 + t1, 0u);
        fix_crc(STORE);
        CHECK_STATUS(open_i8(n, &why), RVNE_E_QPARAM);
        CHECK(why.param && strcmp(why.param, "exp") == 0 && why.layer == 1 && why.index == 0);
        put16(STORE + 24 + t1, 32769u);
        fix_crc(STORE);
        CHECK_STATUS(open_i8(n, &why), RVNE_E_QPARAM);
        put16(STORE + 24 + t1, 32768u);
        put16(STORE + 24 + t1 + 2u, 32768u); /* equal is not increasing */
        fix_crc(STORE);
        CHECK_STATUS(open_i8(n, NULL), RVNE_OK);
        put16(STORE + 24 + t1 + 2u * 200u, (uint16_t)(rd_u16(STORE + 24 + t1 + 2u * 199u) + 1u));
        fix_crc(STORE);
        CHECK_STATUS(open_i8(n, &why), RVNE_E_QPARAM);
        CHECK(why.param && strcmp(why.param, "exp") == 0 && why.layer == 1 && why.index == 200);
        /* A bad mult in layer 1 is found before a bad table in layer 0. */
        put16(STORE + 24 + y.p_len, 0u);
        put32(STORE + 24 + r1, 0u);
        fix_crc(STORE);
        CHECK_STATUS(open_i8(n, &why), RVNE_E_QPARAM);
        CHECK(why.param && strcmp(why.param, "rq_q.mult") == 0 && why.layer == 1);
        n = build_i8(STORE, m, k_shifts, 7u);
    }

    /* A weight of -128: the first one, the last one (Wc's). */
    {
        rvne_qparam_fault why;
        const uint32_t w0 = y.p_len + y.t_len;
        STORE[24 + w0 + y.w_len - 1u] = 0x80u;
        fix_crc(STORE);
        CHECK_STATUS(open_i8(n, &why), RVNE_E_QPARAM);
        CHECK(why.param && strcmp(why.param, "weight") == 0 && why.index == y.w_len - 1u);
        STORE[24 + w0] = 0x80u;
        fix_crc(STORE);
        CHECK_STATUS(open_i8(n, &why), RVNE_E_QPARAM);
        CHECK_EQ(why.index, 0);
        /* ... and found after a bad table. */
        put16(STORE + 24 + y.p_len, 0u);
        fix_crc(STORE);
        CHECK_STATUS(open_i8(n, &why), RVNE_E_QPARAM);
        CHECK(why.param && strcmp(why.param, "exp") == 0);
        n = build_i8(STORE, m, k_shifts, 7u);
    }

    /* Rule 15: the parameter block is read as words, so 4-aligned; the
     * head refuses what the loader would. */
    {
        uint8_t *at = STORE + 2;
        memmove(at, STORE, n);
        CHECK_STATUS(rvne_blob_open(&b, at, n, &k_file), RVNE_E_ALIGN);
        memmove(STORE, at, n);
        CHECK_STATUS(rvne_blob_open(&b, STORE, n, &k_file), RVNE_OK);
        b.weights = STORE + 26;
        CHECK_STATUS(rvne_head_init(&(rvne_head){0}, &b, 4u, g_arena, sizeof g_arena), RVNE_E_ALIGN);
    }
    /* The head checks the parameters again: it never runs on a bad shift. */
    {
        rvne_head t;
        CHECK_STATUS(rvne_blob_open(&b, STORE, n, &k_file), RVNE_OK);
        put32(STORE + 24 + 12, 70u);
        CHECK_STATUS(rvne_head_init(&t, &b, 4u, g_arena, sizeof g_arena), RVNE_E_QPARAM);
        n = build_i8(STORE, m, k_shifts, 7u);
    }

    /* The int32 bound of the Wo product (rule 16, every port), from the header. */
    memset(&h, 0, sizeof h);
    h.flags = RVNE_FLAG_INT8;
    h.n_q_heads = 1;
    h.head_dim = 1;
    CHECK(rvne_int8_sums_fit(&h));
    h.n_q_heads = 4;
    h.head_dim = 33026; /* Q = 132104: 132104 * 128 * 127 < 2^31 */
    CHECK(rvne_int8_sums_fit(&h));
    h.n_q_heads = 5;
    h.head_dim = 26421; /* Q = 132105 */
    CHECK(!rvne_int8_sums_fit(&h));

    /* The window: at most 65535 for int8. */
    {
        size_t need = 0;
        CHECK_STATUS(rvne_blob_open(&b, STORE, n, &k_file), RVNE_OK);
        CHECK_STATUS(rvne_head_arena_size(&b.hdr, RVNE_INT8_MAX_WINDOW, &need), RVNE_OK);
        CHECK_STATUS(rvne_head_arena_size(&b.hdr, RVNE_INT8_MAX_WINDOW + 1u, &need), RVNE_E_TOO_LARGE);
        CHECK_STATUS(rvne_head_arena_size(&b.hdr, 0u, &need), RVNE_E_INVAL);
    }
}

/* ---- the forward pass against a re-computation ------------------------------------- */

#define TMAX 16u
#define DMAX 8u
#define QMAX 16u

/* The whole history of k and v (no ring), per layer and position. */
static int8_t g_hk[2][TMAX][QMAX], g_hv[2][TMAX][QMAX];

static int32_t pair_m(const uint8_t *w, uint32_t off, uint32_t i) { return rd_i32(w + off + 8u * i); }
static int pair_s(const uint8_t *w, uint32_t off, uint32_t i) { return (int)rd_i32(w + off + 8u * i + 4u); }

/* y[c] = sat8(rq(sum_i x[i] W[i][c])) for an int8 W at wt (n_in x n_out),
 * the sum over i for each c in turn. */
static void ref_proj(int8_t *y, const int8_t *x, const uint8_t *w, uint32_t wt, uint32_t n_in, uint32_t n_out,
                     uint32_t pairs)
{
    uint32_t c, i;
    for (c = 0; c < n_out; c++) {
        int64_t acc = 0;
        for (i = 0; i < n_in; i++)
            acc += (int64_t)x[i] * (int8_t)w[wt + i * n_out + c];
        y[c] = (int8_t)ref_sat8(ref_clamp32(ref_rq(acc, pair_m(w, pairs, c), pair_s(w, pairs, c))));
    }
}

/* Push number t (0-based since the reset) of frame f at window win: the
 * logits into out, the trace points into tr (the head's layout). */
static void ref_push(const uint8_t *w, dims m, uint32_t win, uint32_t t, const float *f, float *out, float *tr)
{
    const layout y = layout_of(m);
    const uint32_t G = m.hq / m.hkv, first = t + 1u > win ? t + 1u - win : 0u;
    int8_t x[DMAX], q[QMAX], o[QMAX];
    float scale_inv;
    uint32_t l, i, c, h;
    uint32_t wbase = y.p_len + y.t_len;
    memcpy(&scale_inv, w, 4);
    for (i = 0; i < m.d; i++)
        x[i] = (int8_t)ref_quantize(f[i], scale_inv);
    for (l = 0; l < m.l; l++) {
        const uint32_t r = rq_at(m, l);
        const uint32_t wq = wbase + l * (2u * m.d * y.q + 2u * m.d * y.k);
        const uint32_t wk = wq + m.d * y.q, wv = wk + m.d * y.k, wo = wv + m.d * y.k;
        const uint8_t *tab = w + y.p_len + 512u * l;
        ref_proj(q, x, w, wq, m.d, y.q, r);
        ref_proj(g_hk[l][t], x, w, wk, m.d, y.k, r + 8u * y.q);
        ref_proj(g_hv[l][t], x, w, wv, m.d, y.k, r + 8u * (y.q + y.k));
        for (h = 0; h < m.hq; h++) {
            const uint32_t g = h / G, s_off = r + 8u * (y.q + 2u * y.k);
            int64_t sc[TMAX], e[TMAX], mx = INT64_MIN, sum = 0;
            uint32_t j, d;
            for (j = first; j <= t; j++) {
                int64_t dot = 0;
                for (d = 0; d < m.hd; d++)
                    dot += (int64_t)q[h * m.hd + d] * g_hk[l][j][g * m.hd + d];
                sc[j] = ref_clamp32(ref_rq(dot, pair_m(w, s_off, 0), pair_s(w, s_off, 0)));
                if (sc[j] > mx)
                    mx = sc[j];
            }
            for (j = first; j <= t; j++) {
                const int64_t diff = mx - sc[j];
                e[j] = rd_u16(tab + 2u * (uint32_t)(diff > 255 ? 255 : diff));
                sum += e[j];
            }
            for (d = 0; d < m.hd; d++) {
                int64_t acc = 0;
                for (j = first; j <= t; j++)
                    acc += (e[j] * 32768 + sum / 2) / sum * g_hv[l][j][g * m.hd + d];
                o[h * m.hd + d] =
                    (int8_t)ref_sat8(ref_rq(acc, pair_m(w, s_off, 1), pair_s(w, s_off, 1)));
            }
        }
        /* The trace points before x changes: q, k, v, o; then x. */
        for (i = 0; i < y.q; i++)
            *tr++ = (float)q[i];
        for (i = 0; i < y.k; i++)
            *tr++ = (float)g_hk[l][t][i];
        for (i = 0; i < y.k; i++)
            *tr++ = (float)g_hv[l][t][i];
        for (i = 0; i < y.q; i++)
            *tr++ = (float)o[i];
        for (c = 0; c < m.d; c++) {
            const uint32_t wo_off = r + 8u * (y.q + 2u * y.k + 2u), x_off = wo_off + 8u * m.d;
            int64_t acc = 0;
            for (i = 0; i < y.q; i++)
                acc += (int64_t)o[i] * (int8_t)w[wo + i * m.d + c];
            x[c] = (int8_t)ref_sat8(ref_clamp32(ref_rq(x[c], pair_m(w, x_off, 0), pair_s(w, x_off, 0))) +
                                    ref_clamp32(ref_rq(acc, pair_m(w, wo_off, c), pair_s(w, wo_off, c))));
        }
        for (i = 0; i < m.d; i++)
            *tr++ = (float)x[i];
    }
    for (c = 0; c < m.c; c++) {
        const uint32_t wc = wbase + m.l * (2u * m.d * y.q + 2u * m.d * y.k);
        int64_t acc = 0;
        for (i = 0; i < m.d; i++)
            acc += (int64_t)x[i] * (int8_t)w[wc + i * m.c + c];
        out[c] = (float)(int32_t)acc; /* |acc| < 2^24; no int64 -> float on the cores */
        *tr++ = out[c];
    }
}

static float g_trace[512], g_ref_trace[512];

static void rnd_frame(float *f, uint32_t d, uint32_t t)
{
    uint32_t i;
    for (i = 0; i < d; i++)
        f[i] = (float)rng_in(-8000, 8000) / 1000.0f; /* times 20: some saturate */
    if (t == 3u) {
        f[0] = 0.0f / 0.0f; /* NaN -> 0 */
        f[1 % d] = 1.0f / 0.0f;
        f[2 % d] = 0.125f;  /* 2.5: away from zero, 3 */
        f[3 % d] = -0.125f; /* -2.5: -3 */
        f[4 % d] = -1.0f / 0.0f;
    }
}

/* n pushes at window win from a reset head; every logit and trace float
 * equal to the re-computation's. */
static void run_and_compare(rvne_head *t, const uint8_t *w, dims m, uint32_t win, uint32_t n, uint32_t seed)
{
    float f[DMAX], want[8];
    size_t floats = 0;
    uint32_t i;
    rvne_header h;
    int bad_logits = 0, bad_trace = 0;
    memset(&h, 0, sizeof h);
    h.input_dim = m.d;
    h.n_q_heads = m.hq;
    h.n_kv_heads = m.hkv;
    h.head_dim = m.hd;
    h.n_layers = m.l;
    h.n_classes = m.c;
    h.flags = RVNE_FLAG_INT8;
    CHECK_STATUS(rvne_head_trace_floats(&h, win, &floats), RVNE_OK);   /* int8: no scores, whatever W */
    CHECK(floats <= sizeof g_trace / sizeof g_trace[0]);
    rvne_head_reset(t);
    g_rng = seed;
    for (i = 0; i < n; i++) {
        rnd_frame(f, m.d, i);
        CHECK_STATUS(rvne_head_push(t, f), RVNE_OK);
        ref_push(w, m, win, i, f, want, g_ref_trace);
        if (memcmp(rvne_head_logits(t), want, m.c * sizeof(float)) != 0) {
            if (!bad_logits)
                fprintf(stderr, "window %u push %u: logit 0 %g, want %g\n", (unsigned)win, (unsigned)i,
                        (double)rvne_head_logits(t)[0], (double)want[0]);
            bad_logits = 1;
        }
        if (t->state.trace != NULL && memcmp(g_trace, g_ref_trace, floats * sizeof(float)) != 0)
            bad_trace = 1;
    }
    CHECK(!bad_logits);
    CHECK(!bad_trace);
}

static uint64_t g_prep[(32u << 10) / 8];

/* The same pushes with the projections on prepared weights (rvne_proj_i8:
 * the port's MAC16 kernel where it has one, the C twin elsewhere), then
 * back on the blob's: the re-computation does not know either way. */
static void run_prepared(rvne_head *t, const rvne_blob *b, const uint8_t *w, dims m, uint32_t win, uint32_t n,
                         uint32_t seed)
{
    size_t bytes = 0;
    CHECK_STATUS(rvne_head_prepared_size(&b->hdr, &bytes), RVNE_OK);
    CHECK(bytes > 0u && bytes <= sizeof g_prep);
    CHECK_STATUS(rvne_head_use_prepared_i8(t, (uint8_t *)g_prep + 2), RVNE_E_INVAL);
    CHECK_STATUS(rvne_head_use_prepared_i8(t, g_prep), RVNE_OK);
    CHECK(t->weights.prep != NULL);
    run_and_compare(t, w, m, win, n, seed);
    CHECK_STATUS(rvne_head_use_prepared_i8(t, NULL), RVNE_OK);
    CHECK(t->weights.prep == NULL);
    run_and_compare(t, w, m, win, n, seed);
}

static void test_forward(void)
{
    const dims m = k_dims;
    size_t n = build_i8(STORE, m, k_shifts, 11u), need = 0;
    const uint8_t *w = STORE + 24;
    rvne_blob b;
    rvne_head t;
    float f[DMAX];
    uint32_t i;
    int nonzero = 0;

    CHECK_STATUS(rvne_blob_open(&b, STORE, n, &k_file), RVNE_OK);
    CHECK_STATUS(rvne_head_arena_size(&b.hdr, 4u, &need), RVNE_OK);
    /* logits (C floats), sums (max(Q, D, C)), scratch (G*W),
     * q16 and np16 (each query head's ROW_WORDS(hd) + 1, ROW_WORDS(W) + 1), the key ring
     * (L*K_heads*W*ROW_WORDS(hd) + 2) and the value ring (L*K*ROW_WORDS(W)
     * + 2) as words; x, q, o, k and v as bytes. */
    {
        const uint32_t hd = b.hdr.head_dim, kh = b.hdr.n_kv_heads, qh = b.hdr.n_q_heads, kr = RVNE_I8_ROW_WORDS(hd);
        const uint32_t vr = RVNE_I8_ROW_WORDS(4u), kd = kh * hd;
        CHECK_EQ(kd, 6u);
        CHECK_EQ(need, 4u * (3u + 12u + 2u * 4u + qh * (kr + 1u) + vr + 1u + 2u * kh * 4u * kr + 2u + 2u * kd * vr + 2u) +
                           5u + 2u * 12u + 2u * kd);
    }
    CHECK_STATUS(rvne_head_init(&t, &b, 4u, g_arena, need - 1u), RVNE_E_ARENA);
    CHECK_STATUS(rvne_head_init(&t, &b, 4u, g_arena, need), RVNE_OK);
    CHECK(t.config.int8);
    for (i = 0; i < m.c; i++)
        CHECK(rvne_head_logits(&t)[i] == 0.0f);
    rvne_head_set_trace(&t, g_trace);
    /* The window slides (11 pushes over 4), twice from a reset: a ring left
     * dirty would show. */
    run_and_compare(&t, w, m, 4u, 11u, 5u);
    for (i = 0; i < m.c; i++)
        nonzero |= rvne_head_logits(&t)[i] != 0.0f;
    CHECK(nonzero);
    CHECK_EQ(t.state.n_cached, 4);
    CHECK_EQ(t.state.n_pushed, 11);
    run_and_compare(&t, w, m, 4u, 11u, 5u);
    run_prepared(&t, &b, w, m, 4u, 11u, 5u);
    /* Other windows, 1 and past the pushes. */
    CHECK_STATUS(rvne_head_arena_size(&b.hdr, 1u, &need), RVNE_OK);
    CHECK_STATUS(rvne_head_set_window(&t, 1u, g_arena, need), RVNE_OK);
    rvne_head_set_trace(&t, g_trace);
    run_and_compare(&t, w, m, 1u, 6u, 9u);
    CHECK_STATUS(rvne_head_set_window(&t, 16u, g_arena, sizeof g_arena), RVNE_OK);
    rvne_head_set_trace(&t, g_trace);
    run_and_compare(&t, w, m, 16u, 16u, 13u);
    /* Untraced, the same logits. */
    rvne_head_set_trace(&t, NULL);
    run_and_compare(&t, w, m, 16u, 5u, 13u);
    /* One kv head for all (G = 4), a single layer, odd sizes; and a G = 1. */
    {
        const dims m2 = {7, 4, 1, 1, 1, 2};
        const dims m3 = {3, 3, 3, 5, 2, 5};
        const shifts s3 = {38, 38, 38, 36, 45, 39, 30}; /* x grows by 1 to 2 each layer */
        size_t k;
        for (k = 0; k < 2; k++) {
            const dims mm = k == 0 ? m2 : m3;
            n = build_i8(STORE, mm, k == 0 ? k_shifts : s3, 17u + (uint32_t)k);
            CHECK_STATUS(rvne_blob_open(&b, STORE, n, &k_file), RVNE_OK);
            CHECK_STATUS(rvne_head_init(&t, &b, 3u, g_arena, sizeof g_arena), RVNE_OK);
            rvne_head_set_trace(&t, g_trace);
            run_and_compare(&t, STORE + 24, mm, 3u, 9u, 21u);
            run_prepared(&t, &b, STORE + 24, mm, 3u, 9u, 21u);
        }
    }
    /* Wo's requantization far too large (shift 31: M near 1): the residual
     * steps saturate, where the prepared path must take rq's own value. */
    {
        const shifts big = {39, 39, 39, 38, 45, 31, 31};
        size_t sat = 0;
        uint32_t c;
        n = build_i8(STORE, m, big, 31u);
        CHECK_STATUS(rvne_blob_open(&b, STORE, n, &k_file), RVNE_OK);
        CHECK_STATUS(rvne_head_init(&t, &b, 4u, g_arena, sizeof g_arena), RVNE_OK);
        rvne_head_set_trace(&t, g_trace);
        run_prepared(&t, &b, STORE + 24, m, 4u, 7u, 33u);
        /* The last push's x after layer 1 (past layer 0's q, k, v, o, x: 41
         * floats, and layer 1's q, k, v, o: 36): some at a bound. */
        for (c = 0; c < m.d; c++)
            sat += g_trace[77u + c] == 127.0f || g_trace[77u + c] == -128.0f;
        CHECK(sat > 0u);
    }
    /* Input quantisation through an identity Wq with rq 1.0: q is x. */
    {
        const dims mi = {4, 2, 1, 2, 1, 2};
        const layout y = layout_of(mi);
        static const float cases[][4] = {
            {2.5f, -2.5f, 0.5f, -0.5f},          {2.4999998f, -2.4999998f, 126.5f, -127.5f},
            {127.49f, 127.5f, -128.49f, -128.5f}, {1e30f, -1e30f, 0.0f, -0.0f},
            {3.5f, -3.5f, 0.49999997f, -0.49999997f},
        };
        uint32_t c, r;
        n = build_i8(STORE, mi, k_shifts, 23u);
        put_f32(STORE + 24, 1.0f);
        put_f32(STORE + 28, 1.0f);
        for (r = 0; r < y.q; r++) {
            put32(STORE + 24 + rq_at(mi, 0) + 8u * r, 0x40000000u);
            put32(STORE + 24 + rq_at(mi, 0) + 8u * r + 4u, 30u);
        }
        for (r = 0; r < mi.d; r++)
            for (c = 0; c < y.q; c++)
                STORE[24 + y.p_len + y.t_len + r * y.q + c] = r == c ? 1u : 0u;
        fix_crc(STORE);
        CHECK_STATUS(rvne_blob_open(&b, STORE, n, &k_file), RVNE_OK);
        CHECK_STATUS(rvne_head_init(&t, &b, 2u, g_arena, sizeof g_arena), RVNE_OK);
        rvne_head_set_trace(&t, g_trace);
        for (r = 0; r < sizeof cases / sizeof cases[0]; r++) {
            CHECK_STATUS(rvne_head_push(&t, cases[r]), RVNE_OK);
            for (c = 0; c < 4; c++)
                if (g_trace[c] != (float)ref_quantize(cases[r][c], 1.0f)) {
                    fprintf(stderr, "quantize(%.9g) = %g, want %d\n", (double)cases[r][c], (double)g_trace[c],
                            ref_quantize(cases[r][c], 1.0f));
                    CHECK(0);
                }
        }
        /* Spelled out: ties away from zero, saturation, NaN. */
        f[0] = 2.5f;
        f[1] = -2.5f;
        f[2] = 0.0f / 0.0f;
        f[3] = -129.0f;
        CHECK_STATUS(rvne_head_push(&t, f), RVNE_OK);
        CHECK(g_trace[0] == 3.0f && g_trace[1] == -3.0f && g_trace[2] == 0.0f && g_trace[3] == -128.0f);
    }
}

/* ---- INFO and the banner ------------------------------------------------------------ */

static char g_out[4096];
static size_t g_out_len;

static int cap_write(void *ctx, const void *buf, size_t n)
{
    (void)ctx;
    if (n > sizeof g_out - 1 - g_out_len)
        return -1;
    memcpy(g_out + g_out_len, buf, n);
    g_out_len += n;
    g_out[g_out_len] = 0;
    return 0;
}

static void test_info(void)
{
    static char line[1025], out[1024 + 16];
    static float frames[1024 * 3 / 16 + 1];
    static rvne_model model;
    static rvne_server srv;
    rvne_server_cfg cfg;
    char req[64];
    size_t n = build_i8(STORE, k_dims, k_shifts, 29u), need = 0;
    int len;

    CHECK_STATUS(rvne_model_load(&model, STORE, n, 4u, g_arena, sizeof g_arena, NULL), RVNE_OK);
    CHECK_STATUS(rvne_head_arena_size(&model.blob.hdr, 4u, &need), RVNE_OK);
    CHECK_EQ(model.arena_used, need);
    memset(&cfg, 0, sizeof cfg);
    cfg.port.name = "test";
    cfg.port.write = cap_write;
    cfg.port.clock_unit = "none";
    cfg.line_buf = line;
    cfg.line_max = 1024;
    cfg.out_buf = out;
    cfg.frame_buf = frames;
    g_out_len = 0;
    rvne_print_banner(&cfg.port, &model);
    CHECK(strstr(g_out, "ready: OK dims=5,4,2,3,2,3 dtype=int8 ") != NULL);
    CHECK_STATUS(rvne_server_init(&srv, &cfg, &model), RVNE_OK);
    len = snprintf(req, sizeof req, ">1 INFO");
    len += snprintf(req + len, sizeof req - (size_t)len, "*%08X\n",
                    (unsigned)rvne_crc32(0u, (const uint8_t *)req, (uint32_t)len));
    g_out_len = 0;
    rvne_server_feed(&srv, (const uint8_t *)req, (size_t)len);
    CHECK(strstr(g_out, " dtype=int8 ") != NULL);
    CHECK(strstr(g_out, " weights=int8 ") != NULL);
    CHECK(strstr(g_out, " status=loaded reason=OK ") != NULL);
    /* A port that expands weights at load prepares int8 ones for its fast
     * projection kernel, when it has one; the arena counts them. */
    {
        rvne_load_cfg ex = k_file;
        size_t prep = 0;
        ex.fp16_expand = 1;
        CHECK_STATUS(rvne_model_load(&model, STORE, n, 4u, g_arena, sizeof g_arena, &ex), RVNE_OK);
        CHECK_STATUS(rvne_head_prepared_size(&model.blob.hdr, &prep), RVNE_OK);
        /* A new request id: the server answers a repeated one from its cache. */
        len = snprintf(req, sizeof req, ">2 INFO");
        len += snprintf(req + len, sizeof req - (size_t)len, "*%08X\n",
                        (unsigned)rvne_crc32(0u, (const uint8_t *)req, (uint32_t)len));
        g_out_len = 0;
        rvne_server_feed(&srv, (const uint8_t *)req, (size_t)len);
#if defined(RVNE_PROJ_I8_FAST)
        CHECK(strstr(g_out, " weights=int8-prepared ") != NULL);
        CHECK_EQ(model.arena_used, need + prep);
#else
        CHECK(strstr(g_out, " weights=int8 ") != NULL);
        CHECK_EQ(model.arena_used, need);
#endif
    }
    /* A refused parameter is the load reason. */
    put32(STORE + 24 + 12, 70u);
    fix_crc(STORE);
    CHECK_STATUS(rvne_model_load(&model, STORE, n, 4u, g_arena, sizeof g_arena, NULL), RVNE_E_QPARAM);
    g_out_len = 0;
    rvne_print_banner(&cfg.port, &model);
    CHECK(strstr(g_out, "ready: E_QPARAM dims=5,4,2,3,2,3 dtype=int8") != NULL);
}

/* ---- the weighted sum on -p (rvne_wsum_i8_c) ---------------------------------
 * The 16-bit ring path hands the weighted sum -p_j (p_j = 32768 fits no
 * int16, -p_j does) and channel rows of one int16 per ring slot; the C twin
 * must still give the spec's sat8(rq(sum_j p_j v_j, rq_o)) exactly: here
 * over random p in [0, 32768], all weight on one position (p = 32768),
 * 2^b positions at 32768 / 2^b with rq_o making z = sum(v) / 2 or
 * 3 sum(v) / 8 (exact halves, both signs), and shift 16 with the largest
 * mult (saturation, past int32 too, where rvne_rq saturates). Slots past
 * n hold stale values that -p_j = 0 must cancel. */
#define WS_LEN 140u
#define WS_HD 9u
static void test_wsum_neg_p(void)
{
    static uint32_t rows[WS_HD * (WS_LEN / 2u) + 2u];
    static int16_t np16[WS_LEN + 4u];
    static int8_t v[WS_LEN][WS_HD];
    static int16_t o[WS_HD + 2u];
    static int64_t p[WS_LEN];
    static const int32_t halves[2][2] = {{0x40000000, 46}, {0x60000000, 47}};
    unsigned it, bad = 0;
    for (it = 0; it < 3000u; it++) {
        const uint32_t len = (uint32_t)rng_in(1, (int32_t)WS_LEN), n = (uint32_t)rng_in(1, (int32_t)len);
        const uint32_t hd = (uint32_t)rng_in(1, (int32_t)WS_HD), vr = RVNE_I8_ROW_WORDS(len);
        const uint32_t mode = it % 5u, end = 2u * vr;
        int32_t rq_o[2];
        uint32_t j, d;
        for (j = 0; j < n; j++)
            for (d = 0; d < hd; d++)
                v[j][d] = rnd_act();
        for (j = 0; j < n; j++)
            p[j] = 0;
        rq_o[0] = (int32_t)(0x40000000u | (rng() & 0x3FFFFFFFu));
        rq_o[1] = rng_in(30, 46);
        if (mode == 0u) {               /* any p in [0, 32768] */
            for (j = 0; j < n; j++)
                p[j] = rng_in(0, 32768);
        } else if (mode == 1u) {        /* p = 32768 on one position */
            p[rng_in(0, (int32_t)n - 1)] = 32768;
        } else if (mode == 2u || mode == 3u) { /* exact halves */
            uint32_t b = 0, first;
            while (b < 3u && (2u << b) <= n && (rng() & 1u))
                b++;
            first = (uint32_t)rng_in(0, (int32_t)(n - (1u << b)));
            for (j = first; j < first + (1u << b); j++)
                p[j] = 32768 >> b;
            rq_o[0] = halves[mode - 2u][0];
            rq_o[1] = halves[mode - 2u][1] - (int32_t)b;
        } else {                        /* saturation, past int32 too */
            for (j = 0; j < n; j++)
                p[j] = rng_in(0, 32768 / (int32_t)n + 1);
            rq_o[0] = 0x7FFFFFFF;
            rq_o[1] = rng_in(16, 24);
        }
        for (d = 0; d < hd; d++) {
            int16_t *row = (int16_t *)(void *)(rows + (size_t)d * vr);
            for (j = 0; j < end; j++)
                row[j] = j < n ? v[j][d] : (int16_t)rng_in(-128, 127); /* stale slots */
        }
        rows[hd * vr] = rng();
        rows[hd * vr + 1u] = rng();
        for (j = 0; j < end; j++)
            np16[j] = j < n ? (int16_t)-p[j] : 0;
        np16[end] = np16[0];
        np16[end + 1u] = np16[1];
        memset(o, 0x5a, sizeof o);
        rvne_wsum_i8_c(o, np16, rows, len, hd, rq_o, NULL); /* the twin needs no estimate */
        for (d = 0; d < hd; d++) {
            int64_t sum = 0;
            for (j = 0; j < n; j++)
                sum += p[j] * v[j][d];
            if (o[d] != (int16_t)ref_sat8(ref_clamp32(ref_rq(sum, rq_o[0], rq_o[1]))) && bad++ < 3u)
                fprintf(stderr, "wsum -p: mode %u len %u n %u [%u]: %d, want %d (sum %lld, m %ld, s %ld)\n",
                        (unsigned)mode, (unsigned)len, (unsigned)n, (unsigned)d, o[d],
                        (int)ref_sat8(ref_clamp32(ref_rq(sum, rq_o[0], rq_o[1]))), (long long)sum,
                        (long)rq_o[0], (long)rq_o[1]);
        }
        CHECK_EQ(o[hd], 0x5a5a);
    }
    CHECK_EQ(bad, 0);
}

int main(void)
{
    test_rq();
    test_matvec_requant();
    test_attn();
    test_wsum_neg_p();
    test_loader();
    test_forward();
    test_info();
    return CHECK_DONE("test_int8");
}
