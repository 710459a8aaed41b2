#include <string.h>
#include "rvne/blob.h"
#include "rvne/status.h"

/* Little-endian field reads from bytes: the buffer may sit at any address
 * and the host may be big-endian, so no struct overlay. */
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* a*b into *out if it stays <= limit; 0 when it would not. Division keeps it
 * exact for any operands, so no intermediate can wrap. */
static int mul_le(uint64_t a, uint64_t b, uint64_t limit, uint64_t *out)
{
    if (a != 0u && b > limit / a)
        return 0;
    *out = a * b;
    return 1;
}

static int add_le(uint64_t a, uint64_t b, uint64_t limit, uint64_t *out)
{
    if (a > limit || b > limit - a)
        return 0;
    *out = a + b;
    return 1;
}

/* P and T of an int8 model (docs/format.md), each held to 32 bits. */
static int int8_sizes(const rvne_header *h, uint64_t *params, uint64_t *tables)
{
    const uint64_t lim = 0xFFFFFFFFu;
    /* Q + 2K + D + 3 < 2^34: exact in 64 bits. */
    const uint64_t pairs = ((uint64_t)h->n_q_heads + 2u * (uint64_t)h->n_kv_heads) * h->head_dim +
                           (uint64_t)h->input_dim + 3u;
    uint64_t words;
    if (!mul_le(2u * (uint64_t)h->n_layers, pairs, lim, &words) || !add_le(words, 2u + (uint64_t)h->n_classes, lim, &words) ||
        !mul_le(words, 4u, lim, params))
        return 0;
    *tables = 2u * (uint64_t)RVNE_INT8_EXP_LEN * h->n_layers; /* < 2^26 */
    return 1;
}

int rvne_int8_sizes(const rvne_header *h, uint32_t *params, uint32_t *tables)
{
    uint64_t p, t;
    if (h == 0 || params == 0 || tables == 0)
        return RVNE_E_INVAL;
    if (!int8_sizes(h, &p, &t))
        return RVNE_E_TOO_LARGE;
    *params = (uint32_t)p;
    *tables = (uint32_t)t;
    return RVNE_OK;
}

int rvne_expected_weights_len(const rvne_header *h, uint32_t *out)
{
    /* Every partial result is held to 32 bits: a blob's weights_len is a u32,
     * so a model that needs more can never match and must not wrap into a
     * small number that does. */
    const uint64_t lim = 0xFFFFFFFFu;
    uint64_t q, k, dq, dk, per_layer, layers, dc, elems, bytes;
    if (h == 0 || out == 0)
        return RVNE_E_INVAL;
    q = (uint64_t)h->n_q_heads * h->head_dim; /* <= 2^32, exact in 64 bits */
    k = (uint64_t)h->n_kv_heads * h->head_dim;
    if (!mul_le(h->input_dim, q, lim, &dq) || !mul_le(h->input_dim, k, lim, &dk))
        return RVNE_E_TOO_LARGE;
    if (!mul_le(2u, dq, lim, &dq) || !mul_le(2u, dk, lim, &dk) || !add_le(dq, dk, lim, &per_layer))
        return RVNE_E_TOO_LARGE;
    if (!mul_le(h->n_layers, per_layer, lim, &layers) || !mul_le(h->input_dim, h->n_classes, lim, &dc))
        return RVNE_E_TOO_LARGE;
    if (!add_le(layers, dc, lim, &elems) || !mul_le(elems, rvne_elem_size(h), lim, &bytes))
        return RVNE_E_TOO_LARGE;
    if (rvne_is_int8(h)) {
        uint64_t params, tables;
        if (!int8_sizes(h, &params, &tables) || !add_le(bytes, params, lim, &bytes) ||
            !add_le(bytes, tables, lim, &bytes))
            return RVNE_E_TOO_LARGE;
    }
    *out = (uint32_t)bytes;
    return RVNE_OK;
}

int rvne_blob_check_contract(const rvne_header *h)
{
    uint32_t expected;
    /* A model too big for 32 bits can never equal a u32 length. */
    if (h == 0 || rvne_expected_weights_len(h, &expected) != RVNE_OK || expected != h->weights_len)
        return RVNE_E_CONTRACT;
    if (rvne_is_int8(h) && h->input_dim > RVNE_INT8_MAX_DIM)
        return RVNE_E_CONTRACT;
    return RVNE_OK;
}

/* ---- int8 parameter rules ----------------------------------------------------- */

static int qfail(rvne_qparam_fault *why, const char *param, uint32_t layer, uint32_t index, uint32_t raw)
{
    if (why != 0) {
        why->param = param;
        why->layer = layer;
        why->index = index;
        why->raw = raw;
    }
    return RVNE_E_QPARAM;
}

/* A scale's bits: finite, > 0 and within [2^-40, 2^40]. Positive floats
 * order as their bits do, so the range is two integer compares (no FPU on
 * some cores); NaN, inf, zero, negatives and subnormals all fall outside. */
static int scale_ok(uint32_t bits)
{
    return bits >= 0x2B800000u && bits <= 0x53800000u; /* 2^-40, 2^40 */
}

/* |a*b - 1| <= 1e-3 for two scales that passed scale_ok, exactly: the
 * product of two 24-bit significands is exact in 48 bits, and the bound is
 * the double nearest 1e-3, T * 2^-62 (no multiple of 2^-48 lies between it
 * and 1e-3 itself, so either reading decides alike). No float arithmetic:
 * the cores have no double unit. */
static int product_near_one(uint32_t a, uint32_t b)
{
    const uint64_t t = 0x10624DD2F1A9FCull;   /* 1e-3 = t * 2^-62 */
    const uint64_t ma = (a & 0x7FFFFFu) | 0x800000u, mb = (b & 0x7FFFFFu) | 0x800000u;
    /* a*b = ma*mb * 2^e, ma*mb in [2^46, 2^48): near 1 only for e in [-48, -46]. */
    const int e = (int)((a >> 23) & 0xFFu) + (int)((b >> 23) & 0xFFu) - 2 * (127 + 23);
    uint64_t prod, one, diff;
    if (e < -48 || e > -46)
        return 0;
    prod = ma * mb;
    one = (uint64_t)1u << (unsigned)(-e);
    diff = prod > one ? prod - one : one - prod; /* < 2^48 */
    /* |diff| * 2^e <= t * 2^-62  <=>  diff << (62 + e) <= t; 62 + e <= 16. */
    return (diff << (unsigned)(62 + e)) <= t;
}

/* The requantisation blocks of one layer in storage order, with their names. */
static int check_pairs(const uint8_t *p, uint32_t n, uint32_t layer, const char *mult_name, const char *shift_name,
                       rvne_qparam_fault *why)
{
    uint32_t i;
    for (i = 0; i < n; i++, p += 8) {
        const uint32_t m = rd32(p), s = rd32(p + 4);
        /* mult in [2^30, 2^31 - 1] as an i32: its bit 31 clear, bit 30 set. */
        if (m < 0x40000000u || m > 0x7FFFFFFFu)
            return qfail(why, mult_name, layer, i, m);
        if (s < 16u || s > 62u) /* a negative i32 is a huge u32: refused too */
            return qfail(why, shift_name, layer, i, s);
    }
    return RVNE_OK;
}

int rvne_blob_check_qparams(const rvne_header *h, const uint8_t *w, rvne_qparam_fault *why)
{
    uint32_t params, tables, q, k, d, c, l, i, n_weights;
    const uint8_t *p;
    int rc;
    if (h == 0 || w == 0)
        return RVNE_E_INVAL;
    if (!rvne_is_int8(h))
        return RVNE_OK;
    if (rvne_blob_check_contract(h) != RVNE_OK || rvne_int8_sizes(h, &params, &tables) != RVNE_OK)
        return RVNE_E_CONTRACT; /* never reads past a length it did not check */
    q = (uint32_t)h->n_q_heads * h->head_dim;
    k = (uint32_t)h->n_kv_heads * h->head_dim;
    d = h->input_dim;
    c = h->n_classes;

    /* The scales: in_scale_inv, x_scale, logit_scale[c], then their product. */
    if (!scale_ok(rd32(w)))
        return qfail(why, "in_scale_inv", 0u, 0u, rd32(w));
    if (!scale_ok(rd32(w + 4)))
        return qfail(why, "x_scale", 0u, 0u, rd32(w + 4));
    p = w + params - 4u * c;
    for (i = 0; i < c; i++)
        if (!scale_ok(rd32(p + 4u * i)))
            return qfail(why, "logit_scale", 0u, i, rd32(p + 4u * i));
    if (!product_near_one(rd32(w), rd32(w + 4)))
        return qfail(why, "scale_product", 0u, 0u, rd32(w));

    /* Every mult and shift, layer by layer in storage order. */
    p = w + 8;
    for (l = 0; l < h->n_layers; l++) {
        if ((rc = check_pairs(p, q, l, "rq_q.mult", "rq_q.shift", why)) != RVNE_OK)
            return rc;
        p += 8u * q;
        if ((rc = check_pairs(p, k, l, "rq_k.mult", "rq_k.shift", why)) != RVNE_OK)
            return rc;
        p += 8u * k;
        if ((rc = check_pairs(p, k, l, "rq_v.mult", "rq_v.shift", why)) != RVNE_OK)
            return rc;
        p += 8u * k;
        if ((rc = check_pairs(p, 1u, l, "rq_s.mult", "rq_s.shift", why)) != RVNE_OK)
            return rc;
        p += 8u;
        if ((rc = check_pairs(p, 1u, l, "rq_o.mult", "rq_o.shift", why)) != RVNE_OK)
            return rc;
        p += 8u;
        if ((rc = check_pairs(p, d, l, "rq_wo.mult", "rq_wo.shift", why)) != RVNE_OK)
            return rc;
        p += 8u * d;
        if ((rc = check_pairs(p, 1u, l, "rq_x.mult", "rq_x.shift", why)) != RVNE_OK)
            return rc;
        p += 8u;
    }

    /* The exp tables: EXP[0] in [1, 32768], never increasing. */
    p = w + params;
    for (l = 0; l < h->n_layers; l++, p += 2u * RVNE_INT8_EXP_LEN) {
        if (rd16(p) < 1u || rd16(p) > 32768u)
            return qfail(why, "exp", l, 0u, rd16(p));
        for (i = 1; i < RVNE_INT8_EXP_LEN; i++)
            if (rd16(p + 2u * i) > rd16(p + 2u * (i - 1u)))
                return qfail(why, "exp", l, i, rd16(p + 2u * i));
    }

    /* The weights are symmetric: -128 has no positive twin. */
    p = w + params + tables;
    n_weights = h->weights_len - params - tables;
    for (i = 0; i < n_weights; i++)
        if (p[i] == 0x80u)
            return qfail(why, "weight", 0u, i, 0x80u);
    return RVNE_OK;
}

int rvne_blob_check_container(const rvne_blob *b)
{
    const rvne_header *h;
    if (b == 0 || !b->hdr_valid)
        return RVNE_E_INVAL;
    h = &b->hdr;
    if (h->input_dim == 0u || h->n_q_heads == 0u || h->n_kv_heads == 0u || h->head_dim == 0u)
        return RVNE_E_ZERO_DIM; /* rule 9 */
    if (h->n_q_heads % h->n_kv_heads != 0u)
        return RVNE_E_GQA; /* rule 10 */
    if (h->n_layers < 1u)
        return RVNE_E_NO_LAYERS; /* rule 11 */
    if (h->n_classes < 2u)
        return RVNE_E_FEW_CLASSES; /* rule 12 */
    if (h->weights_len % rvne_elem_size(h) != 0u)
        return RVNE_E_ELEM_SIZE; /* rule 13 */
    return RVNE_OK;
}

/* Rule 16 for the dims; the window is checked where it is chosen. */
static int within_limits(const rvne_header *h, const rvne_limits *lim)
{
    if (rvne_is_int8(h) && !rvne_int8_sums_fit(h))
        return 0; /* every port's limit: an int32 accumulator */
    if (lim->max_input_dim != 0u && h->input_dim > lim->max_input_dim)
        return 0;
    if (lim->max_heads != 0u && (h->n_q_heads > lim->max_heads || h->n_kv_heads > lim->max_heads))
        return 0;
    if (lim->max_head_dim != 0u && h->head_dim > lim->max_head_dim)
        return 0;
    if (lim->max_layers != 0u && h->n_layers > lim->max_layers)
        return 0;
    if (lim->max_classes != 0u && h->n_classes > lim->max_classes)
        return 0;
    return 1;
}

static void parse_header(rvne_header *h, const uint8_t *p)
{
    h->magic = rd32(p + 0x00);
    h->version = rd16(p + 0x04);
    h->flags = p[0x06];
    h->reserved = p[0x07];
    h->input_dim = rd16(p + 0x08);
    h->n_q_heads = rd16(p + 0x0A);
    h->n_kv_heads = rd16(p + 0x0C);
    h->head_dim = rd16(p + 0x0E);
    h->n_layers = rd16(p + 0x10);
    h->n_classes = rd16(p + 0x12);
    h->weights_len = rd32(p + 0x14);
}

/* Rule 18: a float weight whose exponent bits are all ones (NaN, +-inf)
 * would make every logit of the model NaN or inf; the host's reader refuses
 * it too. Read byte by byte: the weights may not be aligned yet (rule 15). */
int rvne_blob_check_finite(const rvne_header *h, const uint8_t *w)
{
    uint32_t i;
    if (rvne_is_int8(h)) return RVNE_OK;
    if (h->flags & RVNE_FLAG_FP16) {
        for (i = 1; i < h->weights_len; i += 2u)
            if ((w[i] & 0x7Cu) == 0x7Cu) return RVNE_E_NONFINITE;
        return RVNE_OK;
    }
    for (i = 2; i + 1u < h->weights_len; i += 4u)
        if ((w[i + 1u] & 0x7Fu) == 0x7Fu && (w[i] & 0x80u) != 0u) return RVNE_E_NONFINITE;
    return RVNE_OK;
}

int rvne_blob_open(rvne_blob *out, const void *buf, size_t len, const rvne_load_cfg *cfg)
{
    static const rvne_load_cfg k_default = {0, {0, 0, 0, 0, 0, 0}, 1, 0, 0};
    const uint8_t *p = (const uint8_t *)buf;
    rvne_crc32_fn crc_fn;
    uint64_t total;
    uint32_t crc_calc;
    int rc;

    if (out == 0)
        return RVNE_E_INVAL;
    memset(out, 0, sizeof *out);
    if (buf == 0)
        return RVNE_E_INVAL;
    if (cfg == 0)
        cfg = &k_default;
    crc_fn = cfg->crc32 ? cfg->crc32 : rvne_crc32;

    if (len < (size_t)(RVNE_HEADER_LEN + RVNE_FOOTER_LEN))
        return RVNE_E_TOO_SHORT; /* rule 1 */
    if (p[0] == 0xFFu && p[1] == 0xFFu && p[2] == 0xFFu && p[3] == 0xFFu)
        return RVNE_E_ERASED; /* rule 2 */
    parse_header(&out->hdr, p);
    /* The caller reports dims from here on, even for a refused blob. */
    out->hdr_valid = 1;
    if (out->hdr.magic != RVNE_MAGIC)
        return RVNE_E_BAD_MAGIC; /* rule 3; the byte-swapped case is told apart by the caller from hdr.magic */
    if (out->hdr.version != RVNE_VERSION)
        return RVNE_E_BAD_VERSION; /* rule 4 */
    if ((out->hdr.flags & (uint8_t)~(RVNE_FLAG_FP16 | RVNE_FLAG_INT8)) != 0u ||
        (out->hdr.flags & (RVNE_FLAG_FP16 | RVNE_FLAG_INT8)) == (RVNE_FLAG_FP16 | RVNE_FLAG_INT8))
        return RVNE_E_BAD_FLAGS; /* rule 5: one dtype bit at most */
    if (out->hdr.reserved != 0u)
        return RVNE_E_RESERVED; /* rule 6 */

    /* Rule 7 in 64 bits: on a 32-bit MCU 28 + weights_len would wrap for a
     * weights_len near 2^32 and pass a short buffer. total_len is a u32, so
     * a blob longer than that is refused too. */
    total = (uint64_t)RVNE_HEADER_LEN + (uint64_t)out->hdr.weights_len + (uint64_t)RVNE_FOOTER_LEN;
    if (total > 0xFFFFFFFFu || total > (uint64_t)len || (cfg->exact_length && total != (uint64_t)len))
        return RVNE_E_LENGTH;
    out->total_len = (uint32_t)total;
    out->crc_stored = rd32(p + RVNE_HEADER_LEN + out->hdr.weights_len);
    out->crc_valid = 1;
    out->weights = p + RVNE_HEADER_LEN;

    crc_calc = crc_fn(0u, p, RVNE_HEADER_LEN + out->hdr.weights_len);
    if (crc_calc != out->crc_stored)
        return RVNE_E_CRC; /* rule 8 */

    rc = rvne_blob_check_container(out); /* rules 9-13 */
    if (rc != RVNE_OK)
        return rc;
    rc = rvne_blob_check_contract(&out->hdr); /* rule 14 */
    if (rc != RVNE_OK)
        return rc;
    rc = rvne_blob_check_qparams(&out->hdr, out->weights, 0); /* int8's parameter rules */
    if (rc != RVNE_OK)
        return rc;
    rc = rvne_blob_check_finite(&out->hdr, out->weights); /* rule 18 */
    if (rc != RVNE_OK)
        return rc;
    /* Rule 15: the kernel reads weights as float / uint16 (int8: the
     * parameter block as 32-bit words) in place. */
    if (((uintptr_t)out->weights % rvne_weights_align(&out->hdr)) != 0u)
        return RVNE_E_ALIGN;
    if (!within_limits(&out->hdr, &cfg->limits))
        return RVNE_E_TOO_LARGE; /* rule 16, dims */
    return RVNE_OK;
}
