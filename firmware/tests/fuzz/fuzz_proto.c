/* libFuzzer harness: the line protocol of docs/protocol.md, served by
 * rvne_server_feed over a loaded small model (FP32 4,2,1,4,1,2, or FP16
 * 2,2,2,2,1,24 whose replies outgrow its requests) or an unloaded one (a
 * blob with a bad CRC; or no partition, an empty one or a byte-swapped
 * magic, picked by the cut seed below).
 *
 * Input: byte 0 picks the model (bits 0-1), whether the harness rewrites
 * each line's *CRC to the right value so mutations reach the parser (bit 2),
 * and how the rest is cut into feed calls (bits 3-7: 0 = one call, else the
 * seed of the cut points). The rest is the byte stream.
 *
 * Invariants: every write of the port is one line that starts with '<',
 * ends with LF, is at most line_max bytes before the LF (so well inside
 * line_max + 16), carries a correct upper-case CRC-32, a canonical SEQ and
 * OK or ERR E_..., in printable ASCII; logits= holds whole frames; every
 * non-empty line fed gets exactly one reply; and the device still answers
 * PING afterwards. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_util.h"
#include "rvne/base64.h"
#include "rvne/blob.h"
#include "rvne/head.h"
#include "rvne/proto.h"
#include "rvne/status.h"

#define LINE_MAX_ 1024u

enum { LOAD_OK, LOAD_BAD_CRC, LOAD_OTHER };

typedef struct model_spec {
    uint16_t dims[6];
    int fp16;
    uint32_t window;            /* at load */
    uint32_t arena_window;      /* the arena holds exactly this window */
    uint32_t max_window;        /* limits.max_window */
    int load;
    int clock;
} model_spec;

static const model_spec k_models[4] = {
    {{4, 2, 1, 4, 1, 2}, 0, 4, 8, 0, LOAD_OK, 1},
    {{2, 2, 2, 2, 1, 24}, 1, 3, 16, 6, LOAD_OK, 0},
    {{4, 2, 1, 4, 1, 2}, 0, 4, 8, 0, LOAD_BAD_CRC, 1},
    {{4, 2, 1, 4, 1, 2}, 0, 4, 8, 0, LOAD_OTHER, 0},
};

/* Built once; every buffer the core gets is sized exactly, so ASan sees any
 * write past it. */
static uint8_t *g_blob[4];
static size_t g_blob_len[4];
static void *g_arena[4];
static size_t g_arena_len[4];
static char *g_line, *g_out;
static float *g_frames;

typedef struct capture {
    uint32_t n_classes;
    unsigned long replies;
    char last[64];              /* start of the latest reply, NUL-terminated */
    uint64_t clock;
} capture;

static capture g_cap;

static void setup(void)
{
    static int done;
    rvne_header h;
    int i;
    if (done) return;
    done = 1;
    for (i = 0; i < 4; i++) {
        const model_spec *ms = &k_models[i];
        uint8_t tmp[4096];
        size_t n = fz_build_blob(tmp, sizeof tmp, ms->dims, ms->fp16, (uint32_t)(i + 11));
        FUZZ_ASSERT(n > 0);
        g_blob[i] = malloc(n);
        FUZZ_ASSERT(g_blob[i] != NULL);
        memcpy(g_blob[i], tmp, n);
        if (ms->load == LOAD_BAD_CRC) g_blob[i][30] ^= 0x40u;
        if (ms->load == LOAD_OTHER) memcpy(g_blob[i], "RVNE", 4);
        g_blob_len[i] = n;
        memset(&h, 0, sizeof h);
        h.input_dim = ms->dims[0];
        h.n_q_heads = ms->dims[1];
        h.n_kv_heads = ms->dims[2];
        h.head_dim = ms->dims[3];
        h.n_layers = ms->dims[4];
        h.n_classes = ms->dims[5];
        FUZZ_ASSERT(rvne_head_arena_size(&h, ms->arena_window, &g_arena_len[i]) == RVNE_OK);
        g_arena[i] = malloc(g_arena_len[i]);
        FUZZ_ASSERT(g_arena[i] != NULL);
    }
    g_line = malloc(LINE_MAX_ + 1u);
    g_out = malloc(LINE_MAX_ + 16u);
    g_frames = malloc((LINE_MAX_ * 3u / 16u + 1u) * sizeof(float));
    FUZZ_ASSERT(g_line != NULL && g_out != NULL && g_frames != NULL);
}

/* ---- the port: every write is checked as one reply line ---------------------------- */

static int hexu(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); }

static void check_logits(const char *body, size_t n)
{
    const char *p = NULL, *e;
    size_t i, frames = 1;
    long got;
    for (i = 0; i + 8 <= n; i++)
        if (memcmp(body + i, " logits=", 8) == 0) p = body + i + 8;
    if (p == NULL) return;
    for (e = p; e < body + n && *e != ' '; e++) {}
    FUZZ_ASSERT(e == body + n); /* the last field */
    for (i = 0; i + 3 <= n; i++)
        if (memcmp(body + i, " n=", 3) == 0) frames = strtoul(body + i + 3, NULL, 10);
    got = rvne_b64_decoded_len(p, (size_t)(e - p));
    FUZZ_ASSERT(got > 0 && frames > 0);
    FUZZ_ASSERT((size_t)got == frames * g_cap.n_classes * 4u);
}

static void check_line(const char *buf, size_t n)
{
    size_t i, body, seq_end;
    uint32_t crc = 0;
    uint64_t seq = 0;
    FUZZ_ASSERT(n >= 1 && buf[n - 1] == '\n');
    FUZZ_ASSERT(memchr(buf, '\n', n - 1) == NULL); /* one line per write */
    FUZZ_ASSERT(n - 1 <= LINE_MAX_);                /* protocol.md: replies are bounded like requests */
    FUZZ_ASSERT(n <= LINE_MAX_ + 16u);
    FUZZ_ASSERT(n >= 14 && buf[0] == '<'); /* <0 OK*XXXXXXXX\n */
    body = n - 10;
    FUZZ_ASSERT(buf[body] == '*');
    for (i = 1; i <= 8; i++) {
        FUZZ_ASSERT(hexu(buf[body + i]));
        crc = (crc << 4) | (uint32_t)(buf[body + i] <= '9' ? buf[body + i] - '0' : buf[body + i] - 'A' + 10);
    }
    FUZZ_ASSERT(crc == fz_crc32(0u, (const uint8_t *)buf, (uint32_t)body));
    for (i = 0; i < body; i++) FUZZ_ASSERT(buf[i] >= 0x20 && buf[i] <= 0x7E);
    for (seq_end = 1; seq_end < body && buf[seq_end] >= '0' && buf[seq_end] <= '9'; seq_end++)
        seq = seq * 10u + (uint64_t)(buf[seq_end] - '0');
    FUZZ_ASSERT(seq_end > 1 && seq_end <= 11 && seq <= 0xFFFFFFFFu);
    FUZZ_ASSERT(buf[1] != '0' || seq_end == 2); /* canonical: no leading zero */
    FUZZ_ASSERT(seq_end < body && buf[seq_end] == ' ');
    if (body - seq_end >= 3 && memcmp(buf + seq_end, " OK", 3) == 0) {
        FUZZ_ASSERT(body - seq_end == 3 || buf[seq_end + 3] == ' ');
        FUZZ_ASSERT(seq != 0); /* SEQ 0 answers an untrusted line: always an error */
        check_logits(buf + seq_end, body - seq_end);
    } else {
        FUZZ_ASSERT(body - seq_end > 7 && memcmp(buf + seq_end, " ERR E_", 7) == 0);
        for (i = seq_end + 7; i < body && buf[i] != ' '; i++) FUZZ_ASSERT((buf[i] >= 'A' && buf[i] <= 'Z') || (buf[i] >= '0' && buf[i] <= '9') || buf[i] == '_');
    }
}

static int cap_write(void *ctx, const void *buf, size_t n)
{
    capture *c = ctx;
    size_t k = n < sizeof c->last - 1 ? n : sizeof c->last - 1;
    check_line((const char *)buf, n);
    memcpy(c->last, buf, k);
    c->last[k] = 0;
    c->replies++;
    return 0;
}

/* The boot banner: one log line, not a reply. */
static int banner_write(void *ctx, const void *buf, size_t n)
{
    const char *p = buf;
    size_t i, hit = 0;
    FUZZ_ASSERT(n > 5 && n <= 192 && memcmp(p, "rvne/", 5) == 0 && p[n - 1] == '\n');
    FUZZ_ASSERT(memchr(p, '\n', n - 1) == NULL);
    for (i = 0; i + 8 <= n; i++) hit |= memcmp(p + i, " ready: ", 8) == 0;
    FUZZ_ASSERT(hit);
    ((capture *)ctx)->replies++;
    return 0;
}

static uint64_t cap_now(void *ctx)
{
    capture *c = ctx;
    return c->clock += 3u;
}

/* ---- the input --------------------------------------------------------------------- */

/* Rewrites *XXXXXXXX at the end of every line (before CR LF) to the CRC of
 * what precedes it. */
static void fix_crcs(uint8_t *p, size_t n)
{
    size_t start = 0, end;
    static const char hex[] = "0123456789ABCDEF";
    while (start < n) {
        size_t len, star;
        uint32_t crc;
        int k;
        for (end = start; end < n && p[end] != '\n'; end++) {}
        len = end - start;
        if (len > 0 && p[start + len - 1] == '\r') len--;
        if (len >= 10 && p[start + len - 9] == '*') {
            star = start + len - 9;
            crc = fz_crc32(0u, p + start, (uint32_t)(star - start));
            for (k = 7; k >= 0; k--, crc >>= 4) p[star + 1 + (size_t)k] = (uint8_t)hex[crc & 15u];
        }
        start = end + 1;
    }
}

/* Replies the server owes for p[0, n): one per LF-ended line that is not
 * empty after dropping a CR before the LF. */
static unsigned long count_lines(const uint8_t *p, size_t n)
{
    unsigned long lines = 0;
    size_t i, raw = 0;
    for (i = 0; i < n; i++) {
        if (p[i] != '\n') {
            raw++;
            continue;
        }
        if (raw > 1 || (raw == 1 && p[i - 1] != '\r')) lines++;
        raw = 0;
    }
    return lines;
}

static size_t seal(char *out, size_t cap, uint32_t seq, const char *body)
{
    int n = snprintf(out, cap, ">%lu %s", (unsigned long)seq, body);
    uint32_t crc = fz_crc32(0u, (const uint8_t *)out, (uint32_t)n);
    n += snprintf(out + n, cap - (size_t)n, "*%08X\n", (unsigned)crc);
    return (size_t)n;
}

static rvne_server_cfg make_cfg(int clock)
{
    rvne_server_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.port.ctx = &g_cap;
    cfg.port.name = "fuzz";
    cfg.port.write = cap_write;
    cfg.port.now = clock ? cap_now : NULL;
    cfg.port.clock_unit = clock ? "cycles" : "none";
    cfg.line_buf = g_line;
    cfg.line_max = LINE_MAX_;
    cfg.out_buf = g_out;
    cfg.frame_buf = g_frames;
    return cfg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const model_spec *ms;
    rvne_load_cfg lcfg;
    rvne_server_cfg cfg;
    rvne_server s;
    rvne_model m;
    uint8_t *stream;
    size_t n, off;
    unsigned long want;
    uint32_t seq, split;
    char ping[64];
    int sel, rc;

    if (size < 1) return 0;
    setup();
    sel = data[0] & 3;
    split = data[0] >> 3;
    ms = &k_models[sel];
    n = size - 1;
    stream = malloc(n + 1u); /* + the LF that ends a last partial line */
    FUZZ_ASSERT(stream != NULL);
    if (n) memcpy(stream, data + 1, n);
    stream[n] = '\n';
    if (data[0] & 4) fix_crcs(stream, n + 1);

    memset(&lcfg, 0, sizeof lcfg);
    lcfg.limits.max_window = ms->max_window;
    lcfg.exact_length = 1;
    memset(g_arena[sel], 0xA5, g_arena_len[sel]);
    if (ms->load != LOAD_OTHER) {
        rc = rvne_model_load(&m, g_blob[sel], g_blob_len[sel], ms->window, g_arena[sel], g_arena_len[sel], &lcfg);
        FUZZ_ASSERT(rc == (ms->load == LOAD_OK ? RVNE_OK : RVNE_E_CRC));
    } else if (split % 3u == 0u) {
        rc = rvne_model_load(&m, NULL, 0, ms->window, g_arena[sel], g_arena_len[sel], &lcfg);
        FUZZ_ASSERT(rc == RVNE_E_NO_PARTITION);
    } else {
        rc = rvne_model_load(&m, g_blob[sel], split % 3u == 1u ? 0u : g_blob_len[sel], ms->window, g_arena[sel],
                             g_arena_len[sel], &lcfg);
        FUZZ_ASSERT(rc == (split % 3u == 1u ? RVNE_E_TOO_SHORT : RVNE_E_BAD_MAGIC));
    }
    memset(&g_cap, 0, sizeof g_cap);
    rvne_print_banner(&(rvne_port){&g_cap, "fuzz", banner_write, NULL, "none"}, &m);
    FUZZ_ASSERT(g_cap.replies == 1);
    memset(&g_cap, 0, sizeof g_cap);
    g_cap.n_classes = ms->dims[5];

    /* A refused configuration ignores every byte. */
    cfg = make_cfg(ms->clock);
    cfg.line_max = LINE_MAX_ - 1u;
    FUZZ_ASSERT(rvne_server_init(&s, &cfg, &m) == RVNE_E_INVAL);
    rvne_server_feed(&s, stream, n + 1);
    FUZZ_ASSERT(g_cap.replies == 0);

    cfg = make_cfg(ms->clock);
    FUZZ_ASSERT(rvne_server_init(&s, &cfg, &m) == RVNE_OK);
    if (split == 0) {
        rvne_server_feed(&s, stream, n + 1);
    } else {
        uint32_t st = split * 0x9E3779B9u ^ (uint32_t)size;
        if (st == 0) st = 1;
        for (off = 0; off < n + 1;) {
            uint32_t r = fz_rng(&st);
            size_t k = 1u + (r >> 8) % ((r & 3u) == 0 ? 4u : (r & 3u) == 1 ? 64u : 2048u);
            if (k > n + 1 - off) k = n + 1 - off;
            rvne_server_feed(&s, stream + off, k);
            off += k;
        }
    }
    want = count_lines(stream, n + 1);
    if (g_cap.replies != want) {
        fprintf(stderr, "%lu replies for %lu lines\n", g_cap.replies, want);
        FUZZ_ASSERT(g_cap.replies == want);
    }
    FUZZ_ASSERT(s.stats.errors <= g_cap.replies);
    FUZZ_ASSERT(m.status != RVNE_OK || m.head.state.n_cached <= m.window);

    /* Still serving: PING with a fresh SEQ is answered OK with that SEQ. */
    rvne_server_count_drop(&s, 2u);
    FUZZ_ASSERT(s.stats.drops == 2u);
    seq = s.last_seq + 1u == 0u ? 1u : s.last_seq + 1u;
    n = seal(ping, sizeof ping, seq, "PING");
    rvne_server_feed(&s, (const uint8_t *)ping, n);
    FUZZ_ASSERT(g_cap.replies == want + 1u);
    {
        char head[32];
        int k = snprintf(head, sizeof head, "<%lu OK*", (unsigned long)seq);
        FUZZ_ASSERT(strncmp(g_cap.last, head, (size_t)k) == 0);
    }
    free(stream);
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------- */

static char g_seed[16384];
static size_t g_seed_len;

static void add(uint32_t seq, const char *body)
{
    g_seed_len += seal(g_seed + g_seed_len, sizeof g_seed - g_seed_len, seq, body);
}

static void add_raw(const char *text)
{
    size_t k = strlen(text);
    memcpy(g_seed + g_seed_len, text, k);
    g_seed_len += k;
}

/* "PUSH n B64" (or RUN) of n frames of dim floats. */
static void add_push(uint32_t seq, const char *cmd, uint32_t frames, uint32_t dim)
{
    static uint8_t bytes[2048];
    static char body[4096];
    uint32_t i, st = 99u + frames;
    int k = snprintf(body, sizeof body, "%s %lu ", cmd, (unsigned long)frames);
    long len;
    for (i = 0; i < frames * dim; i++) {
        float f = (float)((int)(fz_rng(&st) % 2001u) - 1000) / 500.0f;
        memcpy(bytes + 4 * i, &f, 4);
    }
    len = rvne_b64_encode(body + k, sizeof body - (size_t)k - 1u, bytes, (size_t)frames * dim * 4u);
    FUZZ_ASSERT(len > 0);
    body[k + len] = 0;
    add(seq, body);
}

static void emit(const char *dir, int sel, const char *what, int split)
{
    char name[64];
    static uint8_t file[sizeof g_seed + 1];
    file[0] = (uint8_t)(sel | 4 | (split << 3));
    memcpy(file + 1, g_seed, g_seed_len);
    snprintf(name, sizeof name, "m%d_%s", sel, what);
    fz_write_seed(dir, name, file, g_seed_len + 1);
    g_seed_len = 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = fz_seed_dir();
    int sel, i;
    (void)argc;
    (void)argv;
    if (dir == NULL) return 0;
    for (sel = 0; sel < 4; sel++) {
        uint32_t d = k_models[sel].dims[0];
        add(1, "PING"), add(2, "INFO"), add(3, "STATS");
        emit(dir, sel, "info", 0);
        add_push(1, "PUSH", 1, d), add(2, "LOGITS"), add_push(3, "PUSH", 3, d), add_push(4, "RUN", 2, d);
        add(5, "STATS");
        emit(dir, sel, "push", 0);
        add_push(7, "PUSH", 8, d), add_push(8, "PUSH", 9, d), add_push(9, "PUSH", 40, d);
        emit(dir, sel, "push_many", 5);
        add(1, "WINDOW 2"), add(2, "WINDOW 7"), add(3, "WINDOW 100"), add(4, "WINDOW 4294967295");
        add(5, "RESET"), add(6, "LOGITS"), add(7, "WINDOW 0"), add(8, "WINDOW");
        emit(dir, sel, "window", 0);
        add(1, "WINDOW 2"), add(2, "TRACE ON"), add(3, "TRACE 0"), add_push(4, "PUSH", 2, d), add(5, "TRACE 0");
        add(6, "TRACE 7"), add(7, "TRACE 4294967295"), add(8, "WINDOW 100"), add(9, "TRACE 0"), add(10, "TRACE OFF");
        add(11, "TRACE"), add(12, "TRACE ON OFF");
        emit(dir, sel, "trace", 0);
        add_push(4294967295u, "PUSH", 1, d), add_push(4294967295u, "PUSH", 1, d), add(1, "PING"), add(1, "PING");
        emit(dir, sel, "replay", 3);
        add_raw("boot log line\n>1 PING*00000000\n>2 PING\n\r\n\n");
        add(3, "PUSH 1 AAAA"), add(4, "PUSH x y"), add(5, "FOO"), add(6, "PING  x"), add(7, "PING x");
        add(8, "RUN 1 AAAAAAA="), add(9, "PUSH 0 AAAA"), add(10, "PUSH 01 AAAA");
        add_raw(">11 PING*59d3f528\r\n>012 PING*00000000\n");
        emit(dir, sel, "errors", 9);
        for (i = 0; i < 1100; i++) add_raw("A");
        add_raw("\n");
        for (i = 0; i < 1023; i++) add_raw("B");
        add_raw("\r\n");
        add(2, "PING");
        emit(dir, sel, "long", 17);
    }
    fprintf(stderr, "fuzz_proto: seeds in %s\n", dir);
    exit(0);
}
