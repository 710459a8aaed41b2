/* Model slots on a RAM flash, served over the line protocol: the fixture
 * the update test (test_update.c) and the update fuzz harness
 * (fuzz/fuzz_update.c) share, so both hold the core to one flash model.
 *
 * The flash has NOR semantics (erase sets 0xFF, a program only clears
 * bits) and failures a test injects. A call off the erase/program geometry
 * or past its partition is the core's bug (rvne/flash.h forbids it): the
 * call fails and `misuse` counts it; so does `double_prog` for a byte
 * programmed twice without an erase. Header-only, static inline. */
#ifndef RVNE_TEST_RAM_SLOTS_H
#define RVNE_TEST_RAM_SLOTS_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "rvne/flash.h"
#include "rvne/proto.h"
#include "rvne/status.h"

#define RAM_FLASH_BYTES (128u * 1024u) /* room for each partition */

typedef struct ram_flash {
    uint8_t part[RVNE_PART_COUNT][RAM_FLASH_BYTES] __attribute__((aligned(16)));
    int erases, progs;
    int fail_erase_at, fail_prog_at;  /* n-th call fails (1-based, 0 never) */
    int flip_on_prog;                 /* a program stores one bit wrong */
    int double_prog;                  /* a byte programmed twice without erase */
    int misuse;                       /* calls off the geometry or past a partition */
    int cut_at, frozen;               /* power cut: that operation half done, nothing after */
    rvne_flash f;
} ram_flash;

static inline int ram_flash_outside(ram_flash *rf, int p, uint32_t off, uint32_t n, uint32_t unit)
{
    if (off % unit == 0 && n % unit == 0 && (uint64_t)off + n <= rf->f.part_size[p]) return 0;
    rf->misuse++;
    return 1;
}

static inline int ram_flash_read(void *ctx, int p, uint32_t off, void *buf, uint32_t n)
{
    ram_flash *rf = ctx;
    if (ram_flash_outside(rf, p, off, n, 1)) return RVNE_E_FLASH;
    memcpy(buf, rf->part[p] + off, n);
    return 0;
}

static inline int ram_flash_erase(void *ctx, int p, uint32_t off, uint32_t n)
{
    ram_flash *rf = ctx;
    rf->erases++;
    if (rf->frozen) return -79;
    if (rf->cut_at && rf->erases + rf->progs == rf->cut_at) {
        memset(rf->part[p] + off, 0xFF, n / 2);
        rf->frozen = 1;
        return -79;
    }
    if (ram_flash_outside(rf, p, off, n, rf->f.erase_size)) return -77;
    if (rf->fail_erase_at && rf->erases == rf->fail_erase_at) return -77;
    memset(rf->part[p] + off, 0xFF, n);
    return 0;
}

static inline int ram_flash_prog(void *ctx, int p, uint32_t off, const void *buf, uint32_t n)
{
    ram_flash *rf = ctx;
    const uint8_t *src = buf;
    uint32_t i;
    rf->progs++;
    if (rf->frozen) return -79;
    if (rf->cut_at && rf->erases + rf->progs == rf->cut_at) {
        for (i = 0; i < n / 2; i++) rf->part[p][off + i] &= src[i];
        rf->frozen = 1;
        return -79;
    }
    if (ram_flash_outside(rf, p, off, n, rf->f.prog_size)) return -78;
    if (rf->fail_prog_at && rf->progs == rf->fail_prog_at) return -78;
    for (i = 0; i < n; i++) {
        if (rf->part[p][off + i] != 0xFF) rf->double_prog++;
        rf->part[p][off + i] &= src[i];
    }
    if (rf->flip_on_prog) rf->part[p][off] ^= 0x01;
    return 0;
}

static inline const void *ram_flash_map(void *ctx, int p)
{
    ram_flash *rf = ctx;
    return rf->part[p];
}

/* Erased, nothing injected, slots of slot_bytes and a selector of sel_bytes
 * (each at most RAM_FLASH_BYTES) on the given geometry. */
static inline void ram_flash_init(ram_flash *rf, uint32_t erase_size, uint32_t prog_size, uint32_t slot_bytes,
                                  uint32_t sel_bytes)
{
    memset(rf, 0, sizeof *rf);
    memset(rf->part, 0xFF, sizeof rf->part);
    rf->f.ctx = rf;
    rf->f.read = ram_flash_read;
    rf->f.erase = ram_flash_erase;
    rf->f.prog = ram_flash_prog;
    rf->f.map = ram_flash_map;
    rf->f.erase_size = erase_size;
    rf->f.prog_size = prog_size;
    rf->f.part_size[RVNE_PART_A] = slot_bytes;
    rf->f.part_size[RVNE_PART_B] = slot_bytes;
    rf->f.part_size[RVNE_PART_SEL] = sel_bytes;
}

/* A protocol server's cfg for `slots`, replies to `write`. The buffers are
 * the caller's, each exactly as long as rvne/proto.h asks for line_max, so
 * AddressSanitizer sees a byte written past any of them. */
static inline rvne_server_cfg ram_slots_server_cfg(rvne_slots *slots, const char *name,
                                                   int (*write)(void *ctx, const void *buf, size_t n),
                                                   char *line_buf, size_t line_max, char *out_buf, float *frame_buf)
{
    rvne_server_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.port.write = write;
    cfg.port.name = name;
    cfg.line_buf = line_buf;
    cfg.line_max = line_max;
    cfg.out_buf = out_buf;
    cfg.frame_buf = frame_buf;
    cfg.slots = slots;
    return cfg;
}

#endif
