/* The line protocol of docs/protocol.md, driven through rvne_server_feed with
 * a port that captures what the device writes: every command, every error
 * code, lines cut anywhere, over-long lines, the replay of a repeated SEQ,
 * WINDOW, a partition that is erased or corrupt, and a seeded loop of random
 * and mutated input. Every line the device writes is checked to be a
 * well-formed reply with a correct CRC, no longer than line_max. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "rvne/base64.h"
#include "rvne/crc32.h"
#include "rvne/head.h"
#include "rvne/proto.h"
#include "rvne/status.h"

#define LINE_MAX 1024u

/* ---- a blob built here, with finite deterministic weights ------------------------ */

typedef struct dims {
    uint16_t d, hq, hkv, hd, l, c;
} dims;

static uint32_t rng_state;

static uint32_t rng(void)
{
    /* xorshift32: seeded, so every failure is reproducible. */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

static float rng_f(void) { return (float)((int32_t)(rng() % 2001u) - 1000) / 1000.0f; }

static void put_f32(uint8_t *p, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    put32(p, u);
}

static uint64_t g_blob_store[8192];
static uint64_t g_blob2_store[8192];

/* Returns the blob's length, 0 if it does not fit the store. */
static size_t build_blob(uint8_t *p, size_t cap, dims m, uint32_t seed)
{
    rvne_header h;
    uint32_t wl, i;
    memset(&h, 0, sizeof h);
    h.input_dim = m.d;
    h.n_q_heads = m.hq;
    h.n_kv_heads = m.hkv;
    h.head_dim = m.hd;
    h.n_layers = m.l;
    h.n_classes = m.c;
    if (rvne_expected_weights_len(&h, &wl) != RVNE_OK || (size_t)wl + 28u > cap) return 0;
    put32(p, RVNE_MAGIC);
    put16(p + 4, 1u);
    p[6] = 0u;
    p[7] = 0u;
    put16(p + 8, m.d);
    put16(p + 10, m.hq);
    put16(p + 12, m.hkv);
    put16(p + 14, m.hd);
    put16(p + 16, m.l);
    put16(p + 18, m.c);
    put32(p + 20, wl);
    rng_state = seed;
    for (i = 0; i < wl; i += 4) put_f32(p + 24 + i, rng_f() * 0.5f);
    put32(p + 24 + wl, rvne_crc32(0u, p, 24u + wl));
    return 28u + wl;
}

/* ---- a port that captures ---------------------------------------------------- */

typedef struct capture {
    char buf[1 << 16];
    size_t len;
    int fail_writes;            /* > 0: that many writes return -1 */
    uint64_t clock;
} capture;

static capture g_cap;
static unsigned long g_err_replies; /* ERR replies seen by take_replies */

static int cap_write(void *ctx, const void *buf, size_t n)
{
    capture *c = ctx;
    if (c->fail_writes > 0) {
        c->fail_writes--;
        return -1;
    }
    if (n > sizeof c->buf - c->len) {
        fprintf(stderr, "capture overflow\n");
        abort();
    }
    memcpy(c->buf + c->len, buf, n);
    c->len += n;
    return 0;
}

/* A clock that advances 7 units per reading: a push takes exactly 7. */
static uint64_t cap_now(void *ctx)
{
    capture *c = ctx;
    c->clock += 7u;
    return c->clock;
}

static char g_line[LINE_MAX + 1];
static char g_out[LINE_MAX + 16];
static float g_frames[LINE_MAX * 3 / 16 + 1];
static uint64_t g_arena[(1u << 20) / 8];
static uint64_t g_ref_arena[(1u << 20) / 8];

static rvne_server_cfg make_cfg(int with_clock)
{
    rvne_server_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.port.ctx = &g_cap;
    cfg.port.name = "test";
    cfg.port.write = cap_write;
    cfg.port.now = with_clock ? cap_now : NULL;
    cfg.port.clock_unit = with_clock ? "cycles" : "none";
    cfg.line_buf = g_line;
    cfg.line_max = LINE_MAX;
    cfg.out_buf = g_out;
    cfg.frame_buf = g_frames;
    return cfg;
}

/* ---- replies ------------------------------------------------------------------- */

typedef struct reply {
    int valid;                  /* starts with '<', CRC right, fits line_max */
    uint32_t seq;
    int ok;
    char code[32];              /* ERR replies */
    char body[2048 + 16];       /* the line before '*', NUL-terminated */
} reply;

static size_t g_line_max = LINE_MAX; /* of the server under test */

static int parse_reply(const char *line, size_t len, reply *r)
{
    size_t star;
    unsigned long long seq = 0;
    const char *p;
    uint32_t crc = 0;
    char hex[9];
    memset(r, 0, sizeof *r);
    if (len < 12 || len > g_line_max || len > sizeof r->body || line[0] != '<') return 0;
    star = len - 9;
    if (line[star] != '*') return 0;
    memcpy(hex, line + star + 1, 8);
    hex[8] = 0;
    if (strspn(hex, "0123456789ABCDEF") != 8) return 0; /* the device writes upper case */
    crc = (uint32_t)strtoul(hex, NULL, 16);
    if (crc != rvne_crc32(0u, (const uint8_t *)line, (uint32_t)star)) return 0;
    memcpy(r->body, line, star);
    r->body[star] = 0;
    for (p = r->body + 1; *p >= '0' && *p <= '9'; p++) seq = seq * 10u + (unsigned)(*p - '0');
    if (p == r->body + 1 || *p != ' ' || seq > 0xFFFFFFFFull) return 0;
    r->seq = (uint32_t)seq;
    if (strncmp(p, " OK", 3) == 0 && (p[3] == 0 || p[3] == ' ')) {
        r->ok = 1;
    } else if (strncmp(p, " ERR E_", 7) == 0) {
        size_t n = strcspn(p + 5, " ");
        if (n >= sizeof r->code) return 0;
        memcpy(r->code, p + 5, n);
    } else {
        return 0;
    }
    r->valid = 1;
    return 1;
}

/* Every complete line captured so far must be a valid reply (the server
 * prints nothing else); returns the number of lines, the last in *last. */
static int take_replies(reply *last)
{
    size_t start = 0, i;
    int n = 0;
    reply r;
    for (i = 0; i < g_cap.len; i++) {
        if (g_cap.buf[i] != '\n') continue;
        if (!parse_reply(g_cap.buf + start, i - start, &r)) {
            fprintf(stderr, "bad device line: %.*s\n", (int)(i - start < 200 ? i - start : 200),
                    g_cap.buf + start);
            CHECK(0);
        }
        if (r.valid && !r.ok) g_err_replies++;
        if (last) *last = r;
        n++;
        start = i + 1;
    }
    CHECK_EQ(start, g_cap.len); /* nothing after the last LF */
    g_cap.len = 0;
    return n;
}

/* The value of key= in an OK reply body, copied into out ("" if absent). */
static const char *field(const reply *r, const char *key, char *out, size_t cap)
{
    char pat[40];
    const char *p, *e;
    size_t n;
    out[0] = 0;
    snprintf(pat, sizeof pat, " %s=", key);
    p = strstr(r->body, pat);
    if (!p) return out;
    p += strlen(pat);
    e = strchr(p, ' ');
    n = e ? (size_t)(e - p) : strlen(p);
    if (n >= cap) n = cap - 1;
    memcpy(out, p, n);
    out[n] = 0;
    return out;
}

static unsigned long long field_u(const reply *r, const char *key)
{
    char v[32];
    field(r, key, v, sizeof v);
    return v[0] ? strtoull(v, NULL, 10) : 0xFFFFFFFFFFFFFFFFull;
}

/* ---- requests ------------------------------------------------------------------ */

static char g_req[LINE_MAX * 8];

/* body ("PING", "PUSH 1 ...") sealed as >SEQ body*CRC\n into g_req. */
static size_t seal(uint32_t seq, const char *body)
{
    int n = snprintf(g_req, sizeof g_req, ">%lu %s", (unsigned long)seq, body);
    uint32_t crc = rvne_crc32(0u, (const uint8_t *)g_req, (uint32_t)n);
    n += snprintf(g_req + n, sizeof g_req - (size_t)n, "*%08X\n", (unsigned)crc);
    return (size_t)n;
}

static void feed_str(rvne_server *s, const char *text, size_t n)
{
    rvne_server_feed(s, (const uint8_t *)text, n);
}

/* Sends one sealed request; exactly one reply must come back. */
static reply talk(rvne_server *s, uint32_t seq, const char *body)
{
    reply r;
    size_t n = seal(seq, body);
    memset(&r, 0, sizeof r);
    feed_str(s, g_req, n);
    CHECK_EQ(take_replies(&r), 1);
    return r;
}

static void expect_err(rvne_server *s, uint32_t seq, const char *body, const char *code, uint32_t want_seq)
{
    reply r = talk(s, seq, body);
    CHECK(r.valid && !r.ok);
    if (strcmp(r.code, code) != 0) {
        fprintf(stderr, "request '%s': got %s, want %s (%s)\n", body, r.code, code, r.body);
        CHECK(0);
    }
    CHECK_EQ(r.seq, want_seq);
}

static char g_b64[LINE_MAX * 8];

static const char *frames_b64(const float *f, size_t n)
{
    static uint8_t bytes[LINE_MAX * 4];
    size_t i;
    long len;
    for (i = 0; i < n; i++) put_f32(bytes + 4 * i, f[i]);
    len = rvne_b64_encode(g_b64, sizeof g_b64 - 1, bytes, n * 4);
    CHECK(len >= 0);
    g_b64[len < 0 ? 0 : len] = 0;
    return g_b64;
}

/* Logits of an OK PUSH/RUN/LOGITS reply as floats; returns the count. */
static size_t reply_logits(const reply *r, float *out, size_t cap)
{
    static char text[2048 + 16];
    static uint8_t bytes[2048];
    long n;
    size_t i;
    field(r, "logits", text, sizeof text);
    n = rvne_b64_decode(bytes, sizeof bytes, text, strlen(text));
    if (n < 0 || n % 4 != 0 || (size_t)n / 4 > cap) return 0;
    for (i = 0; i < (size_t)n / 4; i++) {
        uint32_t u = (uint32_t)bytes[4 * i] | ((uint32_t)bytes[4 * i + 1] << 8) |
                     ((uint32_t)bytes[4 * i + 2] << 16) | ((uint32_t)bytes[4 * i + 3] << 24);
        memcpy(&out[i], &u, 4);
    }
    return (size_t)n / 4;
}

/* ---- the cases --------------------------------------------------------------------- */

static const dims k_dims = {4, 2, 1, 2, 2, 3};

static void load_ok(rvne_model *m, const uint8_t *blob, size_t len, uint32_t window)
{
    CHECK_STATUS(rvne_model_load(m, blob, len, window, g_arena, sizeof g_arena, NULL), RVNE_OK);
}

static void test_init_and_banner(const uint8_t *blob, size_t len)
{
    rvne_model m;
    rvne_server s;
    rvne_server_cfg cfg = make_cfg(0);
    char want[128];

    load_ok(&m, blob, len, 5);
    cfg.line_max = 1023;
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_E_INVAL);
    feed_str(&s, ">1 PING*59D3F528\n", 17);
    CHECK_EQ(g_cap.len, 0); /* an unusable server stays silent */
    cfg = make_cfg(0);
    cfg.out_buf = NULL;
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_E_INVAL);
    CHECK_STATUS(rvne_server_init(&s, NULL, &m), RVNE_E_INVAL);
    cfg = make_cfg(0);
    CHECK_STATUS(rvne_server_init(&s, &cfg, NULL), RVNE_E_INVAL);
    CHECK_STATUS(rvne_server_init(NULL, &cfg, &m), RVNE_E_INVAL);

    g_cap.len = 0;
    rvne_print_banner(&cfg.port, &m);
    snprintf(want, sizeof want, "rvne/%s test ready: OK dims=4,2,1,2,2,3 dtype=fp32 crc=%08X window=5\n",
             RVNE_FW_VERSION, (unsigned)rvne_crc32(0u, blob, (uint32_t)len - 4u));
    CHECK_EQ(g_cap.len, strlen(want));
    CHECK(g_cap.len == strlen(want) && memcmp(g_cap.buf, want, g_cap.len) == 0);
    g_cap.len = 0;
}

static void test_model_load(const uint8_t *blob, size_t len)
{
    rvne_model m;
    rvne_load_cfg lc;
    size_t need;
    rvne_header h;
    memset(&lc, 0, sizeof lc);
    CHECK_STATUS(rvne_model_load(NULL, blob, len, 5, g_arena, sizeof g_arena, NULL), RVNE_E_INVAL);
    /* No partition at all (part NULL) is its own reason; an existing but
     * empty one is rule 1's E_TOO_SHORT. */
    CHECK_STATUS(rvne_model_load(&m, NULL, 0, 5, g_arena, sizeof g_arena, &lc), RVNE_E_NO_PARTITION);
    CHECK_STATUS(m.status, RVNE_E_NO_PARTITION);
    CHECK(!m.blob.hdr_valid && !m.blob.crc_valid);
    CHECK_STATUS(rvne_model_load(&m, NULL, len, 5, g_arena, sizeof g_arena, &lc), RVNE_E_NO_PARTITION);
    CHECK_STATUS(rvne_model_load(&m, blob, 0, 5, g_arena, sizeof g_arena, &lc), RVNE_E_TOO_SHORT);
    CHECK_STATUS(m.status, RVNE_E_TOO_SHORT);
    CHECK(strcmp(rvne_status_name(RVNE_E_NO_PARTITION), "E_NO_PARTITION") == 0);
    CHECK_STATUS(rvne_model_load(&m, blob, len, 0, g_arena, sizeof g_arena, &lc), RVNE_E_INVAL);
    lc.limits.max_window = 10;
    CHECK_STATUS(rvne_model_load(&m, blob, len, 11, g_arena, sizeof g_arena, &lc), RVNE_E_TOO_LARGE);
    CHECK_STATUS(rvne_model_load(&m, blob, len, 10, g_arena, sizeof g_arena, &lc), RVNE_OK);
    /* The arena bounds the window: exactly enough loads, a byte less does not. */
    memcpy(&h, &m.blob.hdr, sizeof h);
    CHECK_STATUS(rvne_head_arena_size(&h, 10, &need), RVNE_OK);
    CHECK_EQ(m.arena_used, need);
    CHECK_STATUS(rvne_model_load(&m, blob, len, 10, g_arena, need, &lc), RVNE_OK);
    CHECK_STATUS(rvne_model_load(&m, blob, len, 10, g_arena, need - 1, &lc), RVNE_E_TOO_LARGE);
    CHECK_STATUS(m.status, RVNE_E_TOO_LARGE);
    CHECK_STATUS(rvne_model_set_window(&m, 3), RVNE_E_INVAL); /* no model */
    CHECK_STATUS(rvne_model_load(&m, blob, len, 10, g_arena, need, &lc), RVNE_OK);
    CHECK_STATUS(rvne_model_set_window(&m, 11), RVNE_E_TOO_LARGE);
    CHECK_EQ(m.window, 10);
    CHECK_STATUS(rvne_model_set_window(&m, 0), RVNE_E_INVAL);
    CHECK_STATUS(rvne_model_set_window(&m, 9), RVNE_OK);
    CHECK_EQ(m.window, 9);
    CHECK(m.arena_used < need);
}

/* WINDOW obeys the port's limits.max_window, not only the arena: with an
 * arena far larger than the limit needs, a window above it is refused and
 * nothing changes. */
static void test_window_max(const uint8_t *blob, size_t len)
{
    rvne_model m;
    rvne_server s;
    rvne_server_cfg cfg = make_cfg(0);
    rvne_load_cfg lc;
    reply r;
    size_t need, used;
    memset(&lc, 0, sizeof lc);
    lc.limits.max_window = 6;
    CHECK_STATUS(rvne_model_load(&m, blob, len, 4, g_arena, sizeof g_arena, &lc), RVNE_OK);
    CHECK_EQ(m.max_window, 6);
    CHECK_STATUS(rvne_head_arena_size(&m.blob.hdr, 7, &need), RVNE_OK);
    CHECK(need <= sizeof g_arena); /* the arena alone would take window 7 */
    used = m.arena_used;
    CHECK_STATUS(rvne_model_set_window(&m, 7), RVNE_E_TOO_LARGE);
    CHECK_EQ(m.window, 4);
    CHECK_EQ(m.arena_used, used);
    CHECK_STATUS(rvne_model_set_window(&m, 6), RVNE_OK);
    CHECK_EQ(m.window, 6);

    /* The same through the protocol: E_TOO_LARGE naming the limit, and the
     * head keeps its window and its frames. */
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    CHECK(talk(&s, 1, "PUSH 1 AAAAAAAAAAAAAAAAAAAAAA==").ok);
    r = talk(&s, 2, "WINDOW 7");
    CHECK(r.valid && !r.ok && strcmp(r.code, "E_TOO_LARGE") == 0);
    CHECK(strstr(r.body, "largest window is 6") != NULL);
    CHECK(talk(&s, 3, "LOGITS").ok);
    r = talk(&s, 4, "INFO");
    CHECK_EQ(field_u(&r, "window"), 6);
    r = talk(&s, 5, "WINDOW 5");
    CHECK(r.ok);
    CHECK_EQ(field_u(&r, "window"), 5);

    /* No limit (0): only the arena bounds the window. */
    lc.limits.max_window = 0;
    CHECK_STATUS(rvne_model_load(&m, blob, len, 4, g_arena, sizeof g_arena, &lc), RVNE_OK);
    CHECK_EQ(m.max_window, 0);
    CHECK_STATUS(rvne_model_set_window(&m, 7), RVNE_OK);
    /* A NULL cfg is no limit either. */
    CHECK_STATUS(rvne_model_load(&m, blob, len, 4, g_arena, sizeof g_arena, NULL), RVNE_OK);
    CHECK_EQ(m.max_window, 0);
    g_cap.len = 0;
}

static void test_ping_info_stats(const uint8_t *blob, size_t len)
{
    rvne_model m;
    rvne_server s;
    rvne_server_cfg cfg = make_cfg(1);
    reply r;
    char v[64], want[16];
    size_t need;

    load_ok(&m, blob, len, 5);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);

    /* The example of docs/protocol.md, byte for byte. */
    feed_str(&s, ">1 PING*59D3F528\n", 17);
    CHECK_EQ(g_cap.len, 15);
    CHECK(memcmp(g_cap.buf, "<1 OK*44C6B06C\n", 15) == 0);
    g_cap.len = 0;
    /* Lower-case CRC digits are accepted too. */
    feed_str(&s, ">2 PING*df478786\n", 17);
    CHECK(take_replies(&r) == 1 && r.ok && r.seq == 2);

    r = talk(&s, 3, "INFO");
    CHECK(r.ok && r.seq == 3);
    CHECK(strcmp(field(&r, "fw", v, sizeof v), RVNE_FW_VERSION) == 0);
    CHECK(strcmp(field(&r, "port", v, sizeof v), "test") == 0);
    CHECK(strcmp(field(&r, "status", v, sizeof v), "loaded") == 0);
    CHECK(strcmp(field(&r, "reason", v, sizeof v), "OK") == 0);
    CHECK(strcmp(field(&r, "dims", v, sizeof v), "4,2,1,2,2,3") == 0);
    CHECK(strcmp(field(&r, "dtype", v, sizeof v), "fp32") == 0);
    snprintf(want, sizeof want, "%08X", (unsigned)rvne_crc32(0u, blob, (uint32_t)len - 4u));
    CHECK(strcmp(field(&r, "crc", v, sizeof v), want) == 0);
    CHECK_EQ(field_u(&r, "blob_len"), len);
    CHECK_EQ(field_u(&r, "window"), 5);
    CHECK_STATUS(rvne_head_arena_size(&m.blob.hdr, 5, &need), RVNE_OK);
    CHECK_EQ(field_u(&r, "arena"), need);
    CHECK_EQ(field_u(&r, "line_max"), LINE_MAX);
    CHECK(strcmp(field(&r, "clock", v, sizeof v), "cycles") == 0);

    r = talk(&s, 4, "STATS");
    CHECK(r.ok);
    CHECK_EQ(field_u(&r, "pushes"), 0);
    CHECK_EQ(field_u(&r, "errors"), 0);
    rvne_server_count_drop(&s, 3);
    expect_err(&s, 5, "BOGUS", "E_UNKNOWN_CMD", 5);
    r = talk(&s, 6, "PUSH 2 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    CHECK(r.ok); /* 2 frames of 4 zero floats */
    r = talk(&s, 7, "RESET");
    CHECK(r.ok);
    r = talk(&s, 8, "STATS");
    CHECK_EQ(field_u(&r, "pushes"), 2);
    CHECK_EQ(field_u(&r, "resets"), 1);
    CHECK_EQ(field_u(&r, "errors"), 1);
    CHECK_EQ(field_u(&r, "drops"), 3);
    CHECK(strcmp(field(&r, "clock", v, sizeof v), "cycles") == 0);
    CHECK_EQ(field_u(&r, "push_last"), 7);
    CHECK_EQ(field_u(&r, "push_min"), 7);
    CHECK_EQ(field_u(&r, "push_max"), 7);
    CHECK_EQ(field_u(&r, "push_total"), 14);
    CHECK_EQ(field_u(&r, "write_errors"), 0);

    /* A write the port could not make is counted and the next one works. */
    g_cap.fail_writes = 1;
    feed_str(&s, g_req, seal(9, "PING"));
    CHECK_EQ(g_cap.len, 0);
    r = talk(&s, 10, "STATS");
    CHECK_EQ(field_u(&r, "write_errors"), 1);
    CHECK(r.ok);
}

static void test_push_matches_kernel(const uint8_t *blob, size_t len)
{
    rvne_model m, ref;
    rvne_server s;
    rvne_server_cfg cfg = make_cfg(0);
    float frames[8 * 4], want[8 * 3], got[64];
    char body[LINE_MAX];
    reply r;
    size_t i, j, n;

    load_ok(&m, blob, len, 3);
    CHECK_STATUS(rvne_model_load(&ref, blob, len, 3, g_ref_arena, sizeof g_ref_arena, NULL), RVNE_OK);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    rng_state = 1234u;
    for (i = 0; i < 8 * 4; i++) frames[i] = rng_f() * 3.0f;
    /* The same kernel, called directly: the wire must carry its exact bits. */
    for (i = 0; i < 8; i++) {
        CHECK_STATUS(rvne_head_push(&ref.head, frames + 4 * i), RVNE_OK);
        memcpy(want + 3 * i, rvne_head_logits(&ref.head), 3 * sizeof(float));
    }

    expect_err(&s, 1, "LOGITS", "E_NO_FRAME", 1);
    snprintf(body, sizeof body, "PUSH 5 %s", frames_b64(frames, 5 * 4));
    r = talk(&s, 2, body);
    CHECK(r.ok);
    CHECK_EQ(field_u(&r, "n"), 5);
    CHECK_EQ(field_u(&r, "pushes"), 5);
    n = reply_logits(&r, got, 64);
    CHECK_EQ(n, 15);
    CHECK(n == 15 && memcmp(got, want, 15 * sizeof(float)) == 0);

    /* The rest, one byte per feed call: lines may arrive in any pieces. */
    snprintf(body, sizeof body, "PUSH 3 %s", frames_b64(frames + 5 * 4, 3 * 4));
    n = seal(3, body);
    for (i = 0; i < n; i++) feed_str(&s, g_req + i, 1);
    CHECK_EQ(take_replies(&r), 1);
    CHECK(r.ok);
    CHECK_EQ(field_u(&r, "pushes"), 8);
    n = reply_logits(&r, got, 64);
    CHECK(n == 9 && memcmp(got, want + 15, 9 * sizeof(float)) == 0);

    r = talk(&s, 4, "LOGITS");
    CHECK(r.ok);
    n = reply_logits(&r, got, 64);
    CHECK(n == 3 && memcmp(got, want + 21, 3 * sizeof(float)) == 0);

    /* RUN starts from empty caches: its logits are those of a fresh head. */
    snprintf(body, sizeof body, "RUN 2 %s", frames_b64(frames, 2 * 4));
    r = talk(&s, 5, body);
    CHECK(r.ok);
    CHECK_EQ(field_u(&r, "pushes"), 10);
    n = reply_logits(&r, got, 64);
    CHECK(n == 6 && memcmp(got, want, 6 * sizeof(float)) == 0);

    /* CRLF line ends. */
    n = seal(6, "LOGITS");
    g_req[n - 1] = '\r';
    g_req[n] = '\n';
    feed_str(&s, g_req, n + 1);
    CHECK_EQ(take_replies(&r), 1);
    n = reply_logits(&r, got, 64);
    CHECK(r.ok && n == 3 && memcmp(got, want + 3, 3 * sizeof(float)) == 0);

    /* RESET empties the caches: no logits until the next push. */
    CHECK(talk(&s, 7, "RESET").ok);
    expect_err(&s, 8, "LOGITS", "E_NO_FRAME", 8);

    /* WINDOW 1 then the same frames: the kernel at window 1. */
    r = talk(&s, 9, "WINDOW 1");
    CHECK(r.ok);
    CHECK_EQ(field_u(&r, "window"), 1);
    CHECK_EQ(field_u(&r, "arena"), m.arena_used);
    CHECK_STATUS(rvne_model_set_window(&ref, 1), RVNE_OK);
    CHECK_EQ(field_u(&r, "arena"), ref.arena_used);
    snprintf(body, sizeof body, "PUSH 4 %s", frames_b64(frames, 4 * 4));
    r = talk(&s, 10, body);
    n = reply_logits(&r, got, 64);
    CHECK_EQ(n, 12);
    for (i = 0; i < 4 && n == 12; i++) {
        CHECK_STATUS(rvne_head_push(&ref.head, frames + 4 * i), RVNE_OK);
        for (j = 0; j < 3; j++) CHECK(got[3 * i + j] == rvne_head_logits(&ref.head)[j]);
    }
    /* A window the arena cannot hold changes nothing: LOGITS is still there. */
    expect_err(&s, 11, "WINDOW 4294967295", "E_TOO_LARGE", 11);
    r = talk(&s, 12, "LOGITS");
    n = reply_logits(&r, got, 64);
    CHECK(r.ok && n == 3 && memcmp(got, rvne_head_logits(&ref.head), 3 * sizeof(float)) == 0);
    r = talk(&s, 13, "INFO");
    CHECK_EQ(field_u(&r, "window"), 1);
}

static void test_errors(const uint8_t *blob, size_t len)
{
    static char big[LINE_MAX * 6];
    rvne_model m;
    rvne_server s;
    rvne_server_cfg cfg = make_cfg(0);
    reply r;
    size_t n;

    load_ok(&m, blob, len, 4);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    g_err_replies = 0;

    /* Empty lines and bare CRs are ignored. */
    feed_str(&s, "\n\r\n\n", 4);
    CHECK_EQ(g_cap.len, 0);

    /* E_MALFORMED: bad sigil (untrusted, SEQ 0), bad SEQ, token syntax. */
    feed_str(&s, "hello world\n", 12);
    CHECK(take_replies(&r) == 1 && !r.ok && strcmp(r.code, "E_MALFORMED") == 0 && r.seq == 0);
    feed_str(&s, g_req, seal(1, "PING"));
    g_cap.len = 0;
    {
        static const char *const bad_seq[] = {">0 PING", ">01 PING", ">4294967296 PING", ">x PING",
                                              ">PING", ">", "> PING", ">-1 PING", ">1"};
        size_t i;
        for (i = 0; i < sizeof bad_seq / sizeof bad_seq[0]; i++) {
            int k = snprintf(g_req, sizeof g_req, "%s", bad_seq[i]);
            k += snprintf(g_req + k, sizeof g_req - (size_t)k, "*%08X\n",
                          (unsigned)rvne_crc32(0u, (const uint8_t *)g_req, (uint32_t)k));
            feed_str(&s, g_req, (size_t)k);
            CHECK(take_replies(&r) == 1 && !r.ok && strcmp(r.code, "E_MALFORMED") == 0 && r.seq == 0);
        }
    }
    feed_str(&s, g_req, seal(4294967295u, "PING"));
    CHECK(take_replies(&r) == 1 && r.ok && r.seq == 4294967295u);
    expect_err(&s, 2, "PUSH  1 AAAA", "E_MALFORMED", 2);
    expect_err(&s, 3, "PING ", "E_MALFORMED", 3);
    expect_err(&s, 4, "", "E_MALFORMED", 4);
    expect_err(&s, 5, "PI\tNG", "E_MALFORMED", 5);
    expect_err(&s, 6, "PI\x80NG", "E_MALFORMED", 6);

    /* E_CRC: missing, short, not hex, wrong. Always SEQ 0. */
    feed_str(&s, ">7 PING\n", 8);
    CHECK(take_replies(&r) == 1 && strcmp(r.code, "E_CRC") == 0 && r.seq == 0);
    feed_str(&s, ">7 PING*59D3F52\n", 16);
    CHECK(take_replies(&r) == 1 && strcmp(r.code, "E_CRC") == 0 && r.seq == 0);
    feed_str(&s, ">7 PING*59D3F52G\n", 17);
    CHECK(take_replies(&r) == 1 && strcmp(r.code, "E_CRC") == 0 && r.seq == 0);
    n = seal(7, "PING");
    g_req[3] = 'O'; /* one flipped byte */
    feed_str(&s, g_req, n);
    CHECK(take_replies(&r) == 1 && strcmp(r.code, "E_CRC") == 0 && r.seq == 0);

    expect_err(&s, 8, "HELLO", "E_UNKNOWN_CMD", 8);
    expect_err(&s, 9, "ping", "E_UNKNOWN_CMD", 9);

    /* E_ARGS */
    expect_err(&s, 10, "PING 1", "E_ARGS", 10);
    expect_err(&s, 11, "INFO x", "E_ARGS", 11);
    expect_err(&s, 12, "PUSH 1", "E_ARGS", 12);
    expect_err(&s, 13, "PUSH 0 AAAA", "E_ARGS", 13);
    expect_err(&s, 14, "PUSH x AAAAAAAAAAAAAAAAAAAAAA==", "E_ARGS", 14);
    expect_err(&s, 15, "PUSH 1 AAAAAAAAAAAAAAAAAAAAAA== x", "E_ARGS", 15);
    expect_err(&s, 16, "RUN 01 AAAAAAAAAAAAAAAAAAAAAA==", "E_ARGS", 16);
    expect_err(&s, 17, "WINDOW", "E_ARGS", 17);
    expect_err(&s, 18, "WINDOW 0", "E_ARGS", 18);
    expect_err(&s, 19, "WINDOW -1", "E_ARGS", 19);
    expect_err(&s, 20, "WINDOW 4294967296", "E_ARGS", 20);
    expect_err(&s, 21, "LOGITS 1", "E_ARGS", 21);

    /* E_BASE64: one frame is 16 bytes = 24 characters. */
    expect_err(&s, 22, "PUSH 1 AAAAAAAAAAAAAAAAAAAAA===", "E_BASE64", 22);
    expect_err(&s, 23, "PUSH 1 AAAAAAAAAAAAAAAAAAAAAA=", "E_BASE64", 23);
    expect_err(&s, 24, "PUSH 1 AAAAAAAAAAAAAAAAAAAAAB==", "E_BASE64", 24); /* stray low bits */
    expect_err(&s, 25, "PUSH 1 AAAAAAAAAAA-AAAAAAAAAA==", "E_BASE64", 25);
    expect_err(&s, 26, "PUSH 1 AAAAAAAAAAA=AAAAAAAAAA==", "E_BASE64", 26);
    CHECK(talk(&s, 27, "PUSH 1 AAAAAAAAAAAAAAAAAAAAAA==").ok);

    /* E_FRAME_SIZE: valid base64, wrong count. */
    expect_err(&s, 28, "PUSH 2 AAAAAAAAAAAAAAAAAAAAAA==", "E_FRAME_SIZE", 28);
    expect_err(&s, 29, "PUSH 1 AAAAAAAAAAAAAAAAAAAA", "E_FRAME_SIZE", 29);
    expect_err(&s, 30, "PUSH 4294967295 AAAAAAAAAAAAAAAAAAAAAA==", "E_FRAME_SIZE", 30);

    /* E_TOO_LARGE */
    expect_err(&s, 31, "WINDOW 100000000", "E_TOO_LARGE", 31);

    /* A line of exactly line_max bytes is read; one more byte is too long,
     * unless it is the CR of a CRLF. */
    n = (size_t)snprintf(g_req, sizeof g_req, ">32 ");
    memcpy(big, g_req, n);
    memset(big + n, 'Q', LINE_MAX - 9 - n);
    n = LINE_MAX - 9;
    n += (size_t)snprintf(big + n, 10, "*%08X", (unsigned)rvne_crc32(0u, (uint8_t *)big, (uint32_t)n));
    CHECK_EQ(n, LINE_MAX);
    big[n] = '\n';
    feed_str(&s, big, n + 1);
    CHECK(take_replies(&r) == 1 && strcmp(r.code, "E_UNKNOWN_CMD") == 0 && r.seq == 32);
    big[2] = '3'; /* SEQ 33, CRC fixed below */
    snprintf(big + LINE_MAX - 9, 10, "*%08X", (unsigned)rvne_crc32(0u, (uint8_t *)big, LINE_MAX - 9));
    big[LINE_MAX] = '\r';
    big[LINE_MAX + 1] = '\n';
    feed_str(&s, big, LINE_MAX + 2);
    CHECK(take_replies(&r) == 1 && strcmp(r.code, "E_UNKNOWN_CMD") == 0 && r.seq == 33);
    memset(big, 'Q', LINE_MAX + 1);
    big[LINE_MAX + 1] = '\n';
    feed_str(&s, big, LINE_MAX + 2);
    CHECK(take_replies(&r) == 1 && strcmp(r.code, "E_TOO_LONG") == 0 && r.seq == 0);
    /* Far longer, in pieces, then a good request right behind it. */
    memset(big, 'A', sizeof big);
    feed_str(&s, big, sizeof big);
    feed_str(&s, big, sizeof big);
    CHECK_EQ(g_cap.len, 0);
    n = seal(34, "PING");
    memcpy(big, "tail\n", 5);
    memcpy(big + 5, g_req, n);
    feed_str(&s, big, n + 5);
    CHECK_EQ(take_replies(&r), 2);
    CHECK(r.ok && r.seq == 34);

    /* A half line joins the next one into garbage; the one after works. */
    feed_str(&s, ">35 PI", 6);
    CHECK_EQ(g_cap.len, 0);
    feed_str(&s, g_req, seal(36, "PING"));
    CHECK(take_replies(&r) == 1 && !r.ok);
    CHECK(talk(&s, 37, "PING").ok);

    r = talk(&s, 38, "STATS");
    CHECK(g_err_replies >= 40);
    CHECK_EQ(field_u(&r, "errors"), g_err_replies);
}

static void test_replay(const uint8_t *blob, size_t len)
{
    static char first[LINE_MAX + 16];
    rvne_model m;
    rvne_server s;
    rvne_server_cfg cfg = make_cfg(0);
    reply r;
    size_t n, first_len, req_len;
    char body[LINE_MAX], saved_req[LINE_MAX];
    float f[4] = {0.5f, -1.0f, 2.0f, 0.25f};

    load_ok(&m, blob, len, 4);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    snprintf(body, sizeof body, "PUSH 1 %s", frames_b64(f, 4));
    req_len = seal(50, body);
    memcpy(saved_req, g_req, req_len);
    feed_str(&s, saved_req, req_len);
    first_len = g_cap.len;
    memcpy(first, g_cap.buf, first_len);
    CHECK(take_replies(&r) == 1 && r.ok);
    CHECK_EQ(field_u(&r, "pushes"), 1);

    /* The same request again, after noise and a CRC error: same bytes back,
     * nothing pushed twice. */
    feed_str(&s, "noise\n", 6);
    n = seal(51, "PING");
    g_req[2] = '7';
    feed_str(&s, g_req, n);
    CHECK_EQ(take_replies(NULL), 2);
    feed_str(&s, saved_req, req_len);
    CHECK_EQ(g_cap.len, first_len);
    CHECK(g_cap.len == first_len && memcmp(g_cap.buf, first, first_len) == 0);
    g_cap.len = 0;
    r = talk(&s, 52, "STATS");
    CHECK_EQ(field_u(&r, "pushes"), 1);
    /* An error reply is replayed the same way. */
    expect_err(&s, 53, "NOPE", "E_UNKNOWN_CMD", 53);
    expect_err(&s, 53, "PING", "E_UNKNOWN_CMD", 53);
    /* Only the latest SEQ is remembered. */
    feed_str(&s, saved_req, req_len);
    CHECK(take_replies(&r) == 1 && r.ok);
    CHECK_EQ(field_u(&r, "pushes"), 2);
}

static void test_no_model(void)
{
    static uint64_t store[64];
    uint8_t *blob = (uint8_t *)g_blob_store;
    uint8_t *part = (uint8_t *)store;
    rvne_model m;
    rvne_server s;
    rvne_server_cfg cfg = make_cfg(0);
    rvne_load_cfg lc;
    reply r;
    char v[64];
    size_t len;
    memset(&lc, 0, sizeof lc);

    /* Erased flash. */
    memset(part, 0xFF, sizeof store);
    CHECK_STATUS(rvne_model_load(&m, part, sizeof store, 4, g_arena, sizeof g_arena, &lc), RVNE_E_ERASED);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    r = talk(&s, 1, "INFO");
    CHECK(r.ok);
    CHECK(strcmp(field(&r, "status", v, sizeof v), "error") == 0);
    CHECK(strcmp(field(&r, "reason", v, sizeof v), "E_ERASED") == 0);
    CHECK(strcmp(field(&r, "dims", v, sizeof v), "-") == 0);
    CHECK(strcmp(field(&r, "dtype", v, sizeof v), "-") == 0);
    CHECK(strcmp(field(&r, "crc", v, sizeof v), "-") == 0);
    CHECK(strcmp(field(&r, "blob_len", v, sizeof v), "-") == 0);
    CHECK_EQ(field_u(&r, "arena"), 0);
    expect_err(&s, 2, "PUSH 1 AAAAAAAAAAAAAAAAAAAAAA==", "E_NO_MODEL", 2);
    expect_err(&s, 3, "RUN 1 AAAAAAAAAAAAAAAAAAAAAA==", "E_NO_MODEL", 3);
    expect_err(&s, 4, "LOGITS", "E_NO_MODEL", 4);
    expect_err(&s, 5, "RESET", "E_NO_MODEL", 5);
    expect_err(&s, 6, "WINDOW 3", "E_NO_MODEL", 6);
    r = talk(&s, 7, "PUSH 1 AAAA");
    CHECK(strstr(r.body, "E_ERASED") != NULL); /* the message gives the reason */
    CHECK(talk(&s, 8, "PING").ok);
    CHECK(talk(&s, 9, "STATS").ok);
    g_cap.len = 0;
    rvne_print_banner(&cfg.port, &m);
    {
        char want[96];
        snprintf(want, sizeof want, "rvne/%s test ready: E_ERASED window=4\n", RVNE_FW_VERSION);
        CHECK(g_cap.len == strlen(want) && memcmp(g_cap.buf, want, g_cap.len) == 0);
    }
    g_cap.len = 0;

    /* A blob with one weight byte changed: dims and stored CRC still shown. */
    len = build_blob(blob, sizeof g_blob_store, k_dims, 99u);
    blob[40] ^= 0x01u;
    CHECK_STATUS(rvne_model_load(&m, blob, len, 4, g_arena, sizeof g_arena, &lc), RVNE_E_CRC);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    r = talk(&s, 1, "INFO");
    CHECK(strcmp(field(&r, "reason", v, sizeof v), "E_CRC") == 0);
    CHECK(strcmp(field(&r, "dims", v, sizeof v), "4,2,1,2,2,3") == 0);
    CHECK(strcmp(field(&r, "crc", v, sizeof v), "-") != 0);
    CHECK_EQ(field_u(&r, "blob_len"), len);
    expect_err(&s, 2, "PUSH 1 AAAAAAAAAAAAAAAAAAAAAA==", "E_NO_MODEL", 2);
    blob[40] ^= 0x01u;

    /* Bad magic: the header's other fields mean nothing, dims are "-". */
    blob[0] ^= 0x10u;
    CHECK_STATUS(rvne_model_load(&m, blob, len, 4, g_arena, sizeof g_arena, &lc), RVNE_E_BAD_MAGIC);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    r = talk(&s, 1, "INFO");
    CHECK(strcmp(field(&r, "reason", v, sizeof v), "E_BAD_MAGIC") == 0);
    CHECK(strcmp(field(&r, "dims", v, sizeof v), "-") == 0);
    blob[0] ^= 0x10u;

    /* Too short (a truncated blob). */
    CHECK_STATUS(rvne_model_load(&m, blob, 10, 4, g_arena, sizeof g_arena, &lc), RVNE_E_TOO_SHORT);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    r = talk(&s, 1, "INFO");
    CHECK(strcmp(field(&r, "reason", v, sizeof v), "E_TOO_SHORT") == 0);
    CHECK(strcmp(field(&r, "clock", v, sizeof v), "none") == 0);

    /* An existing but empty partition (file): still too short. */
    CHECK_STATUS(rvne_model_load(&m, blob, 0, 4, g_arena, sizeof g_arena, &lc), RVNE_E_TOO_SHORT);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    r = talk(&s, 1, "INFO");
    CHECK(strcmp(field(&r, "reason", v, sizeof v), "E_TOO_SHORT") == 0);

    /* No partition at all: its own reason, everywhere a reason is given. */
    CHECK_STATUS(rvne_model_load(&m, NULL, 0, 4, g_arena, sizeof g_arena, &lc), RVNE_E_NO_PARTITION);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    r = talk(&s, 1, "INFO");
    CHECK(strcmp(field(&r, "status", v, sizeof v), "error") == 0);
    CHECK(strcmp(field(&r, "reason", v, sizeof v), "E_NO_PARTITION") == 0);
    CHECK(strcmp(field(&r, "dims", v, sizeof v), "-") == 0);
    CHECK(strcmp(field(&r, "crc", v, sizeof v), "-") == 0);
    CHECK(strcmp(field(&r, "blob_len", v, sizeof v), "-") == 0);
    CHECK_EQ(field_u(&r, "arena"), 0);
    r = talk(&s, 2, "PUSH 1 AAAAAAAAAAAAAAAAAAAAAA==");
    CHECK(r.valid && !r.ok && strcmp(r.code, "E_NO_MODEL") == 0);
    CHECK(strstr(r.body, "E_NO_PARTITION") != NULL);
    CHECK(talk(&s, 3, "PING").ok);
    g_cap.len = 0;
    rvne_print_banner(&cfg.port, &m);
    {
        char want[96];
        snprintf(want, sizeof want, "rvne/%s test ready: E_NO_PARTITION window=4\n", RVNE_FW_VERSION);
        CHECK(g_cap.len == strlen(want) && memcmp(g_cap.buf, want, g_cap.len) == 0);
    }
    g_cap.len = 0;
}

static void test_reply_too_long(void)
{
    /* Many classes, few inputs: a short request whose reply cannot fit. */
    static const dims wide = {2, 1, 1, 2, 1, 40};
    uint8_t *blob = (uint8_t *)g_blob2_store;
    size_t len = build_blob(blob, sizeof g_blob2_store, wide, 7u);
    rvne_model m;
    rvne_server s;
    rvne_server_cfg cfg = make_cfg(0);
    float f[2 * 8];
    char body[LINE_MAX];
    reply r;
    size_t i;
    CHECK(len > 0);
    load_ok(&m, blob, len, 4);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    for (i = 0; i < 16; i++) f[i] = (float)i * 0.1f;
    /* 4 frames: 4*40*4 = 640 bytes, 856 characters of base64: fits. */
    snprintf(body, sizeof body, "PUSH 4 %s", frames_b64(f, 8));
    r = talk(&s, 1, body);
    CHECK(r.ok);
    CHECK(strlen(r.body) + 9 <= LINE_MAX);
    /* 5 frames: 1068 characters of base64 alone. */
    snprintf(body, sizeof body, "PUSH 5 %s", frames_b64(f, 10));
    expect_err(&s, 2, body, "E_REPLY_TOO_LONG", 2);
    snprintf(body, sizeof body, "RUN 5 %s", frames_b64(f, 10));
    expect_err(&s, 3, body, "E_REPLY_TOO_LONG", 3);
    r = talk(&s, 4, "STATS");
    CHECK_EQ(field_u(&r, "pushes"), 4); /* nothing pushed, nothing reset */
    CHECK_EQ(field_u(&r, "resets"), 0);
    CHECK(talk(&s, 5, "LOGITS").ok);

    /* The reply is sized before pushing, exactly: across line_max values on
     * both sides of the reply's length, a reply that fits is sent and one
     * that does not is refused with nothing pushed. */
    {
        static char line[2048 + 1], out[2048 + 16];
        static float fb[2048 * 3 / 16 + 1];
        size_t lm;
        int fits = 0, refused = 0;
        snprintf(body, sizeof body, "PUSH 5 %s", frames_b64(f, 10));
        for (lm = 1090; lm <= 1120; lm++) {
            char head[64];
            size_t want_len;
            unsigned long long before;
            cfg.line_buf = line;
            cfg.out_buf = out;
            cfg.frame_buf = fb;
            cfg.line_max = lm;
            g_line_max = lm;
            CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
            CHECK(talk(&s, 1, "RESET").ok);
            r = talk(&s, 2, "STATS");
            before = field_u(&r, "pushes");
            /* The same length computed independently of the device. */
            want_len = (size_t)snprintf(head, sizeof head, "<3 OK n=5 pushes=%llu logits=", before + 5) +
                       rvne_b64_encoded_len(5u * 40u * 4u) + 9u;
            r = talk(&s, 3, body);
            if (want_len <= lm) {
                fits++;
                CHECK(r.ok);
                CHECK_EQ(strlen(r.body) + 9, want_len);
            } else {
                refused++;
                CHECK(!r.ok && strcmp(r.code, "E_REPLY_TOO_LONG") == 0);
                r = talk(&s, 4, "STATS");
                CHECK_EQ(field_u(&r, "pushes"), before);
            }
        }
        CHECK(fits > 0 && refused > 0);
        g_line_max = LINE_MAX;
    }
}

/* Random bytes, and valid requests mutated after sealing or before it (so
 * that some pass the CRC and reach the parser): the device must answer each
 * line with a well-formed reply, and still answer PING at the end. */
static void test_fuzz(const uint8_t *blob, size_t len)
{
    static const char *const bodies[] = {
        "PING", "INFO", "STATS", "RESET", "LOGITS", "WINDOW 3", "WINDOW 1",
        "PUSH 1 AAAAAAAAAAAAAAAAAAAAAA==", "RUN 2 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        "PUSH 2 AACAPwAAgD8AAIA/AACAPwAAgL8AAIC/AACAvwAAgL8=", "WINDOW 4294967295"};
    static char chunk[LINE_MAX * 3];
    rvne_model m;
    rvne_server s;
    rvne_server_cfg cfg = make_cfg(1);
    reply r;
    uint32_t it, seq = 1;
    int lines = 0;

    load_ok(&m, blob, len, 6);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    rng_state = 0xC0FFEEu;
    for (it = 0; it < 4000; it++) {
        uint32_t kind = rng() % 4u, i;
        size_t n;
        if (kind == 0) { /* random bytes, LFs now and then */
            n = rng() % (sizeof chunk);
            for (i = 0; i < n; i++) chunk[i] = (char)(rng() % 9u == 0 ? '\n' : rng());
        } else {
            const char *b = bodies[rng() % (sizeof bodies / sizeof bodies[0])];
            char body[128];
            snprintf(body, sizeof body, "%s", b);
            if (kind == 1) /* mutate before sealing: passes the CRC */
                for (i = rng() % 3u; i > 0 && body[0] != 0; i--)
                    body[rng() % strlen(body)] = (char)(rng() % 128u);
            body[strcspn(body, "\n")] = 0;
            n = seal(rng() % 3u == 0 ? seq : ++seq, body);
            if (kind == 2) /* mutate after sealing */
                for (i = rng() % 3u + 1; i > 0; i--) g_req[rng() % n] = (char)rng();
            memcpy(chunk, g_req, n);
        }
        /* Delivered in random pieces. */
        {
            size_t off = 0;
            while (off < n) {
                size_t k = 1 + rng() % (n - off);
                feed_str(&s, chunk + off, k);
                off += k;
            }
        }
        lines += take_replies(NULL);
    }
    feed_str(&s, "\n", 1); /* end whatever is pending */
    take_replies(NULL);
    r = talk(&s, ++seq, "PING");
    CHECK(r.ok);
    fprintf(stderr, "fuzz: %d replies checked\n", lines);
    CHECK(lines > 1000);
}

/* Floats of a TRACE reply's data= as floats; returns the count. */
static size_t reply_trace(const reply *r, float *out, size_t cap)
{
    static char text[2048 + 16];
    static uint8_t bytes[2048];
    long n;
    size_t i;
    field(r, "data", text, sizeof text);
    n = rvne_b64_decode(bytes, sizeof bytes, text, strlen(text));
    if (n < 0 || n % 4 != 0 || (size_t)n / 4 > cap) return 0;
    for (i = 0; i < (size_t)n / 4; i++) {
        uint32_t u = (uint32_t)bytes[4 * i] | ((uint32_t)bytes[4 * i + 1] << 8) |
                     ((uint32_t)bytes[4 * i + 2] << 16) | ((uint32_t)bytes[4 * i + 3] << 24);
        memcpy(&out[i], &u, 4);
    }
    return (size_t)n / 4;
}

/* TRACE (docs/protocol.md): off by default, on only with room in the
 * arena, the latest push's trace points with the kernel's exact bits,
 * gone after a reset, and a push computes the same traced or not. */
static void test_trace(const uint8_t *blob, size_t len)
{
    rvne_model m, ref;
    rvne_server s;
    rvne_server_cfg cfg = make_cfg(0);
    static float ref_trace[64];
    float frames[4 * 4], got[64], logits[8], plain[8];
    char body[LINE_MAX];
    size_t floats = 0, floats2 = 0, need = 0, n, i;
    unsigned long long arena_off;
    reply r;

    load_ok(&m, blob, len, 3);
    CHECK_STATUS(rvne_model_load(&ref, blob, len, 3, g_ref_arena, sizeof g_ref_arena, NULL), RVNE_OK);
    CHECK_STATUS(rvne_head_trace_floats(&m.blob.hdr, 3, &floats), RVNE_OK);
    CHECK_STATUS(rvne_head_trace_floats(&m.blob.hdr, 2, &floats2), RVNE_OK);
    /* L (2Q + 2K + D + HQ W) + C: the scores' W a query head move with the window */
    CHECK_EQ(floats, 2u * (2u * 4u + 2u * 2u + 4u + m.blob.hdr.n_q_heads * 3u) + 3u);
    CHECK_EQ(floats - floats2, 2u * m.blob.hdr.n_q_heads);
    if (floats > 64u) {
        CHECK(0);
        return;
    }
    rvne_head_set_trace(&ref.head, ref_trace);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    rng_state = 77u;
    for (i = 0; i < 4 * 4; i++) frames[i] = rng_f() * 2.0f;

    r = talk(&s, 1, "INFO");
    CHECK(r.ok);
    CHECK_EQ(field_u(&r, "proto"), 3);
    arena_off = field_u(&r, "arena");
    expect_err(&s, 2, "TRACE 0", "E_NO_TRACE", 2);
    expect_err(&s, 3, "TRACE", "E_ARGS", 3);
    expect_err(&s, 4, "TRACE 00", "E_ARGS", 4);
    expect_err(&s, 5, "TRACE ON OFF", "E_ARGS", 5);
    /* Untraced first, to compare with the traced push below. */
    snprintf(body, sizeof body, "RUN 2 %s", frames_b64(frames, 2 * 4));
    r = talk(&s, 6, body);
    CHECK(r.ok && reply_logits(&r, plain, 8) == 6);

    r = talk(&s, 7, "TRACE ON");
    CHECK(r.ok);
    CHECK_EQ(field_u(&r, "floats"), floats);
    CHECK_EQ(field_u(&r, "arena"), arena_off + floats * 4u);
    expect_err(&s, 8, "TRACE 0", "E_NO_FRAME", 8);
    snprintf(body, sizeof body, "RUN 2 %s", frames_b64(frames, 2 * 4));
    r = talk(&s, 9, body);
    CHECK(r.ok && reply_logits(&r, logits, 8) == 6);
    CHECK(memcmp(logits, plain, 6 * sizeof(float)) == 0);
    for (i = 0; i < 2; i++) CHECK_STATUS(rvne_head_push(&ref.head, frames + 4 * i), RVNE_OK);
    r = talk(&s, 10, "TRACE 0");
    CHECK(r.ok);
    CHECK_EQ(field_u(&r, "push"), 4);      /* pushes since boot, as PUSH's pushes= */
    CHECK_EQ(field_u(&r, "offset"), 0);
    CHECK_EQ(field_u(&r, "n"), floats);
    n = reply_trace(&r, got, 64);
    CHECK(n == floats && memcmp(got, ref_trace, floats * sizeof(float)) == 0);
    CHECK(memcmp(got + floats - 3u, logits + 3, 3 * sizeof(float)) == 0);   /* the latest push's logits */
    snprintf(body, sizeof body, "TRACE %u", (unsigned)(floats - 1u));
    r = talk(&s, 11, body);
    CHECK(r.ok && field_u(&r, "n") == 1u && reply_trace(&r, got, 64) == 1u);
    CHECK(memcmp(got, ref_trace + floats - 1u, sizeof(float)) == 0);
    snprintf(body, sizeof body, "TRACE %u", (unsigned)floats);
    expect_err(&s, 12, body, "E_ARGS", 12);

    /* A reset empties it; WINDOW keeps tracing on and re-carves the buffer. */
    CHECK(talk(&s, 13, "RESET").ok);
    expect_err(&s, 14, "TRACE 0", "E_NO_FRAME", 14);
    r = talk(&s, 15, "WINDOW 2");
    CHECK(r.ok);
    CHECK_STATUS(rvne_head_arena_size(&m.blob.hdr, 2, &need), RVNE_OK);
    CHECK_EQ(field_u(&r, "arena"), need + floats2 * 4u);
    snprintf(body, sizeof body, "PUSH 1 %s", frames_b64(frames, 4));
    CHECK(talk(&s, 16, body).ok);
    r = talk(&s, 17, "TRACE 0");
    CHECK(r.ok && reply_trace(&r, got, 64) == floats2);
    rvne_head_reset(&ref.head);
    CHECK_STATUS(rvne_head_push(&ref.head, frames), RVNE_OK);
    CHECK(memcmp(got, ref_trace, 8 * sizeof(float)) == 0);   /* layer 0's q, k, v: the window does not enter */

    r = talk(&s, 18, "TRACE OFF");
    CHECK(r.ok);
    CHECK_EQ(field_u(&r, "arena"), need);
    expect_err(&s, 19, "TRACE 0", "E_NO_TRACE", 19);

    /* No room: an arena holding the head alone refuses, and nothing changes. */
    CHECK_STATUS(rvne_head_arena_size(&m.blob.hdr, 3, &need), RVNE_OK);
    CHECK_STATUS(rvne_model_load(&m, blob, len, 3, g_arena, need, NULL), RVNE_OK);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    expect_err(&s, 20, "TRACE ON", "E_TOO_LARGE", 20);
    r = talk(&s, 21, "INFO");
    CHECK(r.ok && field_u(&r, "arena") == need);
    snprintf(body, sizeof body, "RUN 2 %s", frames_b64(frames, 2 * 4));
    r = talk(&s, 22, body);
    CHECK(r.ok && reply_logits(&r, logits, 8) == 6 && memcmp(logits, plain, 6 * sizeof(float)) == 0);
    expect_err(&s, 23, "TRACE 0", "E_NO_TRACE", 23);

    /* Room for W = 3 and the trace: a larger window that fits only without
     * the trace wins, and tracing is off after it. */
    CHECK_STATUS(rvne_model_load(&m, blob, len, 3, g_arena, need + floats * 4u, NULL), RVNE_OK);
    CHECK_STATUS(rvne_server_init(&s, &cfg, &m), RVNE_OK);
    CHECK(talk(&s, 24, "TRACE ON").ok);
    CHECK_STATUS(rvne_head_arena_size(&m.blob.hdr, 4, &need), RVNE_OK);
    CHECK(need + floats * 4u > m.arena_len && need <= m.arena_len);
    r = talk(&s, 25, "WINDOW 4");
    CHECK(r.ok);
    CHECK_EQ(field_u(&r, "arena"), need);
    expect_err(&s, 26, "TRACE 0", "E_NO_TRACE", 26);
    expect_err(&s, 27, "TRACE ON", "E_TOO_LARGE", 27);
}

int main(void)
{
    uint8_t *blob = (uint8_t *)g_blob_store;
    size_t len = build_blob(blob, sizeof g_blob_store, k_dims, 42u);
    CHECK_FATAL(len > 0);
    test_init_and_banner(blob, len);
    test_model_load(blob, len);
    test_window_max(blob, len);
    test_ping_info_stats(blob, len);
    test_push_matches_kernel(blob, len);
    test_trace(blob, len);
    test_errors(blob, len);
    test_replay(blob, len);
    test_reply_too_long();
    test_fuzz(blob, len);
    test_no_model(); /* last: it corrupts and restores g_blob_store */
    return CHECK_DONE("test_proto");
}
