/* Instructions per call of each kernel on the ESP32-S3's core, by its
 * ICOUNT register (push_icount.c says how it counts): the shapes of the
 * default head (16,4,1,32,2,4; W = 100) with its operands where the head
 * puts them (weights 8 bytes past a 16-byte boundary, as in a blob mapped
 * in place; activations and the key/value cache 16-byte aligned), for the
 * kernel set this image is linked with (s3.mk: the assembly kernels, or
 * the C twins). Prints one line per shape
 *   kernel name=N macs=M insns=I
 * for tools/bench_icount.py; not a test (the twin tests are test_dsp). */
#include <stdio.h>
#include <string.h>
#include "rvne/kernels.h"
#include "icount.h"

#define D 16
#define HQ 4
#define HD 32
#define W 100

static float x[HQ * HD] __attribute__((aligned(16)));
static float y[HQ * HD] __attribute__((aligned(16)));
/* 2 floats of blob header in front of the weights: where a blob's weights
 * sit (docs/format.md). */
static float wbuf[2 + HQ * HD * D] __attribute__((aligned(16)));
static float kc[W * HD] __attribute__((aligned(16)));
static float vc[W * HD] __attribute__((aligned(16)));
static float att[HQ * W] __attribute__((aligned(16)));
static float scale[HQ] = {0.5f, 0.25f, 0.125f, 0.0625f};

static uint32_t rng = 0x2545F491u;

static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (float)(rng >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

static void fill(float *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        p[i] = frand();
}

static void line(const char *name, uint32_t macs, uint32_t insns)
{
    printf("kernel name=%s macs=%u insns=%u\n", name, (unsigned)macs, (unsigned)insns);
}

static void matvec(const char *name, uint32_t n_in, uint32_t n_out)
{
    const float *w = wbuf + 2;
    uint32_t t = s3_icount_read();
    rvne_matvec_f32(y, x, w, n_in, n_out);
    line(name, n_in * n_out, s3_icount_read() - t - s3_icount_cost);
}

int main(void)
{
    rvne_attn a = {HD, W, HQ, HD, HD};
    uint32_t t;
    fill(x, sizeof x / sizeof x[0]);
    fill(wbuf, sizeof wbuf / sizeof wbuf[0]);
    fill(kc, sizeof kc / sizeof kc[0]);
    fill(vc, sizeof vc / sizeof vc[0]);
    fill(att, sizeof att / sizeof att[0]);
    s3_icount_on();

    matvec("matvec_16x128", D, HQ * HD);
    matvec("matvec_16x32", D, HD);
    matvec("matvec_128x16", HQ * HD, D);
    matvec("matvec_16x4", D, 4);

    t = s3_icount_read();
    rvne_scores_f32(att, x, kc, &a, 0.17677669f);
    line("scores_g4", HQ * W * HD, s3_icount_read() - t - s3_icount_cost);
    t = s3_icount_read();
    (void)rvne_softmax_exp_f32(att, W);
    line("softmax_exp", 0, s3_icount_read() - t - s3_icount_cost);
    t = s3_icount_read();
    rvne_wsum_f32(y, att, vc, &a, scale);
    line("wsum_g4", HQ * W * HD, s3_icount_read() - t - s3_icount_cost);
    return 0;
}
