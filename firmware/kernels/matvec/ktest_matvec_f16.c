/* The FP16 matrix-vector kernel in assembly (matvec_f16_ae32.S) on the
 * emulated core:
 *   1. every half pattern the blob loader accepts (all 65536: it checks no
 *      weight's value, docs/format.md) in 1-row matrices, times 1 (the decode
 *      itself, against rvne_fp16_to_f32), times -3 and 2^-100 (the fast path)
 *      and 2^20 (the path for |x| >= 2^16), bit for bit against the C twin:
 *      one product and a +0 start round the same fused or not;
 *   2. awkward shapes (0, 1, odd, not a multiple of the 8-column block) with
 *      random weights (zeros and subnormals among them), against the C twin
 *      within twice the dot-product bound of docs/model.md, nothing written
 *      past y[n_out);
 *   3. the shape comparison rejects a kernel that drops the last row. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "rvne/fp16.h"
#include "rvne/kernels.h"
#include "ktest_f16.h"

#define NH 65536u

/* A random finite half: mostly normal values near 1 (exponents 8-21), a
 * sixteenth zeros and subnormals, either sign. */
static uint16_t random_weight(void)
{
    return random_half(8u, 14u, 15u);
}

/* Outputs of two kernels farther apart than 2 * gamma_n * sum |x w| plus the
 * underflow terms (docs/model.md, "Model of one operation"). */
static int disagree(const float *a, const float *c, const float *x, const uint16_t *w,
                    uint32_t n_in, uint32_t n_out)
{
    int bad = 0;
    uint32_t i, j;
    for (j = 0; j < n_out; j++) {
        float mag = 0.0f, tol;
        for (i = 0; i < n_in; i++)
            mag += fabsf(x[i] * rvne_fp16_to_f32(w[i * n_out + j]));
        tol = 2.0f * (float)n_in * 0x1p-24f * mag * 1.01f + (float)(2u * n_in + 2u) * 0x1p-149f;
        bad += !(fabsf(a[j] - c[j]) <= tol);
    }
    return bad;
}

static void drops_last_row(float *y, const float *x, const uint16_t *w, uint32_t n_in, uint32_t n_out)
{
    rvne_matvec_f16_ae32(y, x, w, n_in ? n_in - 1u : 0u, n_out);
}

static int all_patterns(void)
{
    uint16_t *w = malloc(CHUNK * sizeof *w);
    float *ya = malloc((CHUNK + 1u) * sizeof *ya), *yc = malloc((CHUNK + 1u) * sizeof *yc);
    uint32_t h, k, c, bad_decode = 0;
    if (w == NULL || ya == NULL || yc == NULL)
        return -1;
    for (k = 0; k < sizeof ktest_f16_xs / sizeof ktest_f16_xs[0]; k++) {
        uint32_t bad = 0;
        for (c = 0; c < NH; c += CHUNK) {
            for (h = 0; h < CHUNK; h++)
                w[h] = (uint16_t)(c + h);
            ya[CHUNK] = yc[CHUNK] = 42.0f;
            rvne_matvec_f16_ae32(ya, &ktest_f16_xs[k], w, 1u, CHUNK);
            rvne_matvec_f16_c(yc, &ktest_f16_xs[k], w, 1u, CHUNK);
            for (h = 0; h < CHUNK; h++) {
                const uint32_t half = c + h;
                const int same = bits_of(ya[h]) == bits_of(yc[h]) || (isnan(ya[h]) && isnan(yc[h]));
                if (!same && bad++ < 5)
                    printf("ktest_matvec_f16: x=0x%08x half 0x%04x: asm 0x%08x, C 0x%08x\n",
                           (unsigned)bits_of(ktest_f16_xs[k]), (unsigned)half, (unsigned)bits_of(ya[h]),
                           (unsigned)bits_of(yc[h]));
                if (k == 0u) {
                    /* + 0: the sum starts at +0, so the -0 half gives +0 */
                    const float want = rvne_fp16_to_f32((uint16_t)half) + 0.0f;
                    bad_decode += !(bits_of(ya[h]) == bits_of(want) || (isnan(ya[h]) && isnan(want)));
                }
            }
            CHECK(ya[CHUNK] == 42.0f);
        }
        printf("ktest_matvec_f16: all 65536 halves times 0x%08x: %u differ from the C twin\n",
               (unsigned)bits_of(ktest_f16_xs[k]), (unsigned)bad);
        CHECK_EQ(bad, 0);
    }
    CHECK_EQ(bad_decode, 0);
    free(w);
    free(ya);
    free(yc);
    return 0;
}

int main(int argc, char **argv)
{
    static const uint32_t ins[] = {0, 1, 2, 3, 7, 16, 33};
    static const uint32_t outs[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 33};
    static uint16_t w[33 * 33];
    static float x[33], ya[34], yc[34];
    size_t a, b;
    uint32_t i, caught = 0, tried = 0;
    (void)argc;
    (void)argv;

    rng = 777u;
    CHECK_FATAL(all_patterns() == 0);

    for (a = 0; a < sizeof ins / sizeof ins[0]; a++) {
        for (b = 0; b < sizeof outs / sizeof outs[0]; b++) {
            const uint32_t n_in = ins[a], n_out = outs[b];
            for (i = 0; i < n_in * n_out; i++)
                w[i] = random_weight();
            for (i = 0; i < n_in; i++)
                x[i] = random_x();
            if (n_in > 2u)
                x[1] = 1e6f;                /* one large input: the slow copy */
            ya[n_out] = yc[n_out] = -7.0f;
            rvne_matvec_f16_ae32(ya, x, w, n_in, n_out);
            rvne_matvec_f16_c(yc, x, w, n_in, n_out);
            CHECK_EQ(disagree(ya, yc, x, w, n_in, n_out), 0);
            CHECK(ya[n_out] == -7.0f);
            x[1] = 0.5f;
            rvne_matvec_f16_ae32(ya, x, w, n_in, n_out);
            rvne_matvec_f16_c(yc, x, w, n_in, n_out);
            CHECK_EQ(disagree(ya, yc, x, w, n_in, n_out), 0);
            if (n_in > 1u && n_out > 0u) {
                drops_last_row(ya, x, w, n_in, n_out);
                caught += disagree(ya, yc, x, w, n_in, n_out) > 0;
                tried++;
            }
        }
    }
    printf("ktest_matvec_f16: a kernel dropping the last row caught in %u of %u shapes\n",
           (unsigned)caught, (unsigned)tried);
    CHECK(tried > 0u);
    CHECK_EQ(caught, tried);
    return CHECK_DONE("ktest_matvec_f16");
}
