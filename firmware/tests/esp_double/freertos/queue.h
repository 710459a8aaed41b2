/* Test double of ESP-IDF v5.x freertos/queue.h: queues of fixed-size items
 * copied in and out, xQueueCreate/xQueueSend as the real macros over the
 * generic calls. Storage is allocated once at creation (counted), never by
 * send or receive. */
#ifndef ESP_DOUBLE_FREERTOS_QUEUE_H
#define ESP_DOUBLE_FREERTOS_QUEUE_H
#include "freertos/FreeRTOS.h"

struct QueueDefinition;
typedef struct QueueDefinition *QueueHandle_t;

#define queueSEND_TO_BACK ((BaseType_t)0)
#define queueSEND_TO_FRONT ((BaseType_t)1)
#define queueQUEUE_TYPE_BASE ((uint8_t)0U)

QueueHandle_t xQueueGenericCreate(const UBaseType_t uxQueueLength, const UBaseType_t uxItemSize,
                                  const uint8_t ucQueueType);
BaseType_t xQueueGenericSend(QueueHandle_t xQueue, const void *const pvItemToQueue,
                             TickType_t xTicksToWait, const BaseType_t xCopyPosition);
BaseType_t xQueueReceive(QueueHandle_t xQueue, void *const pvBuffer, TickType_t xTicksToWait);
UBaseType_t uxQueueMessagesWaiting(const QueueHandle_t xQueue);
void vQueueDelete(QueueHandle_t xQueue);

#define xQueueCreate(uxQueueLength, uxItemSize) \
    xQueueGenericCreate((uxQueueLength), (uxItemSize), (queueQUEUE_TYPE_BASE))
#define xQueueSend(xQueue, pvItemToQueue, xTicksToWait) \
    xQueueGenericSend((xQueue), (pvItemToQueue), (xTicksToWait), queueSEND_TO_BACK)

#endif
