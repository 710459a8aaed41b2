/* The line protocol of docs/protocol.md, served over any byte stream. The
 * port feeds received bytes in and provides a write callback (littlefs-style
 * config of callbacks); every buffer is the port's, nothing is allocated. */
#ifndef RVNE_PROTO_H
#define RVNE_PROTO_H
#include <stddef.h>
#include <stdint.h>
#include "rvne/model.h"
#include "rvne/update.h"

#define RVNE_FW_VERSION "0.1.0"
/* INFO's proto=: the command set of docs/protocol.md this firmware speaks
 * (2: TRACE). rvne.link.protocol.VERSION is the host's; they move together. */
#define RVNE_PROTO_VERSION 3

typedef struct rvne_port {
    void *ctx;
    const char *name;           /* INFO port= */
    /* Write all n bytes; a negative return is counted, never fatal. */
    int (*write)(void *ctx, const void *buf, size_t n);
    /* Monotonic time for STATS in clock_unit; NULL when the port has none. */
    uint64_t (*now)(void *ctx);
    const char *clock_unit;     /* "ns", "cycles", "insns" or "none" (docs/protocol.md) */
} rvne_port;

/* Writes the boot banner of docs/protocol.md through port.write. */
void rvne_print_banner(const rvne_port *port, const rvne_model *m);

typedef struct rvne_server_cfg {
    rvne_port port;
    char *line_buf;             /* line_max + 1 bytes */
    size_t line_max;            /* longest request line, >= 1024 */
    char *out_buf;              /* line_max + 16 bytes: replies are bounded like requests */
    float *frame_buf;           /* decoded PUSH tensor: line_max * 3 / 16 + 1 floats */
    rvne_slots *slots;          /* from rvne_slots_boot; NULL: UPDATE_* refused (E_NO_SLOTS) */
    /* The board's policy and trusted keys, for INFO (the loader's are
     * rvne_load_cfg.trust: the same struct); NULL: unsigned. */
    const struct rvne_trust *trust;
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
