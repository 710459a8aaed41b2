/* The port's assembly kernels against their C twins (rvne/kernels.h), on
 * the emulated core (tests.mk, `make lx6-test`): random inputs in [-1, 1)
 * over every awkward shape, lengths 0, 1, odd, not a multiple of any block,
 * and the default head's real ones (16 -> 128, 128 -> 16; head_dim 32,
 * W = 100, 4 query heads per kv head); 1 to 8 heads per kv head, so
 * every block (4, 3, 2 heads and one) and its leftovers run.
 *
 * Comparison rule. madd.s rounds once (QEMU's de233_fpu; docs/model.md) and
 * the twins' mul.s + add.s twice, so results differ in the last bits. Both
 * are dot products of the same terms, each within gamma_len * S of the exact
 * value (S = sum of the terms' magnitudes, times |scale|; docs/model.md's
 * model of one dot product, any order, fused or not), so an element agrees
 * when |asm - C| <= 3 * (len + 3) * 2^-24 * S (two such errors, the scale's
 * rounding, and S itself computed in float) plus the underflow term. A
 * length-0 sum must be exactly 0. Besides the values: every element the
 * kernel must not write (gaps between strided rows, past the end) keeps
 * its canary, and every element it must write is overwritten.
 *
 * tests.mk also links this test against deliberately wrong kernels
 * (-DRVNE_DSP_DEFECT) and requires each kernel's FAILED line. */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "rvne/kernels.h"

#if !defined(RVNE_HAVE_MATVEC_F32_AE32) || !defined(RVNE_HAVE_SCORES_F32_AE32) || \
    !defined(RVNE_HAVE_WSUM_F32_AE32)
#error "test_dsp checks the port's assembly kernels: build with LX6_KERNELS=ae32"
#endif

#define U (1.0f / 16777216.0f)
#define ETA 1.17549435e-38f             /* 2^-126 */
#define CANARY 0x7FC0DEADu              /* a NaN no kernel computes */
#define PAD 7

static uint32_t rng_state = 0x9E3779B9u;

static float frand(void)                /* [-1, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return (float)(rng_state >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

static void fill(float *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        p[i] = frand();
}

static void fill_canary(float *p, size_t n)
{
    const uint32_t c = CANARY;
    size_t i;
    for (i = 0; i < n; i++)
        memcpy(p + i, &c, sizeof c);
}

static int is_canary(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u == CANARY;
}

static float mag(float x)
{
    return x < 0.0f ? -x : x;
}

/* One kernel's tally: shapes run, elements compared, worst |diff| / bound. */
typedef struct tally {
    const char *name;
    unsigned shapes, elems, failed;
    float worst;
} tally;

/* Element `what`[idx] of a shape described by `shape`: the asm result got,
 * the C twin's want, S and len as in the rule above. */
static void compare(tally *t, const char *shape, unsigned idx, float got, float want, float s, uint32_t len)
{
    const float bound = 3.0f * (float)(len + 3u) * U * s + (float)(2u * len + 4u) * ETA;
    const float diff = mag(got - want);
    int ok = (len == 0u) ? (got == 0.0f && want == 0.0f) : (diff <= bound);
    t->elems++;
    if (is_canary(got) || is_canary(want) || got != got || want != want)
        ok = 0;
    if (ok && bound > 0.0f && diff / bound > t->worst)
        t->worst = diff / bound;
    CHECK(ok);
    if (!ok && t->failed++ < 3u)
        fprintf(stderr, "test_dsp: %s %s [%u]: asm %g, C twin %g, bound %g\n", t->name, shape, idx,
                (double)got, (double)want, (double)bound);
}

/* Elements [from, to) of buf must still hold the canary. */
static void untouched(tally *t, const char *shape, const float *buf, size_t from, size_t to)
{
    size_t i;
    for (i = from; i < to; i++) {
        int ok = is_canary(buf[i]);
        CHECK(ok);
        if (!ok && t->failed++ < 3u)
            fprintf(stderr, "test_dsp: %s %s: wrote element %u it must not touch\n", t->name, shape, (unsigned)i);
    }
}

static int report(const tally *t)
{
    fprintf(stderr, "test_dsp: %s: %u shapes, %u elements, worst |asm - C| at %.3f of the bound%s\n", t->name,
            t->shapes, t->elems, (double)t->worst, t->failed ? ": FAILED" : "");
    return t->failed != 0u;
}

/* ---- matrix-vector -------------------------------------------------------- */

#define MV_MAX 128
/* x, W and y start 0-3 floats past a 16-byte boundary (the S3's kernel
 * loads four aligned floats at a time and stores two: every alignment of
 * each is tried, W against every y). */
static float mv_xbuf[MV_MAX + 3] __attribute__((aligned(16)));
static float mv_wbuf[MV_MAX * MV_MAX + 3] __attribute__((aligned(16)));
static float mv_got[3 + MV_MAX + PAD] __attribute__((aligned(16)));
static float mv_want[3 + MV_MAX + PAD] __attribute__((aligned(16)));

static void test_matvec(tally *t)
{
    static const uint32_t ins[] = {0, 1, 2, 3, 4, 5, 7, 8, 12, 16, 33, 128};
    static const uint32_t outs[] = {0, 1, 2, 3, 4, 5, 7, 8, 11, 12, 13, 15, 16, 17, 20, 24, 25, 32, 128};
    unsigned a, b, off;
    for (a = 0; a < sizeof ins / sizeof ins[0]; a++) {
        for (b = 0; b < sizeof outs / sizeof outs[0]; b++) {
            for (off = 0; off < 16u; off++) {
                const uint32_t n_in = ins[a], n_out = outs[b], yo = (off + off / 4u) % 4u;
                const float *mv_x = mv_xbuf + off % 4u, *mv_w = mv_wbuf + off / 4u;
                char shape[64];
                uint32_t i, j;
                snprintf(shape, sizeof shape, "n_in=%u n_out=%u x+%u w+%u y+%u", (unsigned)n_in,
                         (unsigned)n_out, off % 4u, off / 4u, (unsigned)yo);
                fill(mv_xbuf + off % 4u, n_in);
                fill(mv_wbuf + off / 4u, (size_t)n_in * n_out);
                fill_canary(mv_got, yo + n_out + PAD);
                fill_canary(mv_want, yo + n_out + PAD);
                rvne_matvec_f32_ae32(mv_got + yo, mv_x, mv_w, n_in, n_out);
                rvne_matvec_f32_c(mv_want + yo, mv_x, mv_w, n_in, n_out);
                for (j = 0; j < n_out; j++) {
                    float s = 0.0f;
                    for (i = 0; i < n_in; i++)
                        s += mag(mv_x[i] * mv_w[(size_t)i * n_out + j]);
                    compare(t, shape, j, mv_got[yo + j], mv_want[yo + j], s, n_in);
                }
                untouched(t, shape, mv_got, 0, yo);
                untouched(t, shape, mv_got, yo + n_out, yo + n_out + PAD);
                t->shapes++;
            }
        }
    }
}

/* ---- attention: scores and weighted sum ----------------------------------- */

#define AT_G 8
#define AT_N 100
#define AT_HD 33
#define AT_QS (AT_HD + 6)
#define AT_KS (AT_HD + 5)
/* 16-byte aligned, as the head's arena places them: the S3's kernels load
 * four floats at a time (odd strides and lengths try their fallbacks). */
#define AT_ALIGNED __attribute__((aligned(16)))
static float at_q[AT_G * AT_QS] AT_ALIGNED, at_k[AT_N * AT_KS] AT_ALIGNED, at_v[AT_N * AT_KS] AT_ALIGNED;
static float at_w[AT_G * AT_N] AT_ALIGNED, at_scale[AT_G];
static float at_got[AT_G * AT_QS + AT_G * AT_N + PAD] AT_ALIGNED, at_want[AT_G * AT_QS + AT_G * AT_N + PAD] AT_ALIGNED;

static void test_attention(tally *ts, tally *tw)
{
    static const uint32_t hds[] = {0, 1, 2, 3, 4, 5, 7, 8, 12, 16, 32, 33};
    static const uint32_t ns[] = {0, 1, 2, 3, 4, 5, 7, 12, 33, 100};
    static const uint32_t gs[] = {1, 2, 3, 4, 5, 6, 7, 8};
    unsigned a, b, c, shape_no = 0;
    for (a = 0; a < sizeof hds / sizeof hds[0]; a++) {
        for (b = 0; b < sizeof ns / sizeof ns[0]; b++) {
            for (c = 0; c < sizeof gs / sizeof gs[0]; c++, shape_no++) {
                rvne_attn at;
                char shape[64];
                const float scale = frand();
                uint32_t m, j, i;
                size_t out_len;
                at.hd = hds[a];
                at.n = ns[b];
                at.g = gs[c];
                at.q_stride = at.hd + (shape_no % 3u) * (shape_no % 2u ? 3u : 2u);  /* heads packed, or gaps */
                at.kv_stride = at.hd + (shape_no % 4u == 3u ? 5u : 4u * (shape_no % 4u % 2u));
                snprintf(shape, sizeof shape, "hd=%u n=%u g=%u q_stride=%u kv_stride=%u", (unsigned)at.hd,
                         (unsigned)at.n, (unsigned)at.g, (unsigned)at.q_stride, (unsigned)at.kv_stride);
                fill(at_q, sizeof at_q / sizeof at_q[0]);
                fill(at_k, sizeof at_k / sizeof at_k[0]);
                fill(at_v, sizeof at_v / sizeof at_v[0]);
                fill(at_w, sizeof at_w / sizeof at_w[0]);
                fill(at_scale, AT_G);

                /* scores: att[m*n + j] */
                out_len = (size_t)at.g * at.n;
                fill_canary(at_got, out_len + PAD);
                fill_canary(at_want, out_len + PAD);
                rvne_scores_f32_ae32(at_got, at_q, at_k, &at, scale);
                rvne_scores_f32_c(at_want, at_q, at_k, &at, scale);
                for (m = 0; m < at.g; m++) {
                    for (j = 0; j < at.n; j++) {
                        const size_t o = (size_t)m * at.n + j;
                        float s = 0.0f;
                        for (i = 0; i < at.hd; i++)
                            s += mag(at_q[m * at.q_stride + i] * at_k[j * at.kv_stride + i]);
                        compare(ts, shape, (unsigned)o, at_got[o], at_want[o], s * mag(scale), at.hd);
                    }
                }
                untouched(ts, shape, at_got, out_len, out_len + PAD);
                ts->shapes++;

                /* weighted sum: out[m*q_stride + i] */
                out_len = at.g ? (size_t)(at.g - 1u) * at.q_stride + at.hd : 0u;
                fill_canary(at_got, out_len + PAD);
                fill_canary(at_want, out_len + PAD);
                rvne_wsum_f32_ae32(at_got, at_w, at_v, &at, at_scale);
                rvne_wsum_f32_c(at_want, at_w, at_v, &at, at_scale);
                for (m = 0; m < at.g; m++) {
                    const size_t row = (size_t)m * at.q_stride;
                    for (i = 0; i < at.hd; i++) {
                        float s = 0.0f;
                        for (j = 0; j < at.n; j++)
                            s += mag(at_w[m * at.n + j] * at_v[j * at.kv_stride + i]);
                        compare(tw, shape, (unsigned)(row + i), at_got[row + i], at_want[row + i],
                                s * mag(at_scale[m]), at.n);
                    }
                    if (m + 1u < at.g)
                        untouched(tw, shape, at_got, row + at.hd, row + at.q_stride);
                }
                untouched(tw, shape, at_got, out_len, out_len + PAD);
                tw->shapes++;
            }
        }
    }
}

int main(void)
{
    tally mv = {"matvec_f32", 0, 0, 0, 0.0f};
    tally sc = {"scores_f32", 0, 0, 0, 0.0f};
    tally ws = {"wsum_f32", 0, 0, 0, 0.0f};
    test_matvec(&mv);
    test_attention(&sc, &ws);
    report(&mv);
    report(&sc);
    report(&ws);
    return CHECK_DONE("test_dsp");
}
