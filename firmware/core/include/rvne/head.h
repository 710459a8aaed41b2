/* The streaming GQA temporal head of docs/model.md, laid out like llama2.c:
 * a config, weights whose pointers point into the mapped blob, and a run
 * state carved from one arena the caller owns. No allocation, no exit(). */
#ifndef RVNE_HEAD_H
#define RVNE_HEAD_H
#include <stddef.h>
#include <stdint.h>
#include "rvne/blob.h"

/* The int8 attention's sums stay exact in 32 bits up to this window
 * (S = sum of W exponentials <= W*2^15 and each p_j*2^15 + S/2 < 2^32). */
#define RVNE_INT8_MAX_WINDOW 65535u

typedef struct rvne_config {
    uint32_t dim, n_q_heads, n_kv_heads, head_dim, n_layers, n_classes;
    uint32_t window;
    int fp16;                   /* the weights the kernels read are FP16 (not expanded) */
    int fp16_finite;            /* ... and none is inf or NaN: the branch-free decode */
    float att_scale;            /* 1/sqrt(head_dim), once: sqrtf and / are software on some cores */
    int int8;                   /* the integer model of docs/model.md (blob flags bit 1) */
    float in_scale_inv;         /* int8: the input quantisation's one multiplier */
} rvne_config;

typedef struct rvne_weights {
    const uint8_t *base;        /* first weight byte: inside the blob, or its FP32 expansion */
    size_t layer_bytes;         /* bytes of one layer's Wq,Wk,Wv,Wo */
    size_t off_wk, off_wv, off_wo; /* byte offsets of Wk, Wv, Wo within a layer */
    const uint8_t *wc;
    /* int8: the blob's parameter block and exp tables, read in place (rule
     * 15 aligned them). Layer l's requantisation pairs start at
     * rq + l*rq_layer_words, its table at exp_tab + l*RVNE_INT8_EXP_LEN. */
    const int32_t *rq;
    size_t rq_layer_words;
    const uint16_t *exp_tab;
    /* int8 weights prepared for rvne_proj_i8 (rvne_head_use_prepared_i8),
     * NULL: the projections read the blob. Layer l's q, k, v, o at prep +
     * l*prep_layer_words + prep_off_*, each with its own pairs, and the
     * scores' rvne_i8_est at prep_off_est; prep_wc the
     * classifier's rows (rvne_dots_i8); x16 the widened input they share,
     * in the same caller-owned block. */
    const uint32_t *prep, *prep_wc;
    size_t prep_layer_words, prep_off_k, prep_off_v, prep_off_o, prep_off_est;
    int16_t *x16;
} rvne_weights;

typedef struct rvne_run_state {
    float *x, *xb, *q, *k, *v, *logits;
    float *att, *att_inv;       /* a row of W scores and 1/sum per query head */
    float *key_cache, *value_cache; /* (layer, window, kv_dim) rings */
    uint32_t n_cached;          /* positions in the ring, <= window */
    uint32_t next;              /* ring slot of the next position */
    uint32_t n_pushed;          /* since the last reset */
    float *trace;               /* NULL, or where each push copies its trace points (below) */
    /* int8 only (the float pointers above are then NULL, but logits): the
     * activations (k8, v8: this position's key and value), the int32 sums of
     * one product and the attention's scratch (G rows of W); the rings as
     * int16, laid out for rvne_scores_i8 and rvne_wsum_i8 (rvne/kernels.h):
     * key16 rows (layer, kv head, slot) of RVNE_I8_ROW_WORDS(hd) words,
     * val16 rows (layer, channel) of RVNE_I8_ROW_WORDS(W) words, one int16
     * per slot; q16 and np16 their other operands. */
    int8_t *x8, *q8, *o8, *k8, *v8;
    uint32_t *key16, *val16;
    int16_t *q16, *np16;
    int32_t *acc, *att8;
} rvne_run_state;

typedef struct rvne_head {
    rvne_config config;
    const uint8_t *blob_weights;   /* the blob's own (base may point to an expansion) */
    int blob_fp16;
    rvne_weights weights;
    rvne_run_state state;
} rvne_head;

/* Bytes of arena rvne_head_init needs for this header and window, in *out.
 * RVNE_E_TOO_LARGE if that does not fit size_t, or for an int8 header a
 * window above RVNE_INT8_MAX_WINDOW; RVNE_E_INVAL for window 0. */
int rvne_head_arena_size(const rvne_header *h, uint32_t window, size_t *out);

/* b must have passed rvne_blob_open (rules 1-14). Checks alignment of the
 * weights (RVNE_E_ALIGN) and the arena (RVNE_E_ARENA); an int8 blob's
 * parameters again (RVNE_E_QPARAM: a shift out of range is undefined
 * behaviour in the kernels) and its int32 bound (RVNE_E_TOO_LARGE, as
 * rvne_blob_open's rule 16). Starts reset. Reads
 * an FP16 blob's weights once, for inf and NaN (docs/model.md, "FP16
 * weights"): rvne_head_set_window and rvne_head_use_f32_weights keep
 * what it found. */
int rvne_head_init(rvne_head *t, const rvne_blob *b, uint32_t window, void *arena, size_t arena_len);
/* WINDOW: the run state of a head rvne_head_init set up, carved again for
 * another window from arena (rvne_head_arena_size bytes, float-aligned:
 * RVNE_E_ARENA), started reset. The config and the weights stay, and so
 * does what init learned of them (the FP16 scan): no weight is read. The
 * caller moves weights it placed in the arena if the state now reaches
 * them. On an error nothing changes. */
int rvne_head_set_window(rvne_head *t, uint32_t window, void *arena, size_t arena_len);
/* FP16 weights at FP32 speed (docs/model.md, "FP16 weights"): the bytes
 * of the blob's weights expanded to FP32 (0 for an FP32 blob), and
 * rvne_head_use_f32_weights, which makes the head read w (float-aligned,
 * that many bytes, rvne_fp16_expand of the blob's weights, kept by the
 * caller) instead of decoding the blob's halves; w NULL goes back to the
 * blob. The results are bit for bit the same either way. */
int rvne_head_expanded_size(const rvne_header *h, size_t *out);
int rvne_head_use_f32_weights(rvne_head *t, const float *w);
/* int8 weights for the fast projection (rvne/kernels.h, rvne_proj_i8): the
 * bytes of Wq, Wk, Wv and Wo of every layer in rvne_prep_i8_c's layout
 * plus the widened input (0 for a float blob), and rvne_head_use_prepared_i8,
 * which prepares them at prep (4-byte aligned, that many bytes, kept by
 * the caller; again only when prep moved) and makes the head's projections
 * read them; prep NULL goes back to the blob. The classifier's weights are
 * prepared too (rvne_dots_i8's rows). The results are bit for bit the
 * same either way. */
int rvne_head_prepared_size(const rvne_header *h, size_t *out);
int rvne_head_use_prepared_i8(rvne_head *t, void *prep);
/* frame: dim floats. An int8 head quantises it (x = sat8(round half away
 * from zero(frame[i] * in_scale_inv)), NaN -> 0), runs the integer model,
 * and writes its int32 logit sums as floats (exact: |sum| < 2^24). */
int rvne_head_push(rvne_head *t, const float *frame);
const float *rvne_head_logits(const rvne_head *t);      /* n_classes floats */
void rvne_head_reset(rvne_head *t);

/* Trace points (docs/protocol.md, TRACE): with a buffer set, every push
 * writes there, for each layer l, q (Q), k and v (K each, as written into
 * the cache), the scaled scores q.k/sqrt(head_dim) it used (W per query
 * head: the positions attended oldest first, 0 past them), the attention
 * output (Q, all heads, before Wo) and x after the residual (D); then the
 * logits (C). *out gets that count of floats at window W. An int8 head
 * writes the same points but the scores, each integer as a float.
 * NULL turns tracing off; the buffer is the caller's (no allocation). */
int rvne_head_trace_floats(const rvne_header *h, uint32_t window, size_t *out);
void rvne_head_set_trace(rvne_head *t, float *buf);

#endif
