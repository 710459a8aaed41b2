/* The rvne firmware on QEMU's lx60 board, whichever Xtensa core runs it:
 * find the blob partition through the flash's partition table, load it in
 * place, print the banner and serve the protocol over the UART, forever.
 * What differs per core (its name, where the board maps the flash) comes
 * from the port's board_core.h; the model, loader and protocol are the
 * shared core. */
#include <stdint.h>
#include <string.h>
#include "board_core.h"
#include "cycles.h"
#include "esp_partition.h"
#include "rvne/blob.h"
#include "rvne/proto.h"
#include "rvne/status.h"
#include "uart16550.h"

#define FLASH_SIZE 0x400000u
#define PART_TABLE_OFFSET 0x8000u
#define PART_TABLE_LEN 0xC00u
#define PART_LABEL "rvne"

#define DEFAULT_WINDOW 100u
#define ARENA_BYTES (1024u * 1024u) /* of the board's 64 MiB; run state only, weights stay in flash */
#define LINE_MAX 16384u
#define CALIB_TURNS 1000000u        /* 2 instructions per turn */

static uint8_t arena[ARENA_BYTES] __attribute__((aligned(16)));
static char line_buf[LINE_MAX + 1];
static char out_buf[LINE_MAX + 16];
static float frame_buf[LINE_MAX * 3 / 16 + 1];
static rvne_model model;
static rvne_server server;

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

/* The blob partition, or NULL when the table has none (or is not a valid
 * table): the loader then reports E_NO_PARTITION. */
static const uint8_t *find_blob_partition(size_t *len)
{
    esp_part p;
    const uint8_t *flash = (const uint8_t *)BOARD_FLASH_MAP;
    int rc = esp_partition_find(flash + PART_TABLE_OFFSET, PART_TABLE_LEN, FLASH_SIZE,
                                ESP_PART_TYPE_DATA, PART_LABEL, &p);
    if (rc != ESP_PART_OK) {
        uart_puts("rvne: " BOARD_CORE " data partition '" PART_LABEL "': ");
        uart_puts(esp_partition_strerror(rc));
        uart_puts("; serving without a model\n");
        *len = 0;
        return 0;
    }
    put_hex32("rvne: " BOARD_CORE " partition " PART_LABEL " offset=0x", p.offset);
    put_hex32(" size=0x", p.size);
    uart_puts("\n");
    *len = p.size;
    return flash + p.offset;
}

int main(void)
{
    static const rvne_load_cfg load_cfg = {
        .crc32 = 0,
        .limits = {0, 0, 0, 0, 0, 0},
        .exact_length = 0,
    };
    rvne_server_cfg cfg;
    size_t part_len;
    const uint8_t *part;
    uint8_t rx[64];

    uart_init();
    uart_puts("\nrvne: " BOARD_CORE " boot, firmware " RVNE_FW_VERSION ", " BOARD_CORE_DESC "\n");
    calibrate();
    part = find_blob_partition(&part_len);
    /* Any load result is served: INFO reports the reason. */
    (void)rvne_model_load(&model, part, part_len, DEFAULT_WINDOW, arena, sizeof arena, &load_cfg);

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
