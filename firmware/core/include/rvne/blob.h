/* RVNE v1 container: docs/format.md. The loader reads the blob where it lies
 * (a memory-mapped partition) and never copies the weights. */
#ifndef RVNE_BLOB_H
#define RVNE_BLOB_H
#include <stddef.h>
#include <stdint.h>
#include "rvne/crc32.h"

#define RVNE_MAGIC 0x52564E45u
#define RVNE_VERSION 1u
#define RVNE_FLAG_FP16 0x01u
#define RVNE_FLAG_INT8 0x02u    /* never together with RVNE_FLAG_FP16 */
/* An int8 model's D: its logits, int32 sums of D products of at most
 * 128*127, stay below 2^24 and travel exactly as f32. */
#define RVNE_INT8_MAX_DIM 1024u
#define RVNE_INT8_EXP_LEN 256u  /* u16 entries of each layer's exp table */
#define RVNE_HEADER_LEN 24u
#define RVNE_FOOTER_LEN 4u

typedef struct rvne_header {
    uint32_t magic;
    uint16_t version;
    uint8_t flags;
    uint8_t reserved;
    uint16_t input_dim, n_q_heads, n_kv_heads, head_dim, n_layers, n_classes;
    uint32_t weights_len;
} rvne_header;

/* Largest model a port accepts (rule 16). Zero in a field means no limit. */
typedef struct rvne_limits {
    uint32_t max_input_dim, max_heads, max_head_dim, max_layers, max_classes, max_window;
} rvne_limits;

typedef struct rvne_load_cfg {
    rvne_crc32_fn crc32;        /* NULL: the portable rvne_crc32 */
    rvne_limits limits;
    int exact_length;           /* 1: a file, its length must be 28+weights_len; 0: a partition */
    /* 1: expand FP16 weights to FP32 once at load when the arena has room
     * for them beside the head's state (rvne_model_load; docs/model.md,
     * "FP16 weights"), and int8 weights to the fast projection's layout on
     * a port that has one (RVNE_PROJ_I8_FAST); 0: decode them at every
     * push, int8 read in place. */
    int fp16_expand;
    /* The board's policy and trusted keys (rvne/sig.h; NULL: unsigned). */
    const struct rvne_trust *trust;
} rvne_load_cfg;

typedef struct rvne_blob {
    rvne_header hdr;            /* valid once rules 1-6 passed */
    int hdr_valid;
    const uint8_t *weights;     /* points into the caller's buffer */
    uint32_t crc_stored;        /* valid once rule 7 passed */
    int crc_valid;
    uint32_t total_len;         /* 28 + weights_len, valid with crc_valid */
} rvne_blob;

/* Parse and check rules 1-14 of docs/format.md over buf[0, len), then an
 * int8 blob's parameter rules (RVNE_E_QPARAM), rule 18 (RVNE_E_NONFINITE), then rule
 * 15 (weights aligned for their dtype where they lie) and the dims half of
 * rule 16 (cfg->limits; the window is the caller's to check). Returns
 * RVNE_OK or the first failing RVNE_E_*; *out is filled as far as parsing got
 * (so INFO can report dims of a blob whose CRC is wrong). cfg NULL: a file
 * (exact_length 1), the portable CRC, no limits. */
int rvne_blob_open(rvne_blob *out, const void *buf, size_t len, const rvne_load_cfg *cfg);

/* Rules 9-13 on an opened header (b->hdr_valid): the container checks that
 * follow the CRC, without the head's contract (used by tools that inspect). */
int rvne_blob_check_container(const rvne_blob *b);

/* Expected weights_len for the head (rule 14) in *out; RVNE_E_TOO_LARGE when
 * it does not fit 32 bits. */
int rvne_expected_weights_len(const rvne_header *h, uint32_t *out);

static inline int rvne_is_int8(const rvne_header *h) { return (h->flags & RVNE_FLAG_INT8) != 0u; }

/* Rule 13's element size: 4 FP32, 2 FP16, 1 int8. */
static inline uint32_t rvne_elem_size(const rvne_header *h)
{
    return rvne_is_int8(h) ? 1u : (h->flags & RVNE_FLAG_FP16) ? 2u : 4u;
}

/* Rule 15's alignment of the weights: their element size, and 4 for int8,
 * whose parameter block of 32-bit words (and u16 exp tables after it) the
 * head reads in place. */
static inline uint32_t rvne_weights_align(const rvne_header *h)
{
    return rvne_is_int8(h) ? 4u : rvne_elem_size(h);
}

/* ---- int8 (docs/format.md) ------------------------------------------------
 * weights = P (parameter block) + T (exp tables) + Wt (int8 weights in the
 * float layout's order). P, in 32-bit little-endian words: in_scale_inv,
 * x_scale (f32), then per layer the requantisation pairs (i32 mult, i32
 * shift) rq_q[Q], rq_k[K], rq_v[K], rq_s, rq_o, rq_wo[D], rq_x, then
 * logit_scale[C] (f32). T: per layer 256 u16. */

/* Bytes of P and of T, for a header whose rule 14 length fits 32 bits. */
int rvne_int8_sizes(const rvne_header *h, uint32_t *params, uint32_t *tables);

/* An int8 model's Wo product sums Q terms of at most 128*127 in int32. */
static inline int rvne_int8_sums_fit(const rvne_header *h)
{
    return (uint32_t)h->n_q_heads * h->head_dim <= 0x7FFFFFFFu / (128u * 127u);
}

/* Pairs of one layer's requantisation block: Q + 2K + 1 + 1 + D + 1. */
static inline uint32_t rvne_int8_layer_pairs(const rvne_header *h)
{
    return ((uint32_t)h->n_q_heads + 2u * h->n_kv_heads) * h->head_dim + 3u + h->input_dim;
}

/* Which parameter broke which rule: param names it ("in_scale_inv",
 * "x_scale", "logit_scale", "scale_product", "rq_q.mult" ... "rq_x.shift",
 * "exp", "weight"), layer and index place it (0 where they do not apply),
 * raw is its 32 (or 16, 8) bits as stored. */
typedef struct rvne_qparam_fault {
    const char *param;
    uint32_t layer, index;
    uint32_t raw;
} rvne_qparam_fault;

/* Every parameter rule of an int8 blob, in docs/format.md's order, on
 * weights whose length matched rule 14 (weights_len bytes readable at w,
 * any alignment). RVNE_OK for an FP32 or FP16 header; RVNE_E_QPARAM with
 * *why filled (why may be NULL) on the first failure. */
int rvne_blob_check_qparams(const rvne_header *h, const uint8_t *w, rvne_qparam_fault *why);

/* Rule 14 as a whole: weights_len is the expected one, and an int8 model's
 * D is at most RVNE_INT8_MAX_DIM. RVNE_OK or RVNE_E_CONTRACT. */
int rvne_blob_check_contract(const rvne_header *h);

/* Rule 18 over a contract-valid blob's weights: RVNE_E_NONFINITE when an
 * FP32 or FP16 weight is NaN or infinite (int8: RVNE_OK). */
int rvne_blob_check_finite(const rvne_header *h, const uint8_t *w);

#endif
