/* Test double of ESP-IDF v5.x components/vfs/include/esp_vfs_eventfd.h:
 * the host's own eventfd(2) behind ESP-IDF's registration call (its eventfd
 * and the host's both wake select() when written). */
#ifndef ESP_DOUBLE_ESP_VFS_EVENTFD_H
#define ESP_DOUBLE_ESP_VFS_EVENTFD_H
#include <stddef.h>
#include <sys/eventfd.h>
#include "esp_err.h"

#define EFD_SUPPORT_ISR (1 << 4)

typedef struct {
    size_t max_fds;
} esp_vfs_eventfd_config_t;

#define ESP_VFS_EVENTD_CONFIG_DEFAULT() (esp_vfs_eventfd_config_t){.max_fds = 5}

esp_err_t esp_vfs_eventfd_register(const esp_vfs_eventfd_config_t *config);

#endif
