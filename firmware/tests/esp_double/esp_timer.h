/* Test double of ESP-IDF v5.x components/esp_timer/include/esp_timer.h. */
#ifndef ESP_DOUBLE_ESP_TIMER_H
#define ESP_DOUBLE_ESP_TIMER_H
#include <stdint.h>

/* Microseconds since boot. */
int64_t esp_timer_get_time(void);

#endif
