/* libFuzzer harness: the UPDATE_* commands of docs/protocol.md over a RAM
 * flash with NOR semantics, on the S3's and the lx60's geometries.
 *
 * Input: byte 0 picks whether the harness rewrites each line's *CRC to the
 * right value so mutations reach the command parsers (bit 0), the erase
 * block (bit 1: 4 KiB or 64 KiB) and the program unit (bits 2-3: 1, 4, 16).
 * The rest is the byte stream fed to the server.
 *
 * Invariants: every reply is one well-formed line with a correct CRC; the
 * model serving afterwards is whole (its slot passes the loader, its CRC
 * is the one INFO reports); a reboot from the flash as it is serves the
 * very same model (an update either committed, with its record, or left no
 * trace the selector would follow); no byte is programmed twice without an
 * erase and no flash call is off the geometry (ram_slots.h); and the device
 * still answers PING. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_util.h"
#include "ram_slots.h"
#include "rvne/base64.h"
#include "rvne/crc32.h"
#include "rvne/flash.h"
#include "rvne/proto.h"
#include "rvne/update.h"

#define LINE_MAX_ 1024u
#define SLOT 65536u
#define SEL (2u * 65536u)

static ram_flash g_rf;
static uint8_t g_pristine[RVNE_PART_COUNT][RAM_FLASH_BYTES] __attribute__((aligned(16)));
static rvne_slots g_slots, g_boot_slots;
static rvne_model g_model, g_boot_model;
static rvne_server g_srv;
static uint64_t g_arena[4096], g_boot_arena[4096];
static char g_line[LINE_MAX_ + 1], g_out[LINE_MAX_ + 16];
static float g_frames[LINE_MAX_ * 3 / 16 + 1];
static const rvne_load_cfg g_load = {0, {0, 0, 0, 0, 0, 8}, 0, 0, 0};
static uint8_t g_old[1024];
static size_t g_old_len;
static const uint16_t k_dims[6] = {4, 2, 1, 4, 1, 2};
static unsigned long g_replies;

static int cap_write(void *ctx, const void *buf, size_t n)
{
    const char *s = buf;
    const char *star;
    uint32_t crc = 0;
    size_t i;
    (void)ctx;
    FUZZ_ASSERT(n >= 11 && n <= LINE_MAX_ + 1 && s[0] == '<' && s[n - 1] == '\n');
    star = s + n - 10;
    FUZZ_ASSERT(*star == '*');
    for (i = 1; i <= 8; i++) {
        char c = star[i];
        FUZZ_ASSERT((c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'));
        crc = (crc << 4) | (uint32_t)(c <= '9' ? c - '0' : c - 'A' + 10);
    }
    FUZZ_ASSERT(crc == fz_crc32(0u, (const uint8_t *)s, (uint32_t)(star - s)));
    g_replies++;
    return 0;
}

/* Feeds the stream, line by line, with each *CRC rewritten when asked. */
static void feed(const uint8_t *data, size_t size, int fix_crc)
{
    static uint8_t line[4 * LINE_MAX_];
    size_t start = 0, i;
    if (!fix_crc) {
        rvne_server_feed(&g_srv, data, size);
        return;
    }
    for (i = 0; i <= size; i++) {
        if (i < size && data[i] != '\n') continue;
        {
            size_t n = i - start, k;
            if (n > sizeof line - 2) n = sizeof line - 2;
            memcpy(line, data + start, n);
            for (k = n; k > 0; k--)
                if (line[k - 1] == '*') break;
            if (k > 0 && n - k == 8) {
                uint32_t crc = fz_crc32(0u, line, (uint32_t)(k - 1));
                static const char hex[] = "0123456789ABCDEF";
                int j;
                for (j = 0; j < 8; j++) line[k + (size_t)j] = (uint8_t)hex[(crc >> (28 - 4 * j)) & 15u];
            }
            if (i < size) line[n++] = '\n';
            rvne_server_feed(&g_srv, line, n);
        }
        start = i + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint32_t prog[4] = {1, 4, 16, 4};
    rvne_server_cfg cfg;
    unsigned long before;
    uint8_t ctl;
    if (size < 1) return 0;
    ctl = data[0];
    ram_flash_init(&g_rf, (ctl & 2) ? 65536u : 4096u, prog[(ctl >> 2) & 3], SLOT, SEL);
    memcpy(g_rf.part, g_pristine, sizeof g_rf.part);
    FUZZ_ASSERT(rvne_slots_boot(&g_slots, &g_rf.f, &g_model, 4, g_arena, sizeof g_arena, &g_load) == RVNE_OK);
    cfg = ram_slots_server_cfg(&g_slots, "fuzz", cap_write, g_line, LINE_MAX_, g_out, g_frames);
    FUZZ_ASSERT(rvne_server_init(&g_srv, &cfg, &g_model) == RVNE_OK);
    feed(data + 1, size - 1, ctl & 1);

    FUZZ_ASSERT(g_rf.double_prog == 0 && g_rf.misuse == 0);
    /* What serves is whole, and what a reboot would serve. */
    FUZZ_ASSERT(g_model.status == RVNE_OK && g_slots.active >= 0);
    {
        rvne_blob b;
        FUZZ_ASSERT(rvne_blob_open(&b, g_rf.part[g_slots.active], SLOT, &g_load) == RVNE_OK);
        FUZZ_ASSERT(b.crc_stored == g_model.blob.crc_stored && b.total_len == g_model.blob.total_len);
    }
    FUZZ_ASSERT(rvne_slots_boot(&g_boot_slots, &g_rf.f, &g_boot_model, 4, g_boot_arena, sizeof g_boot_arena,
                                &g_load) == RVNE_OK);
    FUZZ_ASSERT(g_boot_slots.active == g_slots.active);
    FUZZ_ASSERT(g_boot_model.blob.crc_stored == g_model.blob.crc_stored);
    before = g_replies;
    rvne_server_feed(&g_srv, (const uint8_t *)"\n>4000000000 PING*", 18);
    {
        char crc[10];
        uint32_t c = fz_crc32(0u, (const uint8_t *)">4000000000 PING", 16);
        static const char hex[] = "0123456789ABCDEF";
        int j;
        for (j = 0; j < 8; j++) crc[j] = hex[(c >> (28 - 4 * j)) & 15u];
        crc[8] = '\n';
        rvne_server_feed(&g_srv, (const uint8_t *)crc, 9);
    }
    FUZZ_ASSERT(g_replies > before);
    FUZZ_ASSERT(g_rf.misuse == 0);
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

static uint8_t g_seed[16384];
static size_t g_seed_len;

static void add_raw(const char *s)
{
    size_t n = strlen(s);
    if (g_seed_len + n < sizeof g_seed) {
        memcpy(g_seed + g_seed_len, s, n);
        g_seed_len += n;
    }
}

static void add(uint32_t seq, const char *body)
{
    char line[LINE_MAX_ + 32];
    int n = snprintf(line, sizeof line, ">%u %s", (unsigned)seq, body);
    snprintf(line + n, sizeof line - (size_t)n, "*%08X\n", (unsigned)fz_crc32(0u, (uint8_t *)line, (uint32_t)n));
    add_raw(line);
}

/* An update of blob in chunks of step bytes (the last commit CRC xor bad). */
static void add_update(uint32_t seq, const uint8_t *blob, size_t len, size_t step, uint32_t bad)
{
    char body[LINE_MAX_];
    char b64[LINE_MAX_];
    uint32_t crc = fz_rd32(blob + len - 4);
    size_t off;
    snprintf(body, sizeof body, "UPDATE_BEGIN %u %08X", (unsigned)len, (unsigned)crc);
    add(seq++, body);
    for (off = 0; off < len; off += step) {
        size_t n = len - off < step ? len - off : step;
        long k = rvne_b64_encode(b64, sizeof b64 - 1, blob + off, n);
        b64[k > 0 ? k : 0] = 0;
        snprintf(body, sizeof body, "UPDATE_CHUNK %u %08X %s", (unsigned)off,
                 (unsigned)fz_crc32(0u, blob + off, (uint32_t)n), b64);
        add(seq++, body);
        add(seq++, "INFO");
    }
    snprintf(body, sizeof body, "UPDATE_COMMIT %08X", (unsigned)(crc ^ bad));
    add(seq++, body);
    add(seq, "INFO");
}

static void emit(const char *dir, const char *name, uint8_t ctl)
{
    static uint8_t file[sizeof g_seed + 1];
    file[0] = ctl;
    memcpy(file + 1, g_seed, g_seed_len);
    fz_write_seed(dir, name, file, g_seed_len + 1);
    g_seed_len = 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = fz_seed_dir();
    static const uint16_t other[6] = {6, 2, 2, 3, 1, 3};
    uint8_t nb[1024];
    size_t nl;
    rvne_sel_record rec;
    (void)argc;
    (void)argv;
    /* The flash every input starts from: the model in slot A, named by copy 0. */
    g_old_len = fz_build_blob(g_old, sizeof g_old, k_dims, 0, 7);
    FUZZ_ASSERT(g_old_len > 0);
    memset(g_pristine, 0xFF, sizeof g_pristine);
    memcpy(g_pristine[RVNE_PART_A], g_old, g_old_len);
    rec.seq = 1;
    rec.slot = RVNE_PART_A;
    rec.blob_len = (uint32_t)g_old_len;
    rec.blob_crc = fz_rd32(g_old + g_old_len - 4);
    rvne_sel_encode(&rec, g_pristine[RVNE_PART_SEL]);
    if (dir == NULL) return 0;

    nl = fz_build_blob(nb, sizeof nb, other, 0, 9);
    add_update(1, nb, nl, 700, 0);
    emit(dir, "update", 1);
    add_update(1, nb, nl, 13, 0);
    emit(dir, "update_small_chunks_lx60", 1 | 2 | 8);
    add_update(1, nb, nl, 333, 1);
    emit(dir, "wrong_commit_crc", 1 | 4);
    add_update(1, nb, nl - 4, 200, 0);
    emit(dir, "short", 1);
    add(1, "UPDATE_BEGIN 100 00000000"), add(2, "UPDATE_BEGIN 100 00000000"), add(3, "UPDATE_CHUNK 5 00000000 AAAA");
    add(4, "UPDATE_CHUNK 0 00000000 AAAA"), add(5, "UPDATE_COMMIT 00000000"), add(6, "UPDATE_ABORT");
    add(7, "UPDATE_COMMIT 00000000"), add(8, "UPDATE_BEGIN 4294967295 FFFFFFFF"), add(9, "UPDATE_BEGIN 1 0");
    add(10, "UPDATE_CHUNK 0 0 ="), add(11, "UPDATE_X");
    emit(dir, "errors", 1);
    add_update(1, g_old, g_old_len, 64, 0);
    add_update(20, nb, nl, 512, 0);
    emit(dir, "two_updates", 1 | 4);
    fprintf(stderr, "fuzz_update: seeds in %s\n", dir);
    exit(0);
}
