/* The device side of docs/protocol.md: its commands, over the line codec
 * (rvne_line.c) and the model in its arena (rvne_model.c). Every byte that arrives is untrusted:
 * the line buffer is bounded, every length is checked before it is used, and
 * a reply is sized before anything it reports on is done. */
#include <string.h>
#include "rvne/base64.h"
#include "rvne/crc32.h"
#include "rvne/line.h"
#include "rvne/proto.h"
#include "rvne/sig.h"
#include "rvne/status.h"

#define LINE_MIN 1024u
/* Keeps every length well inside 32 bits (CRC lengths, long returns). */
#define LINE_LIMIT (16u * 1024u * 1024u)
#define MAX_TOKENS 4u

/* ---- replies ------------------------------------------------------------------ */

static void emit(rvne_server *s, const char *buf, size_t n)
{
    if (s->cfg.port.write(s->cfg.port.ctx, buf, n) < 0) s->stats.write_errors++;
}

static void begin(rvne_text *t, char *buf, size_t line_max, uint32_t seq)
{
    t->p = buf;
    t->cap = line_max + 1u; /* the LF */
    t->len = 0;
    t->over = 0;
    rvne_line_str(t, "<");
    rvne_line_u64(t, seq);
}

/* A reply to a line whose SEQ could not be trusted. It is built in the line
 * buffer (free once the line is judged) so that out_buf keeps the last real
 * reply for a resend. */
static void reply_untrusted(rvne_server *s, const char *code, const char *msg, const char *detail)
{
    rvne_text t;
    begin(&t, s->cfg.line_buf, s->cfg.line_max, 0u);
    rvne_line_str(&t, " ERR ");
    rvne_line_str(&t, code);
    rvne_line_str(&t, " ");
    rvne_line_str(&t, msg);
    if (detail) rvne_line_str(&t, detail);
    s->stats.errors++;
    if (rvne_line_seal(&t, s->cfg.line_max)) emit(s, t.p, t.len);
}

static void commit(rvne_server *s, uint32_t seq, rvne_text *t)
{
    s->last_seq = seq;
    s->last_reply_len = t->len;
    emit(s, t->p, t->len);
}

typedef struct request {
    uint32_t seq;
    const char *tok[MAX_TOKENS];
    size_t tok_len[MAX_TOKENS];
    size_t n_tok;               /* may exceed MAX_TOKENS: then only counted */
} request;

/* An error reply to a trusted request. msg pieces are joined; NULLs skipped. */
static void reply_err(rvne_server *s, const request *r, const char *code, const char *m1,
                      const char *m2, const char *m3)
{
    rvne_text t;
    begin(&t, s->cfg.out_buf, s->cfg.line_max, r->seq);
    rvne_line_str(&t, " ERR ");
    rvne_line_str(&t, code);
    rvne_line_str(&t, " ");
    rvne_line_str(&t, m1);
    if (m2) rvne_line_str(&t, m2);
    if (m3) rvne_line_str(&t, m3);
    s->stats.errors++;
    if (!rvne_line_seal(&t, s->cfg.line_max)) {
        /* Only a port with a tiny line_max gets here; say so briefly. */
        begin(&t, s->cfg.out_buf, s->cfg.line_max, r->seq);
        rvne_line_str(&t, " ERR ");
        rvne_line_str(&t, code);
        (void)rvne_line_seal(&t, s->cfg.line_max);
    }
    commit(s, r->seq, &t);
}

static void reply_ok(rvne_server *s, const request *r, rvne_text *t)
{
    if (!rvne_line_seal(t, s->cfg.line_max)) {
        reply_err(s, r, "E_REPLY_TOO_LONG", "the reply would exceed line_max", 0, 0);
        return;
    }
    commit(s, r->seq, t);
}

static void begin_ok(rvne_server *s, const request *r, rvne_text *t)
{
    begin(t, s->cfg.out_buf, s->cfg.line_max, r->seq);
    rvne_line_str(t, " OK");
}

/* ---- parsing --------------------------------------------------------------------- */

static int tok_is(const request *r, size_t i, const char *word)
{
    size_t n = strlen(word);
    return r->tok_len[i] == n && memcmp(r->tok[i], word, n) == 0;
}

static int need_model(rvne_server *s, const request *r)
{
    const rvne_model *m = s->model;
    if (m->status == RVNE_OK) return 1;
    reply_err(s, r, "E_NO_MODEL", "no model loaded: ", rvne_status_name(m->status),
              "; flash a valid blob into the partition");
    return 0;
}

/* ---- model slots and updates (the work is rvne_update.c's) ------------------------- */

static const char k_slot_name[2][2] = {"a", "b"};

/* INFO's layout=, slot=, seq= and update= (docs/protocol.md). */
static void t_slots(rvne_text *t, const rvne_slots *sl)
{
    int layout = sl ? sl->layout : RVNE_LAYOUT_NONE;
    rvne_line_str(t, layout == RVNE_LAYOUT_SLOTS ? " layout=slots" : layout == RVNE_LAYOUT_SINGLE ? " layout=single"
                                                                                        : " layout=none");
    rvne_line_str(t, " slot=");
    rvne_line_str(t, sl && sl->active >= 0 ? k_slot_name[sl->active] : "-");
    rvne_line_str(t, " seq=");
    if (sl && sl->active >= 0 && sl->current.seq != 0u) rvne_line_u64(t, sl->current.seq); else rvne_line_str(t, "-");
    rvne_line_str(t, " update=");
    if (sl && sl->upd.active) {
        rvne_line_u64(t, sl->upd.received);
        rvne_line_str(t, "/");
        rvne_line_u64(t, sl->upd.size);
    } else {
        rvne_line_str(t, "idle");
    }
}

/* A key digest as 64 lower-case hex digits, as `espsecure digest_sbv2_public_key` writes it. */
static void t_digest(rvne_text *t, const uint8_t d[32])
{
    static const char k_hex[] = "0123456789abcdef";
    char buf[65];
    int i;
    for (i = 0; i < 32; i++) {
        buf[2 * i] = k_hex[d[i] >> 4];
        buf[2 * i + 1] = k_hex[d[i] & 15u];
    }
    buf[64] = 0;
    rvne_line_str(t, buf);
}

static void t_digests(rvne_text *t, const uint8_t d[][32], int n)
{
    int i;
    if (n <= 0) rvne_line_str(t, "-");
    for (i = 0; i < n; i++) {
        if (i) rvne_line_str(t, ",");
        t_digest(t, d[i]);
    }
}

/* INFO's policy=, keys=, revoked=, version=, signer= and refused=
 * (docs/protocol.md, docs/format.md "Signed models"). */
static void t_policy(rvne_text *t, const rvne_server *s)
{
    const rvne_slots *sl = s->cfg.slots;
    const rvne_trust *tr = s->cfg.trust;
    int sig = tr && tr->policy == RVNE_POLICY_SIGNED;
    rvne_line_str(t, sig ? " policy=signed keys=" : " policy=unsigned keys=");
    t_digests(t, sig ? tr->trusted : 0, sig ? tr->n_trusted : 0);
    rvne_line_str(t, " revoked=");
    t_digests(t, sig ? tr->revoked : 0, sig ? tr->n_revoked : 0);
    rvne_line_str(t, " version=");
    if (sl && sl->active >= 0 && sl->running.verified) rvne_line_u64(t, sl->running.version); else rvne_line_str(t, "-");
    rvne_line_str(t, " signer=");
    if (sl && sl->active >= 0 && sl->running.verified) t_digest(t, sl->running.signer); else rvne_line_str(t, "-");
    rvne_line_str(t, " refused=");
    rvne_line_str(t, sl && sl->refused != RVNE_OK ? rvne_status_name(sl->refused) : "-");
}


/* The refusal of docs/protocol.md's update table, one named line each. */
/* num in decimal into buf, for a reply_err message part. */
static void num_text(rvne_text *n, char buf[12], uint32_t num)
{
    n->p = buf;
    n->cap = 11;
    n->len = 0;
    n->over = 0;
    rvne_line_u64(n, num);
    buf[n->len] = 0;
}

static void update_err(rvne_server *s, const request *r, int rc, uint32_t num)
{
    char buf[12];
    rvne_text n;
    num_text(&n, buf, num);
    switch (rc) {
    case RVNE_E_NO_SLOTS:
        reply_err(s, r, "E_NO_SLOTS", "this device has no two-slot layout (rvne_a, rvne_b, rvne_sel) it can "
                  "write; reflash the app and partitions.csv with `rvne flash`", 0, 0);
        break;
    case RVNE_E_UPDATE_BUSY:
        reply_err(s, r, "E_UPDATE_BUSY", "an update is in flight (UPDATE_ABORT ends it); bytes received: ", buf, 0);
        break;
    case RVNE_E_NO_UPDATE: reply_err(s, r, "E_NO_UPDATE", "no update in flight; send UPDATE_BEGIN first", 0, 0); break;
    case RVNE_E_UPDATE_SIZE:
        reply_err(s, r, "E_UPDATE_SIZE", "SIZE is below 28 bytes (a blob's header and CRC) or above the slot; "
                  "slot bytes: ", buf, 0);
        break;
    case RVNE_E_UPDATE_ORDER:
        reply_err(s, r, "E_UPDATE_ORDER", "chunks go in order; expected offset ", buf, 0);
        break;
    case RVNE_E_CHUNK_CRC:
        reply_err(s, r, "E_CHUNK_CRC", "the chunk does not match its CRC; nothing written, resend it at offset ",
                  buf, 0);
        break;
    case RVNE_E_INCOMPLETE:
        reply_err(s, r, "E_INCOMPLETE", "not all bytes arrived; send the chunk at offset ", buf, 0);
        break;
    case RVNE_E_UPDATE_CRC:
        reply_err(s, r, "E_UPDATE_CRC", "the CRC of UPDATE_COMMIT, UPDATE_BEGIN and the blob written differ; "
                  "update abandoned, the old model serves", 0, 0);
        break;
    case RVNE_E_VERIFY:
        reply_err(s, r, "E_VERIFY", "the flash read back differs from what was written; update abandoned, the "
                  "old model serves", 0, 0);
        break;
    case RVNE_E_FLASH:
        n.len = 0; /* buf now says the port's own (negative) code */
        rvne_line_str(&n, "-");
        rvne_line_u64(&n, s->cfg.slots ? (uint64_t)(-(int64_t)s->cfg.slots->upd.flash_err) : 0u);
        buf[n.over ? 0 : n.len] = 0;
        reply_err(s, r, "E_FLASH", "the flash refused an erase, write or read; update abandoned, the old "
                  "model serves; the port's error: ", buf, 0);
        break;
    default:
        /* A blob refused as at boot: its docs/format.md rule by name. */
        reply_err(s, r, rvne_status_name(rc), "the new blob was refused as at boot (docs/format.md); update "
                  "abandoned, the old model serves", 0, 0);
        break;
    }
}

static void update_ok(rvne_server *s, const request *r, const char *k1, uint32_t v1, const char *k2, uint32_t v2)
{
    rvne_text t;
    begin_ok(s, r, &t);
    if (k1) {
        rvne_line_str(&t, k1);
        rvne_line_u64(&t, v1);
    }
    if (k2) {
        rvne_line_str(&t, k2);
        rvne_line_u64(&t, v2);
    }
    reply_ok(s, r, &t);
}

static void cmd_update(rvne_server *s, const request *r)
{
    rvne_slots *sl = s->cfg.slots;
    uint32_t a = 0, crc = 0, expect = 0;
    int rc;
    if (tok_is(r, 0, "UPDATE_BEGIN")) {
        if (r->n_tok != 3 || !rvne_line_parse_u32(r->tok[1], r->tok_len[1], &a) ||
            !rvne_line_parse_hex32(r->tok[2], r->tok_len[2], &crc)) {
            reply_err(s, r, "E_ARGS", "usage: UPDATE_BEGIN SIZE CRC (SIZE decimal, CRC 8 hex digits)", 0, 0);
            return;
        }
        rc = sl ? rvne_update_begin(sl, a, crc) : RVNE_E_NO_SLOTS;
        if (rc != RVNE_OK) {
            update_err(s, r, rc, rc == RVNE_E_UPDATE_BUSY ? sl->upd.received
                                 : rc == RVNE_E_UPDATE_SIZE ? sl->flash->part_size[sl->active == RVNE_PART_B ? RVNE_PART_A : RVNE_PART_B]
                                                            : 0u);
            return;
        }
        {
            /* The most data bytes one UPDATE_CHUNK line carries (64 bytes
             * of framing: SEQ, command, offset, CRCs), in 64-byte steps. */
            uint32_t chunk = (uint32_t)((s->cfg.line_max - 64u) / 4u * 3u) / 64u * 64u;
            rvne_text t;
            begin_ok(s, r, &t);
            rvne_line_str(&t, " slot=");
            rvne_line_str(&t, k_slot_name[sl->upd.slot]);
            rvne_line_str(&t, " size=");
            rvne_line_u64(&t, a);
            rvne_line_str(&t, " chunk=");
            rvne_line_u64(&t, chunk);
            reply_ok(s, r, &t);
        }
        return;
    }
    if (tok_is(r, 0, "UPDATE_CHUNK")) {
        const size_t cap = s->cfg.line_max * 3u / 16u * 4u;
        uint8_t *bytes = (uint8_t *)s->cfg.frame_buf;
        long got;
        if (r->n_tok != 4 || !rvne_line_parse_u32_0(r->tok[1], r->tok_len[1], &a) ||
            !rvne_line_parse_hex32(r->tok[2], r->tok_len[2], &crc)) {
            reply_err(s, r, "E_ARGS", "usage: UPDATE_CHUNK OFFSET CRC B64 (OFFSET decimal, CRC 8 hex digits)", 0,
                      0);
            return;
        }
        got = rvne_b64_decoded_len(r->tok[3], r->tok_len[3]);
        if (got <= 0 || (size_t)got > cap || rvne_b64_decode(bytes, cap, r->tok[3], r->tok_len[3]) != got) {
            reply_err(s, r, "E_BASE64", "the chunk is not valid base64 (RFC 4648 with padding), or empty", 0, 0);
            return;
        }
        rc = sl ? rvne_update_accept(sl, a, bytes, (uint32_t)got, crc, &expect) : RVNE_E_NO_UPDATE;
        if (rc != RVNE_OK) {
            if (rc == RVNE_E_UPDATE_SIZE) {
                rvne_text t;
                char num[12];
                num_text(&t, num, sl->upd.size);
                reply_err(s, r, "E_UPDATE_SIZE", "the chunk passes the update's SIZE; SIZE: ", num, 0);
                return;
            }
            update_err(s, r, rc, rc == RVNE_E_FLASH ? 0u : expect);
            return;
        }
        /* Acknowledged before it is written, so the host sends the next
         * chunk while the flash works; a failure is the next command's reply. */
        update_ok(s, r, " next=", expect, 0, 0);
        (void)rvne_update_write(sl, bytes, (uint32_t)got);
        return;
    }
    if (tok_is(r, 0, "UPDATE_COMMIT")) {
        int load = RVNE_OK;
        if (r->n_tok != 2 || !rvne_line_parse_hex32(r->tok[1], r->tok_len[1], &crc)) {
            reply_err(s, r, "E_ARGS", "usage: UPDATE_COMMIT CRC (8 hex digits)", 0, 0);
            return;
        }
        a = sl ? sl->upd.received : 0u;
        rc = sl ? rvne_update_commit(sl, crc, &load) : RVNE_E_NO_UPDATE;
        if (rc != RVNE_OK) {
            update_err(s, r, rc, a);
            return;
        }
        /* A new model: its caches start empty, like after RESET. */
        s->stats.resets++;
        {
            rvne_text t;
            begin_ok(s, r, &t);
            rvne_line_str(&t, " slot=");
            rvne_line_str(&t, k_slot_name[sl->active]);
            rvne_line_str(&t, " seq=");
            rvne_line_u64(&t, sl->current.seq);
            rvne_line_str(&t, " crc=");
            rvne_line_hex32(&t, sl->current.blob_crc);
            reply_ok(s, r, &t);
        }
        return;
    }
    if (tok_is(r, 0, "UPDATE_ABORT")) {
        if (r->n_tok != 1) {
            reply_err(s, r, "E_ARGS", "this command takes no arguments", 0, 0);
            return;
        }
        rvne_update_abort(sl);
        update_ok(s, r, 0, 0, 0, 0);
        return;
    }
    reply_err(s, r, "E_UNKNOWN_CMD", "unknown command; known updates: UPDATE_BEGIN UPDATE_CHUNK UPDATE_COMMIT "
              "UPDATE_ABORT", 0, 0);
}

/* ---- commands ------------------------------------------------------------------- */

static void t_dims(rvne_text *t, const rvne_header *h)
{
    rvne_line_u64(t, h->input_dim);
    rvne_line_str(t, ",");
    rvne_line_u64(t, h->n_q_heads);
    rvne_line_str(t, ",");
    rvne_line_u64(t, h->n_kv_heads);
    rvne_line_str(t, ",");
    rvne_line_u64(t, h->head_dim);
    rvne_line_str(t, ",");
    rvne_line_u64(t, h->n_layers);
    rvne_line_str(t, ",");
    rvne_line_u64(t, h->n_classes);
}

/* Dims mean something once the header is known to be RVNE v1 (rules 3-6);
 * before that they are whatever bytes the partition held. */
static int header_readable(const rvne_model *m)
{
    switch (m->status) {
    case RVNE_E_BAD_MAGIC: case RVNE_E_BAD_VERSION: case RVNE_E_BAD_FLAGS: case RVNE_E_RESERVED:
        return 0;
    default:
        return m->blob.hdr_valid;
    }
}

/* INFO's and the banner's dtype= (docs/protocol.md). */
static const char *dtype_name(const rvne_header *h)
{
    if (rvne_is_int8(h)) return "int8";
    return (h->flags & RVNE_FLAG_FP16) ? "fp16" : "fp32";
}

/* INFO's weights= (docs/protocol.md). */
static const char *weights_mode(const rvne_model *m)
{
    if (m->status != RVNE_OK) return "-";
    if (rvne_is_int8(&m->blob.hdr)) return m->expanded ? "int8-prepared" : "int8";
    if (!(m->blob.hdr.flags & RVNE_FLAG_FP16)) return "fp32";
    if (m->expanded) return "expanded";
    return m->fp16_expand ? "no-room" : "decoded";
}

static void cmd_info(rvne_server *s, const request *r)
{
    const rvne_model *m = s->model;
    const rvne_port *p = &s->cfg.port;
    int readable = header_readable(m);
    rvne_text t;
    begin_ok(s, r, &t);
    rvne_line_str(&t, " fw=" RVNE_FW_VERSION " proto=");
    rvne_line_u64(&t, RVNE_PROTO_VERSION);
    rvne_line_str(&t, " port=");
    rvne_line_str(&t, p->name ? p->name : "unknown");
    rvne_line_str(&t, m->status == RVNE_OK ? " status=loaded reason=" : " status=error reason=");
    rvne_line_str(&t, rvne_status_name(m->status));
    rvne_line_str(&t, " dims=");
    if (readable) t_dims(&t, &m->blob.hdr); else rvne_line_str(&t, "-");
    rvne_line_str(&t, " dtype=");
    rvne_line_str(&t, !readable ? "-" : dtype_name(&m->blob.hdr));
    rvne_line_str(&t, " crc=");
    if (m->blob.crc_valid) rvne_line_hex32(&t, m->blob.crc_stored); else rvne_line_str(&t, "-");
    rvne_line_str(&t, " blob_len=");
    if (m->blob.crc_valid) rvne_line_u64(&t, m->blob.total_len); else rvne_line_str(&t, "-");
    rvne_line_str(&t, " window=");
    rvne_line_u64(&t, m->window);
    rvne_line_str(&t, " arena=");
    rvne_line_u64(&t, m->arena_used);
    rvne_line_str(&t, " weights=");
    rvne_line_str(&t, weights_mode(m));
    rvne_line_str(&t, " line_max=");
    rvne_line_u64(&t, s->cfg.line_max);
    rvne_line_str(&t, " clock=");
    rvne_line_str(&t, p->now ? (p->clock_unit ? p->clock_unit : "none") : "none");
    t_slots(&t, s->cfg.slots);
    t_policy(&t, s);
    reply_ok(s, r, &t);
}

static void cmd_stats(rvne_server *s, const request *r)
{
    const rvne_stats *st = &s->stats;
    const rvne_port *p = &s->cfg.port;
    rvne_text t;
    begin_ok(s, r, &t);
    rvne_line_str(&t, " pushes=");
    rvne_line_u64(&t, st->pushes);
    rvne_line_str(&t, " resets=");
    rvne_line_u64(&t, st->resets);
    rvne_line_str(&t, " errors=");
    rvne_line_u64(&t, st->errors);
    rvne_line_str(&t, " drops=");
    rvne_line_u64(&t, st->drops);
    rvne_line_str(&t, " clock=");
    rvne_line_str(&t, p->now ? (p->clock_unit ? p->clock_unit : "none") : "none");
    rvne_line_str(&t, " push_last=");
    rvne_line_u64(&t, st->push_last);
    rvne_line_str(&t, " push_min=");
    rvne_line_u64(&t, st->push_min);
    rvne_line_str(&t, " push_max=");
    rvne_line_u64(&t, st->push_max);
    rvne_line_str(&t, " push_total=");
    rvne_line_u64(&t, st->push_total);
    rvne_line_str(&t, " write_errors=");
    rvne_line_u64(&t, st->write_errors);
    reply_ok(s, r, &t);
}

static void do_reset(rvne_server *s)
{
    rvne_head_reset(&s->model->head);
    s->stats.resets++;
    s->trace_valid = 0;
}

static void cmd_reset(rvne_server *s, const request *r)
{
    rvne_text t;
    if (!need_model(s, r)) return;
    do_reset(s);
    begin_ok(s, r, &t);
    reply_ok(s, r, &t);
}

static void cmd_window(rvne_server *s, const request *r)
{
    uint32_t w;
    size_t need = 0;
    int rc;
    rvne_text t;
    if (r->n_tok != 2 || !rvne_line_parse_u32(r->tok[1], r->tok_len[1], &w)) {
        reply_err(s, r, "E_ARGS", "usage: WINDOW W (W a decimal >= 1)", 0, 0);
        return;
    }
    if (!need_model(s, r)) return;
    rc = rvne_model_set_window(s->model, w);
    if (rc != RVNE_OK) {
        char buf[24];
        size_t n;
        rvne_text msg;
        int over_limit = s->model->max_window != 0u && w > s->model->max_window;
        msg.p = buf;
        msg.cap = sizeof buf - 1;
        msg.len = 0;
        msg.over = 0;
        if (over_limit) rvne_line_u64(&msg, s->model->max_window);
        else if (rvne_head_arena_size(&s->model->blob.hdr, w, &need) == RVNE_OK) rvne_line_u64(&msg, need);
        else rvne_line_str(&msg, "too many");
        n = msg.len;
        buf[n] = 0;
        if (over_limit)
            reply_err(s, r, "E_TOO_LARGE", "this port's largest window is ", buf, "; nothing changed");
        else
            reply_err(s, r, "E_TOO_LARGE", "this window needs arena bytes: ", buf,
                      " (more than the port has); nothing changed");
        return;
    }
    s->stats.resets++;
    s->trace_valid = 0;
    begin_ok(s, r, &t);
    rvne_line_str(&t, " window=");
    rvne_line_u64(&t, s->model->window);
    rvne_line_str(&t, " arena=");
    rvne_line_u64(&t, s->model->arena_used);
    reply_ok(s, r, &t);
}

static void put_f32_le(rvne_b64_enc *e, float f)
{
    uint32_t u;
    uint8_t b[4];
    memcpy(&u, &f, 4);
    b[0] = (uint8_t)u;
    b[1] = (uint8_t)(u >> 8);
    b[2] = (uint8_t)(u >> 16);
    b[3] = (uint8_t)(u >> 24);
    rvne_b64_enc_feed(e, b, 4);
}

static void cmd_logits(rvne_server *s, const request *r)
{
    const rvne_head *h = &s->model->head;
    rvne_b64_enc e;
    uint32_t i;
    long n;
    rvne_text t;
    if (!need_model(s, r)) return;
    if (h->state.n_pushed == 0u) {
        reply_err(s, r, "E_NO_FRAME", "no frame pushed since the last reset; PUSH first", 0, 0);
        return;
    }
    begin_ok(s, r, &t);
    rvne_line_str(&t, " logits=");
    rvne_b64_enc_start(&e, t.p + t.len, t.over ? 0 : t.cap - t.len);
    for (i = 0; i < h->config.n_classes; i++) put_f32_le(&e, rvne_head_logits(h)[i]);
    n = rvne_b64_enc_finish(&e);
    if (n < 0) t.over = 1; else t.len += (size_t)n;
    reply_ok(s, r, &t);
}

/* Decodes the PUSH tensor into frame_buf as floats; 0 after an error reply. */
static int decode_frames(rvne_server *s, const request *r, uint32_t n_frames)
{
    const size_t cap_floats = s->cfg.line_max * 3u / 16u + 1u;
    uint8_t *bytes = (uint8_t *)s->cfg.frame_buf;
    uint64_t want = (uint64_t)n_frames * s->model->head.config.dim * 4u;
    long got = rvne_b64_decoded_len(r->tok[2], r->tok_len[2]);
    size_t i;
    if (got < 0) {
        reply_err(s, r, "E_BASE64", "the tensor is not valid base64 (RFC 4648 with padding)", 0, 0);
        return 0;
    }
    if ((uint64_t)got != want || (size_t)got > cap_floats * 4u) {
        reply_err(s, r, "E_FRAME_SIZE", "the tensor is not N*D little-endian f32 values", 0, 0);
        return 0;
    }
    if (rvne_b64_decode(bytes, cap_floats * 4u, r->tok[2], r->tok_len[2]) != got) {
        reply_err(s, r, "E_BASE64", "the tensor could not be decoded", 0, 0);
        return 0;
    }
    /* In place: each float is read from its own four bytes before it is
     * written back over them, and memcpy keeps it free of aliasing. */
    for (i = 0; i < (size_t)got; i += 4) {
        uint32_t u = (uint32_t)bytes[i] | ((uint32_t)bytes[i + 1] << 8) |
                     ((uint32_t)bytes[i + 2] << 16) | ((uint32_t)bytes[i + 3] << 24);
        memcpy(bytes + i, &u, 4);
    }
    return 1;
}

static void time_push(rvne_server *s, uint64_t t0)
{
    const rvne_port *p = &s->cfg.port;
    rvne_stats *st = &s->stats;
    uint64_t dt = 0;
    st->pushes++;
    if (!p->now) return;
    dt = p->now(p->ctx) - t0;
    st->push_last = dt;
    if (st->pushes == 1u || dt < st->push_min) st->push_min = dt;
    if (dt > st->push_max) st->push_max = dt;
    st->push_total += dt;
}

static void cmd_push(rvne_server *s, const request *r, int reset_first)
{
    const rvne_port *p = &s->cfg.port;
    rvne_head *h = &s->model->head;
    uint32_t n_frames, i, j, pushes_after;
    uint64_t reply_len;
    rvne_b64_enc e;
    long n;
    rvne_text t;
    if (r->n_tok != 3 || !rvne_line_parse_u32(r->tok[1], r->tok_len[1], &n_frames)) {
        reply_err(s, r, "E_ARGS", "usage: PUSH N B64 / RUN N B64 (N a decimal >= 1)", 0, 0);
        return;
    }
    if (!need_model(s, r)) return;
    if (!decode_frames(s, r, n_frames)) return;

    /* Size the reply before pushing, so a reply that cannot be sent leaves
     * the caches as they were. */
    pushes_after = s->stats.pushes + n_frames; /* the P field wraps like the counter */
    reply_len = 1u + rvne_line_digits_u64(r->seq) + 6u /* " OK n=" */ + rvne_line_digits_u64(n_frames) +
                8u /* " pushes=" */ + rvne_line_digits_u64(pushes_after) + 8u /* " logits=" */ +
                ((uint64_t)n_frames * h->config.n_classes * 4u + 2u) / 3u * 4u + RVNE_LINE_TRAILER_LEN;
    if (reply_len > s->cfg.line_max) {
        reply_err(s, r, "E_REPLY_TOO_LONG", "N frames of logits do not fit line_max; nothing was pushed",
                  "; send fewer frames per request", 0);
        return;
    }

    if (reset_first) do_reset(s);
    begin_ok(s, r, &t);
    rvne_line_str(&t, " n=");
    rvne_line_u64(&t, n_frames);
    rvne_line_str(&t, " pushes=");
    rvne_line_u64(&t, pushes_after);
    rvne_line_str(&t, " logits=");
    rvne_b64_enc_start(&e, t.p + t.len, t.over ? 0 : t.cap - t.len);
    for (i = 0; i < n_frames; i++) {
        uint64_t t0 = p->now ? p->now(p->ctx) : 0u;
        int rc = rvne_head_push(h, s->cfg.frame_buf + (size_t)i * h->config.dim);
        if (rc != RVNE_OK) {
            /* The kernel refuses only a broken head, never a frame; report
             * it rather than pretend the frame went in. */
            reply_err(s, r, "E_NO_MODEL", "the kernel refused a frame: ", rvne_status_name(rc), 0);
            return;
        }
        time_push(s, t0);
        if (s->model->trace_on) {
            s->trace_valid = 1;
            s->trace_push = s->stats.pushes;
        }
        for (j = 0; j < h->config.n_classes; j++) put_f32_le(&e, rvne_head_logits(h)[j]);
    }
    n = rvne_b64_enc_finish(&e);
    if (n < 0) t.over = 1; else t.len += (size_t)n;
    reply_ok(s, r, &t);
}

static void trace_onoff(rvne_server *s, const request *r, int on)
{
    rvne_model *m = s->model;
    size_t floats = 0;
    rvne_text t;
    int rc = rvne_model_set_trace(m, on);
    if (rc != RVNE_OK) {
        char buf[24];
        size_t need = 0, n;
        (void)rvne_head_trace_floats(&m->blob.hdr, m->window, &floats);
        (void)rvne_head_arena_size(&m->blob.hdr, m->window, &need);
        n = rvne_line_fmt_u64(buf, (uint64_t)need + floats * sizeof(float));
        buf[n] = 0;
        reply_err(s, r, "E_TOO_LARGE", "no room for the trace: this window and the trace need arena bytes: ",
                  buf, " (more than the port has); tracing stays off");
        return;
    }
    s->trace_valid = 0;
    (void)rvne_head_trace_floats(&m->blob.hdr, m->window, &floats);
    begin_ok(s, r, &t);
    rvne_line_str(&t, on ? " trace=on floats=" : " trace=off floats=");
    rvne_line_u64(&t, floats);
    rvne_line_str(&t, " arena=");
    rvne_line_u64(&t, m->arena_used);
    reply_ok(s, r, &t);
}

/* TRACE ON | OFF | OFFSET: the latest push's trace points, from OFFSET, as
 * many as fit one reply (docs/protocol.md). */
static void cmd_trace(rvne_server *s, const request *r)
{
    const rvne_head *h = &s->model->head;
    uint32_t off, n, i;
    size_t floats = 0, room;
    rvne_b64_enc e;
    long len;
    rvne_text t;
    if (r->n_tok != 2) {
        reply_err(s, r, "E_ARGS", "usage: TRACE ON | TRACE OFF | TRACE OFFSET (OFFSET a decimal >= 0)", 0, 0);
        return;
    }
    if (!need_model(s, r)) return;
    if (tok_is(r, 1, "ON") || tok_is(r, 1, "OFF")) {
        trace_onoff(s, r, tok_is(r, 1, "ON"));
        return;
    }
    (void)rvne_head_trace_floats(&s->model->blob.hdr, s->model->window, &floats);
    if (!rvne_line_parse_u32_0(r->tok[1], r->tok_len[1], &off) || off >= floats) {
        reply_err(s, r, "E_ARGS", "usage: TRACE OFFSET with OFFSET below the trace's floats (TRACE ON says)", 0, 0);
        return;
    }
    if (!s->model->trace_on) {
        reply_err(s, r, "E_NO_TRACE", "tracing is off; send TRACE ON, then PUSH", 0, 0);
        return;
    }
    if (!s->trace_valid) {
        reply_err(s, r, "E_NO_FRAME", "no frame pushed since TRACE ON, the last reset or WINDOW; PUSH first", 0, 0);
        return;
    }
    begin_ok(s, r, &t);
    rvne_line_str(&t, " push=");
    rvne_line_u64(&t, s->trace_push);
    rvne_line_str(&t, " offset=");
    rvne_line_u64(&t, off);
    /* Base64 room left once " n=N floats=T data=" and the trailer are in:
     * 3 bytes per 4 characters, 4 bytes per float. */
    room = t.len + 4u + rvne_line_digits_u64(floats) + 8u + rvne_line_digits_u64(floats) + 6u + RVNE_LINE_TRAILER_LEN;
    room = room < s->cfg.line_max ? (s->cfg.line_max - room) / 4u * 3u / 4u : 0u;
    n = (uint32_t)(floats - off < room ? floats - off : room);
    if (n == 0u) {
        reply_err(s, r, "E_REPLY_TOO_LONG", "not one trace value fits line_max", 0, 0);
        return;
    }
    rvne_line_str(&t, " n=");
    rvne_line_u64(&t, n);
    rvne_line_str(&t, " floats=");
    rvne_line_u64(&t, floats);
    rvne_line_str(&t, " data=");
    rvne_b64_enc_start(&e, t.p + t.len, t.over ? 0 : t.cap - t.len);
    for (i = 0; i < n; i++) put_f32_le(&e, h->state.trace[off + i]);
    len = rvne_b64_enc_finish(&e);
    if (len < 0) t.over = 1; else t.len += (size_t)len;
    reply_ok(s, r, &t);
}

static void dispatch(rvne_server *s, const request *r)
{
    if (tok_is(r, 0, "PUSH")) { cmd_push(s, r, 0); return; }
    if (tok_is(r, 0, "RUN")) { cmd_push(s, r, 1); return; }
    if (tok_is(r, 0, "LOGITS") || tok_is(r, 0, "PING") || tok_is(r, 0, "INFO") ||
        tok_is(r, 0, "RESET") || tok_is(r, 0, "STATS")) {
        if (r->n_tok != 1) {
            reply_err(s, r, "E_ARGS", "this command takes no arguments", 0, 0);
            return;
        }
        if (tok_is(r, 0, "LOGITS")) cmd_logits(s, r);
        else if (tok_is(r, 0, "INFO")) cmd_info(s, r);
        else if (tok_is(r, 0, "RESET")) cmd_reset(s, r);
        else if (tok_is(r, 0, "STATS")) cmd_stats(s, r);
        else {
            rvne_text t;
            begin_ok(s, r, &t);
            reply_ok(s, r, &t);
        }
        return;
    }
    if (tok_is(r, 0, "WINDOW")) { cmd_window(s, r); return; }
    if (tok_is(r, 0, "TRACE")) { cmd_trace(s, r); return; }
    if (r->tok_len[0] > 7 && memcmp(r->tok[0], "UPDATE_", 7) == 0) { cmd_update(s, r); return; }
    reply_err(s, r, "E_UNKNOWN_CMD",
              "unknown command; known: PING INFO RESET PUSH RUN WINDOW LOGITS STATS TRACE UPDATE_*", 0, 0);
}

/* A complete line without its LF (and CR), len >= 1. */
static void handle_line(rvne_server *s, const char *line, size_t len)
{
    const char *star = 0;
    uint32_t crc_given = 0, crc_calc;
    size_t i, body, start;
    request r;

    if (line[0] != '>') {
        reply_untrusted(s, "E_MALFORMED", "a request starts with '>'", 0);
        return;
    }
    for (i = len; i > 0; i--)
        if (line[i - 1] == '*') {
            star = line + i - 1;
            break;
        }
    if (star == 0 || (size_t)(line + len - star) != 9u) {
        reply_untrusted(s, "E_CRC", "missing CRC: end the line with *XXXXXXXX", 0);
        return;
    }
    for (i = 1; i <= 8; i++) {
        int v = rvne_line_hexval(star[i]);
        if (v < 0) {
            reply_untrusted(s, "E_CRC", "the CRC is not 8 hex digits", 0);
            return;
        }
        crc_given = (crc_given << 4) | (uint32_t)v;
    }
    body = (size_t)(star - line);
    crc_calc = rvne_crc32(0u, (const uint8_t *)line, (uint32_t)body);
    if (crc_calc != crc_given) {
        reply_untrusted(s, "E_CRC", "CRC mismatch; resend the request", 0);
        return;
    }

    /* SEQ, then tokens separated by exactly one space. */
    for (i = 1; i < body && line[i] != ' '; i++) {}
    if (!rvne_line_parse_u32(line + 1, i - 1, &r.seq) || i >= body) {
        reply_untrusted(s, "E_MALFORMED", "expected >SEQ CMD with SEQ a decimal 1...4294967295", 0);
        return;
    }
    if (r.seq == s->last_seq) {
        /* A resend after a lost or damaged reply: answer without doing it twice. */
        emit(s, s->cfg.out_buf, s->last_reply_len);
        return;
    }
    r.n_tok = 0;
    start = i + 1;
    for (i = start; i <= body; i++) {
        if (i < body && line[i] != ' ') {
            unsigned char c = (unsigned char)line[i];
            if (c < 0x21u || c > 0x7Eu) {
                reply_err(s, &r, "E_MALFORMED", "a token holds a control or non-ASCII byte", 0, 0);
                return;
            }
            continue;
        }
        if (i == start) {
            reply_err(s, &r, "E_MALFORMED", "tokens are separated by exactly one space", 0, 0);
            return;
        }
        if (r.n_tok < MAX_TOKENS) {
            r.tok[r.n_tok] = line + start;
            r.tok_len[r.n_tok] = i - start;
        }
        r.n_tok++;
        start = i + 1;
    }
    dispatch(s, &r);
}

/* ---- server ---------------------------------------------------------------------- */

int rvne_server_init(rvne_server *s, const rvne_server_cfg *cfg, rvne_model *m)
{
    if (s == 0) return RVNE_E_INVAL;
    memset(s, 0, sizeof *s);
    if (cfg == 0 || m == 0 || cfg->port.write == 0 || cfg->line_buf == 0 || cfg->out_buf == 0 ||
        cfg->frame_buf == 0 || cfg->line_max < LINE_MIN || cfg->line_max > LINE_LIMIT)
        return RVNE_E_INVAL; /* s->model stays NULL: feed ignores everything */
    s->cfg = *cfg;
    s->model = m;
    return RVNE_OK;
}

void rvne_server_feed(rvne_server *s, const uint8_t *data, size_t n)
{
    size_t i;
    if (s == 0 || s->model == 0 || data == 0) return;
    for (i = 0; i < n; i++) {
        const uint8_t c = data[i];
        if (c != '\n') {
            /* One byte past line_max is kept so that a CR there can still
             * be dropped; a second one starts the discard. */
            if (s->overflow) continue;
            if (s->line_len <= s->cfg.line_max) s->cfg.line_buf[s->line_len++] = (char)c;
            else s->overflow = 1;
            continue;
        }
        {
            size_t len = s->line_len;
            s->line_len = 0;
            if (len > 0 && s->cfg.line_buf[len - 1] == '\r') len--;
            if (s->overflow || len > s->cfg.line_max) {
                s->overflow = 0;
                reply_untrusted(s, "E_TOO_LONG", "the line exceeded line_max and was discarded", 0);
                continue;
            }
            if (len > 0) handle_line(s, s->cfg.line_buf, len);
        }
    }
}

void rvne_server_count_drop(rvne_server *s, uint32_t n)
{
    if (s != 0) s->stats.drops += n;
}

/* ---- banner ----------------------------------------------------------------------- */

void rvne_print_banner(const rvne_port *port, const rvne_model *m)
{
    char buf[192];
    rvne_text t;
    if (port == 0 || port->write == 0 || m == 0) return;
    t.p = buf;
    t.cap = sizeof buf;
    t.len = 0;
    t.over = 0;
    rvne_line_str(&t, "rvne/" RVNE_FW_VERSION " ");
    rvne_line_str(&t, port->name ? port->name : "unknown");
    rvne_line_str(&t, " ready: ");
    rvne_line_str(&t, rvne_status_name(m->status));
    if (header_readable(m)) {
        rvne_line_str(&t, " dims=");
        t_dims(&t, &m->blob.hdr);
        rvne_line_str(&t, " dtype=");
        rvne_line_str(&t, dtype_name(&m->blob.hdr));
    }
    if (m->blob.crc_valid) {
        rvne_line_str(&t, " crc=");
        rvne_line_hex32(&t, m->blob.crc_stored);
    }
    rvne_line_str(&t, " window=");
    rvne_line_u64(&t, m->window);
    rvne_line_str(&t, "\n");
    /* 192 bytes hold the longest banner; a cut one still ends its line. */
    if (t.over) {
        t.len = t.cap - 1;
        buf[t.len++] = '\n';
    }
    (void)port->write(port->ctx, buf, t.len);
}
