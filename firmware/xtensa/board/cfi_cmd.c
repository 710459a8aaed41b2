/* The flash's command sequences, run from RAM with interrupts masked: see
 * cfi_cmd.h for why, docs/flash-layout.md ("Writing the flash") for the
 * commands. Every helper here is forced inline: on the windowed-ABI core a
 * call can raise a window-overflow exception, whose vector is in flash. */
#include "cfi_cmd.h"

#define CMD_READ_ARRAY 0xFFu
#define CMD_READ_STATUS 0x70u
#define CMD_CLEAR_STATUS 0x50u
#define CMD_QUERY 0x98u
#define CMD_ERASE 0x20u
#define CMD_CONFIRM 0xD0u
#define CMD_PROGRAM 0x40u
#define CMD_BUFFER 0xE8u
#define CMD_LOCK_SETUP 0x60u
#define SR_READY 0x80u
#define QUERY_ADDR (0x55u * 2u)  /* the CFI query address on a 16-bit bus */

#define INLINE static inline __attribute__((always_inline))

INLINE void wr(uintptr_t io, uint32_t offset, uint32_t v)
{
    *(volatile uint16_t *)(io + offset) = (uint16_t)v;
}

INLINE uint32_t rd(uintptr_t io, uint32_t offset)
{
    return *(volatile uint16_t *)(io + offset);
}

INLINE uint32_t ccount_now(void)
{
    uint32_t c;
    __asm__ volatile("rsr %0, ccount" : "=r"(c));
    return c;
}

/* Mask every interrupt (an interrupt vector lives in flash); the previous
 * PS comes back with irq_restore. */
INLINE uint32_t irq_mask(void)
{
    uint32_t ps;
    __asm__ volatile("rsil %0, 15" : "=r"(ps) : : "memory");
    return ps;
}

INLINE void irq_restore(uint32_t ps)
{
    __asm__ volatile("wsr %0, ps\n\trsync" : : "r"(ps) : "memory");
}

/* Polls the status register (the part is in a status-reading state) until
 * SR.7; bounded by ticks of CCOUNT, read here because no clock in flash is
 * reachable now. */
INLINE uint32_t wait_ready(uintptr_t io, uint32_t offset, uint32_t ticks)
{
    uint32_t t0 = ccount_now();
    for (;;) {
        uint32_t sr = rd(io, offset) & 0xFFu;
        if (sr & SR_READY)
            return sr;
        if ((uint32_t)(ccount_now() - t0) > ticks) {
            /* Read the status once more: the part may have finished while
             * this core was held up between the two reads. */
            sr = rd(io, offset) & 0xFFu;
            return (sr & SR_READY) ? sr : (sr | CFI_CMD_TIMEOUT);
        }
    }
}

/* Clear the sticky error bits, then back to reading the array (0x50 alone
 * leaves an Intel part in status mode). */
INLINE void finish(uintptr_t io, uint32_t offset)
{
    wr(io, offset, CMD_CLEAR_STATUS);
    wr(io, offset, CMD_READ_ARRAY);
}

void cfi_cmd_query(uintptr_t io, uint8_t *out, uint32_t n)
{
    uint32_t ps = irq_mask();
    wr(io, QUERY_ADDR, CMD_QUERY);
    for (uint32_t i = 0; i < n; i++)
        out[i] = (uint8_t)rd(io, 2u * i);
    wr(io, 0, CMD_READ_ARRAY);
    irq_restore(ps);
}

uint32_t cfi_cmd_erase(uintptr_t io, uint32_t offset, uint32_t ticks)
{
    uint32_t ps = irq_mask(), sr;
    /* Parts of this family may power up with every block locked. */
    wr(io, offset, CMD_LOCK_SETUP);
    wr(io, offset, CMD_CONFIRM);
    sr = wait_ready(io, offset, ticks);
    if (!(sr & CFI_CMD_TIMEOUT) && !(sr & 0x3Au)) {
        wr(io, offset, CMD_ERASE);
        wr(io, offset, CMD_CONFIRM);
        sr = wait_ready(io, offset, ticks);
    }
    finish(io, offset);
    irq_restore(ps);
    return sr;
}

uint32_t cfi_cmd_program(uintptr_t io, uint32_t offset, const uint16_t *w, uint32_t n,
                         uint32_t buffered, uint32_t ticks)
{
    uint32_t ps = irq_mask(), sr;
    wr(io, offset, CMD_LOCK_SETUP);
    wr(io, offset, CMD_CONFIRM);
    sr = wait_ready(io, offset, ticks);
    if ((sr & CFI_CMD_TIMEOUT) || (sr & 0x3Au) || n == 0) {
        finish(io, offset);
        irq_restore(ps);
        return sr;
    }
    if (buffered) {
        /* The part answers 0xE8 with its status: SR.7 = a buffer is free. */
        wr(io, offset, CMD_BUFFER);
        sr = wait_ready(io, offset, ticks);
        if (!(sr & CFI_CMD_TIMEOUT)) {
            wr(io, offset, n - 1u);
            for (uint32_t i = 0; i < n; i++)
                wr(io, offset + 2u * i, w[i]);
            wr(io, offset, CMD_CONFIRM);
            sr = wait_ready(io, offset, ticks);
        }
    } else {
        for (uint32_t i = 0; i < n; i++) {
            wr(io, offset + 2u * i, CMD_PROGRAM);
            wr(io, offset + 2u * i, w[i]);
            sr = wait_ready(io, offset + 2u * i, ticks);
            if ((sr & CFI_CMD_TIMEOUT) || (sr & 0x3Au))
                break;
        }
    }
    finish(io, offset);
    irq_restore(ps);
    return sr;
}
