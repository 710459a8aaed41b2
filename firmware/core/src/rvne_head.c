#include <math.h>
#include <string.h>
#include "rvne/fp16.h"
#include "rvne/head.h"
#include "rvne/kernels.h"
#include "rvne/profile.h"
#include "rvne/status.h"

/* Deliberate defects, one per test build of the virtual device
 * (firmware/tests/defects.mk): the verdict of docs/model.md must fail each
 * (tests/test_defects.py). Never defined in a real build. */
#if defined(RVNE_DEFECT_WINDOW_SHORT)
#define DEFECT_WINDOW(w) ((w) > 1u ? (w) - 1u : 1u) /* one position too few */
#else
#define DEFECT_WINDOW(w) (w)
#endif
#if defined(RVNE_DEFECT_LOGITS_FP16) || defined(RVNE_DEFECT_ACTS_FP16) || defined(RVNE_DEFECT_V_FP16_FULL)
/* Round to the nearest IEEE binary16 (ties to even, overflow to inf) and back. */
static float defect_fp16(float f)
{
    const float a = fabsf(f);
    int e;
    if (!(a < 65520.0f))
        return a != a ? f : copysignf(INFINITY, f);
    if (a < 0x1p-14f) /* subnormal: a fixed step of 2^-24 */
        return copysignf(rintf(a * 0x1p24f) * 0x1p-24f, f);
    (void)frexpf(a, &e);
    return copysignf(ldexpf(rintf(ldexpf(a, 11 - e)), e - 11), f);
}
#endif

/* ---- sizes ---------------------------------------------------------------- */

static int mul_sz(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a != 0u && b > (uint64_t)SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

static int add_sz(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a > (uint64_t)SIZE_MAX || b > (uint64_t)SIZE_MAX - a)
        return 0;
    *out = a + b;
    return 1;
}

/* The dimensions of h (and its dtype's state layout), the window aside. */
static void config_dims(rvne_config *c, const rvne_header *h)
{
    memset(c, 0, sizeof *c);
    c->int8 = rvne_is_int8(h);
    c->dim = h->input_dim;
    c->n_q_heads = h->n_q_heads;
    c->n_kv_heads = h->n_kv_heads;
    c->head_dim = h->head_dim;
    c->n_layers = h->n_layers;
    c->n_classes = h->n_classes;
}

/* Floats of run state: x, xb (D each), q (Q), att (HQ * (W + 1): a row of
 * scores and an inverse sum per query head), logits (C) and the two caches
 * (L * W * K each). k and v are not separate: they are written straight
 * into the ring slot, as llama2.c does. Every step is checked against
 * size_t, which is 32 bits on the MCU. */
static int state_floats(const rvne_config *c, uint32_t window, uint64_t *out)
{
    uint64_t q = (uint64_t)c->n_q_heads * c->head_dim;
    uint64_t k = (uint64_t)c->n_kv_heads * c->head_dim;
    uint64_t att = (uint64_t)c->n_q_heads * ((uint64_t)window + 1u);
    uint64_t n, cache;
    n = 2u * (uint64_t)c->dim;
    if (!add_sz(n, q, &n) || !add_sz(n, att, &n) || !add_sz(n, c->n_classes, &n))
        return 0;
    if (!mul_sz(c->n_layers, window, &cache) || !mul_sz(cache, k, &cache) || !mul_sz(cache, 2u, &cache))
        return 0;
    return add_sz(n, cache, out);
}

/* The int32 sums of the widest product: Q, D or C (K <= Q). */
static uint64_t acc_words(const rvne_config *c)
{
    uint64_t n = (uint64_t)c->n_q_heads * c->head_dim;
    if (c->dim > n)
        n = c->dim;
    return c->n_classes > n ? c->n_classes : n;
}

/* Bytes of an int8 run state, in carve_state_i8's order: logits (C
 * floats), the sums and the attention's scratch (G*W int32), q16 (an x16 of hd per query head: the Q projection writes them
 * all at once, and the heads' outputs then take their place as the
 * residual's x16 of Q), np16 (an x16 of W), the 16-bit rings (the
 * kernels' layout, rvne/kernels.h: L*K_heads*W*ROW_WORDS(hd) and
 * L*K*ROW_WORDS(W) words, each with 2 words a kernel may read past its
 * last row), then the int8 bytes: x (D), q and o (Q each), k and v (K
 * each). The rings take 2 bytes a value (and hd, W rounded up to 4), so
 * that MAC16 reads them as they are: about twice the int8 rings' bytes. */
static int state_bytes_i8(const rvne_config *c, uint32_t window, uint64_t *out)
{
    const uint64_t q = (uint64_t)c->n_q_heads * c->head_dim;
    const uint64_t k = (uint64_t)c->n_kv_heads * c->head_dim;
    const uint64_t kr = RVNE_I8_ROW_WORDS(c->head_dim), vr = RVNE_I8_ROW_WORDS(window);
    uint64_t words, bytes, ring;
    if (c->n_kv_heads == 0u) /* a header no loader passed: no GQA groups to size */
        return 0;
    if (!mul_sz(c->n_q_heads / c->n_kv_heads, window, &words) || !add_sz(words, acc_words(c), &words) ||
        !add_sz(words, c->n_classes + (uint64_t)c->n_q_heads * (kr + 1u) + vr + 1u + 4u, &words))
        return 0;
    if (!mul_sz((uint64_t)c->n_layers * c->n_kv_heads, window, &ring) || !mul_sz(ring, kr, &ring) ||
        !add_sz(words, ring, &words))
        return 0;
    if (!mul_sz((uint64_t)c->n_layers * k, vr, &ring) || !add_sz(words, ring, &words) || !mul_sz(words, 4u, &words))
        return 0;
    bytes = (uint64_t)c->dim + 2u * q + 2u * k; /* < 2^35 */
    return add_sz(words, bytes, out);
}

/* Bytes of arena the run state of c takes at this window, or an error. */
static int state_bytes(const rvne_config *c, uint32_t window, size_t *out)
{
    uint64_t floats, bytes;
    if (window == 0u)
        return RVNE_E_INVAL;
    if (c->int8) {
        if (window > RVNE_INT8_MAX_WINDOW || !state_bytes_i8(c, window, &bytes))
            return RVNE_E_TOO_LARGE;
        *out = (size_t)bytes;
        return RVNE_OK;
    }
    if (!state_floats(c, window, &floats) || !mul_sz(floats, sizeof(float), &bytes))
        return RVNE_E_TOO_LARGE;
    *out = (size_t)bytes;
    return RVNE_OK;
}

int rvne_head_arena_size(const rvne_header *h, uint32_t window, size_t *out)
{
    rvne_config c;
    if (h == 0 || out == 0)
        return RVNE_E_INVAL;
    config_dims(&c, h);
    return state_bytes(&c, window, out);
}

int rvne_head_trace_floats(const rvne_header *h, uint32_t window, size_t *out)
{
    uint64_t q, k, per_layer, n, bytes;
    if (h == 0 || out == 0)
        return RVNE_E_INVAL;
    q = (uint64_t)h->n_q_heads * h->head_dim;
    k = (uint64_t)h->n_kv_heads * h->head_dim;
    per_layer = 2u * q + 2u * k + h->input_dim;
    if (!rvne_is_int8(h))
        per_layer += (uint64_t)h->n_q_heads * window;   /* the scores */
    if (!mul_sz(per_layer, h->n_layers, &n) || !add_sz(n, h->n_classes, &n) || !mul_sz(n, sizeof(float), &bytes))
        return RVNE_E_TOO_LARGE;
    *out = (size_t)n;
    return RVNE_OK;
}

/* ---- weights -------------------------------------------------------------- */

static void matmul(const rvne_config *c, float *y, const float *x, const uint8_t *w, uint32_t n_in, uint32_t n_out)
{
#if defined(RVNE_DEFECT_ACTS_FP16)
    static float rounded[1u << 16]; /* the input rounded to FP16 before every product */
    uint32_t i;
    if (n_in <= (1u << 16)) {
        for (i = 0; i < n_in; i++)
            rounded[i] = defect_fp16(x[i]);
        x = rounded;
    }
#endif
    /* w was checked aligned for its element type (rule 15), so the casts
     * read the mapped blob in place. */
    if (c->fp16 && c->fp16_finite)
        rvne_matvec_f16_finite(y, x, (const uint16_t *)(const void *)w, n_in, n_out);
    else if (c->fp16)
        rvne_matvec_f16(y, x, (const uint16_t *)(const void *)w, n_in, n_out);
    else
        rvne_matvec_f32(y, x, (const float *)(const void *)w, n_in, n_out);
}

/* Wq, Wk, Wv, Wo of each layer, then Wc, from base, es bytes a weight.
 * weights_len matched the contract, so every offset is < 2^32. */
static void point_weights(rvne_weights *w, const rvne_config *c, const uint8_t *base, size_t es)
{
    const size_t dq = (size_t)c->dim * c->n_q_heads * c->head_dim * es;
    const size_t dk = (size_t)c->dim * c->n_kv_heads * c->head_dim * es;
    w->base = base;
    w->off_wk = dq;
    w->off_wv = dq + dk;
    w->off_wo = dq + 2u * dk;
    w->layer_bytes = 2u * dq + 2u * dk;
    w->wc = base + w->layer_bytes * c->n_layers;
    w->prep = 0;
    w->x16 = 0;
}

/* An int8 blob: P and T read in place, then the weights in the float
 * layout's order, a byte each. weights_len matched the contract. */
static void point_weights_i8(rvne_weights *w, const rvne_config *c, const rvne_header *h, const uint8_t *blob_w)
{
    uint32_t params = 0, tables = 0;
    (void)rvne_int8_sizes(h, &params, &tables); /* fits: the contract held */
    point_weights(w, c, blob_w + params + tables, 1u);
    w->rq = (const int32_t *)(const void *)(blob_w + 8);
    w->rq_layer_words = 2u * (size_t)rvne_int8_layer_pairs(h);
    w->exp_tab = (const uint16_t *)(const void *)(blob_w + params);
#if defined(RVNE_VARIANT_I8_EXP_COPY)
    {
        /* Test-only correct variant (firmware/tests/defects.mk): the tables
         * copied at load and read from the copy, which must change no bit. */
        static uint16_t copy[16u * RVNE_INT8_EXP_LEN];
        if (c->n_layers <= 16u) {
            memcpy(copy, w->exp_tab, (size_t)c->n_layers * RVNE_INT8_EXP_LEN * sizeof copy[0]);
            w->exp_tab = copy;
        }
    }
#endif
}

int rvne_head_expanded_size(const rvne_header *h, size_t *out)
{
    uint32_t len;
    if (h == 0 || out == 0)
        return RVNE_E_INVAL;
    if ((h->flags & RVNE_FLAG_FP16) == 0u) {
        *out = 0;
        return RVNE_OK;
    }
    if (rvne_expected_weights_len(h, &len) != RVNE_OK)
        return RVNE_E_CONTRACT;
    if ((uint64_t)len * 2u > (uint64_t)SIZE_MAX)
        return RVNE_E_TOO_LARGE;
    *out = (size_t)len * 2u;
    return RVNE_OK;
}

/* Words of one projection's prepared block (rvne_prep_i8_size, in 64 bits). */
static uint64_t prep_words(uint64_t n_in, uint64_t n_out)
{
    return n_out * (((n_in + 3u) / 4u) * 2u) + 2u + 3u * n_out;
}

/* The prepared block's words: x16 (the wider of D and Q, one word read
 * ahead), then per layer q, k, v, o and rq_s's and rq_o's rvne_i8_est, then the
 * classifier's rows (C of
 * ROW_WORDS(D) words, 2 zero words after: rvne_dots_i8's, no scales).
 * *layer gets one layer's words. */
static int prepared_words(const rvne_header *h, uint64_t *total, uint64_t *layer)
{
    const uint64_t d = h->input_dim, q = (uint64_t)h->n_q_heads * h->head_dim;
    const uint64_t k = (uint64_t)h->n_kv_heads * h->head_dim, widest = d > q ? d : q;
    uint64_t all;
    /* + the scores' and the weighted sum's rvne_i8_est (2 words each, the bias divided out at load) */
    *layer = prep_words(d, q) + 2u * prep_words(d, k) + prep_words(q, d) + 4u; /* < 2^40: dims are 16-bit */
    if (!mul_sz(*layer, h->n_layers, &all) || !add_sz(all, ((widest + 3u) / 4u) * 2u + 1u, total) ||
        !add_sz(*total, (uint64_t)h->n_classes * (((d + 3u) / 4u) * 2u) + 2u, total))
        return 0;
    return mul_sz(*total, 4u, &all);
}

int rvne_head_prepared_size(const rvne_header *h, size_t *out)
{
    uint64_t words, layer;
    if (h == 0 || out == 0)
        return RVNE_E_INVAL;
    if (!rvne_is_int8(h)) {
        *out = 0;
        return RVNE_OK;
    }
    if (!prepared_words(h, &words, &layer))
        return RVNE_E_TOO_LARGE;
    *out = (size_t)(words * 4u);
    return RVNE_OK;
}

int rvne_head_use_prepared_i8(rvne_head *t, void *prep)
{
    rvne_weights *w;
    const rvne_config *c;
    uint64_t words, layer;
    uint32_t q_dim, kv_dim, l, widest;
    const int32_t *rq;
    uint32_t *p;
    if (t == 0 || !t->config.int8 || ((uintptr_t)prep % 4u) != 0u)
        return RVNE_E_INVAL;
    w = &t->weights;
    c = &t->config;
    if (prep == 0) {
        w->prep = 0;
        w->x16 = 0;
        return RVNE_OK;
    }
    if ((const void *)w->x16 == prep)
        return RVNE_OK; /* prepared there already: the block is the caller's, kept */
    q_dim = c->n_q_heads * c->head_dim;
    kv_dim = c->n_kv_heads * c->head_dim;
    widest = c->dim > q_dim ? c->dim : q_dim;
    {
        rvne_header h;
        memset(&h, 0, sizeof h);
        h.input_dim = c->dim;
        h.n_q_heads = c->n_q_heads;
        h.n_kv_heads = c->n_kv_heads;
        h.head_dim = c->head_dim;
        h.n_layers = c->n_layers;
        h.n_classes = c->n_classes;
        h.flags = RVNE_FLAG_INT8;
        if (!prepared_words(&h, &words, &layer))
            return RVNE_E_TOO_LARGE;
    }
    w->x16 = (int16_t *)prep;
    p = (uint32_t *)prep + RVNE_I8_ROW_WORDS(widest) + 1u;
    w->prep = p;
    w->prep_layer_words = (size_t)layer;
    w->prep_off_k = (size_t)prep_words(c->dim, q_dim);
    w->prep_off_v = w->prep_off_k + (size_t)prep_words(c->dim, kv_dim);
    w->prep_off_o = w->prep_off_v + (size_t)prep_words(c->dim, kv_dim);
    w->prep_off_est = w->prep_off_o + (size_t)prep_words(q_dim, c->dim);
    for (l = 0; l < c->n_layers; l++, p += layer) {
        const int8_t *lw = (const int8_t *)(const void *)(w->base + (size_t)l * w->layer_bytes);
        rq = w->rq + (size_t)l * w->rq_layer_words;
        rvne_prep_i8_c(p, lw, rq, c->dim, q_dim);
        rq += 2u * (size_t)q_dim;
        rvne_prep_i8_c(p + w->prep_off_k, lw + w->off_wk, rq, c->dim, kv_dim);
        rq += 2u * (size_t)kv_dim;
        rvne_prep_i8_c(p + w->prep_off_v, lw + w->off_wv, rq, c->dim, kv_dim);
        rq += 2u * (size_t)kv_dim;
        rvne_i8_est_of((rvne_i8_est *)(void *)(p + w->prep_off_est), rq[0], rq[1]);
        rvne_i8_est_of((rvne_i8_est *)(void *)(p + w->prep_off_est) + 1, rq[2], rq[3]);
        rq += 4u; /* past rq_s and rq_o: rq_wo */
        rvne_prep_i8_c(p + w->prep_off_o, lw + w->off_wo, rq, q_dim, c->dim);
    }
    w->prep_wc = p;
    {
        const uint32_t kc = RVNE_I8_ROW_WORDS(c->dim);
        const int8_t *wc = (const int8_t *)(const void *)w->wc;
        uint32_t cl, i;
        for (cl = 0; cl < c->n_classes; cl++, p += kc) {
            int16_t *row = (int16_t *)(void *)p;
            for (i = 0; i < 2u * kc; i++)
                row[i] = i < c->dim ? wc[(size_t)i * c->n_classes + cl] : 0;
        }
        p[0] = p[1] = 0u;
    }
    return RVNE_OK;
}

int rvne_head_use_f32_weights(rvne_head *t, const float *w)
{
    if (t == 0 || t->blob_weights == 0 || !t->blob_fp16 || ((uintptr_t)w % sizeof(float)) != 0u)
        return RVNE_E_INVAL;
    t->config.fp16 = w == 0;
    if (w == 0)
        point_weights(&t->weights, &t->config, t->blob_weights, 2u);
    else
        point_weights(&t->weights, &t->config, (const uint8_t *)w, sizeof(float));
    return RVNE_OK;
}

/* ---- lifecycle ------------------------------------------------------------ */

/* The run state of t->config at this window, carved from an arena checked
 * to hold it (state_bytes), started reset. */
/* The int8 run state in state_bytes_i8's order. */
static void carve_state_i8(rvne_head *t, uint32_t window, void *arena)
{
    const rvne_config *c = &t->config;
    const size_t q_dim = (size_t)c->n_q_heads * c->head_dim, kv_dim = (size_t)c->n_kv_heads * c->head_dim;
    const size_t kr = RVNE_I8_ROW_WORDS(c->head_dim), vr = RVNE_I8_ROW_WORDS(window);
    rvne_run_state *s = &t->state;
    int32_t *wd;
    int8_t *b;

    memset(s, 0, sizeof *s);
    s->logits = (float *)arena;
    wd = (int32_t *)(void *)(s->logits + c->n_classes);
    s->acc = wd; wd += acc_words(c);
    s->att8 = wd; wd += (size_t)(c->n_q_heads / c->n_kv_heads) * window;
    s->q16 = (int16_t *)(void *)wd; wd += (size_t)c->n_q_heads * (kr + 1u);
    s->np16 = (int16_t *)(void *)wd; wd += vr + 1u;
    s->key16 = (uint32_t *)(void *)wd; wd += (size_t)c->n_layers * c->n_kv_heads * window * kr + 2u;
    s->val16 = (uint32_t *)(void *)wd; wd += (size_t)c->n_layers * kv_dim * vr + 2u;
    b = (int8_t *)(void *)wd;
    s->x8 = b; b += c->dim;
    s->q8 = b; b += q_dim;
    s->o8 = b; b += q_dim;
    s->k8 = b; b += kv_dim;
    s->v8 = b;
}

static void carve_state(rvne_head *t, uint32_t window, void *arena)
{
    const rvne_config *c = &t->config;
    const size_t kv_cache = (size_t)c->n_layers * window * c->n_kv_heads * c->head_dim;
    rvne_run_state *s = &t->state;
    float *f = (float *)arena;

    memset(s, 0, sizeof *s);
    t->config.window = window;
    if (c->int8) {
        carve_state_i8(t, window, arena);
        rvne_head_reset(t);
        return;
    }
    s->x = f; f += c->dim;
    s->xb = f; f += c->dim;
    s->q = f; f += (size_t)c->n_q_heads * c->head_dim;
    s->att = f; f += (size_t)c->n_q_heads * window;
    s->att_inv = f; f += c->n_q_heads;
    s->logits = f; f += c->n_classes;
    s->key_cache = f; f += kv_cache;
    s->value_cache = f;
    s->k = s->key_cache;
    s->v = s->value_cache;
    rvne_head_reset(t);
}

static int arena_holds(const void *arena, size_t arena_len, size_t need)
{
    return arena != 0 && arena_len >= need && ((uintptr_t)arena % sizeof(float)) == 0u;
}

int rvne_head_init(rvne_head *t, const rvne_blob *b, uint32_t window, void *arena, size_t arena_len)
{
    rvne_config c;
    size_t need, es;
    int rc;

    if (t == 0 || b == 0 || !b->hdr_valid || !b->crc_valid || b->weights == 0 || window == 0u)
        return RVNE_E_INVAL;
    /* The head must never run on weights whose length it did not check. */
    rc = rvne_blob_check_contract(&b->hdr);
    if (rc != RVNE_OK)
        return rc;
    es = rvne_elem_size(&b->hdr);
    if (((uintptr_t)b->weights % rvne_weights_align(&b->hdr)) != 0u)
        return RVNE_E_ALIGN;
    /* Nor on int8 parameters it did not check: a shift out of range is
     * undefined behaviour in rvne_rq, a sum past int32 too. */
    if (rvne_is_int8(&b->hdr)) {
        rc = rvne_blob_check_qparams(&b->hdr, b->weights, 0);
        if (rc != RVNE_OK)
            return rc;
        if (!rvne_int8_sums_fit(&b->hdr))
            return RVNE_E_TOO_LARGE;
    }
    config_dims(&c, &b->hdr);
    rc = state_bytes(&c, window, &need);
    if (rc != RVNE_OK)
        return rc;
    if (!arena_holds(arena, arena_len, need))
        return RVNE_E_ARENA;

    c.window = window;
    c.fp16 = (b->hdr.flags & RVNE_FLAG_FP16) != 0u;
    c.att_scale = 1.0f / sqrtf((float)c.head_dim);
#if defined(RVNE_DEFECT_SCALE_OFF)
    c.att_scale *= 1.001f; /* 1/sqrt(head_dim) off by 1e-3 */
#endif
    /* The one scan of the weights, here at load, picks the FP16 decode:
     * branch-free unless a weight is inf or NaN (docs/model.md, "FP16
     * weights"). rvne_head_set_window and rvne_head_use_f32_weights keep
     * its verdict. */
    c.fp16_finite = c.fp16 && rvne_fp16_all_finite((const uint16_t *)(const void *)b->weights, b->hdr.weights_len / 2u);

    if (c.int8)
        memcpy(&c.in_scale_inv, b->weights, sizeof c.in_scale_inv); /* f32 LE, as the float weights */
    t->config = c;
    if (c.int8)
        point_weights_i8(&t->weights, &t->config, &b->hdr, b->weights);
    else
        point_weights(&t->weights, &t->config, b->weights, es);
    t->blob_weights = b->weights;
    t->blob_fp16 = c.fp16;
    carve_state(t, window, arena);
    return RVNE_OK;
}

int rvne_head_set_window(rvne_head *t, uint32_t window, void *arena, size_t arena_len)
{
    size_t need;
    int rc;
    if (t == 0 || t->state.logits == 0)
        return RVNE_E_INVAL;
    rc = state_bytes(&t->config, window, &need);
    if (rc != RVNE_OK)
        return rc;
    if (!arena_holds(arena, arena_len, need))
        return RVNE_E_ARENA;
    carve_state(t, window, arena);
    return RVNE_OK;
}

void rvne_head_reset(rvne_head *t)
{
    if (t == 0 || t->state.logits == 0)
        return;
    t->state.n_cached = 0u;
#if !defined(RVNE_DEFECT_RESET_RING) /* the defect: the ring's write index stays */
    t->state.next = 0u;
#endif
    t->state.n_pushed = 0u;
    /* Logits before the first push read as zeros, never as stale values. */
    memset(t->state.logits, 0, (size_t)t->config.n_classes * sizeof(float));
}

void rvne_head_set_trace(rvne_head *t, float *buf)
{
    if (t != 0)
        t->state.trace = buf;
}

const float *rvne_head_logits(const rvne_head *t)
{
    return t ? t->state.logits : 0;
}

/* The trace points of one layer once its residual is added: q went in
 * before attend() overwrote it, and the scores while it ran; k and v are
 * still in their ring slot, the heads' outputs in q's place, x in x.
 * Returns where the next layer's go. */
static float *trace_layer(const rvne_head *t, float *tr, size_t q_dim, size_t kv_dim)
{
    const rvne_run_state *s = &t->state;
    tr += q_dim;
    memcpy(tr, s->k, kv_dim * sizeof *tr);
    tr += kv_dim;
    memcpy(tr, s->v, kv_dim * sizeof *tr);
    tr += kv_dim + (size_t)t->config.n_q_heads * t->config.window;
    memcpy(tr, s->q, q_dim * sizeof *tr);
    tr += q_dim;
    memcpy(tr, s->x, (size_t)t->config.dim * sizeof *tr);
    return tr + t->config.dim;
}

/* ---- forward -------------------------------------------------------------- */

/* Attention of one layer over the n positions in ring slots [0, n), one kv
 * head and the query heads sharing it at a time: the kernels load each key
 * and value once for all of them. Each query head's output overwrites its
 * own q slice: q_h is dead once its scores are taken, and the D-sized xb
 * stays free for the Wo product. The softmax divides once per head: the
 * weighted sum of the exponentials is scaled by 1/sum at the end
 * (docs/model.md covers this order). */
/* The scaled scores of query head h over ring slots [0, n), as the trace
 * holds them: W a head, the oldest position first (slot 0 until the ring
 * is full, then the one after this push's), 0 past the n attended. */
static void trace_scores(const rvne_head *t, float *sc, uint32_t h, const float *att, uint32_t n)
{
    const uint32_t w = t->config.window, ring = DEFECT_WINDOW(w);
    const uint32_t first = n == ring ? (t->state.next + 1u == ring ? 0u : t->state.next + 1u) : 0u;
    uint32_t i;
    sc += (size_t)h * w;
    for (i = 0; i < n; i++)
        sc[i] = att[first + i < n ? first + i : first + i - n];
    for (; i < w; i++)
        sc[i] = 0.0f;
}

static void attend(rvne_head *t, const float *kc, const float *vc, uint32_t n, float *sc)
{
    const rvne_config *c = &t->config;
    rvne_run_state *s = &t->state;
    const uint32_t hd = c->head_dim;
    rvne_attn a;
    uint32_t g, m;

    a.hd = hd;
    a.n = n;
    a.g = c->n_q_heads / c->n_kv_heads;
    a.kv_stride = c->n_kv_heads * hd;
    for (g = 0; g < c->n_kv_heads; g++) {
#if defined(RVNE_DEFECT_KV_MAP)
        /* interleaved, not grouped: heads g, g + n_kv, ... */
        float *qg = s->q + (size_t)g * hd;
        a.q_stride = c->n_kv_heads * hd;
#else
        float *qg = s->q + (size_t)g * a.g * hd;
        a.q_stride = hd;
#endif
        RVNE_PHASE(SCORES);
        rvne_scores_f32(s->att, qg, kc + (size_t)g * hd, &a, c->att_scale);
        if (sc) {
            for (m = 0; m < a.g; m++)
#if defined(RVNE_DEFECT_KV_MAP)
                trace_scores(t, sc, g + m * c->n_kv_heads, s->att + (size_t)m * n, n);
#else
                trace_scores(t, sc, g * a.g + m, s->att + (size_t)m * n, n);
#endif
        }
        RVNE_PHASE(SOFTMAX);
        for (m = 0; m < a.g; m++)
            s->att_inv[m] = 1.0f / rvne_softmax_exp_f32(s->att + (size_t)m * n, n);
        RVNE_PHASE(WSUM);
        rvne_wsum_f32(qg, s->att, vc + (size_t)g * hd, &a, s->att_inv);
    }
}

/* ---- forward, int8 (docs/model.md, integer model) ------------------------ */

/* The input quantisation: one binary32 multiply, then to the nearest
 * integer with ties away from zero, saturated; NaN is 0. */
static int8_t quantize(float f, float scale_inv)
{
    const float p = f * scale_inv;
    int32_t i;
    float frac;
    if (p != p)
        return 0;
    if (p >= 127.0f)
        return 127;
    if (p <= -128.0f)
        return -128;
    i = (int32_t)p;             /* toward zero */
    frac = p - (float)i;        /* exact: the bits of p below its units */
    if (frac >= 0.5f)
        i++;
    else if (frac <= -0.5f)
        i--;
    return (int8_t)i;
}

static void ints_to_floats8(float *dst, const int8_t *src, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        dst[i] = (float)src[i];
}

/* The integer trace points of one layer, in the float layout (rvne/head.h). */
static float *trace_layer_i8(const rvne_head *t, float *tr, size_t q_dim, size_t kv_dim)
{
    const rvne_run_state *s = &t->state;
    ints_to_floats8(tr, s->q8, q_dim);
    tr += q_dim;
    ints_to_floats8(tr, s->k8, kv_dim);
    tr += kv_dim;
    ints_to_floats8(tr, s->v8, kv_dim);
    tr += kv_dim;
    ints_to_floats8(tr, s->o8, q_dim);
    tr += q_dim;
    ints_to_floats8(tr, s->x8, t->config.dim);
    return tr + t->config.dim;
}

/* Layer l's key row of kv head g at ring slot `slot` (the layout of
 * state_bytes_i8). Its padding past hd multiplies q16's zeros: any value. */
static int16_t *key_row_i8(const rvne_head *t, uint32_t l, uint32_t g, uint32_t slot)
{
    const rvne_config *c = &t->config;
    return (int16_t *)(void *)(t->state.key16 + (((size_t)l * c->n_kv_heads + g) * c->window + slot) *
                                                    RVNE_I8_ROW_WORDS(c->head_dim));
}

/* The values of an x16 past its n: zeros to 2*ROW_WORDS(n), then x16's
 * word 0 again (rvne_x16_i8's tail, for a vector written in place). */
static void x16_tail(int16_t *x16, uint32_t n)
{
    const uint32_t end = 2u * RVNE_I8_ROW_WORDS(n);
    uint32_t i;
    for (i = n; i < end; i++)
        x16[i] = 0;
    x16[end] = x16[0];
    x16[end + 1u] = x16[1];
}

static void narrow16(int8_t *y, const int16_t *x16, uint32_t n)
{
    uint32_t i;
    for (i = 0; i < n; i++)
        y[i] = (int8_t)x16[i];
}

/* This position's k8 (unless the projection wrote the key rows itself) and
 * v8 into layer l's 16-bit rings at slot `slot`. */
static void append_i8(rvne_head *t, uint32_t l, uint32_t slot, int keys)
{
    const rvne_config *c = &t->config;
    rvne_run_state *s = &t->state;
    const uint32_t hd = c->head_dim, vr = RVNE_I8_ROW_WORDS(c->window);
    const uint32_t kv_dim = c->n_kv_heads * hd;
    int16_t *val = (int16_t *)(void *)(s->val16 + (size_t)l * kv_dim * vr) + slot;
    uint32_t g, d, c2;
    for (g = 0; keys && g < c->n_kv_heads; g++) {
        int16_t *row = key_row_i8(t, l, g, slot);
        for (d = 0; d < hd; d++)
            row[d] = s->k8[g * hd + d];
    }
    for (c2 = 0; c2 < kv_dim; c2++, val += 2u * vr)
        *val = s->v8[c2];
}

/* One layer's attention over ring slots [0, n), a query head at a time
 * from its q16 (head h's at q16 + h*(2*ROW_WORDS(hd) + 2)): scores, the
 * softmax's -p_j, the weighted sum, into the heads' outputs as one x16 of
 * Q in q16's place (head h's from value h*hd: never past its own q16's
 * end, so no query head is overwritten before its scores are taken).
 * rq points at the layer's rq_s pair (rq_o follows); est at rq_s's and
 * rq_o's rvne_i8_est, prepared at load, or NULL (then made here). */
static void attend_i8(rvne_head *t, uint32_t l, uint32_t n, const int32_t *rq, const uint16_t *exp_tab,
                      const rvne_i8_est *est)
{
    const rvne_config *c = &t->config;
    rvne_run_state *s = &t->state;
    const uint32_t hd = c->head_dim, kr = RVNE_I8_ROW_WORDS(hd), vr = RVNE_I8_ROW_WORDS(c->window);
    const uint32_t group = c->n_q_heads / c->n_kv_heads;
    rvne_i8_est made[2];
    uint32_t h;
    int32_t mx;

    if (est == 0) {
        rvne_i8_est_of(&made[0], rq[0], rq[1]);
        rvne_i8_est_of(&made[1], rq[2], rq[3]);
        est = made;
    }
    for (h = 0; h < c->n_q_heads; h++) {
        const uint32_t g = h / group;
        const uint32_t *keys = s->key16 + ((size_t)l * c->n_kv_heads + g) * c->window * kr;
        const uint32_t *vals = s->val16 + ((size_t)l * c->n_kv_heads * hd + (size_t)g * hd) * vr;
        RVNE_PHASE(SCORES);
        mx = rvne_scores_i8(s->att8, s->q16 + (size_t)h * (2u * kr + 2u), keys, hd, n, rq, est);
        RVNE_PHASE(SOFTMAX);
        rvne_softmax_i8(s->np16, s->att8, n, c->window, exp_tab, mx);
        RVNE_PHASE(WSUM);
        rvne_wsum_i8(s->q16 + (size_t)h * hd, s->np16, vals, c->window, hd, rq + 2, est + 1);
    }
    x16_tail(s->q16, c->n_q_heads * hd);
}

/* The residual from prepared Wo: rvne_proj_i8 gives sat8(rq(acc)), which is
 * rq(acc) itself strictly inside (-128, 127); at a bound the sum with
 * rq(x, rq_x) needs rq(acc)'s own value, so that output's dot product is
 * taken again exactly (rare: a residual step that large saturates x almost
 * always). y: n_out bytes of scratch. */
static void residual_prepared(int8_t *x, int8_t *y, const int16_t *x16, const uint32_t *prep, const int32_t *rq_x,
                              uint32_t n_in, uint32_t n_out)
{
    const uint32_t k = RVNE_I8_ROW_WORDS(n_in);
    const int32_t *pairs = (const int32_t *)(const void *)(prep + (size_t)n_out * k + 2u + n_out);
    uint32_t c;
    rvne_proj_i8(y, x16, prep, n_in, n_out);
    for (c = 0; c < n_out; c++) {
        int32_t r = y[c];
        if (r == 127 || r == -128) {
            r = rvne_rq(rvne_dot_i8_c(x16, prep + (size_t)c * k, n_in), pairs[2u * c], pairs[2u * c + 1u]);
            r = r > RVNE_I8_RESIDUAL_CLAMP ? RVNE_I8_RESIDUAL_CLAMP : r < -RVNE_I8_RESIDUAL_CLAMP ? -RVNE_I8_RESIDUAL_CLAMP : r;
        }
        x[c] = rvne_sat8(rvne_rq(x[c], rq_x[0], rq_x[1]) + r);
    }
}

/* Never inlined: inside rvne_head_push its registers and frame would
 * weigh on the FP32 path, whose instructions are counted (tools/bench_icount.py). */
static __attribute__((noinline)) int push_i8(rvne_head *t, const float *frame)
{
    const rvne_config *c = &t->config;
    const rvne_weights *w = &t->weights;
    rvne_run_state *s = &t->state;
    const uint32_t q_dim = c->n_q_heads * c->head_dim, kv_dim = c->n_kv_heads * c->head_dim;
    /* The layer's pairs: rq_q, rq_k, rq_v, rq_s, rq_o, rq_wo, rq_x (int32 words). */
    const size_t at_k = 2u * (size_t)q_dim, at_v = at_k + 2u * (size_t)kv_dim, at_s = at_v + 2u * (size_t)kv_dim;
    const size_t at_wo = at_s + 4u, at_x = at_wo + 2u * (size_t)c->dim;
    const uint32_t n = s->n_cached < DEFECT_WINDOW(c->window) ? s->n_cached + 1u : DEFECT_WINDOW(c->window);
    const uint32_t hd = c->head_dim, qstride = 2u * RVNE_I8_ROW_WORDS(hd) + 2u;
    float *tr = s->trace;
    uint32_t l, i, h;

    for (i = 0; i < c->dim; i++)
        s->x8[i] = quantize(frame[i], c->in_scale_inv);
    for (l = 0; l < c->n_layers; l++) {
        const int8_t *lw = (const int8_t *)(const void *)(w->base + (size_t)l * w->layer_bytes);
        const int32_t *rq = w->rq + (size_t)l * w->rq_layer_words;
        const uint32_t *lp = w->prep ? w->prep + (size_t)l * w->prep_layer_words : 0;
        RVNE_PHASE(PROJ);
        if (lp) {
            /* x widened once, read by all three; q and k written as int16
             * where the attention reads them (each query head's q16, each
             * kv head's ring row), v as int8 for its strided ring. */
            rvne_x16_i8(w->x16, s->x8, c->dim);
            for (h = 0; h < c->n_q_heads; h++) {
                rvne_proj16_i8(s->q16 + (size_t)h * qstride, w->x16, lp, c->dim, q_dim, h * hd, hd);
                x16_tail(s->q16 + (size_t)h * qstride, hd);
            }
            for (h = 0; h < c->n_kv_heads; h++)
                rvne_proj16_i8(key_row_i8(t, l, h, s->next), w->x16, lp + w->prep_off_k, c->dim, kv_dim, h * hd, hd);
            rvne_proj_i8(s->v8, w->x16, lp + w->prep_off_v, c->dim, kv_dim);
            if (tr) {
                for (h = 0; h < c->n_q_heads; h++)
                    narrow16(s->q8 + (size_t)h * hd, s->q16 + (size_t)h * qstride, hd);
                for (h = 0; h < c->n_kv_heads; h++)
                    narrow16(s->k8 + (size_t)h * hd, key_row_i8(t, l, h, s->next), hd);
            }
        } else {
            rvne_matvec_i8(s->acc, s->x8, lw, c->dim, q_dim);
            rvne_requant_i8(s->q8, s->acc, rq, q_dim);
            rvne_matvec_i8(s->acc, s->x8, lw + w->off_wk, c->dim, kv_dim);
            rvne_requant_i8(s->k8, s->acc, rq + at_k, kv_dim);
            rvne_matvec_i8(s->acc, s->x8, lw + w->off_wv, c->dim, kv_dim);
            rvne_requant_i8(s->v8, s->acc, rq + at_v, kv_dim);
            for (h = 0; h < c->n_q_heads; h++)
                rvne_x16_i8(s->q16 + (size_t)h * qstride, s->q8 + (size_t)h * hd, hd);
        }
        RVNE_PHASE(REST);
        append_i8(t, l, s->next, lp == 0);
        attend_i8(t, l, n, rq + at_s, w->exp_tab + (size_t)l * RVNE_INT8_EXP_LEN,
                  lp ? (const rvne_i8_est *)(const void *)(lp + w->prep_off_est) : 0);
        RVNE_PHASE(PROJ);
        if (lp == 0 || tr)
            narrow16(s->o8, s->q16, q_dim);
        if (lp) {
            residual_prepared(s->x8, (int8_t *)(void *)s->acc, s->q16, lp + w->prep_off_o, rq + at_x, q_dim, c->dim);
        } else {
            rvne_matvec_i8(s->acc, s->o8, lw + w->off_wo, q_dim, c->dim);
            RVNE_PHASE(REST);
            rvne_residual_i8(s->x8, s->acc, rq + at_wo, rq + at_x, c->dim);
        }
        if (tr)
            tr = trace_layer_i8(t, tr, q_dim, kv_dim);
    }
    RVNE_PHASE(CLASSIFIER);
    if (w->prep) {
        rvne_x16_i8(w->x16, s->x8, c->dim);
        rvne_dots_i8(s->acc, w->x16, w->prep_wc, c->dim, c->n_classes);
    } else
        rvne_matvec_i8(s->acc, s->x8, (const int8_t *)(const void *)w->wc, c->dim, c->n_classes);
    RVNE_PHASE(REST);
    /* Exact: |sum| < 2^24 (D <= 1024 products of at most 128*127). */
    for (i = 0; i < c->n_classes; i++)
        s->logits[i] = (float)s->acc[i];
    if (tr)
        memcpy(tr, s->logits, (size_t)c->n_classes * sizeof *tr);

    s->n_cached = n;
    s->next = s->next + 1u == DEFECT_WINDOW(c->window) ? 0u : s->next + 1u;
    s->n_pushed++;
    return RVNE_OK;
}

/* ---- forward, dispatch ---------------------------------------------------- */

int rvne_head_push(rvne_head *t, const float *frame)
{
    const rvne_config *c;
    const rvne_weights *w;
    rvne_run_state *s;
    uint32_t l, i, n;
    size_t kv_dim, q_dim;
    float *tr;

    if (t == 0 || frame == 0 || t->state.logits == 0)
        return RVNE_E_INVAL;
    if (t->config.int8)
        return push_i8(t, frame);
    c = &t->config;
    w = &t->weights;
    s = &t->state;
    kv_dim = (size_t)c->n_kv_heads * c->head_dim;
    q_dim = (size_t)c->n_q_heads * c->head_dim;
    /* Positions attended this step, the new one included. */
    n = s->n_cached < DEFECT_WINDOW(c->window) ? s->n_cached + 1u : DEFECT_WINDOW(c->window);

    tr = s->trace;
    memcpy(s->x, frame, (size_t)c->dim * sizeof *s->x);
    for (l = 0; l < c->n_layers; l++) {
        const uint8_t *lw = w->base + (size_t)l * w->layer_bytes;
        const size_t layer_off = (size_t)l * c->window * kv_dim;
        /* k, v land in the ring slot of this position: the oldest one once
         * the ring is full, which is exactly the position leaving the window. */
        s->k = s->key_cache + layer_off + (size_t)s->next * kv_dim;
        s->v = s->value_cache + layer_off + (size_t)s->next * kv_dim;
        RVNE_PHASE(PROJ);
        matmul(c, s->q, s->x, lw, c->dim, (uint32_t)q_dim);
        matmul(c, s->k, s->x, lw + w->off_wk, c->dim, (uint32_t)kv_dim);
        matmul(c, s->v, s->x, lw + w->off_wv, c->dim, (uint32_t)kv_dim);
#if defined(RVNE_DEFECT_V_FP16_FULL)
        if (s->n_cached == DEFECT_WINDOW(c->window)) {     /* once the ring is full, v is stored in FP16 */
            for (i = 0; i < kv_dim; i++)
                s->v[i] = defect_fp16(s->v[i]);
        }
#endif
        if (tr)
            memcpy(tr, s->q, q_dim * sizeof *tr);
        attend(t, s->key_cache + layer_off, s->value_cache + layer_off, n, tr ? tr + q_dim + 2u * kv_dim : 0);
        RVNE_PHASE(PROJ);
        matmul(c, s->xb, s->q, lw + w->off_wo, (uint32_t)q_dim, c->dim);
        RVNE_PHASE(REST);
#if defined(RVNE_DEFECT_NO_RESIDUAL)
        if (l == 0u) {          /* layer 0 forgets its residual */
            memcpy(s->x, s->xb, (size_t)c->dim * sizeof *s->x);
            if (tr)
                tr = trace_layer(t, tr, q_dim, kv_dim);
            continue;
        }
#endif
        for (i = 0; i < c->dim; i++)
            s->x[i] += s->xb[i];
        if (tr)
            tr = trace_layer(t, tr, q_dim, kv_dim);
    }
    RVNE_PHASE(CLASSIFIER);
    matmul(c, s->logits, s->x, w->wc, c->dim, c->n_classes);
#if defined(RVNE_DEFECT_LOGITS_FP16)
    for (i = 0; i < c->n_classes; i++)
        s->logits[i] = defect_fp16(s->logits[i]);
#endif
    RVNE_PHASE(REST);
    if (tr)
        memcpy(tr, s->logits, (size_t)c->n_classes * sizeof *tr);

    s->n_cached = n;
#if defined(RVNE_DEFECT_STALE_SLOT)
    /* Wraps to slot 1: slot 0 keeps its first position for good. */
    s->next = (s->next + 1u >= c->window) ? (c->window > 1u ? 1u : 0u) : s->next + 1u;
#else
    s->next = (s->next + 1u == DEFECT_WINDOW(c->window)) ? 0u : s->next + 1u;
#endif
    s->n_pushed++;
    return RVNE_OK;
}
