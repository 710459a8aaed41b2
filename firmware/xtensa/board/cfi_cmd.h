/* The CFI command sequences themselves (Intel/Sharp command set, 16-bit
 * bus). This object is linked into RAM as a whole (the ports' linker
 * scripts place cfi_cmd.o's code, literals and constants with .data): while
 * a sequence runs, the flash answers every read with its status register,
 * so nothing of it may be fetched from flash. Each function masks
 * interrupts, calls nothing, and returns with the part in read-array mode.
 * Only cfi_flash.c calls these. */
#ifndef XTBOARD_CFI_CMD_H
#define XTBOARD_CFI_CMD_H
#include <stdint.h>

/* Set in a result when the part was not ready in time. */
#define CFI_CMD_TIMEOUT 0x10000u

/* Copies bytes 0..n-1 of the CFI query table into out (RAM). */
void cfi_cmd_query(uintptr_t io, uint8_t *out, uint32_t n);

/* Unlocks and erases the sector at offset. Returns its final status
 * register (SR.7 ready and the error bits), | CFI_CMD_TIMEOUT. */
uint32_t cfi_cmd_erase(uintptr_t io, uint32_t offset, uint32_t ticks);

/* Programs n halfwords (from RAM) at offset (even). buffered: one
 * write-to-buffer sequence (n no more than the part's buffer, not crossing
 * its boundary); else one word program per halfword, stopping at the first
 * error. Returns the status register as cfi_cmd_erase does. */
uint32_t cfi_cmd_program(uintptr_t io, uint32_t offset, const uint16_t *w, uint32_t n,
                         uint32_t buffered, uint32_t ticks);

#endif
