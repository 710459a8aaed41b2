/* The lx60 flash driver's policy half (xtensa/board/cfi_flash.c) on
 * the host, against a model of the part in place of its bus sequences
 * (cfi_cmd.h, which only run on the boards: tests/test_cfi_flash.py). The
 * model answers what QEMU never does: a part that stays busy, status error
 * bits, a program that does not stick, an erase that leaves a bit, other
 * CFI tables; and it records every program command, so a buffered write
 * is seen never to cross the part's buffer. */
#include <stdio.h>
#include <string.h>

#include "cfi_cmd.h"
#include "cfi_flash.h"
#include "check.h"

#define SIZE (1u << 20)         /* a 1 MiB part: 16 sectors of 64 KiB */
#define SECTOR 0x10000u
#define BUFFER 32u              /* its write buffer, bytes (CFI 2^5) */

static uint8_t array[SIZE];
static uint8_t cfi[0x40];

/* What the model does next. */
static struct {
    uint32_t status;            /* status register after an operation (0x80: ready, no error) */
    int flip_program;           /* the next program stores one bit wrong */
    int leave_after_erase;      /* the next erase leaves one byte programmed */
} next;

typedef struct { uint32_t offset, n, buffered; } program_call;
static program_call calls[4096];
static unsigned n_calls, n_erases;

static void default_cfi(void)
{
    memset(cfi, 0, sizeof cfi);
    cfi[0x10] = 'Q';
    cfi[0x11] = 'R';
    cfi[0x12] = 'Y';
    cfi[0x13] = 0x01;           /* Intel/Sharp */
    cfi[0x1F] = 7;              /* word program 2^7 us typical */
    cfi[0x20] = 7;
    cfi[0x21] = 10;             /* erase 2^10 ms typical */
    cfi[0x23] = 4;              /* maxima: 2^4 times typical */
    cfi[0x24] = 4;
    cfi[0x25] = 4;
    cfi[0x27] = 20;             /* 2^20 bytes */
    cfi[0x2A] = 5;              /* 32-byte buffer */
    cfi[0x2C] = 1;              /* one erase-block region */
    cfi[0x2D] = 15;             /* 16 blocks */
    cfi[0x2F] = 0x00;
    cfi[0x30] = 0x01;           /* of 256 * 256 bytes */
}

/* ---- the model of cfi_cmd.h ---------------------------------------------------- */
void cfi_cmd_query(uintptr_t io, uint8_t *out, uint32_t n)
{
    (void)io;
    memcpy(out, cfi, n < sizeof cfi ? n : sizeof cfi);
}

uint32_t cfi_cmd_erase(uintptr_t io, uint32_t offset, uint32_t ticks)
{
    (void)io;
    CHECK(ticks > 0);
    CHECK_EQ(offset % SECTOR, 0);
    n_erases++;
    uint32_t sr = next.status;
    next.status = 0x80;
    if (sr != 0x80)
        return sr;
    memset(array + offset, 0xFF, SECTOR);
    if (next.leave_after_erase) {
        array[offset + 1234] = 0x7F;
        next.leave_after_erase = 0;
    }
    return sr;
}

uint32_t cfi_cmd_program(uintptr_t io, uint32_t offset, const uint16_t *w, uint32_t n, uint32_t buffered,
                         uint32_t ticks)
{
    (void)io;
    CHECK(ticks > 0);
    if (n_calls < sizeof calls / sizeof calls[0])
        calls[n_calls++] = (program_call){offset, n, buffered};
    uint32_t sr = next.status;
    next.status = 0x80;
    if (sr != 0x80)
        return sr;
    for (uint32_t i = 0; i < n; i++) {
        array[offset + 2 * i] &= (uint8_t)w[i];
        array[offset + 2 * i + 1] &= (uint8_t)(w[i] >> 8);
    }
    if (next.flip_program) {
        array[offset] ^= 0x01;
        next.flip_program = 0;
    }
    return sr;
}

/* ---- tests -------------------------------------------------------------------------- */
static cfi_flash probe(void)
{
    cfi_flash f;
    memset(&f, 0, sizeof f);
    CHECK_EQ(cfi_flash_probe(&f, 0, array, 40000000u), CFI_OK);
    return f;
}

static void test_probe(void)
{
    cfi_flash f;
    default_cfi();
    f = probe();
    CHECK_EQ(f.size, SIZE);
    CHECK_EQ(f.sector_size, SECTOR);
    CHECK_EQ(f.buffer_size, BUFFER);
    /* 2^7 us * 2^4 at 40 MHz, and 2^10 ms * 2^4: the part's own maxima. */
    CHECK(f.program_ticks >= 2048u * 40u && f.program_ticks < 2048u * 42u);
    CHECK(f.erase_ticks >= 16384000u * 40u && f.erase_ticks < 16384000u * 42u);

    cfi[0x11] = 'X';
    CHECK_EQ(cfi_flash_probe(&f, 0, array, 40000000u), CFI_E_PROBE);
    default_cfi();
    cfi[0x13] = 0x02;           /* AMD/Fujitsu: another command set */
    CHECK_EQ(cfi_flash_probe(&f, 0, array, 40000000u), CFI_E_PROBE);
    default_cfi();
    cfi[0x2C] = 2;              /* boot blocks: two regions */
    CHECK_EQ(cfi_flash_probe(&f, 0, array, 40000000u), CFI_E_PROBE);
    default_cfi();
    cfi[0x2D] = 14;             /* 15 blocks do not make 2^20 */
    CHECK_EQ(cfi_flash_probe(&f, 0, array, 40000000u), CFI_E_PROBE);
    default_cfi();
    cfi[0x2A] = 0;              /* no buffer: word programming */
    f = probe();
    CHECK_EQ(f.buffer_size, 0);
    default_cfi();
    cfi[0x2A] = 11;             /* QEMU's 2 KiB: capped for the stack */
    f = probe();
    CHECK_EQ(f.buffer_size, 512);
    default_cfi();
}

static void test_status_bits_become_named_errors(void)
{
    static const struct { uint32_t sr; int want; } cases[] = {
        {0x80 | CFI_CMD_TIMEOUT, CFI_E_TIMEOUT}, {0x00 | CFI_CMD_TIMEOUT, CFI_E_TIMEOUT},
        {0xA0, CFI_E_ERASE}, {0x90, CFI_E_PROGRAM}, {0xB0, CFI_E_SEQUENCE},
        {0x82, CFI_E_LOCKED}, {0x88, CFI_E_VPP}, {0x8A, CFI_E_LOCKED},
    };
    uint8_t b[4] = {1, 2, 3, 4};
    cfi_flash f = probe();
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        next.status = cases[i].sr;
        CHECK_EQ(cfi_flash_erase(&f, SECTOR, SECTOR), cases[i].want);
        CHECK_EQ(cfi_flash_erase(&f, SECTOR, SECTOR), CFI_OK);
        next.status = cases[i].sr;
        CHECK_EQ(cfi_flash_write(&f, SECTOR + 8, b, sizeof b), cases[i].want);
        CHECK(strcmp(cfi_flash_strerror(cases[i].want), "unknown flash error") != 0);
    }
}

static void test_read_back_catches_what_did_not_stick(void)
{
    uint8_t b[64];
    cfi_flash f = probe();
    memset(b, 0x5A, sizeof b);
    CHECK_EQ(cfi_flash_erase(&f, 2 * SECTOR, SECTOR), CFI_OK);
    next.flip_program = 1;
    CHECK_EQ(cfi_flash_write(&f, 2 * SECTOR, b, sizeof b), CFI_E_VERIFY);
    next.leave_after_erase = 1;
    CHECK_EQ(cfi_flash_erase(&f, 2 * SECTOR, SECTOR), CFI_E_VERIFY);
    CHECK_EQ(cfi_flash_erase(&f, 2 * SECTOR, SECTOR), CFI_OK);
}

static void test_writes_split_at_buffer_boundaries(void)
{
    static uint8_t b[300];
    cfi_flash f = probe();
    for (unsigned i = 0; i < sizeof b; i++)
        b[i] = (uint8_t)(i * 7 + 1);
    CHECK_EQ(cfi_flash_erase(&f, 3 * SECTOR, SECTOR), CFI_OK);
    n_calls = 0;
    CHECK_EQ(cfi_flash_write(&f, 3 * SECTOR + 13, b, sizeof b), CFI_OK);
    CHECK(memcmp(array + 3 * SECTOR + 13, b, sizeof b) == 0);
    CHECK_EQ(array[3 * SECTOR + 12], 0xFF);
    CHECK_EQ(array[3 * SECTOR + 13 + sizeof b], 0xFF);
    uint32_t covered = 0;
    for (unsigned i = 0; i < n_calls; i++) {
        CHECK(calls[i].buffered);
        CHECK_EQ(calls[i].offset % 2, 0);
        CHECK(calls[i].n >= 1 && calls[i].n <= BUFFER / 2);
        /* Never across a buffer boundary. */
        CHECK_EQ(calls[i].offset / BUFFER, (calls[i].offset + 2 * calls[i].n - 1) / BUFFER);
        covered += 2 * calls[i].n;
    }
    /* 300 bytes at an odd offset touch 151 halfwords, each written once. */
    CHECK_EQ(covered, 302);

    /* Unchanged halfwords cost no command: writing the same bytes again. */
    n_calls = 0;
    CHECK_EQ(cfi_flash_write(&f, 3 * SECTOR + 13, b, sizeof b), CFI_OK);
    CHECK_EQ(n_calls, 0);

    /* Without a buffer: word programming, in chunks. */
    cfi_flash words = f;
    words.buffer_size = 0;
    n_calls = 0;
    CHECK_EQ(cfi_flash_write(&words, 3 * SECTOR + 1001, b, 100), CFI_OK);
    CHECK(memcmp(array + 3 * SECTOR + 1001, b, 100) == 0);
    CHECK(n_calls > 0);
    for (unsigned i = 0; i < n_calls; i++)
        CHECK(!calls[i].buffered);
}

static void test_refusals_write_nothing(void)
{
    uint8_t b[8] = {0, 0, 0, 0, 0, 0, 0, 0xFF};
    cfi_flash f = probe();
    CHECK_EQ(cfi_flash_erase(&f, 4 * SECTOR, SECTOR), CFI_OK);
    CHECK_EQ(cfi_flash_write(&f, 4 * SECTOR + 7, b, 1), CFI_OK);
    n_calls = 0;
    /* The byte at +7 holds 0: an 0xFF there needs an erase. */
    CHECK_EQ(cfi_flash_write(&f, 4 * SECTOR, b, 8), CFI_E_NOT_ERASED);
    CHECK_EQ(n_calls, 0);
    CHECK_EQ(array[4 * SECTOR], 0xFF);
    CHECK_EQ(cfi_flash_write(&f, SIZE - 4, b, 8), CFI_E_RANGE);
    CHECK_EQ(cfi_flash_write(&f, 0xFFFFFFF0u, b, 0x20), CFI_E_RANGE);
    CHECK_EQ(cfi_flash_erase(&f, SECTOR / 2, SECTOR), CFI_E_ALIGN);
    CHECK_EQ(cfi_flash_erase(&f, SIZE - SECTOR, 2 * SECTOR), CFI_E_RANGE);
    CHECK_EQ(cfi_flash_read(&f, SIZE, b, 1), CFI_E_RANGE);
    CHECK_EQ(cfi_flash_read(&f, SIZE - 1, b, 1), CFI_OK);
    unsigned before = n_erases;
    CHECK_EQ(cfi_flash_erase(&f, 0, 0), CFI_OK);
    CHECK_EQ(n_erases, before);
}

int main(void)
{
    next.status = 0x80;
    memset(array, 0xFF, sizeof array);
    default_cfi();
    test_probe();
    test_status_bits_become_named_errors();
    test_read_back_catches_what_did_not_stick();
    test_writes_split_at_buffer_boundaries();
    test_refusals_write_nothing();
    return CHECK_DONE("test_cfi_policy");
}
