/* Test double of ESP-IDF v5.x FreeRTOS (freertos/FreeRTOS.h with the Xtensa
 * portmacro types): the base types and tick macros the port uses. */
#ifndef ESP_DOUBLE_FREERTOS_H
#define ESP_DOUBLE_FREERTOS_H
#include <stddef.h>
#include <stdint.h>
#include "sdkconfig.h"

typedef int BaseType_t;
typedef unsigned int UBaseType_t;
typedef uint32_t TickType_t;
typedef uint8_t StackType_t;   /* ESP-IDF counts task stacks in bytes */

#define pdFALSE ((BaseType_t)0)
#define pdTRUE ((BaseType_t)1)
#define pdPASS (pdTRUE)
#define pdFAIL (pdFALSE)
#define errQUEUE_FULL ((BaseType_t)0)
#define errQUEUE_EMPTY ((BaseType_t)0)
#define errCOULD_NOT_ALLOCATE_REQUIRED_MEMORY (-1)

#define portMAX_DELAY ((TickType_t)0xffffffffUL)
#define portNUM_PROCESSORS 2
#define configTICK_RATE_HZ CONFIG_FREERTOS_HZ
#define pdMS_TO_TICKS(xTimeInMs) ((TickType_t)(((TickType_t)(xTimeInMs) * (TickType_t)configTICK_RATE_HZ) / (TickType_t)1000U))

#endif
