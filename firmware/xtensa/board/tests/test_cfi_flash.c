/* The CFI flash driver (../cfi_flash.h) on the emulated lx60 board, booted
 * from its flash image like the firmware, so this test's own code runs in
 * place from the flash it erases and programs. Reports on the UART and ends
 * QEMU through semihosting (-semihosting) with 0 when every check passed.
 * tests/test_cfi_flash.py boots it twice on one image: the second boot must
 * find what the first one wrote (the writes reached the image file), and
 * checks the image file itself. */
#include <stdint.h>
#include "board_core.h"
#include "cfi_flash.h"
#include "uart16550.h"

/* Scratch sectors at the top of the 4 MiB part: the test image is the
 * firmware's layout with no blob written, so they hold nothing of value. */
#define SCRATCH 0x3E0000u
#define PERSIST 0x3F0000u
#define PERSIST_LEN 256u

static int checks, failures;

static void put_dec(int32_t v)
{
    char s[12];
    int i = 11;
    uint32_t u = v < 0 ? (uint32_t)-v : (uint32_t)v;
    s[i] = '\0';
    do {
        s[--i] = (char)('0' + u % 10u);
        u /= 10u;
    } while (u != 0u);
    if (v < 0)
        s[--i] = '-';
    uart_puts(s + i);
}

static void check_eq(int line, const char *what, int32_t got, int32_t want)
{
    checks++;
    if (got == want)
        return;
    failures++;
    uart_puts("test_cfi_flash: line ");
    put_dec(line);
    uart_puts(": ");
    uart_puts(what);
    uart_puts(" = ");
    put_dec(got);
    uart_puts(", want ");
    put_dec(want);
    uart_puts("\n");
}
#define CHECK_EQ(got, want) check_eq(__LINE__, #got, (int32_t)(got), (int32_t)(want))

/* Ends QEMU with `code` (semihosting SYS_EXIT); hangs without -semihosting. */
static void sim_exit(int code) __attribute__((noreturn));
static void sim_exit(int code)
{
    __asm__ volatile("movi a2, 1\n\tmov a3, %0\n\t.byte 0x00, 0x51, 0x00" : : "r"(code) : "a2", "a3", "memory");
    for (;;)
        ;
}

static uint8_t pattern(uint32_t i, uint32_t seed) { return (uint8_t)((i * 37u + seed) ^ (i >> 8)); }

static uint32_t sum_flash(const cfi_flash *f, uint32_t from, uint32_t to)
{
    const volatile uint32_t *p = (const volatile uint32_t *)(f->map + from);
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < (to - from) / 4u; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* 1 when [off, off+len) reads as pattern(seed), by cfi_flash_read. */
static int holds(const cfi_flash *f, uint32_t off, uint32_t len, uint32_t seed)
{
    uint8_t buf[64];
    for (uint32_t done = 0; done < len;) {
        uint32_t n = len - done < sizeof buf ? len - done : sizeof buf;
        if (cfi_flash_read(f, off + done, buf, n) != CFI_OK)
            return 0;
        for (uint32_t i = 0; i < n; i++)
            if (buf[i] != pattern(done + i, seed))
                return 0;
        done += n;
    }
    return 1;
}

static int blank(const cfi_flash *f, uint32_t off, uint32_t len)
{
    for (uint32_t i = 0; i < len; i++)
        if (f->map[off + i] != 0xFFu)
            return 0;
    return 1;
}

static int write_pattern(const cfi_flash *f, uint32_t off, uint32_t len, uint32_t seed)
{
    uint8_t buf[700];
    for (uint32_t done = 0; done < len;) {
        uint32_t n = len - done < sizeof buf ? len - done : sizeof buf;
        for (uint32_t i = 0; i < n; i++)
            buf[i] = pattern(done + i, seed);
        int rc = cfi_flash_write(f, off + done, buf, n);
        if (rc != CFI_OK)
            return rc;
        done += n;
    }
    return CFI_OK;
}

/* Source data that lies in flash: written while the flash is in command
 * mode it would read as status bytes, unless the driver copies it first. */
static const char from_flash[] =
    "this text is read from the flash mapping while the same flash is being programmed";

int main(void)
{
    cfi_flash f, words;
    uint8_t b[8];
    uart_init();
    uart_puts("\ntest_cfi_flash: " BOARD_CORE " boot\n");

    uint32_t hz = xtfpga_cpu_hz();
    CHECK_EQ(cfi_flash_probe(&f, CFI_FLASH_IO_LX60, (const void *)BOARD_FLASH_MAP, hz), CFI_OK);
    uart_puts("test_cfi_flash: size=");
    put_dec((int32_t)f.size);
    uart_puts(" sector=");
    put_dec((int32_t)f.sector_size);
    uart_puts(" buffer=");
    put_dec((int32_t)f.buffer_size);
    uart_puts(" cpu_hz=");
    put_dec((int32_t)hz);
    uart_puts(" erase_ticks=");
    put_dec((int32_t)f.erase_ticks);
    uart_puts(" program_ticks=");
    put_dec((int32_t)f.program_ticks);
    uart_puts("\n");
    CHECK_EQ(f.size, 0x400000);
    CHECK_EQ(f.sector_size, 0x10000);
    CHECK_EQ(f.buffer_size, 512);
    if (failures) {
        uart_puts("test_cfi_flash: FAIL (probe)\n");
        sim_exit(1);
    }

    /* What a previous boot left (the host boots this image twice). */
    uart_puts(holds(&f, PERSIST, PERSIST_LEN, 11) ? "test_cfi_flash: previous boot's data found\n"
                                                  : "test_cfi_flash: no previous boot's data\n");
    uint32_t below = sum_flash(&f, 0, SCRATCH);

    /* Erase, then every byte reads erased. */
    if (blank(&f, SCRATCH + 0x40, 16))
        CHECK_EQ(write_pattern(&f, SCRATCH + 0x40, 16, 3), CFI_OK);
    CHECK_EQ(blank(&f, SCRATCH, f.sector_size), 0);
    CHECK_EQ(cfi_flash_erase(&f, SCRATCH, f.sector_size), CFI_OK);
    CHECK_EQ(blank(&f, SCRATCH, f.sector_size), 1);

    /* Buffered program: aligned, across buffer boundaries, longer than one
     * buffer; read back through cfi_flash_read. */
    CHECK_EQ(write_pattern(&f, SCRATCH + 0x100, 3000, 1), CFI_OK);
    CHECK_EQ(holds(&f, SCRATCH + 0x100, 3000, 1), 1);
    CHECK_EQ(blank(&f, SCRATCH, 0x100), 1);
    CHECK_EQ(blank(&f, SCRATCH + 0x100 + 3000, 64), 1);

    /* Odd offset and odd length: the neighbours of the edge bytes keep
     * their value. */
    CHECK_EQ(write_pattern(&f, SCRATCH + 0x1001, 3, 2), CFI_OK);
    CHECK_EQ(holds(&f, SCRATCH + 0x1001, 3, 2), 1);
    CHECK_EQ(f.map[SCRATCH + 0x1000], 0xFF);
    CHECK_EQ(f.map[SCRATCH + 0x1004], 0xFF);
    CHECK_EQ(write_pattern(&f, SCRATCH + 0x1005, 1, 4), CFI_OK);
    CHECK_EQ(f.map[SCRATCH + 0x1005], pattern(0, 4));
    CHECK_EQ(f.map[SCRATCH + 0x1004], 0xFF);
    CHECK_EQ(holds(&f, SCRATCH + 0x1001, 3, 2), 1);

    /* A source in flash. */
    CHECK_EQ(cfi_flash_write(&f, SCRATCH + 0x2001, from_flash, sizeof from_flash), CFI_OK);
    {
        int same = 1;
        for (uint32_t i = 0; i < sizeof from_flash; i++)
            same &= f.map[SCRATCH + 0x2001 + i] == (uint8_t)from_flash[i];
        CHECK_EQ(same, 1);
    }

    /* NOR only clears bits: clearing more is allowed, setting one back is
     * refused before anything is written. */
    b[0] = 0xF0;
    CHECK_EQ(cfi_flash_write(&f, SCRATCH + 0x3000, b, 1), CFI_OK);
    b[0] = 0x30;
    CHECK_EQ(cfi_flash_write(&f, SCRATCH + 0x3000, b, 1), CFI_OK);
    CHECK_EQ(f.map[SCRATCH + 0x3000], 0x30);
    b[0] = 0x00;
    b[1] = 0x31;
    CHECK_EQ(cfi_flash_write(&f, SCRATCH + 0x2FFF, b, 2), CFI_E_NOT_ERASED);
    CHECK_EQ(f.map[SCRATCH + 0x2FFF], 0xFF);
    CHECK_EQ(f.map[SCRATCH + 0x3000], 0x30);

    /* Word programming (a part without a write buffer). */
    words = f;
    words.buffer_size = 0;
    CHECK_EQ(write_pattern(&words, SCRATCH + 0x4003, 301, 5), CFI_OK);
    CHECK_EQ(holds(&f, SCRATCH + 0x4003, 301, 5), 1);
    CHECK_EQ(f.map[SCRATCH + 0x4002], 0xFF);
    CHECK_EQ(f.map[SCRATCH + 0x4003 + 301], 0xFF);

    /* Refusals. */
    CHECK_EQ(cfi_flash_write(&f, f.size - 1u, b, 2), CFI_E_RANGE);
    CHECK_EQ(cfi_flash_write(&f, f.size + 2u, b, 0), CFI_E_RANGE);
    CHECK_EQ(cfi_flash_write(&f, f.size, b, 0), CFI_OK);
    CHECK_EQ(cfi_flash_read(&f, 0xFFFFFFF0u, b, 0x20), CFI_E_RANGE);
    CHECK_EQ(cfi_flash_erase(&f, SCRATCH + 0x1000, f.sector_size), CFI_E_ALIGN);
    CHECK_EQ(cfi_flash_erase(&f, SCRATCH, 0x1000), CFI_E_ALIGN);
    CHECK_EQ(cfi_flash_erase(&f, f.size, f.sector_size), CFI_E_RANGE);
    CHECK_EQ(cfi_flash_erase(&f, SCRATCH, 0), CFI_OK);

    /* Erase takes all of it away again. */
    CHECK_EQ(cfi_flash_erase(&f, SCRATCH, f.sector_size), CFI_OK);
    CHECK_EQ(blank(&f, SCRATCH, f.sector_size), 1);

    /* Nothing below the scratch sectors moved: code, table, partitions. */
    CHECK_EQ(sum_flash(&f, 0, SCRATCH) == below, 1);

    /* Leave a pattern for the next boot and for the host to find in the
     * image file. */
    CHECK_EQ(cfi_flash_erase(&f, PERSIST, f.sector_size), CFI_OK);
    CHECK_EQ(write_pattern(&f, PERSIST, PERSIST_LEN, 11), CFI_OK);
    CHECK_EQ(holds(&f, PERSIST, PERSIST_LEN, 11), 1);

    uart_puts("test_cfi_flash: ");
    put_dec(checks);
    uart_puts(" checks, ");
    put_dec(failures);
    uart_puts(failures ? " failed\ntest_cfi_flash: FAIL\n" : " failed\ntest_cfi_flash: PASS\n");
    sim_exit(failures ? 1 : 0);
}
