/* Test double of ESP-IDF v5.x freertos/task.h (+ idf_additions.h): task
 * creation pinned to a core, delay. The double records the creation instead
 * of running the task; a test drives the task body step by step. */
#ifndef ESP_DOUBLE_FREERTOS_TASK_H
#define ESP_DOUBLE_FREERTOS_TASK_H
#include "freertos/FreeRTOS.h"

typedef struct tskTaskControlBlock *TaskHandle_t;
typedef void (*TaskFunction_t)(void *);

#define tskNO_AFFINITY ((BaseType_t)0x7FFFFFFF)
#define tskIDLE_PRIORITY ((UBaseType_t)0U)

BaseType_t xTaskCreatePinnedToCore(TaskFunction_t pxTaskCode, const char *const pcName,
                                   const uint32_t usStackDepth, void *const pvParameters,
                                   UBaseType_t uxPriority, TaskHandle_t *const pxCreatedTask,
                                   const BaseType_t xCoreID);
void vTaskDelay(const TickType_t xTicksToDelay);
UBaseType_t uxTaskGetStackHighWaterMark(TaskHandle_t xTask);

#endif
