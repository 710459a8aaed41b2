/* ICOUNT as a 64-bit instruction clock (icount.h). The register is 32 bits
 * and raises a debug exception when it would pass 0xFFFFFFFF, so each read
 * folds it into a 64-bit total and restarts it from 0. */
#include "sdkconfig.h"

#if CONFIG_RVNE_PUSH_ICOUNT
#include "icount.h"

/* Touched only by the task, on its own core. */
static uint64_t counted;

void rvne_icount_start(void)
{
    /* Level 1: the task's own code and every level-0 task on this core,
     * not interrupt handlers, nor the window overflow/underflow handlers
     * (they run with PS.EXCM, at the exception level). */
    uint32_t zero = 0, level = 1;
    __asm__ volatile("wsr.icount %0\n\twsr.icountlevel %1\n\tisync" : : "r"(zero), "r"(level) : "memory");
    counted = 0;
}

uint64_t rvne_icount_now(void *ctx)
{
    (void)ctx;
    uint32_t n, zero = 0;
    __asm__ volatile("rsr.icount %0\n\twsr.icount %1\n\tisync" : "=&r"(n) : "r"(zero) : "memory");
    counted += n;
    return counted;
}
#endif
