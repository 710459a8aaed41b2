/* Control side of the linux-target flash-file double (esp_double_linux.c). */
#ifndef ESP_DOUBLE_LINUX_H
#define ESP_DOUBLE_LINUX_H
#include "esp_private/partition_linux.h"

/* Forget the controls and the mapping; temporary flash files go to dir. */
void esp_double_linux_start(const char *dir);

#endif
