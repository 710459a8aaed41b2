/* Power-cut points for the boards' power-loss tests
 * (tests/test_update_powerloss_qemu.py, tools/powerloss.py). A build with
 * XTB_FLASH_CUT (`make lx6-cut`, `make lx106-cut`: flash-cut.img) halts the
 * board inside its N-th flash operation of one kind, as the virtual
 * device's RVNE_VDEV_CUT does, so the host kills QEMU exactly there; the
 * firmware built without it compiles these to nothing. The kind and N come
 * from a control block the host writes into the image at CUT_BLOCK, past
 * every partition (docs/flash-layout.md, "Power-loss tests"). */
#ifndef XTBOARD_FLASH_CUT_H
#define XTBOARD_FLASH_CUT_H
#include <stdint.h>
#include "cfi_flash.h"

enum { CUT_NONE = 0, CUT_ERASE = 1, CUT_PROG = 2, CUT_SEL_ERASE = 3, CUT_SEL_PROG = 4 };

#define CUT_BLOCK 0x3FF000u
#define CUT_MAGIC "RVNECUT1"

#ifdef XTB_FLASH_CUT
/* Reads the control block (once, at boot). */
void cut_init(const cfi_flash *f);
/* After an erase of `kind` reached the flash: halts when it is the N-th
 * (a sector erase is one indivisible command on this part). */
void cut_after_erase(int kind);
/* Before a program of `kind`: when it is the N-th, programs the first half
 * of it (whole 16-bit words, one command each) and halts. */
void cut_in_prog(int kind, const cfi_flash *f, uint32_t at, const void *buf, uint32_t n);
#else
static inline void cut_init(const cfi_flash *f) { (void)f; }
static inline void cut_after_erase(int kind) { (void)kind; }
static inline void cut_in_prog(int kind, const cfi_flash *f, uint32_t at, const void *buf, uint32_t n)
{
    (void)kind;
    (void)f;
    (void)at;
    (void)buf;
    (void)n;
}
#endif

#endif
