/* The ESP-IDF binary partition table (docs/flash-layout.md), for ports that
 * read it themselves rather than through esp_partition_* (the virtual
 * device's flash image, the emulated boards): find a partition as
 * esp_partition_find_first(type, ESP_PARTITION_SUBTYPE_ANY, label) does,
 * and the model partitions of either layout as an rvne_flash geometry. */
#ifndef RVNE_PTABLE_H
#define RVNE_PTABLE_H
#include <stddef.h>
#include <stdint.h>
#include "rvne/flash.h"

#define RVNE_PTABLE_OFFSET 0x8000u  /* in flash, as ESP-IDF's default */
#define RVNE_PTABLE_LEN 0xC00u
#define RVNE_PTABLE_TYPE_APP 0x00u
#define RVNE_PTABLE_TYPE_DATA 0x01u

typedef struct rvne_ptable_entry {
    uint8_t type, subtype;
    uint32_t offset, size;      /* in flash */
    char label[17];
} rvne_ptable_entry;

enum {
    RVNE_PTABLE_OK = 0,
    RVNE_PTABLE_E_NOT_FOUND = -1, /* a valid table without that partition */
    RVNE_PTABLE_E_NO_TABLE = -2,  /* no entry magic in the first row: erased or absent */
    RVNE_PTABLE_E_CORRUPT = -3,   /* bad magic mid-table, no end marker, or an MD5 mismatch */
    RVNE_PTABLE_E_RANGE = -4      /* the partition lies outside the flash */
};

/* table: the 0xC00 bytes at flash 0x8000; flash_size bounds the result. The
 * MD5 row is checked when present, like the bootloader does. */
int rvne_ptable_find(const uint8_t *table, size_t table_len, uint32_t flash_size, uint8_t type,
                     const char *label, rvne_ptable_entry *out);
const char *rvne_ptable_strerror(int err);

/* The model partitions into f->part_offset/part_size: data partitions
 * rvne_a, rvne_b and rvne_sel (all three), else the single rvne (as
 * RVNE_PART_A). Callbacks and erase/prog sizes are left to the port.
 * Returns RVNE_PTABLE_OK or why there is none (for the port's log line). */
int rvne_ptable_flash(const uint8_t *table, size_t table_len, uint32_t flash_size, rvne_flash *f);

#endif
