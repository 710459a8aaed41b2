/* Control side of the ESP-IDF/FreeRTOS test double: what a host test sets
 * up (the partition's backing file) and injects (faults), and what it reads
 * back (call counts). Not an ESP-IDF header. */
#ifndef ESP_DOUBLE_H
#define ESP_DOUBLE_H
#include <stddef.h>
#include <stdint.h>
#include "esp_partition.h"
#include "freertos/task.h"

/* The one partition esp_partition_find_first can return: label, type and
 * subtype as in partitions.csv, contents from `path` (size = file size).
 * path NULL: the table has no such partition. */
void esp_double_set_partition(const char *label, uint8_t type, uint8_t subtype, const char *path);
/* One more partition in the table (at most 4): the two-slot layout's
 * rvne_a, rvne_b and rvne_sel. 0, or -1 when the file is missing or the
 * table full. */
int esp_double_add_partition(const char *label, uint8_t type, uint8_t subtype, const char *path);

/* The S3's flash sector: esp_partition_erase_range's unit. */
#define ESP_DOUBLE_SECTOR 4096u

/* Called first in every esp_partition_find_first (NULL: nothing): the
 * linux-target double maps its flash file there, as ESP-IDF does when the
 * partition table is first read (esp_double_linux.c). */
extern void (*esp_double_before_find)(void);

typedef enum {
    ESP_DOUBLE_ROM_CRC_IEEE,        /* the real ROM: zlib-compatible CRC-32 */
    ESP_DOUBLE_ROM_CRC_RAW,         /* a ROM without the ~ pre/post conditioning */
} esp_double_rom_crc_mode;

typedef struct esp_double_faults {
    int mmap_fails;                 /* esp_partition_mmap returns ESP_ERR_NO_MEM */
    int queue_create_fails;         /* xQueueGenericCreate returns NULL */
    int queue_send_fails;           /* xQueueGenericSend reports full even with room */
    int task_create_fails;          /* xTaskCreatePinnedToCore returns an error */
    int heap_fails_above;           /* heap_caps_malloc fails for sizes > this (0: never) */
    unsigned flash_fail_at;         /* the N-th esp_partition_write/erase_range returns ESP_FAIL (0: none) */
    esp_double_rom_crc_mode rom_crc;
} esp_double_faults;

/* Clears faults and counters, unmaps, forgets the task; keeps the partition. */
void esp_double_reset(void);
esp_double_faults *esp_double_faults_get(void);

typedef struct esp_double_counts {
    unsigned heap_allocs;           /* heap_caps_malloc + queue + task creations */
    unsigned heap_frees;
    unsigned rom_crc_calls;
    unsigned rom_crc_bytes;
    unsigned mmaps, munmaps;
    unsigned queue_sends, queue_full;
    unsigned delays;
    unsigned flash_reads, flash_writes, flash_write_bytes, flash_erases;
    unsigned flash_ops;             /* writes + erases, for flash_fail_at */
    int64_t now_us;                 /* what esp_timer_get_time returns next (esp_double_timer.c) */
} esp_double_counts;

esp_double_counts *esp_double_counts_get(void);

/* The last xTaskCreatePinnedToCore call, as the scheduler would have seen it. */
typedef struct esp_double_task {
    int created;
    TaskFunction_t fn;
    void *arg;
    char name[32];
    uint32_t stack_bytes;
    UBaseType_t priority;
    BaseType_t core;
} esp_double_task;

const esp_double_task *esp_double_task_get(void);

#endif
