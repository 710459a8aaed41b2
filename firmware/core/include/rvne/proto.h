/* The line protocol of docs/protocol.md, served over any byte stream. The
 * port feeds received bytes in and provides a write callback (littlefs-style
 * config of callbacks); every buffer is the port's, nothing is allocated. */
#ifndef RVNE_PROTO_H
#define RVNE_PROTO_H
#include <stddef.h>
#include <stdint.h>
#include "rvne/blob.h"
#include "rvne/head.h"
#include "rvne/update.h"

#define RVNE_FW_VERSION "0.1.0"
/* INFO's proto=: the command set of docs/protocol.md this firmware speaks
 * (2: TRACE). rvne.link.protocol.VERSION is the host's; they move together. */
#define RVNE_PROTO_VERSION 2

typedef struct rvne_port {
    void *ctx;
    const char *name;           /* INFO port= */
    /* Write all n bytes; a negative return is counted, never fatal. */
    int (*write)(void *ctx, const void *buf, size_t n);
    /* Monotonic time for STATS in clock_unit; NULL when the port has none. */
    uint64_t (*now)(void *ctx);
    const char *clock_unit;     /* "ns", "cycles", "insns" or "none" (docs/protocol.md) */
} rvne_port;

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

/* Writes the boot banner of docs/protocol.md through port.write. */
void rvne_print_banner(const rvne_port *port, const rvne_model *m);

typedef struct rvne_server_cfg {
    rvne_port port;
    char *line_buf;             /* line_max + 1 bytes */
    size_t line_max;            /* longest request line, >= 1024 */
    char *out_buf;              /* line_max + 16 bytes: replies are bounded like requests */
    float *frame_buf;           /* decoded PUSH tensor: line_max * 3 / 16 + 1 floats */
    rvne_slots *slots;          /* from rvne_slots_boot; NULL: UPDATE_* refused (E_NO_SLOTS) */
} rvne_server_cfg;

typedef struct rvne_stats {
    uint32_t pushes, resets, errors, drops;
    uint64_t push_last, push_min, push_max, push_total;
    uint32_t write_errors;      /* port.write returned < 0 */
} rvne_stats;

typedef struct rvne_server {
    rvne_server_cfg cfg;
    rvne_model *model;
    size_t line_len;
    int overflow;               /* discarding up to the next LF */
    uint32_t last_seq;          /* of the last CRC-valid request, 0 = none */
    size_t last_reply_len;      /* out_buf holds that reply for a resend */
    rvne_stats stats;
    uint32_t trace_push;        /* stats.pushes at the push the trace holds */
    int trace_valid;            /* a push was traced since TRACE ON, the last reset or WINDOW */
} rvne_server;

/* RVNE_OK, or RVNE_E_INVAL for a NULL buffer or callback or a line_max
 * outside 1024 ... 16 MiB; the server then ignores every byte fed to it. */
int rvne_server_init(rvne_server *s, const rvne_server_cfg *cfg, rvne_model *m);
/* Consume received bytes; complete lines are answered through port.write. */
void rvne_server_feed(rvne_server *s, const uint8_t *data, size_t n);
/* For ports that drop frames before the kernel (a full queue). */
void rvne_server_count_drop(rvne_server *s, uint32_t n);

#endif
