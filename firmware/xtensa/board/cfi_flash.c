/* The flash driver's policy half, in flash like the rest of the firmware:
 * probing, range checks, splitting writes at the part's buffer boundaries,
 * refusing writes that need an erase, status decoding and read-back. The
 * bus cycles are cfi_cmd.c's, in RAM. */
#include "cfi_flash.h"
#include "cfi_cmd.h"

#define SR_VPP 0x08u
#define SR_PROGRAM 0x10u
#define SR_ERASE 0x20u
#define SR_LOCKED 0x02u
/* Bounce buffer for one program command: what the part's write buffer
 * holds at most, capped so the stack frame stays small. */
#define CHUNK_MAX 512u
#define WORD_CHUNK 64u          /* bytes per command when there is no write buffer */

uint32_t xtfpga_cpu_hz(void)
{
    return *(volatile uint32_t *)XTFPGA_CLOCK_HZ_REG;
}

static int status_error(uint32_t sr)
{
    if (sr & CFI_CMD_TIMEOUT)
        return CFI_E_TIMEOUT;
    if ((sr & (SR_PROGRAM | SR_ERASE)) == (SR_PROGRAM | SR_ERASE))
        return CFI_E_SEQUENCE;
    if (sr & SR_LOCKED)
        return CFI_E_LOCKED;
    if (sr & SR_VPP)
        return CFI_E_VPP;
    if (sr & SR_ERASE)
        return CFI_E_ERASE;
    if (sr & SR_PROGRAM)
        return CFI_E_PROGRAM;
    return CFI_OK;
}

/* CFI gives times as 2^n units (typical) and 2^m times that (maximum); 0
 * means not given. Returns CCOUNT ticks, saturated, never 0. */
static uint32_t max_ticks(uint8_t typ_log2, uint8_t max_log2, uint32_t unit_us, uint32_t cpu_hz,
                          uint32_t fallback_us)
{
    uint64_t us = typ_log2 ? ((uint64_t)unit_us << typ_log2) << max_log2 : fallback_us;
    uint64_t ticks = us * (cpu_hz / 1000000u + 1u);
    return ticks > 0x7FFFFFFFu ? 0x7FFFFFFFu : (uint32_t)ticks + 1u;
}

int cfi_flash_probe(cfi_flash *f, uintptr_t io, const void *map, uint32_t cpu_hz)
{
    uint8_t q[0x40];
    cfi_cmd_query(io, q, sizeof q);
    if (q[0x10] != 'Q' || q[0x11] != 'R' || q[0x12] != 'Y')
        return CFI_E_PROBE;
    /* 0x0001 Intel/Sharp extended, 0x0003 Intel standard: same commands. */
    uint32_t cmdset = q[0x13] | (uint32_t)q[0x14] << 8;
    if (cmdset != 0x0001u && cmdset != 0x0003u)
        return CFI_E_PROBE;
    if (q[0x27] < 16u || q[0x27] > 31u || q[0x2C] != 1u)
        return CFI_E_PROBE;     /* not one uniform erase-block region */
    uint32_t size = 1u << q[0x27];
    uint32_t blocks = (q[0x2D] | (uint32_t)q[0x2E] << 8) + 1u;
    uint32_t sector = (q[0x2F] | (uint32_t)q[0x30] << 8) * 256u;
    if (sector == 0u)
        sector = 128u;
    if ((sector & (sector - 1u)) != 0u || (uint64_t)blocks * sector != size)
        return CFI_E_PROBE;
    uint32_t buf_log2 = q[0x2A] | (uint32_t)q[0x2B] << 8;
    uint32_t buffer = 0;
    if (buf_log2 >= 1u && buf_log2 < 16u) {
        buffer = 1u << buf_log2;
        if (buffer > CHUNK_MAX)
            buffer = CHUNK_MAX;
    }
    f->io = io;
    f->map = (const volatile uint8_t *)map;
    f->size = size;
    f->sector_size = sector;
    f->buffer_size = buffer;
    /* 0x1F/0x23 word program (us), 0x20/0x24 buffer program (us), 0x21/0x25
     * block erase (ms). The longer program time covers either command. */
    uint32_t word = max_ticks(q[0x1F], q[0x23], 1u, cpu_hz, 10000u);
    uint32_t buf = max_ticks(q[0x20], q[0x24], 1u, cpu_hz, 10000u);
    f->program_ticks = word > buf ? word : buf;
    f->erase_ticks = max_ticks(q[0x21], q[0x25], 1000u, cpu_hz, 30000000u);
    return CFI_OK;
}

static int in_range(const cfi_flash *f, uint32_t offset, size_t len)
{
    return offset <= f->size && len <= f->size - offset;
}

int cfi_flash_erase(const cfi_flash *f, uint32_t offset, uint32_t len)
{
    if (!in_range(f, offset, len))
        return CFI_E_RANGE;
    if ((offset | len) & (f->sector_size - 1u))
        return CFI_E_ALIGN;
    for (uint32_t s = offset; s < offset + len; s += f->sector_size) {
        int rc = status_error(cfi_cmd_erase(f->io, s, f->erase_ticks));
        if (rc != CFI_OK)
            return rc;
        const volatile uint32_t *p = (const volatile uint32_t *)(f->map + s);
        for (uint32_t i = 0; i < f->sector_size / 4u; i++)
            if (p[i] != 0xFFFFFFFFu)
                return CFI_E_VERIFY;
    }
    return CFI_OK;
}

int cfi_flash_write(const cfi_flash *f, uint32_t offset, const void *src, size_t len)
{
    const uint8_t *s = (const uint8_t *)src;
    uint32_t chunk = f->buffer_size ? f->buffer_size : WORD_CHUNK;
    uint16_t w[CHUNK_MAX / 2u];

    if (!in_range(f, offset, len))
        return CFI_E_RANGE;
    /* Refuse the whole write before programming any of it. */
    for (size_t i = 0; i < len; i++) {
        uint8_t cur = f->map[offset + i];
        if ((cur & s[i]) != s[i])
            return CFI_E_NOT_ERASED;
    }
    uint32_t end = offset + (uint32_t)len;
    uint32_t pos = offset & ~1u;        /* halfword the first byte is in */
    while (pos < end) {
        /* Up to the next chunk boundary: a buffer program may not cross it. */
        uint32_t stop = (pos & ~(chunk - 1u)) + chunk;
        if (stop > end)
            stop = (end + 1u) & ~1u;
        uint32_t n = (stop - pos) / 2u, changed = 0;
        /* Bytes outside [offset, end) keep the flash's value: programming
         * them again with what they hold changes nothing. The source is
         * read now, while the flash is readable: it may be in flash. */
        for (uint32_t i = 0; i < n; i++) {
            uint32_t a = pos + 2u * i;
            uint8_t lo = f->map[a], hi = f->map[a + 1u];
            uint8_t nlo = (a >= offset && a < end) ? s[a - offset] : lo;
            uint8_t nhi = (a + 1u >= offset && a + 1u < end) ? s[a + 1u - offset] : hi;
            w[i] = (uint16_t)(nlo | nhi << 8);
            changed |= (uint32_t)(nlo != lo) | (uint32_t)(nhi != hi);
        }
        /* Nothing to clear: leave the flash alone (fewer program cycles). */
        if (changed) {
            int rc = status_error(cfi_cmd_program(f->io, pos, w, n, f->buffer_size != 0u, f->program_ticks));
            if (rc != CFI_OK)
                return rc;
            for (uint32_t i = 0; i < n; i++) {
                uint32_t a = pos + 2u * i;
                if (f->map[a] != (uint8_t)w[i] || f->map[a + 1u] != (uint8_t)(w[i] >> 8))
                    return CFI_E_VERIFY;
            }
        }
        pos = stop;
    }
    return CFI_OK;
}

int cfi_flash_read(const cfi_flash *f, uint32_t offset, void *dst, size_t len)
{
    uint8_t *d = (uint8_t *)dst;
    if (!in_range(f, offset, len))
        return CFI_E_RANGE;
    for (size_t i = 0; i < len; i++)
        d[i] = f->map[offset + i];
    return CFI_OK;
}

const char *cfi_flash_strerror(int err)
{
    switch (err) {
    case CFI_OK: return "ok";
    case CFI_E_RANGE: return "outside the flash";
    case CFI_E_ALIGN: return "erase range not on sector boundaries";
    case CFI_E_TIMEOUT: return "flash not ready within its maximum time";
    case CFI_E_ERASE: return "flash reported an erase failure";
    case CFI_E_PROGRAM: return "flash reported a program failure";
    case CFI_E_LOCKED: return "flash block locked";
    case CFI_E_VPP: return "flash program/erase voltage low";
    case CFI_E_SEQUENCE: return "flash refused the command sequence";
    case CFI_E_NOT_ERASED: return "write would set bits to 1: erase first";
    case CFI_E_VERIFY: return "flash read back differs from what was written";
    case CFI_E_PROBE: return "no CFI flash with the Intel/Sharp command set";
    default: return "unknown flash error";
    }
}
