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
    *out = (uint32_t)bytes;
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

int rvne_blob_open(rvne_blob *out, const void *buf, size_t len, const rvne_load_cfg *cfg)
{
    static const rvne_load_cfg k_default = {0, {0, 0, 0, 0, 0, 0}, 1, 0};
    const uint8_t *p = (const uint8_t *)buf;
    rvne_crc32_fn crc_fn;
    uint64_t total;
    uint32_t crc_calc, expected;
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
    if ((out->hdr.flags & (uint8_t)~RVNE_FLAG_FP16) != 0u)
        return RVNE_E_BAD_FLAGS; /* rule 5 */
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
    /* Rule 14: a model too big for 32 bits can never equal a u32 length. */
    if (rvne_expected_weights_len(&out->hdr, &expected) != RVNE_OK || expected != out->hdr.weights_len)
        return RVNE_E_CONTRACT;
    /* Rule 15: the kernel reads weights as float / uint16 in place. */
    if (((uintptr_t)out->weights % rvne_elem_size(&out->hdr)) != 0u)
        return RVNE_E_ALIGN;
    if (!within_limits(&out->hdr, &cfg->limits))
        return RVNE_E_TOO_LARGE; /* rule 16, dims */
    return RVNE_OK;
}
