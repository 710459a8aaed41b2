/* The esp32-class port's FP32 kernels (rvne/kernels.h): the C twins'
 * signatures, the work cut into the blocks the assembly in this directory
 * computes with madd.s, the zero-overhead loop and post-increment loads
 * (docs/targets.md, "Kernels"). */
#include "dsp.h"

#if defined(RVNE_DSP_AES3)
/* On the S3, rvne_matvec_f32_ae32 is matvec_f32_aes3.S: it hands the
 * shapes its 128-bit loads do not suit to this. */
void rvne_dsp_matvec_lx6(float *y, const float *x, const float *w, uint32_t n_in, uint32_t n_out)
#else
void rvne_matvec_f32_ae32(float *y, const float *x, const float *w, uint32_t n_in, uint32_t n_out)
#endif
{
    const uint32_t row_bytes = n_out * (uint32_t)sizeof *w;
    uint32_t j = 0;
    for (; j + 12u <= n_out; j += 12u)
        rvne_dsp_matvec_b12(y + j, x, w + j, n_in, row_bytes);
    for (; j + 4u <= n_out; j += 4u)
        rvne_dsp_matvec_b4(y + j, x, w + j, n_in, row_bytes);
    for (; j < n_out; j++)
        rvne_dsp_matvec_b1(y + j, x, w + j, n_in, row_bytes);
}

/* Four query heads at a time share every key and value load; the 3 or 2
 * heads left over share them in blocks of their own (h3: 4 keys or
 * elements, h2: 5 keys or 6 elements), whose own leftovers, and a last
 * single head, go one head at a time (h1). Those blocks start their sums
 * with a product, so a dot product of no terms (hd = 0 for the scores, n
 * = 0 for the weighted sum) is the C twin's. */
#if defined(RVNE_DSP_AES3)
/* On the S3, rvne_scores_f32_ae32 is scores_f32_aes3.S: it hands the
 * shapes its 128-bit loads do not suit to this. */
void rvne_dsp_scores_lx6(float *att, const float *q, const float *k, const rvne_attn *a, float scale)
#else
void rvne_scores_f32_ae32(float *att, const float *q, const float *k, const rvne_attn *a, float scale)
#endif
{
    uint32_t m = 0, heads = 0, done = 0, h;
    if (a->hd == 0u) {
        rvne_scores_f32_c(att, q, k, a, scale);
        return;
    }
    for (; m + 4u <= a->g; m += 4u)
        rvne_dsp_scores_h4(att + (size_t)m * a->n, q + (size_t)m * a->q_stride, k, a, scale);
    if (a->g - m == 3u) {
        rvne_dsp_scores_h3(att + (size_t)m * a->n, q + (size_t)m * a->q_stride, k, a, scale);
        heads = 3u;
        done = a->n - a->n % 4u;
    } else if (a->g - m == 2u) {
        rvne_dsp_scores_h2(att + (size_t)m * a->n, q + (size_t)m * a->q_stride, k, a, scale);
        heads = 2u;
        done = a->n - a->n % 5u;
    }
    if (done < a->n) {
        rvne_attn rest = *a;
        rest.n = a->n - done;
        for (h = m; h < m + heads; h++)
            rvne_dsp_scores_h1(att + (size_t)h * a->n + done, q + (size_t)h * a->q_stride,
                               k + (size_t)done * a->kv_stride, &rest, scale);
    }
    for (m += heads; m < a->g; m++)
        rvne_dsp_scores_h1(att + (size_t)m * a->n, q + (size_t)m * a->q_stride, k, a, scale);
}

#if defined(RVNE_DSP_AES3)
/* On the S3, rvne_wsum_f32_ae32 is wsum_f32_aes3.S: it hands the shapes
 * its 128-bit loads do not suit to this. */
void rvne_dsp_wsum_lx6(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale)
#else
void rvne_wsum_f32_ae32(float *out, const float *att, const float *v, const rvne_attn *a, const float *scale)
#endif
{
    uint32_t m = 0, heads = 0, done = 0, h;
    if (a->n == 0u) {
        rvne_wsum_f32_c(out, att, v, a, scale);
        return;
    }
    for (; m + 4u <= a->g; m += 4u)
        rvne_dsp_wsum_h4(out + (size_t)m * a->q_stride, att + (size_t)m * a->n, v, a, scale + m);
    if (a->g - m == 3u) {
        rvne_dsp_wsum_h3(out + (size_t)m * a->q_stride, att + (size_t)m * a->n, v, a, scale + m);
        heads = 3u;
        done = a->hd - a->hd % 4u;
    } else if (a->g - m == 2u) {
        rvne_dsp_wsum_h2(out + (size_t)m * a->q_stride, att + (size_t)m * a->n, v, a, scale + m);
        heads = 2u;
        done = a->hd - a->hd % 6u;
    }
    if (done < a->hd) {
        rvne_attn rest = *a;
        rest.hd = a->hd - done;
        for (h = m; h < m + heads; h++)
            rvne_dsp_wsum_h1(out + (size_t)h * a->q_stride + done, att + (size_t)h * a->n, v + done, &rest,
                             scale + h);
    }
    for (m += heads; m < a->g; m++)
        rvne_dsp_wsum_h1(out + (size_t)m * a->q_stride, att + (size_t)m * a->n, v, a, scale + m);
}

#if defined(RVNE_HAVE_MATVEC_I8_AE32)
/* The assembly writes every output its float estimate settles and stops at
 * one it cannot (about 1 in 500, and every exact half) with its exact sum:
 * that one is requantized exactly here, and the assembly goes on from the
 * next. */
void rvne_proj_i8_ae32(int8_t *y, const int16_t *x16, const uint32_t *prep, uint32_t n_in, uint32_t n_out)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(n_in);
    const float *scale = (const float *)(prep + (size_t)n_out * k + 2u);
    const int32_t *pairs = (const int32_t *)(scale + n_out);
    rvne_dsp_pj st;
    uint32_t c = 0;
    if (n_in == 0u || n_in > RVNE_I8_MAX_IN) {
        rvne_proj_i8_c(y, x16, prep, n_in, n_out);
        return;
    }
    while (c < n_out) {
        st.scale = scale + c;
        c += rvne_dsp_proj_i8(y + c, x16, prep + (size_t)c * k, &st, n_out - c, k / 2u);
        if (c < n_out) {
            y[c] = rvne_sat8(rvne_rq(st.sum, pairs[2 * c], pairs[2 * c + 1]));
            c++;
        }
    }
}
#endif

#if defined(RVNE_HAVE_MATVEC_I8_AE32)
/* The same for outputs [c0, c0 + cn) as int16. A range that ends before
 * n_out reads the next row ahead, which is there. */
void rvne_proj16_i8_ae32(int16_t *y16, const int16_t *x16, const uint32_t *prep, uint32_t n_in, uint32_t n_out,
                         uint32_t c0, uint32_t cn)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(n_in);
    const float *scale = (const float *)(prep + (size_t)n_out * k + 2u) + c0;
    const int32_t *pairs = (const int32_t *)(scale - c0 + n_out) + 2u * c0;
    const uint32_t *rows = prep + (size_t)c0 * k;
    rvne_dsp_pj st;
    uint32_t c = 0;
    if (n_in == 0u || n_in > RVNE_I8_MAX_IN) {
        rvne_proj16_i8_c(y16, x16, prep, n_in, n_out, c0, cn);
        return;
    }
    while (c < cn) {
        st.scale = scale + c;
        c += rvne_dsp_proj16_i8(y16 + c, x16, rows + (size_t)c * k, &st, cn - c, k / 2u);
        if (c < cn) {
            y16[c] = rvne_sat8(rvne_rq(st.sum, pairs[2 * c], pairs[2 * c + 1]));
            c++;
        }
    }
}
#endif

#if defined(RVNE_HAVE_MATVEC_I8_AE32)
void rvne_dots_i8_ae32(int32_t *y, const int16_t *x16, const uint32_t *rows, uint32_t n_in, uint32_t n_out)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(n_in);
    if (n_in == 0u || n_in > RVNE_I8_MAX_IN || n_out == 0u) {
        rvne_dots_i8_c(y, x16, rows, n_in, n_out);
        return;
    }
    rvne_dsp_dots_i8(y, x16, rows, n_out, k / 2u);
}
#endif

#if defined(RVNE_HAVE_MATVEC_I8_AE32)
/* The weighted sum's kernel on -p_j (np16) and the value rows, with the
 * scale negated (and the bias): its estimate is then of rq(sum p_j v_j),
 * the wanted one; an output it cannot settle is requantized from its sum
 * as the twin does. */
void rvne_wsum_i8_ae32(int16_t *o16, const int16_t *np16, const uint32_t *rows, uint32_t len, uint32_t hd,
                       const int32_t *rq_o, const rvne_i8_est *est)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(len);
    rvne_dsp_ws st;
    uint32_t d = 0;
    if (len == 0u || len > RVNE_I8_MAX_IN) {
        rvne_wsum_i8_c(o16, np16, rows, len, hd, rq_o, est);
        return;
    }
    st.nscale = -est->scale;
    st.bias = -est->bias; /* beside |sum| <= 128 (32768 + len) < 2^24: within int32 */
    while (d < hd) {
        d += rvne_dsp_wsum_i8(o16 + d, np16, rows + (size_t)d * k, &st, hd - d, k / 2u);
        if (d < hd) {
            /* the sum is -sum(p_j v_j): negated before rq as the twin does */
            const uint32_t sum = (uint32_t)st.sum - (uint32_t)st.bias;
            o16[d] = rvne_sat8(rvne_rq((int32_t)(0u - sum), rq_o[0], rq_o[1]));
            d++;
        }
    }
}
#endif

#if defined(RVNE_HAVE_SCORES_I8_AE32)
/* The assembly stops at a score its estimate cannot settle (requantized
 * here from the sum it leaves) and reports the largest it stored (Z =
 * score * 2^14): below 2^22 with a maximum >= 0, every score is exact or
 * (below -256) at least 255 under the maximum both ways, where the
 * softmax's table is flat (scores_i8_mac16.S); else the scores past
 * [-256, 256) are the out-of-range estimates (an exact one lies inside),
 * redone exactly here, and the maximum taken again. */
int32_t rvne_scores_i8_ae32(int32_t *sc, const int16_t *q16, const uint32_t *rows, uint32_t hd, uint32_t n,
                            const int32_t *rq_s, const rvne_i8_est *est)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(hd);
    rvne_dsp_sc st;
    int32_t mx = INT32_MIN;
    uint32_t j = 0;
    /* With a bias the sum must stay within int32: |acc| < 2^29 too. */
    if (hd == 0u || hd > RVNE_I8_MAX_IN || (est->bias != 0 && hd > (1u << 14)))
        return rvne_scores_i8_c(sc, q16, rows, hd, n, rq_s, est);
    st.scale = est->scale;
    st.zmax = INT32_MIN;
    st.bias = est->bias;
    while (j < n) {
        j += rvne_dsp_scores_i8(sc + j, q16, rows + (size_t)j * k, &st, n - j, k / 2u);
        if (j < n) {
            /* the assembly left the sum there, plus the bias: exact in uint32 */
            sc[j] = rvne_rq((int32_t)((uint32_t)sc[j] - (uint32_t)st.bias), rq_s[0], rq_s[1]);
            if (sc[j] > mx)
                mx = sc[j];
            j++;
        }
    }
    if (st.zmax < (1 << 22)) {
        /* An arithmetic shift: floor(zmax / 2^14), the largest score stored. */
        const int32_t zm = st.zmax >= 0 ? st.zmax >> 14 : -(int32_t)(((uint32_t)-st.zmax + 16383u) >> 14);
        if (st.zmax != INT32_MIN && zm > mx)
            mx = zm;
        if (mx >= 0)
            return mx;
    }
    mx = INT32_MIN;
    for (j = 0; j < n; j++) {
        if (sc[j] >= 256 || sc[j] < -256)
            sc[j] = rvne_rq(rvne_dot_i8_c(q16, rows + (size_t)j * k, hd), rq_s[0], rq_s[1]);
        if (sc[j] > mx)
            mx = sc[j];
    }
    return mx;
}
#endif
