/* Test double of ESP-IDF v5.x components/esp_common/include/esp_err.h: the
 * few codes the esp32s3 port's glue uses, with ESP-IDF's values. */
#ifndef ESP_DOUBLE_ESP_ERR_H
#define ESP_DOUBLE_ESP_ERR_H
#include <stdint.h>

typedef int esp_err_t;

#define ESP_OK 0
#define ESP_FAIL -1
#define ESP_ERR_NO_MEM 0x101
#define ESP_ERR_INVALID_ARG 0x102
#define ESP_ERR_INVALID_SIZE 0x104
#define ESP_ERR_INVALID_STATE 0x103
#define ESP_ERR_NOT_FOUND 0x105

#endif
