/* Model slots, the selector record and updates (docs/flash-layout.md "Slots
 * and selector", docs/protocol.md "Updating the model") over a RAM flash
 * with NOR semantics (erase sets 0xFF, program only clears bits) and
 * injectable failures: every boot outcome the docs name, every update
 * refusal with the model left serving, prog/erase geometries of the S3 and
 * the lx60, and the UPDATE_* commands through the protocol server. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "ram_slots.h"
#include "rvne/base64.h"
#include "rvne/crc32.h"
#include "rvne/flash.h"
#include "rvne/head.h"
#include "rvne/proto.h"
#include "rvne/ptable.h"
#include "rvne/md5.h"
#include "rvne/status.h"
#include "rvne/update.h"

#define SLOT_BYTES RAM_FLASH_BYTES
#define SEL_BYTES RAM_FLASH_BYTES
#define LINE_MAX 4096u

/* ---- a RAM flash ------------------------------------------------------------------ */

static ram_flash g_rf;

/* A fresh erased flash; the scenario before it stayed on the flash's geometry. */
static void rf_init(uint32_t erase_size, uint32_t prog_size)
{
    CHECK_EQ(g_rf.misuse, 0);
    ram_flash_init(&g_rf, erase_size, prog_size, SLOT_BYTES, SEL_BYTES);
}

/* ---- blobs ------------------------------------------------------------------------ */

static uint8_t g_old[8192] __attribute__((aligned(16)));
static uint8_t g_new[8192] __attribute__((aligned(16)));
static uint8_t g_big[SLOT_BYTES] __attribute__((aligned(16)));

/* A loadable blob of dims (d, 2, 1, hd, 1, c) with weights from seed. */
static uint32_t make_blob(uint8_t *p, uint32_t cap, uint32_t d, uint32_t hd, uint32_t c, uint32_t seed)
{
    rvne_header h;
    uint32_t wl, i;
    memset(&h, 0, sizeof h);
    h.input_dim = (uint16_t)d;
    h.n_q_heads = 2;
    h.n_kv_heads = 1;
    h.head_dim = (uint16_t)hd;
    h.n_layers = 1;
    h.n_classes = (uint16_t)c;
    if (rvne_expected_weights_len(&h, &wl) != RVNE_OK || wl + 28u > cap) return 0;
    put32(p, RVNE_MAGIC);
    put16(p + 4, 1);
    p[6] = p[7] = 0;
    put16(p + 8, d);
    put16(p + 10, 2);
    put16(p + 12, 1);
    put16(p + 14, hd);
    put16(p + 16, 1);
    put16(p + 18, c);
    put32(p + 20, wl);
    for (i = 0; i < wl; i += 4) {
        float f = (float)((int)((seed * 2654435761u + i * 40503u) % 2001u) - 1000) / 4000.0f;
        uint32_t u;
        memcpy(&u, &f, 4);
        put32(p + 24 + i, u);
    }
    put32(p + 24 + wl, rvne_crc32(0u, p, 24u + wl));
    return 28u + wl;
}

static uint32_t blob_crc(const uint8_t *p, uint32_t len) { return rvne_crc32(0u, p, len - 4u); }

/* ---- boot ---------------------------------------------------------------------------- */

static uint64_t g_arena[(256u * 1024u) / 8];
static rvne_model g_m;
static rvne_slots g_sl;
static const rvne_load_cfg g_load = {0, {0, 0, 0, 0, 0, 0}, 0, 0, 0};

static int boot(void)
{
    return rvne_slots_boot(&g_sl, &g_rf.f, &g_m, 8, g_arena, sizeof g_arena, &g_load);
}

static void put_slot(int slot, const uint8_t *blob, uint32_t len)
{
    memset(g_rf.part[slot], 0xFF, SLOT_BYTES);
    memcpy(g_rf.part[slot], blob, len);
}

static void put_record(int copy, uint32_t seq, uint32_t slot, const uint8_t *blob, uint32_t len)
{
    rvne_sel_record r = {seq, slot, len, blob_crc(blob, len)};
    uint8_t *at = g_rf.part[RVNE_PART_SEL] + (copy ? SEL_BYTES / 2 : 0);
    rvne_sel_encode(&r, at);
}

static int send(const uint8_t *blob, uint32_t len, uint32_t step);
static void check_serving(const uint8_t *blob, uint32_t len, int slot);

static void test_record_codec(void)
{
    uint8_t raw[RVNE_SEL_RECORD_LEN];
    rvne_sel_record r = {7, 1, 100, 0xDEADBEEF}, got;
    rvne_sel_encode(&r, raw);
    CHECK_EQ(rvne_sel_decode(raw, &got), RVNE_SEL_VALID);
    CHECK(got.seq == 7 && got.slot == 1 && got.blob_len == 100 && got.blob_crc == 0xDEADBEEF);
    /* Every single-bit flip is caught: the record's own CRC. */
    for (int i = 0; i < (int)RVNE_SEL_RECORD_LEN * 8; i++) {
        raw[i / 8] ^= (uint8_t)(1u << (i % 8));
        CHECK_EQ(rvne_sel_decode(raw, &got), RVNE_SEL_CORRUPT);
        raw[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    memset(raw, 0xFF, sizeof raw);
    CHECK_EQ(rvne_sel_decode(raw, &got), RVNE_SEL_ERASED);
    raw[31] = 0xFE; /* a torn write: mostly erased */
    CHECK_EQ(rvne_sel_decode(raw, &got), RVNE_SEL_CORRUPT);
    r.slot = 2; /* a valid CRC over a slot that does not exist */
    rvne_sel_encode(&r, raw);
    CHECK_EQ(rvne_sel_decode(raw, &got), RVNE_SEL_CORRUPT);
    r.slot = 0;
    r.seq = 0xFFFFFFFFu;
    rvne_sel_encode(&r, raw);
    CHECK_EQ(rvne_sel_decode(raw, &got), RVNE_SEL_CORRUPT);
}

static void test_boot_outcomes(void)
{
    uint32_t lo = make_blob(g_old, sizeof g_old, 8, 4, 3, 1), ln = make_blob(g_new, sizeof g_new, 8, 4, 3, 2);
    uint32_t co = blob_crc(g_old, lo), cn = blob_crc(g_new, ln);
    CHECK(lo > 28 && ln > 28 && co != cn);

    /* Erased flash: no record, no blob: slot A's reason. */
    rf_init(4096, 4);
    CHECK_STATUS(boot(), RVNE_E_ERASED);
    CHECK_EQ(g_sl.layout, RVNE_LAYOUT_SLOTS);
    CHECK_EQ(g_sl.active, -1);

    /* A freshly flashed board: slot A, no record. */
    put_slot(RVNE_PART_A, g_old, lo);
    CHECK_STATUS(boot(), RVNE_OK);
    CHECK_EQ(g_sl.active, RVNE_PART_A);
    CHECK_EQ(g_sl.boot_note, RVNE_BOOT_NO_RECORD);
    CHECK_EQ(g_m.blob.crc_stored, co);

    /* Only B holds a blob, no record: B. */
    rf_init(4096, 4);
    put_slot(RVNE_PART_B, g_new, ln);
    CHECK_STATUS(boot(), RVNE_OK);
    CHECK_EQ(g_sl.active, RVNE_PART_B);

    /* The higher valid sequence wins, in either copy. */
    rf_init(4096, 4);
    put_slot(RVNE_PART_A, g_old, lo);
    put_slot(RVNE_PART_B, g_new, ln);
    put_record(0, 5, RVNE_PART_A, g_old, lo);
    put_record(1, 6, RVNE_PART_B, g_new, ln);
    CHECK_STATUS(boot(), RVNE_OK);
    CHECK_EQ(g_sl.active, RVNE_PART_B);
    CHECK_EQ(g_sl.current.seq, 6);
    CHECK_EQ(g_sl.current_copy, 1);
    put_record(0, 7, RVNE_PART_A, g_old, lo);
    CHECK_STATUS(boot(), RVNE_OK);
    CHECK_EQ(g_sl.active, RVNE_PART_A);
    CHECK_EQ(g_sl.boot_note, RVNE_BOOT_RECORD);

    /* A torn newer record (half programmed): the older one stands. */
    put_record(0, 5, RVNE_PART_A, g_old, lo);
    memset(g_rf.part[RVNE_PART_SEL] + SEL_BYTES / 2 + 16, 0xFF, 16);
    CHECK_STATUS(boot(), RVNE_OK);
    CHECK_EQ(g_sl.active, RVNE_PART_A);
    CHECK_EQ(g_sl.copy_state[1], RVNE_SEL_CORRUPT);

    /* Both copies corrupt: slot A, else B, and the log line says so. */
    {
        char line[200];
        g_rf.part[RVNE_PART_SEL][3] ^= 0x40;
        CHECK_STATUS(boot(), RVNE_OK);
        CHECK_EQ(g_sl.active, RVNE_PART_A);
        CHECK_EQ(g_sl.boot_note, RVNE_BOOT_SEL_CORRUPT);
        rvne_slots_describe(&g_sl, line, sizeof line);
        CHECK(strstr(line, "corrupt/corrupt") != NULL && strstr(line, "slot a") != NULL);
        memset(g_rf.part[RVNE_PART_A], 0xFF, SLOT_BYTES);
        CHECK_STATUS(boot(), RVNE_OK);
        CHECK_EQ(g_sl.active, RVNE_PART_B);
    }

    /* A slot erased under the newer valid record: the older record's slot. */
    rf_init(4096, 4);
    put_slot(RVNE_PART_A, g_old, lo);
    put_record(0, 1, RVNE_PART_A, g_old, lo);
    put_record(1, 2, RVNE_PART_B, g_new, ln); /* B never written */
    CHECK_STATUS(boot(), RVNE_OK);
    CHECK_EQ(g_sl.active, RVNE_PART_A);
    CHECK_EQ(g_sl.boot_note, RVNE_BOOT_FALLBACK);

    /* A slot holding a whole blob, but not the one its record names. */
    put_slot(RVNE_PART_B, g_old, lo);
    CHECK_STATUS(boot(), RVNE_OK);
    CHECK_EQ(g_sl.active, RVNE_PART_A);
    CHECK_EQ(g_sl.boot_note, RVNE_BOOT_FALLBACK);

    /* Records that name no loadable blob at all: no model, the winner's reason. */
    memset(g_rf.part[RVNE_PART_A], 0xFF, SLOT_BYTES);
    memset(g_rf.part[RVNE_PART_B], 0xFF, SLOT_BYTES);
    CHECK_STATUS(boot(), RVNE_E_ERASED);
    CHECK_EQ(g_sl.active, -1);
    /* An update then keeps the newest record's slot (B, seq 2) for a human
     * to recover, writes A, and its record goes into the other copy. */
    CHECK_EQ(g_sl.current_copy, 1);
    CHECK_STATUS(rvne_update_begin(&g_sl, ln, cn), RVNE_OK);
    CHECK_EQ(g_sl.upd.slot, RVNE_PART_A);
    CHECK_STATUS(send(g_new, ln, 1000), RVNE_OK);
    CHECK_STATUS(rvne_update_commit(&g_sl, cn, NULL), RVNE_OK);
    check_serving(g_new, ln, RVNE_PART_A);
    CHECK_EQ(g_sl.current.seq, 3);
    CHECK_EQ(g_sl.current_copy, 0);
    CHECK_STATUS(boot(), RVNE_OK);
    CHECK_EQ(g_sl.active, RVNE_PART_A);
    CHECK_EQ(g_sl.boot_note, RVNE_BOOT_RECORD);
    /* The same with the newest record naming A: B is written. */
    memset(g_rf.part[RVNE_PART_A], 0xFF, SLOT_BYTES);
    CHECK_STATUS(boot(), RVNE_E_ERASED);
    CHECK_EQ(g_sl.current_copy, 0);
    CHECK_STATUS(rvne_update_begin(&g_sl, ln, cn), RVNE_OK);
    CHECK_EQ(g_sl.upd.slot, RVNE_PART_B);
    rvne_update_abort(&g_sl);

    /* The previous single-partition layout: served, never updated. */
    rf_init(4096, 4);
    g_rf.f.part_size[RVNE_PART_B] = g_rf.f.part_size[RVNE_PART_SEL] = 0;
    put_slot(RVNE_PART_A, g_old, lo);
    CHECK_STATUS(boot(), RVNE_OK);
    CHECK_EQ(g_sl.layout, RVNE_LAYOUT_SINGLE);
    CHECK_STATUS(rvne_update_begin(&g_sl, ln, cn), RVNE_E_NO_SLOTS);

    /* No flash at all: E_NO_PARTITION; a read-only port: no updates. */
    CHECK_STATUS(rvne_slots_boot(&g_sl, NULL, &g_m, 8, g_arena, sizeof g_arena, &g_load), RVNE_E_NO_PARTITION);
    CHECK_EQ(g_sl.layout, RVNE_LAYOUT_NONE);
    CHECK_STATUS(rvne_update_begin(&g_sl, ln, cn), RVNE_E_NO_SLOTS);
    rf_init(4096, 4);
    put_slot(RVNE_PART_A, g_old, lo);
    g_rf.f.erase = NULL;
    CHECK_STATUS(boot(), RVNE_OK);
    CHECK_STATUS(rvne_update_begin(&g_sl, ln, cn), RVNE_E_NO_SLOTS);
}

/* ---- updates ------------------------------------------------------------------------ */

/* Sends blob in chunks of `step` bytes; returns the first failing status. */
static int send(const uint8_t *blob, uint32_t len, uint32_t step)
{
    uint32_t off = 0, expect = 0;
    int rc;
    while (off < len) {
        uint32_t n = len - off < step ? len - off : step;
        rc = rvne_update_chunk(&g_sl, off, blob + off, n, rvne_crc32(0u, blob + off, n), &expect);
        if (rc != RVNE_OK) return rc;
        if (expect != off + n) return RVNE_E_INVAL;
        off += n;
    }
    return RVNE_OK;
}

/* The model still serving is `blob` (and pushes work). */
static void check_serving(const uint8_t *blob, uint32_t len, int slot)
{
    float frame[8] = {0.5f, -1, 2, 0, 1, 1, -0.25f, 3};
    CHECK_STATUS(g_m.status, RVNE_OK);
    CHECK_EQ(g_sl.active, slot);
    CHECK_EQ(g_m.blob.crc_stored, blob_crc(blob, len));
    CHECK(g_m.blob.weights == (const uint8_t *)g_rf.part[slot] + 24);
    CHECK_STATUS(rvne_head_push(&g_m.head, frame), RVNE_OK);
}

static void test_update_geometries(void)
{
    static const uint32_t erase[] = {4096, 65536};
    static const uint32_t prog[] = {1, 4, 16};
    static const uint32_t steps[] = {1000, 64, 7, 4096};
    uint32_t lo = make_blob(g_old, sizeof g_old, 8, 4, 3, 1), ln = make_blob(g_new, sizeof g_new, 6, 4, 2, 9);
    CHECK(ln % 16 != 0); /* the tail is padded */
    for (size_t e = 0; e < 2; e++)
        for (size_t p = 0; p < 3; p++)
            for (size_t s = 0; s < 4; s++) {
                rf_init(erase[e], prog[p]);
                put_slot(RVNE_PART_A, g_old, lo);
                CHECK_STATUS(boot(), RVNE_OK);
                CHECK_STATUS(rvne_update_begin(&g_sl, ln, blob_crc(g_new, ln)), RVNE_OK);
                CHECK_EQ(g_sl.upd.slot, RVNE_PART_B);
                CHECK_STATUS(send(g_new, ln, steps[s]), RVNE_OK);
                check_serving(g_old, lo, RVNE_PART_A); /* still the old one until commit */
                CHECK_STATUS(rvne_update_commit(&g_sl, blob_crc(g_new, ln), NULL), RVNE_OK);
                check_serving(g_new, ln, RVNE_PART_B);
                CHECK_EQ(g_rf.double_prog, 0);
                CHECK(memcmp(g_rf.part[RVNE_PART_A], g_old, lo) == 0); /* the old slot untouched */
                /* What the device boots next time: the new one, by its record. */
                CHECK_STATUS(boot(), RVNE_OK);
                check_serving(g_new, ln, RVNE_PART_B);
                CHECK_EQ(g_sl.current.seq, 1);
                /* And back again: A is rewritten, the record goes to the other copy. */
                CHECK_STATUS(rvne_update_begin(&g_sl, lo, blob_crc(g_old, lo)), RVNE_OK);
                CHECK_STATUS(send(g_old, lo, steps[s]), RVNE_OK);
                CHECK_STATUS(rvne_update_commit(&g_sl, blob_crc(g_old, lo), NULL), RVNE_OK);
                CHECK_EQ(g_sl.current.seq, 2);
                CHECK_STATUS(boot(), RVNE_OK);
                check_serving(g_old, lo, RVNE_PART_A);
                CHECK_EQ(g_sl.copy_state[0], RVNE_SEL_VALID);
                CHECK_EQ(g_sl.copy_state[1], RVNE_SEL_VALID);
            }
}

static void start_update(uint32_t lo, uint32_t ln)
{
    rf_init(4096, 4);
    put_slot(RVNE_PART_A, g_old, lo);
    CHECK_STATUS(boot(), RVNE_OK);
    CHECK_STATUS(rvne_update_begin(&g_sl, ln, blob_crc(g_new, ln)), RVNE_OK);
}

static void test_update_refusals(void)
{
    uint32_t lo = make_blob(g_old, sizeof g_old, 8, 4, 3, 1), ln = make_blob(g_new, sizeof g_new, 8, 4, 3, 2);
    uint32_t cn = blob_crc(g_new, ln), expect = 0;
    int load = 0;

    /* A second begin mid-update; a chunk or commit with none. */
    start_update(lo, ln);
    CHECK_STATUS(rvne_update_begin(&g_sl, ln, cn), RVNE_E_UPDATE_BUSY);
    rvne_update_abort(&g_sl);
    CHECK_STATUS(rvne_update_chunk(&g_sl, 0, g_new, 64, rvne_crc32(0, g_new, 64), &expect), RVNE_E_NO_UPDATE);
    CHECK_STATUS(rvne_update_commit(&g_sl, cn, NULL), RVNE_E_NO_UPDATE);
    check_serving(g_old, lo, RVNE_PART_A);

    /* Sizes: below a header, above the slot. */
    CHECK_STATUS(rvne_update_begin(&g_sl, 27, cn), RVNE_E_UPDATE_SIZE);
    CHECK_STATUS(rvne_update_begin(&g_sl, SLOT_BYTES + 1, cn), RVNE_E_UPDATE_SIZE);

    /* A bad chunk is refused, nothing written, and the same chunk goes in after. */
    start_update(lo, ln);
    CHECK_STATUS(rvne_update_chunk(&g_sl, 0, g_new, 100, rvne_crc32(0, g_new, 100) ^ 1, &expect), RVNE_E_CHUNK_CRC);
    CHECK_EQ(expect, 0);
    CHECK_EQ(g_rf.progs, 0);
    CHECK_STATUS(rvne_update_chunk(&g_sl, 0, g_new, 100, rvne_crc32(0, g_new, 100), &expect), RVNE_OK);
    CHECK_EQ(expect, 100);
    /* Out of order: a gap, a repeat, past the end. */
    CHECK_STATUS(rvne_update_chunk(&g_sl, 200, g_new + 200, 10, rvne_crc32(0, g_new + 200, 10), &expect),
                 RVNE_E_UPDATE_ORDER);
    CHECK_EQ(expect, 100);
    CHECK_STATUS(rvne_update_chunk(&g_sl, 0, g_new, 100, rvne_crc32(0, g_new, 100), &expect), RVNE_E_UPDATE_ORDER);
    CHECK_STATUS(rvne_update_chunk(&g_sl, 100, g_big, ln, rvne_crc32(0, g_big, ln), &expect), RVNE_E_UPDATE_SIZE);
    /* Truncated: commit before the end keeps the update open for the rest. */
    CHECK_STATUS(rvne_update_commit(&g_sl, cn, NULL), RVNE_E_INCOMPLETE);
    CHECK(g_sl.upd.active);
    CHECK_STATUS(rvne_update_chunk(&g_sl, 100, g_new + 100, ln - 100, rvne_crc32(0, g_new + 100, ln - 100), &expect),
                 RVNE_OK);
    /* Commit with the wrong CRC: abandoned, old model serving, at boot too. */
    CHECK_STATUS(rvne_update_commit(&g_sl, cn ^ 0x10, NULL), RVNE_E_UPDATE_CRC);
    CHECK(!g_sl.upd.active);
    check_serving(g_old, lo, RVNE_PART_A);
    CHECK_STATUS(boot(), RVNE_OK);
    check_serving(g_old, lo, RVNE_PART_A);

    /* BEGIN named another CRC than the blob carries. */
    rf_init(4096, 4);
    put_slot(RVNE_PART_A, g_old, lo);
    CHECK_STATUS(boot(), RVNE_OK);
    CHECK_STATUS(rvne_update_begin(&g_sl, ln, cn ^ 1), RVNE_OK);
    CHECK_STATUS(send(g_new, ln, 512), RVNE_OK);
    CHECK_STATUS(rvne_update_commit(&g_sl, cn ^ 1, &load), RVNE_E_UPDATE_CRC);
    check_serving(g_old, lo, RVNE_PART_A);

    /* A blob for another contract (weights_len not the dims' size), a
     * CRC-broken one, an over-long size: refused as at boot. */
    {
        uint8_t bad[8192];
        uint32_t lb;
        memcpy(bad, g_new, ln);
        put32(bad + 20, ln - 28 - 4); /* one float short of the contract */
        put32(bad + ln - 8, rvne_crc32(0, bad, ln - 8));
        lb = ln - 4;
        start_update(lo, lb);
        g_sl.upd.crc = blob_crc(bad, lb);
        CHECK_STATUS(send(bad, lb, 700), RVNE_OK);
        CHECK_STATUS(rvne_update_commit(&g_sl, blob_crc(bad, lb), &load), RVNE_E_CONTRACT);
        CHECK_STATUS(load, RVNE_E_CONTRACT);
        check_serving(g_old, lo, RVNE_PART_A);

        memcpy(bad, g_new, ln);
        bad[40] ^= 1;
        start_update(lo, ln);
        CHECK_STATUS(send(bad, ln, 700), RVNE_OK);
        CHECK_STATUS(rvne_update_commit(&g_sl, cn, &load), RVNE_E_CRC);
        check_serving(g_old, lo, RVNE_PART_A);

        memcpy(bad, g_new, ln);
        memset(bad + ln, 0, 8);
        start_update(lo, ln + 8);
        g_sl.upd.crc = cn;
        CHECK_STATUS(send(bad, ln + 8, 700), RVNE_OK);
        CHECK_STATUS(rvne_update_commit(&g_sl, cn, &load), RVNE_E_LENGTH);
        check_serving(g_old, lo, RVNE_PART_A);
    }

    /* A model whose arena at the current window does not fit. */
    {
        uint32_t lbig = make_blob(g_big, sizeof g_big, 16, 128, 2, 3);
        size_t need = 0;
        rvne_header h;
        CHECK(lbig > 0);
        memset(&h, 0, sizeof h);
        h.input_dim = 16;
        h.n_q_heads = 2;
        h.n_kv_heads = 1;
        h.head_dim = 128;
        h.n_layers = 1;
        h.n_classes = 2;
        CHECK_STATUS(rvne_head_arena_size(&h, 1024, &need), RVNE_OK);
        CHECK(need > sizeof g_arena);
        rf_init(4096, 4);
        put_slot(RVNE_PART_A, g_old, lo);
        CHECK_STATUS(rvne_slots_boot(&g_sl, &g_rf.f, &g_m, 1024, g_arena, sizeof g_arena, &g_load), RVNE_OK);
        CHECK_STATUS(rvne_update_begin(&g_sl, lbig, blob_crc(g_big, lbig)), RVNE_OK);
        CHECK_STATUS(send(g_big, lbig, 4000), RVNE_OK);
        CHECK_STATUS(rvne_update_commit(&g_sl, blob_crc(g_big, lbig), &load), RVNE_E_TOO_LARGE);
        check_serving(g_old, lo, RVNE_PART_A);
    }

    /* The flash fails: erase, program, or a program that reads back wrong. */
    start_update(lo, ln);
    g_rf.fail_erase_at = 1;
    CHECK_STATUS(send(g_new, ln, 512), RVNE_E_FLASH);
    CHECK(!g_sl.upd.active);
    check_serving(g_old, lo, RVNE_PART_A);
    start_update(lo, ln);
    g_rf.fail_prog_at = 2;
    CHECK_STATUS(send(g_new, ln, 512), RVNE_E_FLASH);
    check_serving(g_old, lo, RVNE_PART_A);
    start_update(lo, ln);
    g_rf.flip_on_prog = 1;
    CHECK_STATUS(send(g_new, ln, 512), RVNE_E_VERIFY);
    check_serving(g_old, lo, RVNE_PART_A);
    /* The selector write fails: old model, now and at boot. */
    start_update(lo, ln);
    CHECK_STATUS(send(g_new, ln, 512), RVNE_OK);
    g_rf.fail_prog_at = g_rf.progs + 1;
    CHECK_STATUS(rvne_update_commit(&g_sl, cn, NULL), RVNE_E_FLASH);
    check_serving(g_old, lo, RVNE_PART_A);
    CHECK_STATUS(boot(), RVNE_OK);
    check_serving(g_old, lo, RVNE_PART_A);
}

/* A power cut inside every flash operation of an update (that operation
 * half done, nothing after it), on both geometries: the device boots the
 * old or the new model, whole, and a second update succeeds from there. */
static void test_cut_inside_every_operation(void)
{
    static const uint32_t erase[] = {4096, 65536};
    uint32_t lo = make_blob(g_old, sizeof g_old, 8, 4, 3, 1), ln = make_blob(g_new, sizeof g_new, 8, 4, 3, 2);
    uint32_t co = blob_crc(g_old, lo), cn = blob_crc(g_new, ln);
    for (size_t e = 0; e < 2; e++) {
        int n_ops, cut, olds = 0, news = 0;
        rf_init(erase[e], 4);
        put_slot(RVNE_PART_A, g_old, lo);
        CHECK_STATUS(boot(), RVNE_OK);
        CHECK_STATUS(rvne_update_begin(&g_sl, ln, cn), RVNE_OK);
        CHECK_STATUS(send(g_new, ln, 64), RVNE_OK);
        CHECK_STATUS(rvne_update_commit(&g_sl, cn, NULL), RVNE_OK);
        n_ops = g_rf.erases + g_rf.progs;
        CHECK(n_ops > 10);
        for (cut = 1; cut <= n_ops + 1; cut++) {
            rf_init(erase[e], 4);
            put_slot(RVNE_PART_A, g_old, lo);
            CHECK_STATUS(boot(), RVNE_OK);
            g_rf.cut_at = cut;
            if (rvne_update_begin(&g_sl, ln, cn) == RVNE_OK && send(g_new, ln, 64) == RVNE_OK)
                (void)rvne_update_commit(&g_sl, cn, NULL);
            CHECK(cut > n_ops || g_rf.frozen);
            g_rf.cut_at = g_rf.frozen = 0;
            CHECK_STATUS(boot(), RVNE_OK);
            CHECK(g_m.blob.crc_stored == co || g_m.blob.crc_stored == cn);
            if (g_m.blob.crc_stored == co) olds++; else news++;
            CHECK_STATUS(rvne_update_begin(&g_sl, ln, cn), RVNE_OK);
            CHECK_STATUS(send(g_new, ln, 300), RVNE_OK);
            CHECK_STATUS(rvne_update_commit(&g_sl, cn, NULL), RVNE_OK);
            CHECK_STATUS(boot(), RVNE_OK);
            CHECK_EQ(g_m.blob.crc_stored, cn);
        }
        /* Cuts before the record's program keep the old model; the last one
         * (none at all) gives the new one. */
        CHECK_EQ(olds, n_ops);
        CHECK_EQ(news, 1);
    }
}

/* ---- the protocol ---------------------------------------------------------------------- */

static char g_cap[1 << 16];
static size_t g_cap_len;
static char g_line[LINE_MAX + 1];
static char g_out[LINE_MAX + 16];
static float g_frames[LINE_MAX * 3 / 16 + 1];
static rvne_server g_srv;
static uint32_t g_seq = 100;

static int cap_write(void *ctx, const void *buf, size_t n)
{
    (void)ctx;
    if (n > sizeof g_cap - g_cap_len) abort();
    memcpy(g_cap + g_cap_len, buf, n);
    g_cap_len += n;
    return 0;
}

/* Sends ">SEQ body*CRC\n", returns the reply line (without CRC) in out. */
static void req(const char *body, char *out, size_t cap)
{
    static char line[LINE_MAX + 128];
    int n = snprintf(line, sizeof line, ">%u %s", (unsigned)++g_seq, body);
    uint32_t crc = rvne_crc32(0u, (const uint8_t *)line, (uint32_t)n);
    char *star;
    n += snprintf(line + n, sizeof line - (size_t)n, "*%08X\n", (unsigned)crc);
    g_cap_len = 0;
    rvne_server_feed(&g_srv, (const uint8_t *)line, (size_t)n);
    g_cap[g_cap_len] = 0;
    star = strrchr(g_cap, '*');
    if (star) *star = 0;
    snprintf(out, cap, "%s", g_cap);
}

static void chunk_req(uint32_t off, const uint8_t *p, uint32_t n, uint32_t crc, char *out, size_t cap)
{
    static char body[LINE_MAX + 64];
    static char b64[LINE_MAX];
    long k = rvne_b64_encode(b64, sizeof b64 - 1, p, n);
    CHECK(k > 0);
    b64[k > 0 ? k : 0] = 0;
    snprintf(body, sizeof body, "UPDATE_CHUNK %u %08X %s", (unsigned)off, (unsigned)crc, b64);
    req(body, out, cap);
}

static void test_protocol(void)
{
    uint32_t lo = make_blob(g_old, sizeof g_old, 8, 4, 3, 1), ln = make_blob(g_new, sizeof g_new, 8, 4, 3, 2);
    uint32_t cn = blob_crc(g_new, ln), off;
    rvne_server_cfg cfg;
    char r[512], body[128];

    rf_init(4096, 4);
    put_slot(RVNE_PART_A, g_old, lo);
    CHECK_STATUS(boot(), RVNE_OK);
    cfg = ram_slots_server_cfg(&g_sl, "test", cap_write, g_line, LINE_MAX, g_out, g_frames);
    CHECK_STATUS(rvne_server_init(&g_srv, &cfg, &g_m), RVNE_OK);

    req("INFO", r, sizeof r);
    CHECK(strstr(r, " layout=slots slot=a seq=- update=idle") != NULL);
    req("UPDATE_COMMIT 00000000", r, sizeof r);
    CHECK(strstr(r, "ERR E_NO_UPDATE ") != NULL);
    snprintf(body, sizeof body, "UPDATE_BEGIN %u %08X", (unsigned)ln, (unsigned)cn);
    req(body, r, sizeof r);
    CHECK(strstr(r, " OK slot=b size=") != NULL);
    CHECK(strstr(r, " chunk=3008") != NULL); /* (4096 - 64) / 4 * 3, in steps of 64 */
    req(body, r, sizeof r);
    CHECK(strstr(r, "ERR E_UPDATE_BUSY ") != NULL);
    req("UPDATE_BEGIN 12 0000000", r, sizeof r);
    CHECK(strstr(r, "ERR E_ARGS ") != NULL);
    chunk_req(0, g_new, 1000, rvne_crc32(0, g_new, 1000) ^ 4, r, sizeof r);
    CHECK(strstr(r, "ERR E_CHUNK_CRC ") != NULL && strstr(r, "offset 0") != NULL);
    chunk_req(500, g_new + 500, 100, rvne_crc32(0, g_new + 500, 100), r, sizeof r);
    CHECK(strstr(r, "ERR E_UPDATE_ORDER ") != NULL && strstr(r, "offset 0") != NULL);
    for (off = 0; off < ln; off += 1000) {
        uint32_t n = ln - off < 1000 ? ln - off : 1000;
        chunk_req(off, g_new + off, n, rvne_crc32(0, g_new + off, n), r, sizeof r);
        CHECK(strstr(r, " OK next=") != NULL);
        /* Inference goes on during an update, from the old model. */
        req("INFO", r, sizeof r);
        CHECK(strstr(r, "status=loaded") != NULL && strstr(r, " update=") != NULL &&
              strstr(r, " update=idle") == NULL);
    }
    snprintf(body, sizeof body, "UPDATE_COMMIT %08X", (unsigned)(cn ^ 1));
    req(body, r, sizeof r);
    CHECK(strstr(r, "ERR E_UPDATE_CRC ") != NULL);
    CHECK_EQ(g_m.blob.crc_stored, blob_crc(g_old, lo));
    /* Again, whole: the switch. */
    snprintf(body, sizeof body, "UPDATE_BEGIN %u %08X", (unsigned)ln, (unsigned)cn);
    req(body, r, sizeof r);
    for (off = 0; off < ln; off += 3008) {
        uint32_t n = ln - off < 3008 ? ln - off : 3008;
        chunk_req(off, g_new + off, n, rvne_crc32(0, g_new + off, n), r, sizeof r);
        CHECK(strstr(r, " OK next=") != NULL);
    }
    snprintf(body, sizeof body, "UPDATE_COMMIT %08X", (unsigned)cn);
    req(body, r, sizeof r);
    CHECK(strstr(r, " OK slot=b seq=1 crc=") != NULL);
    req("INFO", r, sizeof r);
    CHECK(strstr(r, " layout=slots slot=b seq=1 update=idle") != NULL);
    snprintf(body, sizeof body, "crc=%08X", (unsigned)cn);
    CHECK(strstr(r, body) != NULL);
    req("UPDATE_ABORT", r, sizeof r);
    CHECK(strstr(r, " OK") != NULL);
    req("UPDATE_FOO", r, sizeof r);
    CHECK(strstr(r, "ERR E_UNKNOWN_CMD ") != NULL);

    /* A write that fails after its chunk was acknowledged: the next command
     * says so, the update is abandoned, the model serving stays. */
    snprintf(body, sizeof body, "UPDATE_BEGIN %u %08X", (unsigned)lo, (unsigned)blob_crc(g_old, lo));
    req(body, r, sizeof r);
    CHECK(strstr(r, " OK slot=a") != NULL);
    g_rf.fail_prog_at = g_rf.progs + 1;
    chunk_req(0, g_old, 500, rvne_crc32(0, g_old, 500), r, sizeof r);
    CHECK(strstr(r, " OK next=500") != NULL);
    chunk_req(500, g_old + 500, 100, rvne_crc32(0, g_old + 500, 100), r, sizeof r);
    CHECK(strstr(r, "ERR E_FLASH ") != NULL && strstr(r, "port's error: -78") != NULL);
    req("INFO", r, sizeof r);
    CHECK(strstr(r, " slot=b seq=1 update=idle") != NULL);
    g_rf.fail_prog_at = 0;
    req(body, r, sizeof r);
    g_rf.flip_on_prog = 1;
    chunk_req(0, g_old, lo, rvne_crc32(0, g_old, lo), r, sizeof r);
    CHECK(strstr(r, " OK next=") != NULL);
    snprintf(body, sizeof body, "UPDATE_COMMIT %08X", (unsigned)blob_crc(g_old, lo));
    req(body, r, sizeof r);
    CHECK(strstr(r, "ERR E_VERIFY ") != NULL);
    g_rf.flip_on_prog = 0;
    CHECK_EQ(g_m.blob.crc_stored, cn);
    CHECK_STATUS(boot(), RVNE_OK);
    CHECK_EQ(g_m.blob.crc_stored, cn);

    /* A port without slots refuses in one named line. */
    cfg.slots = NULL;
    CHECK_STATUS(rvne_server_init(&g_srv, &cfg, &g_m), RVNE_OK);
    snprintf(body, sizeof body, "UPDATE_BEGIN %u %08X", (unsigned)ln, (unsigned)cn);
    req(body, r, sizeof r);
    CHECK(strstr(r, "ERR E_NO_SLOTS ") != NULL);
    req("INFO", r, sizeof r);
    CHECK(strstr(r, " layout=none slot=- seq=- update=idle") != NULL);
}

/* ---- the partition table ---------------------------------------------------------------- */

static void row(uint8_t *p, const char *label, uint8_t type, uint8_t sub, uint32_t off, uint32_t size)
{
    memset(p, 0, 32);
    p[0] = 0xAA;
    p[1] = 0x50;
    p[2] = type;
    p[3] = sub;
    put32(p + 4, off);
    put32(p + 8, size);
    memcpy(p + 12, label, strlen(label));
}

static void test_ptable(void)
{
    uint8_t t[RVNE_PTABLE_LEN];
    rvne_flash f;
    memset(t, 0xFF, sizeof t);
    row(t, "factory", 0, 0, 0x10000, 0x100000);
    row(t + 32, "rvne_sel", 1, 0x41, 0x110000, 0x20000);
    row(t + 64, "rvne_a", 1, 0x40, 0x130000, 0x160000);
    row(t + 96, "rvne_b", 1, 0x40, 0x290000, 0x160000);
    memset(t + 128, 0xFF, 32);
    t[128] = t[129] = 0xEB;
    rvne_md5(t, 128, t + 144);
    CHECK_EQ(rvne_ptable_flash(t, sizeof t, 0x400000, &f), RVNE_PTABLE_OK);
    CHECK(rvne_flash_has_slots(&f));
    CHECK_EQ(f.part_offset[RVNE_PART_A], 0x130000);
    CHECK_EQ(f.part_offset[RVNE_PART_B], 0x290000);
    CHECK_EQ(f.part_offset[RVNE_PART_SEL], 0x110000);
    CHECK_EQ(f.part_size[RVNE_PART_SEL], 0x20000);
    /* Past the end of a 2 MiB flash. */
    CHECK_EQ(rvne_ptable_flash(t, sizeof t, 0x200000, &f), RVNE_PTABLE_E_RANGE);
    /* The single-partition layout. */
    memset(t, 0xFF, sizeof t);
    row(t, "factory", 0, 0, 0x10000, 0x100000);
    row(t + 32, "rvne", 1, 0x40, 0x110000, 0x200000);
    row(t + 64, "rvne_a", 1, 0x40, 0x310000, 0x10000); /* without rvne_b and rvne_sel: not slots */
    CHECK_EQ(rvne_ptable_flash(t, sizeof t, 0x400000, &f), RVNE_PTABLE_OK);
    CHECK(!rvne_flash_has_slots(&f));
    CHECK_EQ(f.part_offset[RVNE_PART_A], 0x110000);
    CHECK_EQ(f.part_size[RVNE_PART_A], 0x200000);
    /* Neither. */
    memset(t + 32, 0xFF, 64);
    CHECK_EQ(rvne_ptable_flash(t, sizeof t, 0x400000, &f), RVNE_PTABLE_E_NOT_FOUND);
    t[0] = 0xFF;
    CHECK_EQ(rvne_ptable_flash(t, sizeof t, 0x400000, &f), RVNE_PTABLE_E_NO_TABLE);
}

int main(void)
{
    test_record_codec();
    test_boot_outcomes();
    test_update_geometries();
    test_update_refusals();
    test_cut_inside_every_operation();
    test_protocol();
    test_ptable();
    CHECK_EQ(g_rf.misuse, 0);
    return CHECK_DONE("test_update");
}
