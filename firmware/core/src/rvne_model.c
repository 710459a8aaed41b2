/* The model in its arena (rvne/model.h): the blob opened, the head carved
 * for a window, the trace buffer after its state and the weights expanded
 * or prepared at the arena's end, re-carved on WINDOW and TRACE. */
#include <string.h>
#include "rvne/fp16.h"
#include "rvne/head.h"
#include "rvne/kernels.h"   /* RVNE_PROJ_I8_FAST: this port's int8 projection reads the prepared layout */
#include "rvne/model.h"
#include "rvne/status.h"

/* Bytes of the trace buffer (0 with tracing off); it sits right after the
 * head's state, so the arena holds it only while tracing is on. */
static int trace_bytes(const rvne_model *m, int on, size_t *out)
{
    size_t floats = 0;
    int rc;
    *out = 0;
    if (!on) return RVNE_OK;
    rc = rvne_head_trace_floats(&m->blob.hdr, &floats);
    if (rc == RVNE_OK) *out = floats * sizeof(float);
    return rc;
}

/* Rule 16 for the window: the port's limit and its arena (the trace's too
 * when `trace` is on). *need: the head's bytes, *total: with the trace. */
static int window_fits(const rvne_model *m, uint32_t window, uint32_t max_window, int trace, size_t *need,
                       size_t *total)
{
    size_t tb;
    int rc;
    if (window == 0u) return RVNE_E_INVAL;
    if (max_window != 0u && window > max_window) return RVNE_E_TOO_LARGE;
    rc = rvne_head_arena_size(&m->blob.hdr, window, need);
    if (rc == RVNE_OK) rc = trace_bytes(m, trace, &tb);
    if (rc != RVNE_OK) return rc;
    if (m->arena == 0 || *need > m->arena_len || tb > m->arena_len - *need) return RVNE_E_TOO_LARGE;
    *total = *need + tb;
    return RVNE_OK;
}

/* The trace buffer, after the head's state (float-aligned: the state is floats). */
static void attach_trace(rvne_model *m, size_t head_bytes)
{
    rvne_head_set_trace(&m->head, m->trace_on ? (float *)(void *)((uint8_t *)m->arena + head_bytes) : 0);
}

/* FP16 weights at FP32 speed (docs/model.md, "FP16 weights"): expanded
 * once into the arena's end when the port asked for it and they fit after
 * the head's `used` bytes (state and trace); else the head decodes the
 * blob. Kept across WINDOW and TRACE while they still fit (the head's
 * state never reaches them), dropped when the room is needed: the window
 * and the trace come first, and the results are the same either way.
 * int8 weights the same, prepared for the fast projection kernel, on a
 * port that has one (RVNE_PROJ_I8_FAST): elsewhere the C twin on the
 * prepared layout buys nothing for its RAM. */
static void place_weights(rvne_model *m, size_t used)
{
    float *at = 0;
    if (m->fp16_expand && m->expand_bytes != 0u && m->expand_bytes <= m->arena_len) {
        /* 16-byte aligned: the S3's block loads (EE.LDF.128) take four floats at once. */
        const uintptr_t base = (uintptr_t)m->arena;
        const uintptr_t top = (base + m->arena_len - m->expand_bytes) & ~(uintptr_t)15u;
        if (top >= base && top - base >= used) at = (float *)(void *)((uint8_t *)m->arena + (top - base));
    }
    if (rvne_is_int8(&m->blob.hdr)) {
        m->expanded = rvne_head_use_prepared_i8(&m->head, at) == RVNE_OK ? at : 0;
        return;
    }
    if (at != 0 && at != m->expanded)
        rvne_fp16_expand(at, (const uint16_t *)(const void *)m->blob.weights, m->expand_bytes / sizeof(float));
    m->expanded = at;
    (void)rvne_head_use_f32_weights(&m->head, at);
}

/* INFO's arena: the head's state, the trace, the expanded (or prepared) weights. */
static size_t arena_used(const rvne_model *m, size_t total)
{
    return total + (m->expanded ? m->expand_bytes : 0u);
}

int rvne_model_load(rvne_model *m, const void *part, size_t part_len, uint32_t window,
                    void *arena, size_t arena_len, const rvne_load_cfg *cfg)
{
    size_t need = 0, total = 0;
    int rc;
    if (m == 0) return RVNE_E_INVAL;
    memset(m, 0, sizeof *m);
    m->window = window;
    m->arena = arena;
    m->arena_len = arena_len;
    m->max_window = cfg ? cfg->limits.max_window : 0u;
    m->fp16_expand = cfg ? cfg->fp16_expand : 0;
    /* No partition at all (none in the table, not mappable, no such file) is
     * its own reason, not a caller error; an existing but empty one is
     * rule 1's E_TOO_SHORT like any short blob. */
    if (part == 0) {
        m->status = RVNE_E_NO_PARTITION;
        return RVNE_E_NO_PARTITION;
    }
    rc = rvne_blob_open(&m->blob, part, part_len, cfg);
    if (rc == RVNE_OK) rc = window_fits(m, window, m->max_window, 0, &need, &total);
    if (rc == RVNE_OK) rc = rvne_head_expanded_size(&m->blob.hdr, &m->expand_bytes);
#if defined(RVNE_PROJ_I8_FAST)
    if (rc == RVNE_OK && rvne_is_int8(&m->blob.hdr)) rc = rvne_head_prepared_size(&m->blob.hdr, &m->expand_bytes);
#endif
    if (rc == RVNE_OK) rc = rvne_head_init(&m->head, &m->blob, window, arena, arena_len);
    if (rc == RVNE_OK) {
        if (m->expand_bytes != 0u) place_weights(m, total);
        m->arena_used = arena_used(m, total);
    }
    m->status = rc;
    return rc;
}

int rvne_model_set_window(rvne_model *m, uint32_t window)
{
    size_t need = 0, total = 0;
    int rc, trace;
    if (m == 0 || m->status != RVNE_OK) return RVNE_E_INVAL;
    trace = m->trace_on;
    rc = window_fits(m, window, m->max_window, trace, &need, &total);
    /* The window is the model's; the trace only rides along: a window that
     * fits without it turns tracing off (a host that left it on must not
     * make WINDOW fail). */
    if (rc == RVNE_E_TOO_LARGE && trace) {
        trace = 0;
        rc = window_fits(m, window, m->max_window, 0, &need, &total);
    }
    if (rc != RVNE_OK) return rc;
    /* A refusal leaves the head as it was. */
    rc = rvne_head_set_window(&m->head, window, m->arena, m->arena_len);
    if (rc != RVNE_OK) return rc;
    m->window = window;
    m->trace_on = trace;
    if (m->expand_bytes != 0u) place_weights(m, total);
    m->arena_used = arena_used(m, total);
    attach_trace(m, need);
    return RVNE_OK;
}

int rvne_model_set_trace(rvne_model *m, int on)
{
    size_t need = 0, total = 0;
    int rc;
    if (m == 0 || m->status != RVNE_OK) return RVNE_E_INVAL;
    rc = window_fits(m, m->window, 0u, on, &need, &total);
    if (rc != RVNE_OK) return rc;
    m->trace_on = on != 0;
    if (m->expand_bytes != 0u) place_weights(m, total);
    m->arena_used = arena_used(m, total);
    attach_trace(m, need);
    return RVNE_OK;
}
