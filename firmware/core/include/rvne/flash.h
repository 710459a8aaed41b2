/* The flash a port lends the core for its model slots, littlefs-style: a few
 * callbacks and the geometry, filled in by the port at boot. The core does
 * the rest (selector records, slot choice at boot, the UPDATE_* commands);
 * the layout and the record are docs/flash-layout.md's.
 *
 * Three partitions, addressed by id with offsets relative to the start of
 * that partition (a port maps them to esp_partition_* handles, to flash
 * offsets, or to regions of a file):
 *   RVNE_PART_A, RVNE_PART_B  the model slots (`rvne_a`, `rvne_b`)
 *   RVNE_PART_SEL             the selector (`rvne_sel`): two record copies,
 *                             at offset 0 and at part_size[SEL] / 2
 * A board with the previous single-partition layout (`rvne`) hands it over
 * as RVNE_PART_A with part_size[B] = part_size[SEL] = 0: it boots and serves
 * that blob, and UPDATE_BEGIN is refused (E_NO_SLOTS).
 *
 * Every callback returns 0 or a negative error: a port's own negative code
 * or RVNE_E_FLASH. The core propagates it (the update fails with E_FLASH,
 * the old model keeps serving) and never retries behind the port's back. */
#ifndef RVNE_FLASH_H
#define RVNE_FLASH_H
#include <stddef.h>
#include <stdint.h>

enum { RVNE_PART_A = 0, RVNE_PART_B = 1, RVNE_PART_SEL = 2, RVNE_PART_COUNT = 3 };

typedef struct rvne_flash {
    void *ctx;

    /* Copy n bytes at off of partition part into buf. */
    int (*read)(void *ctx, int part, uint32_t off, void *buf, uint32_t n);

    /* Set [off, off + n) to 0xFF. off and n are multiples of erase_size.
     * NULL: the port cannot write its flash (updates refused, E_NO_SLOTS). */
    int (*erase)(void *ctx, int part, uint32_t off, uint32_t n);

    /* Program n bytes at off into erased flash (NOR: bits only go 1 -> 0).
     * off and n are multiples of prog_size; the core pads the end of a blob
     * with 0xFF up to prog_size. Never called on bytes not erased since
     * their last prog. buf has no alignment guarantee. NULL: as erase. */
    int (*prog)(void *ctx, int part, uint32_t off, const void *buf, uint32_t n);

    /* The whole partition readable in place (the flash mapping the loader
     * and kernel read the weights from, no copy), or NULL when it cannot be
     * mapped (the slot is then unusable: E_NO_PARTITION). It MUST reflect
     * every completed erase/prog when the callback returns (a port with a
     * cache invalidates it in prog/erase, as esp_partition_write does).
     * Called at boot and after each committed update, for slots only. */
    const void *(*map)(void *ctx, int part);

    uint32_t erase_size;        /* bytes: 4096 on the ESP32-S3, 65536 on the lx60 CFI flash */
    uint32_t prog_size;         /* bytes, a power of two 1 ... 16 */
    uint32_t part_size[RVNE_PART_COUNT];   /* 0: the partition is absent */
    uint32_t part_offset[RVNE_PART_COUNT]; /* in flash; for log lines only */
} rvne_flash;

/* Which layout the port found, for INFO's layout= field. */
static inline int rvne_flash_has_slots(const rvne_flash *f)
{
    return f != 0 && f->part_size[RVNE_PART_B] != 0u && f->part_size[RVNE_PART_SEL] != 0u;
}

static inline int rvne_flash_writable(const rvne_flash *f)
{
    return rvne_flash_has_slots(f) && f->erase != 0 && f->prog != 0 && f->read != 0 &&
           f->erase_size != 0u && f->prog_size != 0u && f->prog_size <= 16u &&
           (f->prog_size & (f->prog_size - 1u)) == 0u;
}

#endif
