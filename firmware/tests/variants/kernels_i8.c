/* The int8 kernels of rvne/kernels.h for the variant builds, which replace
 * core/src/rvne_kernels.c (firmware/tests/defects.mk). Another correct
 * implementation of docs/model.md's integer model: a dot product per output
 * (the core walks W's rows), and with RVNE_VARIANT_REVERSED every sum taken
 * back to front. Every sum is exact in int32, so the bits must equal the
 * core's (tests/test_defects.py). */
#include <string.h>
#include "rvne/kernels.h"

#if defined(RVNE_VARIANT_REVERSED)
#define AT8(k, n) ((n) - 1u - (k))
#else
#define AT8(k, n) (k)
#endif

void rvne_matvec_i8_c(int32_t *acc, const int8_t *x, const int8_t *w, uint32_t n_in, uint32_t n_out)
{
    uint32_t c, k;
    for (c = 0; c < n_out; c++) {
        int32_t sum = 0;
        for (k = 0; k < n_in; k++) {
            const uint32_t i = AT8(k, n_in);
            sum += (int32_t)x[i] * w[(size_t)i * n_out + c];
        }
        acc[c] = sum;
    }
}

void rvne_requant_i8_c(int8_t *y, const int32_t *acc, const int32_t *pairs, uint32_t n)
{
    uint32_t k;
    for (k = 0; k < n; k++) {
        const uint32_t c = AT8(k, n);
        y[c] = rvne_sat8(rvne_rq(acc[c], pairs[2u * c], pairs[2u * c + 1u]));
    }
}

void rvne_residual_i8_c(int8_t *x, const int32_t *acc, const int32_t *pairs, const int32_t *rq_x, uint32_t n)
{
    uint32_t k;
    for (k = 0; k < n; k++) {
        const uint32_t c = AT8(k, n);
        /* In 64 bits instead of the core's clamp: the same saturated sum. */
        const int64_t sum = (int64_t)rvne_rq(x[c], rq_x[0], rq_x[1]) + rvne_rq(acc[c], pairs[2u * c], pairs[2u * c + 1u]);
        x[c] = (int8_t)(sum > 127 ? 127 : sum < -128 ? -128 : sum);
    }
}

/* The attention over the 16-bit rings (the layout of rvne/kernels.h), each
 * sum back to front under RVNE_VARIANT_REVERSED and taken in 64 bits. */
int32_t rvne_scores_i8_c(int32_t *sc, const int16_t *q16, const uint32_t *rows, uint32_t hd, uint32_t n,
                         const int32_t *rq_s, const rvne_i8_est *est)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(hd);
    int32_t mx = INT32_MIN;
    uint32_t t, i;
    (void)est;
    for (t = 0; t < n; t++) {
        const uint32_t j = AT8(t, n);
        const int16_t *key = (const int16_t *)(rows + (size_t)j * k);
        int64_t dot = 0;
        for (i = 0; i < hd; i++)
            dot += (int64_t)q16[AT8(i, hd)] * key[AT8(i, hd)];
        sc[j] = rvne_rq((int32_t)dot, rq_s[0], rq_s[1]);
        if (sc[j] > mx)
            mx = sc[j];
    }
    return mx;
}

void rvne_softmax_i8_c(int16_t *np16, int32_t *sc, uint32_t n, uint32_t len, const uint16_t *exp_tab, int32_t mx)
{
    const uint32_t end = 2u * RVNE_I8_ROW_WORDS(len);
    uint64_t sum = 0u;
    uint32_t t, j;
    for (t = 0; t < n; t++) {
        const uint32_t jj = AT8(t, n);
        const int64_t d = (int64_t)mx - sc[jj];
        sc[jj] = exp_tab[d < 255 ? d : 255];
        sum += (uint64_t)sc[jj];
    }
    for (j = 0; j < end + 2u; j++)
        np16[j] = 0;
    for (j = 0; j < n; j++)
        np16[j] = (int16_t)-(int64_t)(((uint64_t)sc[j] * 32768u + sum / 2u) / sum);
    /* The read-ahead words the assembly kernels expect (rvne/kernels.h). */
    np16[end] = np16[0];
    np16[end + 1u] = np16[1];
}

void rvne_wsum_i8_c(int16_t *o16, const int16_t *np16, const uint32_t *rows, uint32_t len, uint32_t hd,
                    const int32_t *rq_o, const rvne_i8_est *est)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(len);
    uint32_t d, t;
    (void)est;
    for (d = 0; d < hd; d++) {
        const int16_t *v = (const int16_t *)(rows + (size_t)d * k);
        int64_t sum = 0;
        for (t = 0; t < len; t++)
            sum -= (int64_t)np16[AT8(t, len)] * v[AT8(t, len)];
        o16[d] = rvne_sat8(rvne_rq((int32_t)sum, rq_o[0], rq_o[1]));
    }
}
