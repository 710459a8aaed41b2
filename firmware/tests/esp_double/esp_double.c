/* Host implementation of the ESP-IDF/FreeRTOS calls the esp32s3 port uses
 * (see the headers beside this file for the real v5.x signatures), with
 * fault injection and call counts for the port's tests. Single-threaded:
 * the test plays the scheduler and calls the task body itself. */
#define _POSIX_C_SOURCE 200809L
#include "esp_double.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "esp_heap_caps.h"
#include "esp_rom_crc.h"
#include "esp_vfs_eventfd.h"
#include "freertos/queue.h"

static esp_double_faults faults;
static esp_double_counts counts;
static esp_double_task task;

/* The partition table: up to MAX_PARTS partitions, each backed by its own
 * file (its contents from offset 0; size = the file's). */
#define MAX_PARTS 4
static esp_partition_t parts[MAX_PARTS];
static char part_paths[MAX_PARTS][512];
static int n_parts;
/* Where the next added partition lies in the pretend flash. */
static uint32_t next_address = 0x110000;

#define MAX_MAPS 4
static struct { void *addr; size_t len; } maps[MAX_MAPS];

void esp_double_set_partition(const char *label, uint8_t type, uint8_t subtype, const char *path)
{
    memset(parts, 0, sizeof parts);
    n_parts = 0;
    next_address = 0x110000;
    esp_double_add_partition(label, type, subtype, path);
}

int esp_double_add_partition(const char *label, uint8_t type, uint8_t subtype, const char *path)
{
    struct stat st;
    if (path == NULL || label == NULL || n_parts == MAX_PARTS || strlen(path) >= sizeof part_paths[0])
        return -1;
    if (stat(path, &st) != 0 || st.st_size <= 0 || (uint64_t)st.st_size > 0xFFFFFFFFu)
        return -1;
    esp_partition_t *p = &parts[n_parts];
    snprintf(part_paths[n_parts], sizeof part_paths[0], "%s", path);
    snprintf(p->label, sizeof p->label, "%s", label);
    p->type = (esp_partition_type_t)type;
    p->subtype = (esp_partition_subtype_t)subtype;
    p->address = next_address;
    p->size = (uint32_t)st.st_size;
    p->erase_size = ESP_DOUBLE_SECTOR;
    next_address += (p->size + 0xFFFFu) & ~0xFFFFu;
    n_parts++;
    return 0;
}

static int part_index(const esp_partition_t *partition)
{
    for (int i = 0; i < n_parts; i++)
        if (partition == &parts[i])
            return i;
    return -1;
}

void esp_double_reset(void)
{
    for (int i = 0; i < MAX_MAPS; i++)
        if (maps[i].addr != NULL) {
            munmap(maps[i].addr, maps[i].len);
            maps[i].addr = NULL;
        }
    memset(&faults, 0, sizeof faults);
    memset(&counts, 0, sizeof counts);
    memset(&task, 0, sizeof task);
}

esp_double_faults *esp_double_faults_get(void) { return &faults; }
esp_double_counts *esp_double_counts_get(void) { return &counts; }
const esp_double_task *esp_double_task_get(void) { return &task; }

/* ---- esp_partition -------------------------------------------------------- */
void (*esp_double_before_find)(void);

const esp_partition_t *esp_partition_find_first(esp_partition_type_t type, esp_partition_subtype_t subtype,
                                                const char *label)
{
    if (esp_double_before_find != NULL)
        esp_double_before_find();
    for (int i = 0; i < n_parts; i++) {
        const esp_partition_t *p = &parts[i];
        if (type != ESP_PARTITION_TYPE_ANY && type != p->type)
            continue;
        if (subtype != ESP_PARTITION_SUBTYPE_ANY && subtype != p->subtype)
            continue;
        if (label != NULL && strcmp(label, p->label) != 0)
            continue;
        return p;
    }
    return NULL;
}

esp_err_t esp_partition_mmap(const esp_partition_t *partition, size_t offset, size_t size,
                             esp_partition_mmap_memory_t memory, const void **out_ptr,
                             esp_partition_mmap_handle_t *out_handle)
{
    int pi = part_index(partition);
    if (pi < 0 || out_ptr == NULL || out_handle == NULL || memory != ESP_PARTITION_MMAP_DATA)
        return ESP_ERR_INVALID_ARG;
    if (offset > partition->size || size > partition->size - offset)
        return ESP_ERR_INVALID_SIZE;
    if (faults.mmap_fails)
        return ESP_ERR_NO_MEM;
    int slot = -1;
    for (int i = 0; i < MAX_MAPS; i++)
        if (maps[i].addr == NULL) {
            slot = i;
            break;
        }
    if (slot < 0)
        return ESP_ERR_NO_MEM;
    int fd = open(part_paths[pi], O_RDONLY);
    if (fd < 0)
        return ESP_FAIL;
    /* Read-only like the flash cache: a write through the pointer faults.
     * Shared: erases and writes show through it, as ESP-IDF flushes the
     * cache over the range esp_partition_write/erase_range touched. */
    void *addr = mmap(NULL, partition->size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (addr == MAP_FAILED)
        return ESP_FAIL;
    maps[slot].addr = addr;
    maps[slot].len = partition->size;
    counts.mmaps++;
    *out_ptr = (const uint8_t *)addr + offset;
    *out_handle = (esp_partition_mmap_handle_t)(slot + 1);
    return ESP_OK;
}

void esp_partition_munmap(esp_partition_mmap_handle_t handle)
{
    if (handle == 0 || handle > MAX_MAPS || maps[handle - 1].addr == NULL)
        return;
    munmap(maps[handle - 1].addr, maps[handle - 1].len);
    maps[handle - 1].addr = NULL;
    counts.munmaps++;
}

/* Reads, writes and erases go to the partition's file; a write ANDs the
 * bytes in, as NOR flash and ESP-IDF's linux target do. */
static esp_err_t check_range(const esp_partition_t *partition, size_t offset, size_t size)
{
    if (part_index(partition) < 0 || offset > partition->size)
        return ESP_ERR_INVALID_ARG;
    if (size > partition->size - offset)
        return ESP_ERR_INVALID_SIZE;
    return ESP_OK;
}

static esp_err_t file_io(const esp_partition_t *partition, size_t offset, void *buf, size_t size, int write)
{
    int fd = open(part_paths[part_index(partition)], write ? O_RDWR : O_RDONLY);
    if (fd < 0)
        return ESP_FAIL;
    ssize_t n = write ? pwrite(fd, buf, size, (off_t)offset) : pread(fd, buf, size, (off_t)offset);
    close(fd);
    return n == (ssize_t)size ? ESP_OK : ESP_FAIL;
}

esp_err_t esp_partition_read(const esp_partition_t *partition, size_t src_offset, void *dst, size_t size)
{
    esp_err_t err = check_range(partition, src_offset, size);
    if (err != ESP_OK)
        return err;
    counts.flash_reads++;
    return size ? file_io(partition, src_offset, dst, size, 0) : ESP_OK;
}

/* 1 when this flash operation is the one faults.flash_fail_at names. */
static int flash_op_fails(void)
{
    return faults.flash_fail_at != 0 && ++counts.flash_ops == faults.flash_fail_at;
}

esp_err_t esp_partition_write(const esp_partition_t *partition, size_t dst_offset, const void *src, size_t size)
{
    esp_err_t err = check_range(partition, dst_offset, size);
    if (err != ESP_OK)
        return err;
    counts.flash_writes++;
    counts.flash_write_bytes += (unsigned)size;
    if (flash_op_fails())
        return ESP_FAIL;
    /* In pieces, without allocating: the tests count every allocation. */
    for (size_t done = 0; done < size && err == ESP_OK;) {
        uint8_t cur[256];
        size_t n = size - done < sizeof cur ? size - done : sizeof cur;
        err = file_io(partition, dst_offset + done, cur, n, 0);
        for (size_t i = 0; i < n && err == ESP_OK; i++)
            cur[i] &= ((const uint8_t *)src)[done + i];
        if (err == ESP_OK)
            err = file_io(partition, dst_offset + done, cur, n, 1);
        done += n;
    }
    return err;
}

esp_err_t esp_partition_erase_range(const esp_partition_t *partition, size_t offset, size_t size)
{
    esp_err_t err = check_range(partition, offset, size);
    if (err != ESP_OK)
        return err;
    if (size % ESP_DOUBLE_SECTOR != 0)
        return ESP_ERR_INVALID_SIZE;
    if (offset % ESP_DOUBLE_SECTOR != 0)
        return ESP_ERR_INVALID_ARG;
    counts.flash_erases++;
    if (flash_op_fails())
        return ESP_FAIL;
    uint8_t ff[ESP_DOUBLE_SECTOR];
    memset(ff, 0xFF, sizeof ff);
    for (size_t done = 0; done < size && err == ESP_OK; done += sizeof ff)
        err = file_io(partition, offset + done, ff, sizeof ff, 1);
    return err;
}

/* ---- esp_rom_crc, heap_caps (esp_timer: esp_double_timer.c) ------------------ */
uint32_t esp_rom_crc32_le(uint32_t crc, uint8_t const *buf, uint32_t len)
{
    counts.rom_crc_calls++;
    counts.rom_crc_bytes += len;
    /* The ROM conditions with ~ on entry and exit (esp_rom_crc.h's notes);
     * the RAW mode models a ROM routine that does not. */
    int ieee = faults.rom_crc == ESP_DOUBLE_ROM_CRC_IEEE;
    uint32_t c = ieee ? ~crc : crc;
    for (uint32_t i = 0; i < len; i++) {
        c ^= buf[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ieee ? ~c : c;
}

void *heap_caps_malloc(size_t size, uint32_t caps)
{
    (void)caps;
    counts.heap_allocs++;
    if (faults.heap_fails_above > 0 && size > (size_t)faults.heap_fails_above)
        return NULL;
    return malloc(size == 0 ? 1 : size);
}

void *heap_caps_aligned_alloc(size_t alignment, size_t size, uint32_t caps)
{
    void *p = NULL;
    (void)caps;
    counts.heap_allocs++;
    if (faults.heap_fails_above > 0 && size > (size_t)faults.heap_fails_above)
        return NULL;
    return posix_memalign(&p, alignment, size == 0 ? 1 : size) == 0 ? p : NULL;
}

void heap_caps_free(void *ptr)
{
    if (ptr != NULL)
        counts.heap_frees++;
    free(ptr);
}

/* ---- FreeRTOS queue --------------------------------------------------------- */
struct QueueDefinition {
    UBaseType_t length, item_size, head, count;
    uint8_t storage[];
};

QueueHandle_t xQueueGenericCreate(const UBaseType_t uxQueueLength, const UBaseType_t uxItemSize,
                                  const uint8_t ucQueueType)
{
    (void)ucQueueType;
    counts.heap_allocs++;
    if (faults.queue_create_fails || uxQueueLength == 0)
        return NULL;
    struct QueueDefinition *q = malloc(sizeof *q + (size_t)uxQueueLength * uxItemSize);
    if (q == NULL)
        return NULL;
    q->length = uxQueueLength;
    q->item_size = uxItemSize;
    q->head = q->count = 0;
    return q;
}

BaseType_t xQueueGenericSend(QueueHandle_t xQueue, const void *const pvItemToQueue, TickType_t xTicksToWait,
                             const BaseType_t xCopyPosition)
{
    (void)xCopyPosition;
    counts.queue_sends++;
    /* Nobody else runs while the test waits, so a full queue stays full:
     * a blocking send here would be a port bug, caught as a hang-free abort. */
    if (faults.queue_send_fails || xQueue->count == xQueue->length) {
        if (xTicksToWait != 0) {
            fprintf(stderr, "esp_double: xQueueSend on a full queue with %u ticks would block\n",
                    (unsigned)xTicksToWait);
            abort();
        }
        counts.queue_full++;
        return errQUEUE_FULL;
    }
    UBaseType_t tail = (xQueue->head + xQueue->count) % xQueue->length;
    memcpy(xQueue->storage + (size_t)tail * xQueue->item_size, pvItemToQueue, xQueue->item_size);
    xQueue->count++;
    return pdPASS;
}

BaseType_t xQueueReceive(QueueHandle_t xQueue, void *const pvBuffer, TickType_t xTicksToWait)
{
    (void)xTicksToWait;          /* empty stays empty: nobody else runs */
    if (xQueue->count == 0)
        return errQUEUE_EMPTY;
    memcpy(pvBuffer, xQueue->storage + (size_t)xQueue->head * xQueue->item_size, xQueue->item_size);
    xQueue->head = (xQueue->head + 1) % xQueue->length;
    xQueue->count--;
    return pdTRUE;
}

UBaseType_t uxQueueMessagesWaiting(const QueueHandle_t xQueue) { return xQueue->count; }

void vQueueDelete(QueueHandle_t xQueue) { free(xQueue); }

/* ---- FreeRTOS task ------------------------------------------------------------ */
BaseType_t xTaskCreatePinnedToCore(TaskFunction_t pxTaskCode, const char *const pcName, const uint32_t usStackDepth,
                                   void *const pvParameters, UBaseType_t uxPriority, TaskHandle_t *const pxCreatedTask,
                                   const BaseType_t xCoreID)
{
    counts.heap_allocs++;
    if (faults.task_create_fails)
        return errCOULD_NOT_ALLOCATE_REQUIRED_MEMORY;
    if (xCoreID != tskNO_AFFINITY && (xCoreID < 0 || xCoreID >= portNUM_PROCESSORS))
        return pdFAIL;
    task.created = 1;
    task.fn = pxTaskCode;
    task.arg = pvParameters;
    snprintf(task.name, sizeof task.name, "%s", pcName ? pcName : "");
    task.stack_bytes = usStackDepth;
    task.priority = uxPriority;
    task.core = xCoreID;
    if (pxCreatedTask != NULL)
        *pxCreatedTask = (TaskHandle_t)&task;
    return pdPASS;
}

/* ---- vfs eventfd ---------------------------------------------------------------- */
esp_err_t esp_vfs_eventfd_register(const esp_vfs_eventfd_config_t *config)
{
    return config != NULL && config->max_fds > 0 ? ESP_OK : ESP_ERR_INVALID_ARG;
}

void vTaskDelay(const TickType_t xTicksToDelay)
{
    (void)xTicksToDelay;
    counts.delays++;
}

UBaseType_t uxTaskGetStackHighWaterMark(TaskHandle_t xTask)
{
    (void)xTask;
    return 0;
}
