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
     * "FP16 weights"); 0: decode them at every push. */
    int fp16_expand;
} rvne_load_cfg;

typedef struct rvne_blob {
    rvne_header hdr;            /* valid once rules 1-6 passed */
    int hdr_valid;
    const uint8_t *weights;     /* points into the caller's buffer */
    uint32_t crc_stored;        /* valid once rule 7 passed */
    int crc_valid;
    uint32_t total_len;         /* 28 + weights_len, valid with crc_valid */
} rvne_blob;

/* Parse and check rules 1-14 of docs/format.md over buf[0, len), then rule
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

static inline uint32_t rvne_elem_size(const rvne_header *h) { return (h->flags & RVNE_FLAG_FP16) ? 2u : 4u; }

#endif
