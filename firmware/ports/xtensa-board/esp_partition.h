/* Finds a partition in the ESP-IDF binary partition table at flash 0x8000,
 * as esp_partition_find_first(type, ESP_PARTITION_SUBTYPE_ANY, label) does on
 * the chip. Layout: docs/flash-layout.md. */
#ifndef XTBOARD_ESP_PARTITION_H
#define XTBOARD_ESP_PARTITION_H
#include <stddef.h>
#include <stdint.h>

#define ESP_PART_TYPE_APP 0x00u
#define ESP_PART_TYPE_DATA 0x01u

typedef struct esp_part {
    uint8_t type, subtype;
    uint32_t offset, size;      /* in flash */
    char label[17];
} esp_part;

enum {
    ESP_PART_OK = 0,
    ESP_PART_E_NOT_FOUND = -1, /* a valid table without that partition */
    ESP_PART_E_NO_TABLE = -2,  /* no entry magic in the first row: erased or absent */
    ESP_PART_E_CORRUPT = -3,   /* bad magic mid-table, no end marker, or an MD5 mismatch */
    ESP_PART_E_RANGE = -4      /* the partition lies outside the flash */
};

/* table: the mapped 0xC00 bytes at flash 0x8000; flash_size bounds the
 * result. The MD5 row is checked when present, like the bootloader does. */
int esp_partition_find(const uint8_t *table, size_t table_len, uint32_t flash_size,
                       uint8_t type, const char *label, esp_part *out);
const char *esp_partition_strerror(int err);

#endif
