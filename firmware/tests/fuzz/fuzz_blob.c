/* libFuzzer harness: rvne_blob_open on arbitrary bytes, as a file
 * (exact_length 1) and as a partition (0), without and with limits, at
 * aligned and misaligned addresses, checked against a reference reading of
 * docs/format.md's rules written here; then again with the CRC made right,
 * so that mutations get past rule 8. When a blob opens, the head is sized,
 * initialised in an arena of exactly that size and fed frames taken from the
 * input, twice (the second time after a reset, in an arena of other garbage):
 * the logits must be identical bit for bit. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_util.h"
#include "rvne/blob.h"
#include "rvne/head.h"
#include "rvne/status.h"

#define ARENA_CAP ((size_t)4u << 20)
#define WINDOW_MAX 8u

static const rvne_limits k_no_limits = {0, 0, 0, 0, 0, 0};
static const rvne_limits k_limits = {32, 8, 16, 3, 16, 0};

static float fz_f32(const uint8_t *p)
{
    uint32_t u = fz_rd32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int scale_ok(float f) { return isfinite(f) && f > 0.0f && f >= 0x1p-40f && f <= 0x1p40f; }

/* The int8 parameter rules, in the text's order, on weights w of dims d;
 * the product in double (the firmware's is in integers). */
static int ref_qparams(const uint8_t *w, const uint16_t d[6])
{
    const uint32_t np = (uint32_t)fz_int8_params_len(d), nt = 512u * d[4];
    const uint32_t wl = (uint32_t)fz_int8_len(d);
    uint32_t i, l;
    if (!scale_ok(fz_f32(w)) || !scale_ok(fz_f32(w + 4))) return RVNE_E_QPARAM;
    for (i = np - 4u * d[5]; i < np; i += 4)
        if (!scale_ok(fz_f32(w + i))) return RVNE_E_QPARAM;
    if (!(fabs((double)fz_f32(w) * (double)fz_f32(w + 4) - 1.0) <= 1e-3)) return RVNE_E_QPARAM;
    for (i = 8; i < np - 4u * d[5]; i += 8) {
        int32_t m = (int32_t)fz_rd32(w + i), sh = (int32_t)fz_rd32(w + i + 4);
        if (m < 0x40000000 || sh < 16 || sh > 62) return RVNE_E_QPARAM;
    }
    for (l = 0; l < d[4]; l++) {
        const uint8_t *t = w + np + 512u * l;
        if (fz_rd16(t) < 1 || fz_rd16(t) > 32768) return RVNE_E_QPARAM;
        for (i = 1; i < 256; i++)
            if (fz_rd16(t + 2 * i) > fz_rd16(t + 2 * i - 2)) return RVNE_E_QPARAM;
    }
    for (i = np + nt; i < wl; i++)
        if (w[i] == 0x80) return RVNE_E_QPARAM;
    return RVNE_OK;
}

/* Rule 18: no FP32 / FP16 weight whose exponent bits are all ones. */
static int ref_finite(const uint8_t *w, uint32_t wl, int fp16)
{
    uint32_t i;
    for (i = 0; i + (fp16 ? 2u : 4u) <= wl; i += fp16 ? 2u : 4u)
        if (fp16 ? (fz_rd16(w + i) & 0x7C00u) == 0x7C00u : (fz_rd32(w + i) & 0x7F800000u) == 0x7F800000u)
            return RVNE_E_NONFINITE;
    return RVNE_OK;
}

/* docs/format.md rules 1-18 (dims half of 16) read straight from the text. */
static int ref_open(const uint8_t *p, size_t len, int exact, const rvne_limits *lim)
{
    uint16_t d[6];
    uint32_t wl, es;
    uint64_t total;
    int i, fp16, int8;
    if (len < 28) return RVNE_E_TOO_SHORT;
    if (p[0] == 0xFF && p[1] == 0xFF && p[2] == 0xFF && p[3] == 0xFF) return RVNE_E_ERASED;
    if (fz_rd32(p) != 0x52564E45u) return RVNE_E_BAD_MAGIC;
    if (fz_rd16(p + 4) != 1) return RVNE_E_BAD_VERSION;
    if ((p[6] & 0xFC) || p[6] == 3) return RVNE_E_BAD_FLAGS;
    if (p[7] != 0) return RVNE_E_RESERVED;
    wl = fz_rd32(p + 20);
    total = 28u + (uint64_t)wl;
    if (exact ? total != len : total > len) return RVNE_E_LENGTH;
    if (fz_rd32(p + 24 + wl) != fz_crc32(0u, p, 24u + wl)) return RVNE_E_CRC;
    for (i = 0; i < 6; i++) d[i] = fz_rd16(p + 8 + 2 * i);
    if (d[0] == 0 || d[1] == 0 || d[2] == 0 || d[3] == 0) return RVNE_E_ZERO_DIM;
    if (d[1] % d[2] != 0) return RVNE_E_GQA;
    if (d[4] < 1) return RVNE_E_NO_LAYERS;
    if (d[5] < 2) return RVNE_E_FEW_CLASSES;
    fp16 = p[6] & 1;
    int8 = (p[6] & 2) != 0;
    es = int8 ? 1u : fp16 ? 2u : 4u;
    if (wl % es != 0) return RVNE_E_ELEM_SIZE;
    if ((int8 ? fz_int8_len(d) : fz_contract_len(d, fp16)) != wl) return RVNE_E_CONTRACT;
    if (int8 && d[0] > 1024) return RVNE_E_CONTRACT;
    if (int8 && ref_qparams(p + 24, d) != RVNE_OK) return RVNE_E_QPARAM;
    if (!int8 && ref_finite(p + 24, wl, fp16) != RVNE_OK) return RVNE_E_NONFINITE;
    if ((uintptr_t)(p + 24) % (int8 ? 4u : es) != 0) return RVNE_E_ALIGN;
    if (int8 && (uint64_t)d[1] * d[3] * 128u * 127u > 0x7FFFFFFFu) return RVNE_E_TOO_LARGE;
    if ((lim->max_input_dim && d[0] > lim->max_input_dim) ||
        (lim->max_heads && (d[1] > lim->max_heads || d[2] > lim->max_heads)) ||
        (lim->max_head_dim && d[3] > lim->max_head_dim) || (lim->max_layers && d[4] > lim->max_layers) ||
        (lim->max_classes && d[5] > lim->max_classes))
        return RVNE_E_TOO_LARGE;
    return RVNE_OK;
}

static uint32_t crc_hook(uint32_t crc, const uint8_t *buf, uint32_t len) { return fz_crc32(crc, buf, len); }

/* One open of p[0, len) in one mode; checks the result against the rules and
 * the fields against the bytes. Returns the status. */
static int open_checked(rvne_blob *b, const uint8_t *p, size_t len, int exact, const rvne_limits *lim,
                        int hook)
{
    rvne_load_cfg cfg;
    int rc, want;
    memset(&cfg, 0, sizeof cfg);
    cfg.crc32 = hook ? crc_hook : NULL;
    cfg.limits = *lim;
    cfg.exact_length = exact;
    rc = rvne_blob_open(b, p, len, &cfg);
    want = ref_open(p, len, exact, lim);
    if (rc != want) {
        fprintf(stderr, "rvne_blob_open = %s, the rules say %s (len %zu, exact %d)\n", rvne_status_name(rc),
                rvne_status_name(want), len, exact);
        FUZZ_ASSERT(rc == want);
    }
    /* The header is reported from rule 3 on, the CRC fields from rule 8 on. */
    FUZZ_ASSERT(b->hdr_valid == !(rc == RVNE_E_TOO_SHORT || rc == RVNE_E_ERASED));
    FUZZ_ASSERT(b->crc_valid == (rc == RVNE_OK || rc <= RVNE_E_CRC));
    if (b->hdr_valid) {
        FUZZ_ASSERT(b->hdr.magic == fz_rd32(p) && b->hdr.version == fz_rd16(p + 4));
        FUZZ_ASSERT(b->hdr.flags == p[6] && b->hdr.reserved == p[7]);
        FUZZ_ASSERT(b->hdr.input_dim == fz_rd16(p + 8) && b->hdr.n_classes == fz_rd16(p + 18));
        FUZZ_ASSERT(b->hdr.weights_len == fz_rd32(p + 20));
    }
    if (b->crc_valid) {
        FUZZ_ASSERT(b->total_len == 28u + (uint64_t)b->hdr.weights_len);
        FUZZ_ASSERT(b->total_len <= len && (!exact || b->total_len == len));
        FUZZ_ASSERT(b->weights == p + 24);
        FUZZ_ASSERT(b->crc_stored == fz_rd32(p + 24 + b->hdr.weights_len));
    }
    if (rc == RVNE_OK) {
        uint32_t wl = 0;
        FUZZ_ASSERT(b->weights + b->hdr.weights_len + 4 <= p + len);
        FUZZ_ASSERT(rvne_blob_check_container(b) == RVNE_OK);
        FUZZ_ASSERT(rvne_expected_weights_len(&b->hdr, &wl) == RVNE_OK && wl == b->hdr.weights_len);
    }
    return rc;
}

/* Frame i of dim floats, from the input's bytes read cyclically. */
static void take_frame(float *f, uint32_t dim, const uint8_t *data, size_t size, uint32_t i)
{
    uint32_t j;
    size_t off = (size_t)i * 7u;
    for (j = 0; j < dim; j++) {
        uint8_t b[4];
        int k;
        for (k = 0; k < 4; k++) b[k] = data[(off + 4u * j + (size_t)k) % size];
        memcpy(&f[j], b, 4);
    }
}

/* Pushes n frames from a fresh init in arena (exactly need bytes, filled
 * with fill); the logits of every push go to out (n * C floats). */
static void run_head(const rvne_blob *b, uint32_t window, size_t need, uint8_t fill, const uint8_t *data,
                     size_t size, uint32_t n, float *frame, float *out)
{
    rvne_head t;
    uint8_t *arena = malloc(need);
    uint32_t i, c;
    FUZZ_ASSERT(arena != NULL);
    memset(arena, fill, need);
    FUZZ_ASSERT(rvne_head_init(&t, b, window, arena, need) == RVNE_OK);
    c = t.config.n_classes;
    FUZZ_ASSERT(t.config.dim == b->hdr.input_dim && t.config.window == window);
    FUZZ_ASSERT(t.state.n_pushed == 0 && t.state.n_cached == 0);
    for (i = 0; i < c; i++) FUZZ_ASSERT(rvne_head_logits(&t)[i] == 0.0f);
    /* A dirty start: push once, reset, and the run below must not see it. */
    take_frame(frame, t.config.dim, data, size, n);
    FUZZ_ASSERT(rvne_head_push(&t, frame) == RVNE_OK);
    rvne_head_reset(&t);
    for (i = 0; i < n; i++) {
        take_frame(frame, t.config.dim, data, size, i);
        FUZZ_ASSERT(rvne_head_push(&t, frame) == RVNE_OK);
        FUZZ_ASSERT(t.state.n_pushed == i + 1);
        FUZZ_ASSERT(t.state.n_cached == (i + 1 < window ? i + 1 : window));
        FUZZ_ASSERT(t.state.next == (i + 1) % window);
        FUZZ_ASSERT((const uint8_t *)rvne_head_logits(&t) >= arena &&
                    (const uint8_t *)(rvne_head_logits(&t) + c) <= arena + need);
        memcpy(out + (size_t)i * c, rvne_head_logits(&t), (size_t)c * sizeof(float));
    }
    free(arena);
}

static void check_head(const rvne_blob *b, const uint8_t *data, size_t size)
{
    const rvne_header *h = &b->hdr;
    uint32_t window = 1u + b->crc_stored % WINDOW_MAX;
    uint32_t n = window + 2u;
    size_t need = 0;
    uint64_t q = (uint64_t)h->n_q_heads * h->head_dim, k = (uint64_t)h->n_kv_heads * h->head_dim;
    uint64_t want = 4u * (2u * (uint64_t)h->input_dim + q + (uint64_t)h->n_q_heads * (window + 1u) + h->n_classes +
                          2u * (uint64_t)h->n_layers * window * k);
    if (h->flags & 2u) { /* int8 (docs/model.md): words, the 16-bit rings in words, then bytes */
        uint64_t widest = q > h->input_dim ? q : h->input_dim;
        const uint64_t kr = ((h->head_dim + 3u) / 4u) * 2u, vr = ((window + 3u) / 4u) * 2u;
        widest = widest > h->n_classes ? widest : h->n_classes;
        want = 4u * ((uint64_t)(h->n_q_heads / h->n_kv_heads) * window + widest + h->n_classes +
                     (uint64_t)h->n_q_heads * (kr + 1u) + vr + 5u +
                     (uint64_t)h->n_layers * h->n_kv_heads * window * kr + (uint64_t)h->n_layers * k * vr) +
               h->input_dim + 2u * q + 2u * k;
    }
    float *frame, *run1, *run2;
    rvne_head t;
    uint8_t *small;

    FUZZ_ASSERT(rvne_head_arena_size(h, 0, &need) == RVNE_E_INVAL);
    FUZZ_ASSERT(rvne_head_arena_size(h, window, &need) == RVNE_OK);
    FUZZ_ASSERT(need == want);
    if (need > ARENA_CAP) return;
    /* One byte short, and misaligned, are refused before anything is written. */
    small = malloc(need + 4u);
    FUZZ_ASSERT(small != NULL);
    FUZZ_ASSERT(rvne_head_init(&t, b, window, small, need - 1u) == RVNE_E_ARENA);
    FUZZ_ASSERT(rvne_head_init(&t, b, window, small + 1, need) == RVNE_E_ARENA);
    FUZZ_ASSERT(rvne_head_init(&t, b, 0u, small, need) == RVNE_E_INVAL);
    free(small);

    frame = malloc((size_t)h->input_dim * sizeof(float));
    run1 = malloc((size_t)n * h->n_classes * sizeof(float));
    run2 = malloc((size_t)n * h->n_classes * sizeof(float));
    FUZZ_ASSERT(frame != NULL && run1 != NULL && run2 != NULL);
    run_head(b, window, need, 0xFF, data, size, n, frame, run1); /* NaN garbage */
    run_head(b, window, need, 0x00, data, size, n, frame, run2);
    FUZZ_ASSERT(memcmp(run1, run2, (size_t)n * h->n_classes * sizeof(float)) == 0);
    free(frame);
    free(run1);
    free(run2);
}

/* Every check on one buffer of bytes. */
static void check_bytes(const uint8_t *data, size_t size)
{
    /* Copies sized exactly, so ASan sees a read past the end; +1 and +2 put
     * the weights off 4-byte alignment. */
    uint8_t *store[3];
    rvne_blob b;
    int rc_file, rc_part, k;
    for (k = 0; k < 3; k++) {
        store[k] = malloc(size + (size_t)k > 0 ? size + (size_t)k : 1u);
        FUZZ_ASSERT(store[k] != NULL);
        if (size) memcpy(store[k] + k, data, size);
    }

    FUZZ_ASSERT(rvne_blob_open(NULL, store[0], size, NULL) == RVNE_E_INVAL);
    FUZZ_ASSERT(rvne_blob_open(&b, NULL, size, NULL) == RVNE_E_INVAL);
    rc_file = rvne_blob_open(&b, store[0], size, NULL); /* cfg NULL: a file, no limits */
    FUZZ_ASSERT(rc_file == open_checked(&b, store[0], size, 1, &k_no_limits, 0));
    rc_part = open_checked(&b, store[0], size, 0, &k_no_limits, size & 1u);
    (void)open_checked(&b, store[0], size, 1, &k_limits, 0);
    (void)open_checked(&b, store[0], size, 0, &k_limits, 0);
    (void)open_checked(&b, store[1] + 1, size, 0, &k_no_limits, 0);
    (void)open_checked(&b, store[2] + 2, size, 1, &k_no_limits, 0);
    /* A file that opens is a partition that opens. */
    FUZZ_ASSERT(rc_file != RVNE_OK || rc_part == RVNE_OK);

    if (rc_part == RVNE_OK) {
        (void)open_checked(&b, store[0], size, 0, &k_no_limits, 0);
        check_head(&b, data, size);
    }
    for (k = 0; k < 3; k++) free(store[k]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint32_t wl, crc;
    uint8_t *fixed;
    check_bytes(data, size);
    /* The input again with its CRC made right (where it has one), so that
     * mutated headers and weights get past rule 8 to the rules and the head
     * behind it. */
    if (size < 28) return 0;
    wl = fz_rd32(data + 20);
    if ((uint64_t)wl + 28u > size) return 0;
    crc = fz_crc32(0u, data, 24u + wl);
    if (fz_rd32(data + 24 + wl) == crc) return 0;
    fixed = malloc(size);
    FUZZ_ASSERT(fixed != NULL);
    memcpy(fixed, data, size);
    fz_put32(fixed + 24 + wl, crc);
    check_bytes(fixed, size);
    free(fixed);
    return 0;
}

/* ---- seeds --------------------------------------------------------------------- */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const uint16_t dims[][6] = {
        {4, 2, 1, 4, 1, 2}, {4, 2, 1, 2, 2, 3}, {3, 4, 2, 2, 1, 5}, {1, 1, 1, 1, 1, 2},
        {8, 4, 2, 4, 2, 4}, {2, 6, 3, 1, 3, 2}, {16, 2, 1, 8, 1, 4},
        /* each one past one of k_limits */
        {40, 1, 1, 1, 1, 2}, {1, 9, 1, 1, 1, 2}, {1, 1, 1, 17, 1, 2}, {1, 1, 1, 1, 4, 2}, {1, 1, 1, 1, 1, 17},
    };
    static uint8_t buf[8192];
    const char *dir = fz_seed_dir();
    char name[64];
    size_t i, n;
    int fp16, count = 0;
    (void)argc;
    (void)argv;
    if (dir == NULL) return 0;
    for (i = 0; i < sizeof dims / sizeof dims[0]; i++)
        for (fp16 = 0; fp16 < 2; fp16++) {
            n = fz_build_blob(buf, sizeof buf - 64, dims[i], fp16, (uint32_t)(7 * i + (size_t)fp16 + 1));
            if (n == 0) continue;
            snprintf(name, sizeof name, "blob_%zu_%s", i, fp16 ? "fp16" : "fp32");
            fz_write_seed(dir, name, buf, n);
            /* The same blob in a partition: erased flash after it. */
            memset(buf + n, 0xFF, 64);
            snprintf(name, sizeof name, "part_%zu_%s", i, fp16 ? "fp16" : "fp32");
            fz_write_seed(dir, name, buf, n + 64);
            count += 2;
        }
    /* The same dims as int8 blobs. */
    for (i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        n = fz_build_blob_i8(buf, sizeof buf - 64, dims[i], (uint32_t)(11 * i + 5));
        if (n == 0) continue;
        snprintf(name, sizeof name, "blob_%zu_int8", i);
        fz_write_seed(dir, name, buf, n);
        memset(buf + n, 0xFF, 64);
        snprintf(name, sizeof name, "part_%zu_int8", i);
        fz_write_seed(dir, name, buf, n + 64);
        count += 2;
    }
    /* A few refusals: erased, byte-swapped magic, bad CRC, short. */
    n = fz_build_blob(buf, sizeof buf, dims[0], 0, 3u);
    memset(buf, 0xFF, 4);
    fz_write_seed(dir, "erased", buf, n);
    memcpy(buf, "RVNE", 4);
    fz_write_seed(dir, "swapped", buf, n);
    n = fz_build_blob(buf, sizeof buf, dims[0], 0, 3u);
    buf[30] ^= 1u;
    fz_write_seed(dir, "bad_crc", buf, n);
    fz_write_seed(dir, "short", buf, 27);
    fprintf(stderr, "fuzz_blob: %d seeds (+4 refusals) in %s\n", count, dir);
    exit(0);
}
