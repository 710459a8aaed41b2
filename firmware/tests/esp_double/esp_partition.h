/* Test double of ESP-IDF v5.x components/esp_partition/include/esp_partition.h:
 * the types and the find/mmap/munmap/read/write/erase_range calls the port
 * uses, with the real signatures and argument checks (v5.1
 * partition_target.c). Backed by a file the test names (esp_double.h), mapped
 * read-only with POSIX mmap, as ESP-IDF's linux target does. */
#ifndef ESP_DOUBLE_ESP_PARTITION_H
#define ESP_DOUBLE_ESP_PARTITION_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "esp_err.h"

typedef struct esp_flash_t esp_flash_t;

typedef enum {
    ESP_PARTITION_MMAP_DATA,
    ESP_PARTITION_MMAP_INST,
} esp_partition_mmap_memory_t;

typedef uint32_t esp_partition_mmap_handle_t;

typedef enum {
    ESP_PARTITION_TYPE_APP = 0x00,
    ESP_PARTITION_TYPE_DATA = 0x01,
    ESP_PARTITION_TYPE_ANY = 0xff,
} esp_partition_type_t;

typedef enum {
    ESP_PARTITION_SUBTYPE_APP_FACTORY = 0x00,
    ESP_PARTITION_SUBTYPE_DATA_NVS = 0x02,
    ESP_PARTITION_SUBTYPE_ANY = 0xff,
} esp_partition_subtype_t;

typedef struct {
    esp_flash_t *flash_chip;
    esp_partition_type_t type;
    esp_partition_subtype_t subtype;
    uint32_t address;
    uint32_t size;
    uint32_t erase_size;
    char label[17];
    bool encrypted;
} esp_partition_t;

const esp_partition_t *esp_partition_find_first(esp_partition_type_t type, esp_partition_subtype_t subtype,
                                                const char *label);
esp_err_t esp_partition_mmap(const esp_partition_t *partition, size_t offset, size_t size,
                             esp_partition_mmap_memory_t memory, const void **out_ptr,
                             esp_partition_mmap_handle_t *out_handle);
void esp_partition_munmap(esp_partition_mmap_handle_t handle);
esp_err_t esp_partition_read(const esp_partition_t *partition, size_t src_offset, void *dst, size_t size);
esp_err_t esp_partition_write(const esp_partition_t *partition, size_t dst_offset, const void *src, size_t size);
esp_err_t esp_partition_erase_range(const esp_partition_t *partition, size_t offset, size_t size);

#endif
