/* Test double of ESP-IDF v5.x components/heap/include/esp_heap_caps.h: the
 * allocation the port makes at init; every call is counted (esp_double.h). */
#ifndef ESP_DOUBLE_ESP_HEAP_CAPS_H
#define ESP_DOUBLE_ESP_HEAP_CAPS_H
#include <stddef.h>
#include <stdint.h>

#define MALLOC_CAP_8BIT (1 << 2)
#define MALLOC_CAP_INTERNAL (1 << 11)

void *heap_caps_malloc(size_t size, uint32_t caps);
void *heap_caps_aligned_alloc(size_t alignment, size_t size, uint32_t caps);
void heap_caps_free(void *ptr);

#endif
