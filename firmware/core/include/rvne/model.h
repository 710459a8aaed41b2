/* The model in its arena: the blob the port found, opened, and the head
 * carved for a window from one arena the port owns (docs/model.md), with
 * the trace buffer after the head's state while tracing is on and the
 * weights expanded or prepared at the arena's end where they fit. The
 * protocol's INFO, WINDOW and TRACE (rvne/proto.h) and the slots' boot and
 * update (rvne/update.h) load and re-carve it through these. */
#ifndef RVNE_MODEL_H
#define RVNE_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "rvne/blob.h"
#include "rvne/head.h"

/* What the port found when it loaded the partition, for INFO. */
typedef struct rvne_model {
    int status;                 /* RVNE_OK or the load error */
    rvne_blob blob;             /* as far as rvne_blob_open got */
    rvne_head head;             /* usable only when status == RVNE_OK */
    uint32_t window;
    size_t arena_used;
    void *arena;                /* the port's, kept for WINDOW */
    size_t arena_len;
    uint32_t max_window;        /* the port's limits.max_window (0 = none), kept for WINDOW */
    int trace_on;               /* TRACE ON: the head's trace buffer follows its state in the arena */
    int fp16_expand;            /* the port's rvne_load_cfg.fp16_expand */
    size_t expand_bytes;        /* the weights as FP32 (rvne_head_expanded_size; 0: an FP32 blob), or
                                 * int8 prepared (rvne_head_prepared_size) on a port with RVNE_PROJ_I8_FAST */
    const float *expanded;      /* where they are, at the arena's end; NULL: decoded (read in place) */
} rvne_model;

/* Open the blob in part[0, part_len), size and initialise the head in arena.
 * Always fills m (status, blob fields) so INFO can report why it failed.
 * part == NULL means the port found no partition: RVNE_E_NO_PARTITION. An
 * existing empty one (part != NULL, part_len 0) is RVNE_E_TOO_SHORT. */
int rvne_model_load(rvne_model *m, const void *part, size_t part_len, uint32_t window,
                    void *arena, size_t arena_len, const rvne_load_cfg *cfg);

/* WINDOW: the head's run state carved again for another window in the same
 * arena (rvne_head_set_window: the weights and their load-time scan stay).
 * A window above the port's max_window or beyond the arena is
 * RVNE_E_TOO_LARGE; on it (or RVNE_E_ARENA) nothing changes. A window that
 * fits only without the trace buffer turns tracing off. */
int rvne_model_set_window(rvne_model *m, uint32_t window);

/* TRACE ON/OFF: carve the trace buffer (rvne_head_trace_floats) from the
 * arena after the head's state, or give it back. RVNE_E_TOO_LARGE (nothing
 * changed) when the arena has no room for it at the current window. */
int rvne_model_set_trace(rvne_model *m, int on);

#endif
