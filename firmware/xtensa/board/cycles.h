/* The core's cycle counter (CCOUNT) as STATS' clock, widened to 64 bits.
 * Under QEMU with -icount the count is virtual and scaled: see
 * docs/flash-layout.md, "Clock and calibration". */
#ifndef XTBOARD_CYCLES_H
#define XTBOARD_CYCLES_H
#include <stdint.h>

static inline uint32_t ccount(void)
{
    uint32_t c;
    __asm__ volatile("rsr %0, ccount" : "=r"(c));
    return c;
}

/* Must run at least once per 2^32 cycles (the serve loop calls it). */
uint64_t cycles_now(void);

/* CCOUNT ticks spent on exactly 2*n instructions (start.S); n >= 1. */
uint32_t port_calib_loop(uint32_t n);

#endif
