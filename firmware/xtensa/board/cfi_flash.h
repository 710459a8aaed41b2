/* Erase, program and read the lx60 board's NOR flash: a CFI part with the
 * Intel/Sharp command set on a 16-bit bus, 64 KiB sectors (QEMU's
 * cfi.pflash01, `width=2`), the same flash the firmware executes in place
 * and reads its blob from. Shared by both cores. What the board maps where,
 * and why the command sequences run from RAM: docs/flash-layout.md, "Writing
 * the flash".
 *
 * Offsets are flash offsets (0 = the image's first byte). Every call returns
 * 0 or a negative CFI_E_* code and leaves the flash in read-array mode, so
 * code and data in flash are readable again when it returns. Not reentrant:
 * one caller at a time (the firmware has one thread). */
#ifndef XTBOARD_CFI_FLASH_H
#define XTBOARD_CFI_FLASH_H
#include <stddef.h>
#include <stdint.h>

/* The board's uncached view of the flash, where commands go (the lx60's
 * system I/O at 0xf0000000, flash at +0x08000000), for either core. */
#define CFI_FLASH_IO_LX60 0xf8000000u
/* The board's FPGA register that holds the core clock in Hz. */
#define XTFPGA_CLOCK_HZ_REG 0xfd020004u

enum {
    CFI_OK = 0,
    CFI_E_RANGE = -1,       /* offset or length outside the flash */
    CFI_E_ALIGN = -2,       /* erase range not on sector boundaries */
    CFI_E_TIMEOUT = -3,     /* the part never reported ready within its own maximum time */
    CFI_E_ERASE = -4,       /* status register: erase failed (SR.5) */
    CFI_E_PROGRAM = -5,     /* status register: program failed (SR.4) */
    CFI_E_LOCKED = -6,      /* status register: block locked (SR.1) */
    CFI_E_VPP = -7,         /* status register: program/erase voltage low (SR.3) */
    CFI_E_SEQUENCE = -8,    /* status register: command sequence refused (SR.4 and SR.5) */
    CFI_E_NOT_ERASED = -9,  /* the write would turn a 0 bit into 1: erase the sector first */
    CFI_E_VERIFY = -10,     /* reading back after erase or program gave other bytes */
    CFI_E_PROBE = -11,      /* no CFI answer, not the Intel/Sharp command set, or a geometry not handled */
};

typedef struct cfi_flash {
    uintptr_t io;           /* command view (uncached) */
    const volatile uint8_t *map;    /* read view (the execute-in-place mapping) */
    uint32_t size;          /* bytes, from the CFI table */
    uint32_t sector_size;   /* erase block, bytes */
    uint32_t buffer_size;   /* write buffer, bytes (0: word programming only) */
    uint32_t erase_ticks;   /* CCOUNT ticks to wait at most for one sector erase */
    uint32_t program_ticks; /* ... for one word or one buffer program */
} cfi_flash;

/* Reads the part's CFI table through `io` and fills `f` (geometry, maximum
 * times converted to CCOUNT ticks at cpu_hz). `map` is where the same flash
 * reads in read-array mode. */
int cfi_flash_probe(cfi_flash *f, uintptr_t io, const void *map, uint32_t cpu_hz);

/* Erases [offset, offset + len): both multiples of sector_size. Each sector
 * is checked blank afterwards. */
int cfi_flash_erase(const cfi_flash *f, uint32_t offset, uint32_t len);

/* Programs len bytes at any offset. NOR programming only clears bits: a
 * byte whose new value would set a bit the flash holds as 0 is refused
 * (CFI_E_NOT_ERASED) before anything is written. `src` may point anywhere,
 * the flash included (it is copied to RAM before each command). Read back
 * and compared after each program. */
int cfi_flash_write(const cfi_flash *f, uint32_t offset, const void *src, size_t len);

/* Copies len bytes at offset into dst (RAM). */
int cfi_flash_read(const cfi_flash *f, uint32_t offset, void *dst, size_t len);

const char *cfi_flash_strerror(int err);

/* The core clock as the board reports it (XTFPGA_CLOCK_HZ_REG). */
uint32_t xtfpga_cpu_hz(void);

#endif
