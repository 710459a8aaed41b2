/* The ESP32-S3 core's ICOUNT special register as the benches here read it.
 *
 * ICOUNT counts the instructions retired while the current interrupt level
 * is below ICOUNTLEVEL. start.S runs main at PS.INTLEVEL 15 (the firmware
 * polls), where nothing would count, so s3_icount_on() drops to INTLEVEL 0
 * with every interrupt still disabled (INTENABLE = 0) and sets ICOUNTLEVEL
 * 15: the window overflow/underflow handlers (at the exception level) count
 * too, as they execute on the chip. ICOUNT raises a debug exception only
 * when it wraps to 0, 2^32 instructions after it is cleared: more than a
 * run does. s3_icount_cost is what a back-to-back pair of reads counts, to
 * take off every measured span. */
#ifndef RVNE_S3_ICOUNT_H
#define RVNE_S3_ICOUNT_H
#include <stdint.h>

static uint32_t s3_icount_cost;

static inline uint32_t s3_icount_read(void)
{
    uint32_t v;
    __asm__ volatile("rsr %0, icount" : "=r"(v));
    return v;
}

static inline void s3_icount_on(void)
{
    uint32_t ps, level = 15, zero = 0, t0;
    __asm__ volatile("rsil %0, 0\n\t"
                     "wsr %1, icountlevel\n\t"
                     "wsr %2, icount\n\t"
                     "isync"
                     : "=&r"(ps) : "r"(level), "r"(zero) : "memory");
    (void)ps;
    t0 = s3_icount_read();
    s3_icount_cost = s3_icount_read() - t0;
}

#endif
