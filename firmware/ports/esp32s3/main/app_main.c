/* ESP32-S3 entry point: put the console on an interrupt-driven driver so
 * the task can read it through VFS without blocking, then start the task.
 * On ESP-IDF's linux target the console is the process's stdin/stdout and
 * the flash is a file (RVNE_FLASH_IMAGE, e.g. from `rvne flash --image`).
 *
 * Not built on the host: the driver calls differ per console and per
 * ESP-IDF minor version, and no ESP32-S3 compiler is available here; the
 * logic that matters lives in temporal_task.c, which is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "esp_idf_version.h"
#include "sdkconfig.h"
#include "temporal_task.h"
#include "rvne/status.h"

#if CONFIG_IDF_TARGET_LINUX
#include "esp_private/partition_linux.h"
#elif CONFIG_RVNE_CONSOLE_UART0
#if !CONFIG_ESP_CONSOLE_UART_DEFAULT && !CONFIG_ESP_CONSOLE_UART_CUSTOM
#error "rvne console is UART0: set Component config > ESP System Settings > Channel for console output to UART0"
#endif
#include "driver/uart.h"
#if ESP_IDF_VERSION >= ESP_IDF_VERSION_VAL(5, 3, 0)
#include "driver/uart_vfs.h"
#else
#include "esp_vfs_dev.h"
#endif
#else
#if !CONFIG_ESP_CONSOLE_USB_SERIAL_JTAG
#error "rvne console is USB-Serial/JTAG: set Component config > ESP System Settings > Channel for console output to USB Serial/JTAG"
#endif
#include "driver/usb_serial_jtag.h"
#if ESP_IDF_VERSION >= ESP_IDF_VERSION_VAL(5, 3, 0)
#include "driver/usb_serial_jtag_vfs.h"
#else
#include "esp_vfs_usb_serial_jtag.h"
#endif
#endif

static int console_install(void)
{
#if CONFIG_IDF_TARGET_LINUX
    const char *image = getenv("RVNE_FLASH_IMAGE");
    if (image != NULL && image[0] != '\0') {
        esp_partition_file_mmap_ctrl_t *in = esp_partition_get_file_mmap_ctrl_input();
        if (strlen(image) >= sizeof in->flash_file_name)
            return -1;
        strcpy(in->flash_file_name, image);
    }
    return 0;
#elif CONFIG_RVNE_CONSOLE_UART0
    /* RX buffer holds two protocol lines; TX goes through the FIFO. */
    if (uart_driver_install(UART_NUM_0, 2 * CONFIG_RVNE_LINE_MAX, 0, 0, NULL, 0) != ESP_OK)
        return -1;
    if (uart_set_baudrate(UART_NUM_0, CONFIG_RVNE_BAUD) != ESP_OK)
        return -1;
#if ESP_IDF_VERSION >= ESP_IDF_VERSION_VAL(5, 3, 0)
    uart_vfs_dev_use_driver(UART_NUM_0);
#else
    esp_vfs_dev_uart_use_driver(UART_NUM_0);
#endif
    return 0;
#else
    usb_serial_jtag_driver_config_t usj = USB_SERIAL_JTAG_DRIVER_CONFIG_DEFAULT();
    usj.rx_buffer_size = 2 * CONFIG_RVNE_LINE_MAX;
    if (usb_serial_jtag_driver_install(&usj) != ESP_OK)
        return -1;
#if ESP_IDF_VERSION >= ESP_IDF_VERSION_VAL(5, 3, 0)
    usb_serial_jtag_vfs_use_driver();
#else
    esp_vfs_usb_serial_jtag_use_driver();
#endif
    return 0;
#endif
}

void app_main(void)
{
    /* Replies are written with write(2); nothing may sit in stdio buffers. */
    setvbuf(stdout, NULL, _IONBF, 0);
    if (console_install() != 0)
        printf("rvne: console driver not installed; serving on the default console\n");
    temporal_task_cfg cfg;
    temporal_task_default_cfg(&cfg);
    int err = temporal_task_start(&cfg);
    if (err != 0)
        printf("rvne: temporal task not started: error %d (%s)\n", err, rvne_status_name(err));
}
