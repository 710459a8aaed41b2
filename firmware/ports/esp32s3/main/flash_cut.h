/* Power-cut points for the power-loss tests on Espressif's QEMU
 * (tests/test_update_powerloss_qemu.py, tools/powerloss.py; menuconfig
 * RVNE_FLASH_CUT, on only in the QEMU configuration, sdkconfig.qemu). The
 * app then halts inside its N-th flash operation of one kind, as the lx60
 * boards' power-cut build does, and the host kills QEMU exactly there. The
 * kind and N come from a control block the host writes into the last 4 KiB
 * of the flash, past every partition; erased (as the built image has it),
 * nothing changes. Without the option these compile to nothing.
 * docs/flash-layout.md, "Power-loss tests on the boards". */
#ifndef RVNE_ESP32S3_FLASH_CUT_H
#define RVNE_ESP32S3_FLASH_CUT_H

#include <stdint.h>
#include "esp_partition.h"
#include "sdkconfig.h"

#if CONFIG_RVNE_FLASH_CUT
/* Reads the control block (once, at init). `say` writes one console line:
 * the app's, handed in so that these hooks need nothing of the app. */
void rvne_cut_init(void (*say)(const char *msg));
/* Before an erase of [off, off + n) of `part` (`sel`: the selector's):
 * when it is the N-th of its kind, leaves the first half erased and the
 * second half as it was, and halts. */
void rvne_cut_erase(const esp_partition_t *part, int sel, uint32_t off, uint32_t n);
/* Before a program: when it is the N-th of its kind, programs the first
 * half of it and halts. */
void rvne_cut_prog(const esp_partition_t *part, int sel, uint32_t off, const void *buf, uint32_t n);
#else
static inline void rvne_cut_init(void (*say)(const char *msg)) { (void)say; }
static inline void rvne_cut_erase(const esp_partition_t *part, int sel, uint32_t off, uint32_t n)
{
    (void)part;
    (void)sel;
    (void)off;
    (void)n;
}
static inline void rvne_cut_prog(const esp_partition_t *part, int sel, uint32_t off, const void *buf, uint32_t n)
{
    (void)part;
    (void)sel;
    (void)off;
    (void)buf;
    (void)n;
}
#endif

#endif
