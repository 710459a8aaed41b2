/* rvne_blob_open: one case per refusal of docs/format.md, in rule order,
 * including the lengths and dims whose arithmetic would wrap in 32 bits, the
 * alignment of the weights, and a port's CRC hook against the portable one. */
#include <stdint.h>
#include <string.h>
#include "check.h"
#include "rvne/blob.h"
#include "rvne/head.h"
#include "rvne/status.h"

/* 8-aligned backing store, so an offset of 0, 1 or 2 is a known alignment. */
static uint64_t g_store[(140000 + 64) / 8];
#define STORE ((uint8_t *)g_store)

typedef struct dims {
    uint16_t d, hq, hkv, hd, l, c;
} dims;

static uint32_t contract_len(dims m, int fp16)
{
    uint32_t q = (uint32_t)m.hq * m.hd, k = (uint32_t)m.hkv * m.hd;
    return ((uint32_t)m.l * (2u * m.d * q + 2u * m.d * k) + (uint32_t)m.d * m.c) * (fp16 ? 2u : 4u);
}

static void fix_crc(uint8_t *p, uint32_t weights_len)
{
    put32(p + 24 + weights_len, rvne_crc32(0u, p, 24u + weights_len));
}

/* A well-formed blob at p with weights_len wl (the contract's unless told),
 * deterministic weights; returns its total length. */
static size_t build(uint8_t *p, dims m, int fp16, uint32_t wl)
{
    uint32_t i;
    put32(p, RVNE_MAGIC);
    put16(p + 4, 1u);
    p[6] = fp16 ? 1u : 0u;
    p[7] = 0u;
    put16(p + 8, m.d);
    put16(p + 10, m.hq);
    put16(p + 12, m.hkv);
    put16(p + 14, m.hd);
    put16(p + 16, m.l);
    put16(p + 18, m.c);
    put32(p + 20, wl);
    for (i = 0; i < wl; i++) {
        p[24 + i] = (uint8_t)(i * 37u + 11u);
        /* Each value's top byte without exponent bit 6: finite (rule 18). */
        if (i % (fp16 ? 2u : 4u) == (fp16 ? 1u : 3u)) p[24 + i] &= 0xBFu;
    }
    fix_crc(p, wl);
    return 28u + wl;
}

static const dims k_small = {4, 2, 1, 2, 1, 3};
static const rvne_load_cfg k_file = {NULL, {0, 0, 0, 0, 0, 0}, 1, 0, NULL};
static const rvne_load_cfg k_part = {NULL, {0, 0, 0, 0, 0, 0}, 0, 0, NULL};

/* Open a small blob after mutate() changed its header at byte off to v. */
static int open_with_byte(size_t off, uint8_t v, int recrc)
{
    rvne_blob b;
    size_t n = build(STORE, k_small, 0, contract_len(k_small, 0));
    STORE[off] = v;
    if (recrc)
        fix_crc(STORE, contract_len(k_small, 0));
    return rvne_blob_open(&b, STORE, n, &k_file);
}

static int open_dims(dims m, int fp16, uint32_t wl, const rvne_load_cfg *cfg)
{
    rvne_blob b;
    size_t n = build(STORE, m, fp16, wl);
    return rvne_blob_open(&b, STORE, n, cfg);
}

static uint32_t crc_broken(uint32_t crc, const uint8_t *buf, uint32_t len)
{
    return rvne_crc32(crc, buf, len) ^ 1u;
}

static uint32_t g_hook_calls;
static uint32_t crc_counting(uint32_t crc, const uint8_t *buf, uint32_t len)
{
    uint32_t c = ~crc, i;
    int k;
    g_hook_calls++;
    for (i = 0; i < len; i++) {
        c ^= buf[i];
        for (k = 0; k < 8; k++)
            c = (c & 1u) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    return ~c;
}

static void test_valid(void)
{
    static const uint8_t golden[24] = {0x45, 0x4e, 0x56, 0x52, 0x01, 0x00, 0x00, 0x00, 0x10, 0x00, 0x04, 0x00,
                                       0x01, 0x00, 0x20, 0x00, 0x02, 0x00, 0x04, 0x00, 0x00, 0xa1, 0x00, 0x00};
    const dims up = {16, 4, 1, 32, 2, 4};
    rvne_blob b;
    uint32_t exp = 0;
    size_t n;

    /* The upstream example's dims: header bytes and weights_len of format.md. */
    n = build(STORE, up, 0, contract_len(up, 0));
    CHECK_EQ(n, 41244u);
    CHECK(memcmp(STORE, golden, 24) == 0);
    CHECK_STATUS(rvne_blob_open(&b, STORE, n, &k_file), RVNE_OK);
    CHECK_EQ(b.hdr.input_dim, 16);
    CHECK_EQ(b.hdr.n_q_heads, 4);
    CHECK_EQ(b.hdr.n_kv_heads, 1);
    CHECK_EQ(b.hdr.head_dim, 32);
    CHECK_EQ(b.hdr.n_layers, 2);
    CHECK_EQ(b.hdr.n_classes, 4);
    CHECK_EQ(b.hdr.weights_len, 41216u);
    CHECK_EQ(b.total_len, 41244u);
    CHECK(b.weights == STORE + 24);
    CHECK_EQ(b.crc_stored, rvne_crc32(0u, STORE, 41240u));
    CHECK_STATUS(rvne_expected_weights_len(&b.hdr, &exp), RVNE_OK);
    CHECK_EQ(exp, 41216u);
    CHECK_STATUS(rvne_blob_check_container(&b), RVNE_OK);

    /* FP16, and a partition: trailing erased bytes after the CRC are ignored. */
    n = build(STORE, up, 1, contract_len(up, 1));
    CHECK_EQ(n, 20636u);
    memset(STORE + n, 0xFF, 4096);
    CHECK_STATUS(rvne_blob_open(&b, STORE, n + 4096, &k_part), RVNE_OK);
    CHECK_EQ(b.total_len, 20636u);
    /* ...but a file must end at the CRC. */
    CHECK_STATUS(rvne_blob_open(&b, STORE, n + 4096, &k_file), RVNE_E_LENGTH);
    /* A NULL cfg is the strict (file) reading with the portable CRC. */
    CHECK_STATUS(rvne_blob_open(&b, STORE, n, NULL), RVNE_OK);
}

static void test_rules_in_order(void)
{
    rvne_blob b;
    size_t n, wl = contract_len(k_small, 0);
    uint8_t *p = STORE;

    /* 1: too short, also with every byte erased. */
    n = build(p, k_small, 0, (uint32_t)wl);
    CHECK_STATUS(rvne_blob_open(&b, p, 27, &k_part), RVNE_E_TOO_SHORT);
    CHECK_STATUS(rvne_blob_open(&b, p, 0, &k_part), RVNE_E_TOO_SHORT);
    CHECK(!b.hdr_valid);
    memset(p, 0xFF, 27);
    CHECK_STATUS(rvne_blob_open(&b, p, 27, &k_part), RVNE_E_TOO_SHORT);

    /* 2: erased partition, whatever the length. */
    memset(p, 0xFF, 65536);
    CHECK_STATUS(rvne_blob_open(&b, p, 65536, &k_part), RVNE_E_ERASED);
    CHECK_STATUS(rvne_blob_open(&b, p, 28, &k_file), RVNE_E_ERASED);
    CHECK(!b.hdr_valid);
    /* Three FF bytes are not erased: it is a bad magic. */
    p[3] = 0xFE;
    CHECK_STATUS(rvne_blob_open(&b, p, 65536, &k_part), RVNE_E_BAD_MAGIC);

    /* 3: magic, the byte-swapped "RVNE" case shows in hdr.magic. */
    n = build(p, k_small, 0, (uint32_t)wl);
    memcpy(p, "RVNE", 4);
    CHECK_STATUS(rvne_blob_open(&b, p, n, &k_file), RVNE_E_BAD_MAGIC);
    CHECK(b.hdr_valid);
    CHECK_EQ(b.hdr.magic, 0x454E5652u);
    CHECK_STATUS(open_with_byte(0, 0x46, 1), RVNE_E_BAD_MAGIC);

    /* 4-6, each with an untouched CRC: the header rules come first. */
    CHECK_STATUS(open_with_byte(4, 2, 0), RVNE_E_BAD_VERSION);
    CHECK_STATUS(open_with_byte(5, 1, 1), RVNE_E_BAD_VERSION);
    CHECK_STATUS(open_with_byte(6, 0x03, 0), RVNE_E_BAD_FLAGS); /* FP16 and int8 at once */
    CHECK_STATUS(open_with_byte(6, 0x04, 0), RVNE_E_BAD_FLAGS);
    CHECK_STATUS(open_with_byte(6, 0x80, 1), RVNE_E_BAD_FLAGS);
    CHECK_STATUS(open_with_byte(7, 1, 0), RVNE_E_RESERVED);

    /* 7: file length one short and one long; partition one short. */
    n = build(p, k_small, 0, (uint32_t)wl);
    CHECK_STATUS(rvne_blob_open(&b, p, n - 1, &k_file), RVNE_E_LENGTH);
    CHECK_STATUS(rvne_blob_open(&b, p, n + 1, &k_file), RVNE_E_LENGTH);
    CHECK_STATUS(rvne_blob_open(&b, p, n - 1, &k_part), RVNE_E_LENGTH);
    CHECK(b.hdr_valid);
    CHECK(!b.crc_valid);
    CHECK_STATUS(rvne_blob_open(&b, p, n, &k_part), RVNE_OK);

    /* 8: one flipped weight bit, then a flipped stored CRC. The blob still
     * reports its dims and stored CRC (INFO shows them). */
    p[24 + 5] ^= 0x10u;
    CHECK_STATUS(rvne_blob_open(&b, p, n, &k_file), RVNE_E_CRC);
    CHECK(b.hdr_valid);
    CHECK(b.crc_valid);
    CHECK_EQ(b.hdr.input_dim, 4);
    p[24 + 5] ^= 0x10u;
    p[n - 1] ^= 0x80u;
    CHECK_STATUS(rvne_blob_open(&b, p, n, &k_file), RVNE_E_CRC);
    p[n - 1] ^= 0x80u;

    /* 8 before 9: a zero dim with a stale CRC is a CRC error. */
    CHECK_STATUS(open_with_byte(8, 0, 0), RVNE_E_CRC);

    /* 9: each dim zero in turn (low byte zeroed, high byte is zero). */
    CHECK_STATUS(open_with_byte(8, 0, 1), RVNE_E_ZERO_DIM);
    CHECK_STATUS(open_with_byte(10, 0, 1), RVNE_E_ZERO_DIM);
    CHECK_STATUS(open_with_byte(12, 0, 1), RVNE_E_ZERO_DIM);
    CHECK_STATUS(open_with_byte(14, 0, 1), RVNE_E_ZERO_DIM);

    /* 10: 3 query heads over 2 kv heads. */
    {
        dims m = {4, 3, 2, 2, 1, 3};
        CHECK_STATUS(open_dims(m, 0, contract_len(m, 0), &k_file), RVNE_E_GQA);
    }
    /* 11, 12 */
    CHECK_STATUS(open_with_byte(16, 0, 1), RVNE_E_NO_LAYERS);
    CHECK_STATUS(open_with_byte(18, 1, 1), RVNE_E_FEW_CLASSES);
    CHECK_STATUS(open_with_byte(18, 0, 1), RVNE_E_FEW_CLASSES);

    /* 13: a length that is no whole number of elements, FP32 and FP16. */
    CHECK_STATUS(open_dims(k_small, 0, contract_len(k_small, 0) + 2u, &k_file), RVNE_E_ELEM_SIZE);
    CHECK_STATUS(open_dims(k_small, 1, contract_len(k_small, 1) + 1u, &k_file), RVNE_E_ELEM_SIZE);
    /* 12 before 13 */
    {
        dims m = k_small;
        m.c = 1;
        CHECK_STATUS(open_dims(m, 0, 6u, &k_file), RVNE_E_FEW_CLASSES);
    }

    /* 14: one element more or less than the contract; the FP32 length under
     * the FP16 flag. Container-valid all the same. */
    CHECK_STATUS(open_dims(k_small, 0, contract_len(k_small, 0) + 4u, &k_file), RVNE_E_CONTRACT);
    CHECK_STATUS(rvne_blob_check_container(&b), RVNE_OK);
    CHECK_STATUS(open_dims(k_small, 0, contract_len(k_small, 0) - 4u, &k_file), RVNE_E_CONTRACT);
    CHECK_STATUS(open_dims(k_small, 1, contract_len(k_small, 0), &k_file), RVNE_E_CONTRACT);
    CHECK_STATUS(open_dims(k_small, 0, 0u, &k_file), RVNE_E_CONTRACT);
}

/* Lengths and dims whose arithmetic wraps if done in 32 bits. */
static void test_overflow(void)
{
    rvne_blob b;
    uint8_t *p = STORE;
    uint32_t exp = 0;
    size_t n = build(p, k_small, 0, contract_len(k_small, 0));

    /* 24 + weights_len + 4 wraps to 0 (and to 1, 27) in 32 bits: a parser
     * that computed it so would accept this 28-byte buffer and read the CRC
     * far outside it. */
    put32(p + 20, 0xFFFFFFE4u);
    CHECK_STATUS(rvne_blob_open(&b, p, n, &k_part), RVNE_E_LENGTH);
    CHECK_STATUS(rvne_blob_open(&b, p, 28, &k_file), RVNE_E_LENGTH);
    put32(p + 20, 0xFFFFFFE5u);
    CHECK_STATUS(rvne_blob_open(&b, p, n, &k_part), RVNE_E_LENGTH);
    put32(p + 20, 0xFFFFFFFFu);
    CHECK_STATUS(rvne_blob_open(&b, p, n, &k_part), RVNE_E_LENGTH);
    put32(p + 20, 0xFFFFFFFCu);
    CHECK_STATUS(rvne_blob_open(&b, p, n, &k_file), RVNE_E_LENGTH);
    CHECK(!b.crc_valid);

    /* Dims whose byte count is 2^34 + 2^17: wrapped to 32 bits it is 131072,
     * and a blob of exactly that length, CRC right, must still be refused. */
    {
        dims m = {16384, 1, 1, 16384, 4, 2};
        CHECK_EQ(contract_len(m, 0), 131072u); /* the wrapped arithmetic, for the record */
        size_t len = build(p, m, 0, 131072u);
        CHECK_STATUS(rvne_blob_open(&b, p, len, &k_file), RVNE_E_CONTRACT);
        CHECK_EQ(b.hdr.input_dim, 16384);
        CHECK_STATUS(rvne_expected_weights_len(&b.hdr, &exp), RVNE_E_TOO_LARGE);
    }
    {
        rvne_header h;
        memset(&h, 0, sizeof h);
        /* Every u16 at its maximum: the product overflows even 64 bits when
         * unchecked. */
        h.input_dim = h.n_q_heads = h.n_kv_heads = h.head_dim = h.n_layers = h.n_classes = 0xFFFF;
        CHECK_STATUS(rvne_expected_weights_len(&h, &exp), RVNE_E_TOO_LARGE);
        /* The 32-bit boundary: 2^30 + 2 elements are 2^32 + 8 bytes in FP32
         * (refused) and 2^31 + 4 bytes in FP16 (fine). */
        h.input_dim = h.n_q_heads = h.n_kv_heads = 1;
        h.head_dim = 16384;
        h.n_layers = 16384;
        h.n_classes = 2;
        CHECK_STATUS(rvne_expected_weights_len(&h, &exp), RVNE_E_TOO_LARGE);
        h.flags = RVNE_FLAG_FP16;
        CHECK_STATUS(rvne_expected_weights_len(&h, &exp), RVNE_OK);
        CHECK_EQ(exp, 2147483652u);
    }
    /* Arena sizes are checked against size_t: 32 bits on the MCU. */
    {
        rvne_header h;
        size_t sz = 0;
        const uint64_t w = 0xFFFFFFFFu;
        const uint64_t want = (16u + 16u + 128u + 4u * (w + 1u) + 4u + 2u * 2u * w * 32u) * 4u;
        int rc;
        memset(&h, 0, sizeof h);
        h.input_dim = 16;
        h.n_q_heads = 4;
        h.n_kv_heads = 1;
        h.head_dim = 32;
        h.n_layers = 2;
        h.n_classes = 4;
        rc = rvne_head_arena_size(&h, (uint32_t)w, &sz);
        if (sizeof(size_t) < 8) {
            CHECK_STATUS(rc, RVNE_E_TOO_LARGE);
        } else {
            CHECK_STATUS(rc, RVNE_OK);
            CHECK(sz == want);
        }
        h.input_dim = h.n_q_heads = h.n_kv_heads = h.head_dim = h.n_layers = h.n_classes = 0xFFFF;
        CHECK_STATUS(rvne_head_arena_size(&h, (uint32_t)w, &sz), RVNE_E_TOO_LARGE);
        CHECK_STATUS(rvne_head_arena_size(&h, 0u, &sz), RVNE_E_INVAL);
    }
}

static void test_align_and_limits(void)
{
    rvne_blob b;
    rvne_load_cfg cfg = k_file;
    size_t n;

    /* 15: the weights sit at offset 24 of the blob, so a blob at an odd
     * address has odd weights, and at 2 mod 4 FP32 weights are misaligned
     * while FP16 ones are fine. */
    n = build(STORE + 1, k_small, 0, contract_len(k_small, 0));
    CHECK_STATUS(rvne_blob_open(&b, STORE + 1, n, &k_file), RVNE_E_ALIGN);
    n = build(STORE + 2, k_small, 0, contract_len(k_small, 0));
    CHECK_STATUS(rvne_blob_open(&b, STORE + 2, n, &k_file), RVNE_E_ALIGN);
    n = build(STORE + 1, k_small, 1, contract_len(k_small, 1));
    CHECK_STATUS(rvne_blob_open(&b, STORE + 1, n, &k_file), RVNE_E_ALIGN);
    n = build(STORE + 2, k_small, 1, contract_len(k_small, 1));
    CHECK_STATUS(rvne_blob_open(&b, STORE + 2, n, &k_file), RVNE_OK);
    n = build(STORE + 4, k_small, 0, contract_len(k_small, 0));
    CHECK_STATUS(rvne_blob_open(&b, STORE + 4, n, &k_file), RVNE_OK);

    /* 16: a port's limits, one field at a time; at the limit is fine. */
    n = build(STORE, k_small, 0, contract_len(k_small, 0));
    cfg.limits.max_input_dim = 4;
    CHECK_STATUS(rvne_blob_open(&b, STORE, n, &cfg), RVNE_OK);
    cfg.limits.max_input_dim = 3;
    CHECK_STATUS(rvne_blob_open(&b, STORE, n, &cfg), RVNE_E_TOO_LARGE);
    memset(&cfg.limits, 0, sizeof cfg.limits);
    cfg.limits.max_heads = 1;
    CHECK_STATUS(rvne_blob_open(&b, STORE, n, &cfg), RVNE_E_TOO_LARGE);
    memset(&cfg.limits, 0, sizeof cfg.limits);
    cfg.limits.max_head_dim = 1;
    CHECK_STATUS(rvne_blob_open(&b, STORE, n, &cfg), RVNE_E_TOO_LARGE);
    memset(&cfg.limits, 0, sizeof cfg.limits);
    cfg.limits.max_layers = 1;
    cfg.limits.max_classes = 2;
    CHECK_STATUS(rvne_blob_open(&b, STORE, n, &cfg), RVNE_E_TOO_LARGE);
    /* A contract failure is reported before the limits (14 before 16). */
    n = build(STORE, k_small, 0, contract_len(k_small, 0) + 4u);
    CHECK_STATUS(rvne_blob_open(&b, STORE, n, &cfg), RVNE_E_CONTRACT);
}

static void test_crc_hook(void)
{
    rvne_blob b;
    rvne_load_cfg cfg = k_file;
    const dims up = {16, 4, 1, 32, 2, 4};
    size_t n = build(STORE, up, 0, contract_len(up, 0));

    /* A port's hook (here a bitwise one) is what the loader uses... */
    CHECK_EQ(rvne_crc32_hook_ok(crc_counting), 1);
    CHECK_EQ(crc_counting(0u, STORE, (uint32_t)n - 4u), rvne_crc32(0u, STORE, (uint32_t)n - 4u));
    g_hook_calls = 0;
    cfg.crc32 = crc_counting;
    CHECK_STATUS(rvne_blob_open(&b, STORE, n, &cfg), RVNE_OK);
    CHECK(g_hook_calls > 0u);
    /* ...so a wrong one refuses a good blob, and hook_ok would have said so. */
    cfg.crc32 = crc_broken;
    CHECK_STATUS(rvne_blob_open(&b, STORE, n, &cfg), RVNE_E_CRC);
    CHECK_EQ(rvne_crc32_hook_ok(crc_broken), 0);
}

static void test_inval(void)
{
    rvne_blob b;
    size_t n = build(STORE, k_small, 0, contract_len(k_small, 0));
    CHECK_STATUS(rvne_blob_open(NULL, STORE, n, &k_file), RVNE_E_INVAL);
    CHECK_STATUS(rvne_blob_open(&b, NULL, n, &k_file), RVNE_E_INVAL);
    CHECK_STATUS(rvne_blob_check_container(NULL), RVNE_E_INVAL);
    CHECK(strcmp(rvne_status_name(RVNE_E_CONTRACT), "E_CONTRACT") == 0);
    CHECK(strcmp(rvne_status_name(RVNE_E_TOO_SHORT), "E_TOO_SHORT") == 0);
    CHECK(strcmp(rvne_status_name(RVNE_E_INVAL), "E_INVAL") == 0);
    CHECK(strcmp(rvne_status_name(RVNE_OK), "OK") == 0);
    CHECK(strcmp(rvne_status_name(1), "E_UNKNOWN") == 0);
    CHECK(strcmp(rvne_status_name(-1000), "E_UNKNOWN") == 0);
    CHECK(strcmp(rvne_status_name((int)0x80000000u), "E_UNKNOWN") == 0);
}

/* Rule 18, after the contract: a NaN or infinite FP32 / FP16 weight anywhere,
 * the largest finite values and an int8 blob's bytes (not floats) pass. */
static void test_finite(void)
{
    static const struct {
        int fp16;
        uint32_t at;            /* weight index */
        uint8_t lo, hi;         /* its top two bytes */
        int want;
    } k_cases[] = {
        {0, 0, 0xC0, 0x7F, RVNE_E_NONFINITE},  /* quiet NaN, the first weight */
        {0, 40, 0x80, 0x7F, RVNE_E_NONFINITE}, /* +inf */
        {0, 59, 0x80, 0xFF, RVNE_E_NONFINITE}, /* -inf, the last weight */
        {0, 5, 0x7F, 0x7F, RVNE_OK},           /* FLT_MAX's top bytes: finite */
        {1, 0, 0x00, 0x7E, RVNE_E_NONFINITE},  /* FP16 NaN */
        {1, 59, 0x00, 0xFC, RVNE_E_NONFINITE}, /* FP16 -inf, the last weight */
        {1, 9, 0xFF, 0x7B, RVNE_OK},           /* FP16 65504 */
    };
    size_t c;
    rvne_blob b;
    for (c = 0; c < sizeof k_cases / sizeof k_cases[0]; c++) {
        uint32_t wl = contract_len(k_small, k_cases[c].fp16), es = k_cases[c].fp16 ? 2u : 4u;
        uint8_t *w = STORE + 24 + k_cases[c].at * es;
        CHECK_EQ(wl / es, 60u);
        build(STORE, k_small, k_cases[c].fp16, wl);
        w[es - 2u] = k_cases[c].lo;
        w[es - 1u] = k_cases[c].hi;
        fix_crc(STORE, wl);
        CHECK_STATUS(rvne_blob_open(&b, STORE, 28u + wl, &k_file), k_cases[c].want);
        /* The CRC comes first: a NaN with a stale CRC is E_CRC. */
        STORE[24 + wl] ^= 1u;
        CHECK_STATUS(rvne_blob_open(&b, STORE, 28u + wl, &k_file),
                     RVNE_E_CRC);
    }
    CHECK(strcmp(rvne_status_name(RVNE_E_NONFINITE), "E_NONFINITE") == 0);
    CHECK(strcmp(rvne_status_name(RVNE_E_ROLLBACK), "E_ROLLBACK") == 0);
}

int main(void)
{
    test_valid();
    test_finite();
    test_rules_in_order();
    test_overflow();
    test_align_and_limits();
    test_crc_hook();
    test_inval();
    return CHECK_DONE("test_blob");
}
