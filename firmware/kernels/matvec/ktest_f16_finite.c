/* The branch-free FP16 kernel (matvec_f16_finite_ae32.S) and FP16
 * weights expanded to FP32 (docs/model.md, "FP16 weights"), on the emulated
 * core:
 *   1. every finite half (all 63488 patterns with an exponent below all
 *      ones) in 1-row matrices times 1, -3, 2^-100 (the fast path) and 2^20
 *      (the path for |x| >= 2^16), bit for bit against the exact C twin
 *      rvne_matvec_f16_c and the branch-free one rvne_matvec_f16_finite_c:
 *      one product and a +0 start round the same fused or not;
 *   2. awkward shapes (0, 1, odd, not a multiple of any block) of random
 *      finite weights (zeros and subnormals among them), one large input in
 *      some rows: bit for bit against the exact kernel rvne_matvec_f16_ae32
 *      (the same sums in the same order), and against the FP32 kernel
 *      rvne_matvec_f32_ae32 on the weights expanded by rvne_fp16_expand:
 *      what a push computes with the expansion is what it computes with the
 *      decode; nothing written past y[n_out).
 * tests.mk links this against the deliberately wrong kernels too, and
 * requires the "matvec_f16_finite: ... FAILED" line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "rvne/fp16.h"
#include "rvne/kernels.h"
#include "ktest_f16.h"

#define CANARY 0x7FC0DEADu              /* a NaN no kernel computes */

/* Any finite exponent, an eighth zeros and subnormals. */
static uint16_t random_finite_half(void)
{
    return random_half(0u, 31u, 7u);
}

/* Elements of a and b that differ in any bit, reported as `what`. */
static uint32_t count_diff(const float *a, const float *b, uint32_t n, const char *what, uint32_t *shown)
{
    uint32_t j, bad = 0;
    for (j = 0; j < n; j++) {
        if (bits_of(a[j]) == bits_of(b[j]))
            continue;
        bad++;
        if ((*shown)++ < 5u)
            printf("ktest_f16_finite: %s [%u]: 0x%08x against 0x%08x\n", what, (unsigned)j, (unsigned)bits_of(a[j]),
                   (unsigned)bits_of(b[j]));
    }
    return bad;
}

/* Section 1: the finite kernel on every finite half; its failures counted in *bad_fin. */
static int all_finite_patterns(uint32_t *bad_fin)
{
    uint16_t *w = malloc(CHUNK * sizeof *w);
    float *ya = malloc((CHUNK + 1u) * sizeof *ya), *yc = malloc(CHUNK * sizeof *yc);
    float *yf = malloc(CHUNK * sizeof *yf);
    uint32_t k, c, h, shown = 0, bad_c = 0;
    if (w == NULL || ya == NULL || yc == NULL || yf == NULL)
        return -1;
    for (k = 0; k < sizeof ktest_f16_xs / sizeof ktest_f16_xs[0]; k++) {
        for (c = 0; c < 0x7C00u * 2u; c += CHUNK) {
            /* c counts finite magnitudes then their negatives: 0x0000-0x7BFF, 0x8000-0xFBFF */
            for (h = 0; h < CHUNK; h++) {
                const uint32_t i = c + h;
                w[h] = (uint16_t)(i < 0x7C00u ? i : 0x8000u + (i - 0x7C00u) % 0x7C00u);
            }
            ya[CHUNK] = 42.0f;
            rvne_matvec_f16_finite_ae32(ya, &ktest_f16_xs[k], w, 1u, CHUNK);
            rvne_matvec_f16_c(yc, &ktest_f16_xs[k], w, 1u, CHUNK);
            rvne_matvec_f16_finite_c(yf, &ktest_f16_xs[k], w, 1u, CHUNK);
            *bad_fin += count_diff(ya, yc, CHUNK, "finite asm vs exact C twin", &shown);
            bad_c += count_diff(yf, yc, CHUNK, "finite C twin vs exact C twin", &shown);
            *bad_fin += ya[CHUNK] != 42.0f;
        }
    }
    printf("ktest_f16_finite: all finite halves times 1, -3, 2^-100, 2^20: %u differ (asm), %u (C twin)\n",
           (unsigned)*bad_fin, (unsigned)bad_c);
    CHECK_EQ(bad_c, 0);
    free(w);
    free(ya);
    free(yc);
    free(yf);
    return 0;
}

int main(int argc, char **argv)
{
    static const uint32_t ins[] = {0, 1, 2, 3, 7, 16, 33};
    static const uint32_t outs[] = {0, 1, 2, 7, 8, 9, 12, 15, 16, 17, 25, 33};
    static uint16_t w[33 * 33];
    static float wx[33 * 33 + 3] __attribute__((aligned(16)));
    static float x[33], ya[34 + 4], yb[34 + 4], yx[34 + 4];
    uint32_t bad_fin = 0, bad_exp = 0, shown = 0, shapes = 0;
    size_t a, b;
    uint32_t i, big;
    (void)argc;
    (void)argv;

    rng = 4242u;
    CHECK_FATAL(all_finite_patterns(&bad_fin) == 0);

    for (a = 0; a < sizeof ins / sizeof ins[0]; a++) {
        for (b = 0; b < sizeof outs / sizeof outs[0]; b++) {
            for (big = 0; big < 2u; big++) {
                const uint32_t n_in = ins[a], n_out = outs[b];
                /* The expansion where an arena puts it: float-aligned, any 16-byte phase. */
                float *we = wx + shapes % 4u;
                for (i = 0; i < n_in * n_out; i++)
                    w[i] = random_finite_half();
                for (i = 0; i < n_in; i++)
                    x[i] = random_x();
                if (big && n_in > 2u)
                    x[1] = 1e6f;            /* the kernels' path for |x| >= 2^16 */
                for (i = 0; i < n_out + 4u; i++) {
                    const uint32_t c = CANARY;
                    memcpy(&ya[i], &c, 4);
                    memcpy(&yb[i], &c, 4);
                    memcpy(&yx[i], &c, 4);
                }
                rvne_fp16_expand(we, w, (size_t)n_in * n_out);
                rvne_matvec_f16_finite_ae32(ya, x, w, n_in, n_out);
                rvne_matvec_f16_ae32(yb, x, w, n_in, n_out);
                rvne_matvec_f32_ae32(yx, x, we, n_in, n_out);
                /* n_out + 4: the canaries past the end compared too */
                bad_fin += count_diff(ya, yb, n_out + 4u, "finite asm vs exact asm", &shown);
                bad_exp += count_diff(yx, yb, n_out + 4u, "FP32 asm on the expansion vs exact asm", &shown);
                shapes++;
            }
        }
    }
    printf("ktest_f16_finite: %u shapes: matvec_f16_finite: %u elements differ from matvec_f16%s\n",
           (unsigned)shapes, (unsigned)bad_fin, bad_fin ? ": FAILED" : "");
    printf("ktest_f16_finite: %u shapes: matvec_f32 on the expanded weights: %u elements differ from "
           "matvec_f16%s\n", (unsigned)shapes, (unsigned)bad_exp, bad_exp ? ": FAILED" : "");
    CHECK_EQ(bad_fin, 0);
    CHECK_EQ(bad_exp, 0);
    return CHECK_DONE("ktest_f16_finite");
}
