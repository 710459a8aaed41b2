/* Instructions as the push clock (menuconfig RVNE_PUSH_ICOUNT; on in the
 * QEMU configuration, sdkconfig.qemu): STATS then times each push in
 * instructions the task's core executed, counted by that core's ICOUNT
 * register (Xtensa debug option), exact on Espressif's QEMU without
 * -icount. docs/esp32s3.md, "Instructions per push". */
#ifndef RVNE_ESP32S3_ICOUNT_H
#define RVNE_ESP32S3_ICOUNT_H

#include <stdint.h>

/* On the core that will call rvne_icount_now: count instructions run below
 * interrupt level 1 (ICOUNTLEVEL 1), from 0. */
void rvne_icount_start(void);

/* Instructions counted on this core since rvne_icount_start, 64-bit. Must
 * be called at least every 2^32 - 1 instructions (the task calls it every
 * step) or the core takes an ICOUNT debug exception. */
uint64_t rvne_icount_now(void *ctx);

#endif
