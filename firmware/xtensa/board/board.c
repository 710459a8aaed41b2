/* The rvne firmware on QEMU's lx60 board, whichever Xtensa core runs it:
 * find the blob partition through the flash's partition table, load it in
 * place, print the banner and serve the protocol over the UART, forever.
 * What differs per core (its name, where the board maps the flash) comes
 * from the port's board_core.h; the model, loader and protocol are the
 * shared core. */
#include <stdint.h>
#include <string.h>
#include "board_core.h"
#include "cfi_flash.h"
#include "cycles.h"
#include "flash_cut.h"
#include "rvne/blob.h"
#include "rvne/flash.h"
#include "rvne/proto.h"
#include "rvne/ptable.h"
#include "rvne/status.h"
#include "rvne/update.h"
#include "uart16550.h"
#ifdef RVNE_SIGNED
#include "rvne/crypto_mbedtls.h"
#endif

#define FLASH_SIZE 0x400000u
/* The CFI part programs 16-bit words (the core pads a blob's end to this). */
#define FLASH_PROG_SIZE 2u

#define DEFAULT_WINDOW 100u
/* Of the board's 64 MiB: the run state, and FP16 weights expanded to FP32
 * where they fit beside it (XTB_FP16_EXPAND; docs/model.md, "FP16 weights"). */
#define ARENA_BYTES (1024u * 1024u)
#ifndef XTB_FP16_EXPAND
#define XTB_FP16_EXPAND 1
#endif
#define LINE_MAX 16384u
#define CALIB_TURNS 1000000u        /* 2 instructions per turn */

static uint8_t arena[ARENA_BYTES] __attribute__((aligned(16)));
static char line_buf[LINE_MAX + 1];
static char out_buf[LINE_MAX + 16];
static float frame_buf[LINE_MAX * 3 / 16 + 1];
static rvne_model model;
static rvne_server server;
static rvne_flash flash;
static rvne_slots slots;
static cfi_flash cfi;

static int port_write(void *ctx, const void *buf, size_t n)
{
    (void)ctx;
    uart_write(buf, n);
    return (int)n;
}

static uint64_t port_now(void *ctx)
{
    (void)ctx;
    return cycles_now();
}

static void put_u32(const char *prefix, uint32_t v)
{
    char s[11];
    int i = 10;
    s[i] = '\0';
    do {
        s[--i] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0u && i > 0);
    uart_puts(prefix);
    uart_puts(s + i);
}

static void put_hex32(const char *prefix, uint32_t v)
{
    char s[9];
    for (int i = 0; i < 8; i++)
        s[i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 15u];
    s[8] = '\0';
    uart_puts(prefix);
    uart_puts(s);
}

/* Reported before the banner so tools/bench_icount.py can turn STATS cycles
 * into instructions: under -icount every run prints the same numbers. */
static void calibrate(void)
{
    uint32_t ticks = port_calib_loop(CALIB_TURNS);
    put_u32("rvne: " BOARD_CORE " calibration loop_insns=", 2u * CALIB_TURNS);
    put_u32(" ccount=", ticks);
    uart_puts("\n");
}

/* Reads go through the flash mapping: what the loader sees is what is read. */
static int flash_read(void *ctx, int part, uint32_t off, void *buf, uint32_t n)
{
    (void)ctx;
    if (off > flash.part_size[part] || n > flash.part_size[part] - off)
        return CFI_E_RANGE;
    return cfi_flash_read(&cfi, flash.part_offset[part] + off, buf, n);
}

static const void *flash_map(void *ctx, int part)
{
    (void)ctx;
    return (const uint8_t *)BOARD_FLASH_MAP + flash.part_offset[part];
}

/* A failed erase or program is one log line (the host skips lines without
 * '<'); the core turns the code into E_FLASH and keeps the old model. */
static int flash_failed(const char *what, uint32_t at, int rc)
{
    uart_puts("rvne: " BOARD_CORE " flash ");
    uart_puts(what);
    put_hex32(" at 0x", at);
    uart_puts(": ");
    uart_puts(cfi_flash_strerror(rc));
    uart_puts("\n");
    return rc;
}

static int flash_erase(void *ctx, int part, uint32_t off, uint32_t n)
{
    (void)ctx;
    if (off > flash.part_size[part] || n > flash.part_size[part] - off)
        return CFI_E_RANGE;
    int rc = cfi_flash_erase(&cfi, flash.part_offset[part] + off, n);
    if (rc != CFI_OK)
        return flash_failed("erase", flash.part_offset[part] + off, rc);
    cut_after_erase(part == RVNE_PART_SEL ? CUT_SEL_ERASE : CUT_ERASE);
    return 0;
}

static int flash_prog(void *ctx, int part, uint32_t off, const void *buf, uint32_t n)
{
    (void)ctx;
    if (off > flash.part_size[part] || n > flash.part_size[part] - off)
        return CFI_E_RANGE;
    uint32_t at = flash.part_offset[part] + off;
    cut_in_prog(part == RVNE_PART_SEL ? CUT_SEL_PROG : CUT_PROG, &cfi, at, buf, n);
    int rc = cfi_flash_write(&cfi, at, buf, n);
    return rc == CFI_OK ? 0 : flash_failed("program", at, rc);
}

/* The model partitions from the table (either layout); NULL with none, or
 * no valid table: the loader reports E_NO_PARTITION. Erase and program go
 * through the CFI driver; without a CFI answer updates are refused
 * (E_NO_SLOTS) and the model still serves. */
static const rvne_flash *find_model_partitions(void)
{
    const uint8_t *map = (const uint8_t *)BOARD_FLASH_MAP;
    int rc_cfi;
    int rc = rvne_ptable_flash(map + RVNE_PTABLE_OFFSET, RVNE_PTABLE_LEN, FLASH_SIZE, &flash);
    flash.read = flash_read;
    flash.map = flash_map;
    flash.prog_size = FLASH_PROG_SIZE;
    rc_cfi = cfi_flash_probe(&cfi, CFI_FLASH_IO_LX60, map, xtfpga_cpu_hz());
    if (rc_cfi == CFI_OK && cfi.size >= FLASH_SIZE) {
        flash.erase = flash_erase;
        flash.prog = flash_prog;
        flash.erase_size = cfi.sector_size;
        cut_init(&cfi);
    } else {
        /* Reads still work through the mapping; updates are refused. */
        uart_puts("rvne: " BOARD_CORE " flash: ");
        uart_puts(rc_cfi == CFI_OK ? "smaller than the image" : cfi_flash_strerror(rc_cfi));
        uart_puts("; serving read-only, updates refused\n");
        cfi.map = (const volatile uint8_t *)map;
        cfi.size = FLASH_SIZE;
        flash.erase_size = 0x10000u;
    }
    if (rc != RVNE_PTABLE_OK) {
        uart_puts("rvne: " BOARD_CORE " model partitions (rvne_a/rvne_b/rvne_sel or rvne): ");
        uart_puts(rvne_ptable_strerror(rc));
        uart_puts("; serving without a model\n");
        return 0;
    }
    uart_puts("rvne: " BOARD_CORE " partition ");
    if (rvne_flash_has_slots(&flash)) {
        put_hex32("rvne_a offset=0x", flash.part_offset[RVNE_PART_A]);
        put_hex32(" rvne_b offset=0x", flash.part_offset[RVNE_PART_B]);
        put_hex32(" rvne_sel offset=0x", flash.part_offset[RVNE_PART_SEL]);
        put_hex32(" slot size=0x", flash.part_size[RVNE_PART_A]);
    } else {
        put_hex32("rvne offset=0x", flash.part_offset[RVNE_PART_A]);
        put_hex32(" size=0x", flash.part_size[RVNE_PART_A]);
    }
    uart_puts("\n");
    return &flash;
}

/* The signed policy (docs/format.md "Signed models"): a build option of the
 * lx6 board (`make lx6-signed RVNE_TRUSTED_KEYS=...`), Mbed TLS from
 * Debian's source; without it the board is unsigned, as before. */
#ifdef RVNE_SIGNED
static rvne_trust trust;
#define XTB_TRUST (&trust)
static void trust_init(void)
{
    rvne_mbedtls_heap_init();
    if (rvne_trust_init(&trust, &rvne_crypto_mbedtls, RVNE_TRUSTED_KEYS, RVNE_REVOKED_KEYS) != 0)
        uart_puts("rvne: " BOARD_CORE " RVNE_TRUSTED_KEYS/RVNE_REVOKED_KEYS malformed: no key is trusted\n");
}
#else
#define XTB_TRUST 0
static void trust_init(void) {}
#endif

int main(void)
{
    static const rvne_load_cfg load_cfg = {
        .crc32 = 0,
        .limits = {0, 0, 0, 0, 0, 0},
        .exact_length = 0,
        .fp16_expand = XTB_FP16_EXPAND,
        .trust = XTB_TRUST,
    };
    rvne_server_cfg cfg;
    char note[160];
    uint8_t rx[64];

    uart_init();
    uart_puts("\nrvne: " BOARD_CORE " boot, firmware " RVNE_FW_VERSION ", " BOARD_CORE_DESC "\n");
    calibrate();
    trust_init();
    /* Any load result is served: INFO reports the reason. */
    (void)rvne_slots_boot(&slots, find_model_partitions(), &model, DEFAULT_WINDOW, arena, sizeof arena, &load_cfg);
    rvne_slots_describe(&slots, note, sizeof note);
    uart_puts("rvne: " BOARD_CORE " ");
    uart_puts(note);
    uart_puts("\n");

    memset(&cfg, 0, sizeof cfg);
    cfg.port.ctx = 0;
    cfg.port.name = BOARD_CORE;
    cfg.port.write = port_write;
    cfg.port.now = port_now;
    cfg.port.clock_unit = "cycles";
    cfg.line_buf = line_buf;
    cfg.line_max = LINE_MAX;
    cfg.out_buf = out_buf;
    cfg.frame_buf = frame_buf;
    cfg.slots = &slots;
    cfg.trust = XTB_TRUST;
    rvne_server_init(&server, &cfg, &model);
    rvne_print_banner(&cfg.port, &model);

    for (;;) {
        size_t n = uart_read(rx, sizeof rx);
        if (n > 0) {
            rvne_server_feed(&server, rx, n);
            continue;
        }
        uart_wait_rx();
        /* A wrap of CCOUNT while asleep only offsets the absolute count;
         * push times are differences taken within one request. */
        (void)cycles_now();
    }
}
