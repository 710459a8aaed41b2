/* The power-cut hooks (flash_cut.h). Halting is the cut: the app says
 * where on the console, then its task sleeps for good, and the host kills
 * QEMU; what QEMU wrote to the image file by then is what a board losing
 * power at that instant would keep. */
#include "flash_cut.h"

#if CONFIG_RVNE_FLASH_CUT
#include <stdio.h>
#include <string.h>

#include "esp_flash.h"
#include "freertos/FreeRTOS.h"
#include "freertos/task.h"

enum { CUT_NONE = 0, CUT_ERASE = 1, CUT_PROG = 2, CUT_SEL_ERASE = 3, CUT_SEL_PROG = 4 };

#define CUT_BLOCK_FROM_END 0x1000u
#define CUT_MAGIC "RVNECUT1"

static int cut_kind;
static uint32_t cut_at, cut_count[5];
static uint8_t keep[2048];       /* the half of a 4 KiB sector an erase cut leaves unerased */
static void (*log_line)(const char *msg);

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void rvne_cut_init(void (*say)(const char *msg))
{
    uint8_t b[16];
    uint32_t size = 0;
    log_line = say;
    if (esp_flash_get_size(NULL, &size) != ESP_OK || size < CUT_BLOCK_FROM_END ||
        esp_flash_read(NULL, b, size - CUT_BLOCK_FROM_END, sizeof b) != ESP_OK || memcmp(b, CUT_MAGIC, 8) != 0)
        return;
    uint32_t kind = le32(b + 8), n = le32(b + 12);
    if (kind >= CUT_ERASE && kind <= CUT_SEL_PROG && n > 0u) {
        cut_kind = (int)kind;
        cut_at = n;
        log_line("esp32s3 power-cut build: will halt in a flash operation");
    }
}

static int is_cut(int kind)
{
    return kind == cut_kind && ++cut_count[kind] == cut_at;
}

static void halt(int kind) __attribute__((noreturn));
static void halt(int kind)
{
    static const char *const names[] = {"", "erase", "prog", "sel-erase", "sel-prog"};
    char msg[80];
    snprintf(msg, sizeof msg, "esp32s3 CUT %s:%u (halted for the host to kill)", names[kind], (unsigned)cut_at);
    log_line(msg);
    for (;;)
        vTaskDelay(portMAX_DELAY);
}

void rvne_cut_erase(const esp_partition_t *part, int sel, uint32_t off, uint32_t n)
{
    int kind = sel ? CUT_SEL_ERASE : CUT_ERASE;
    if (!is_cut(kind))
        return;
    /* A sector erase is one command on SPI NOR; cut inside it, the sector
     * is neither old nor erased: here its first half erased, the rest
     * programmed back to what it held. */
    uint32_t half = n / 2u;
    if (half <= sizeof keep && esp_partition_read(part, off + half, keep, half) == ESP_OK &&
        esp_partition_erase_range(part, off, n) == ESP_OK)
        (void)esp_partition_write(part, off + half, keep, half);
    halt(kind);
}

void rvne_cut_prog(const esp_partition_t *part, int sel, uint32_t off, const void *buf, uint32_t n)
{
    int kind = sel ? CUT_SEL_PROG : CUT_PROG;
    if (!is_cut(kind))
        return;
    (void)esp_partition_write(part, off, buf, (n / 2u) & ~3u);
    halt(kind);
}
#endif
