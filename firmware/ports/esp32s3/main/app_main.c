/* ESP32-S3 entry point: put the console on an interrupt-driven driver so
 * the task can read it through VFS without blocking, then start the task.
 * On ESP-IDF's linux target the console is the process's stdin/stdout and
 * the flash is a file (RVNE_FLASH_IMAGE, e.g. from `rvne flash --image`).
 *
 * Every ESP-IDF version difference is one #if on ESP_IDF_VERSION below,
 * named in docs/esp32s3.md (Supported ESP-IDF versions); `make -C firmware
 * test` compiles each branch against headers shaped like that version's
 * (firmware/tests/esp_idf_stubs) and runs the linux branch on the double. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "esp_idf_version.h"
#include "sdkconfig.h"
#include "example_producer.h"
#include "temporal_task.h"
#include "rvne/status.h"

#if ESP_IDF_VERSION < ESP_IDF_VERSION_VAL(5, 1, 0)
#error "rvne's ESP32-S3 app needs ESP-IDF v5.1 or later (docs/esp32s3.md)"
#endif

/* v5.3 moved the console drivers' VFS calls out of the vfs component into
 * esp_driver_uart / esp_driver_usb_serial_jtag under new names; v6.0
 * deleted the old ones. Before v5.3 both live in esp_vfs_dev.h. */
#define RVNE_IDF_DRIVER_VFS (ESP_IDF_VERSION >= ESP_IDF_VERSION_VAL(5, 3, 0))

#if CONFIG_IDF_TARGET_LINUX
#include <unistd.h>
#include "esp_private/partition_linux.h"
#elif CONFIG_RVNE_CONSOLE_UART0
#if !CONFIG_ESP_CONSOLE_UART_DEFAULT && !CONFIG_ESP_CONSOLE_UART_CUSTOM
#error "rvne console is UART0: set Component config > ESP System Settings > Channel for console output to UART0"
#endif
#include "driver/uart.h"
#if RVNE_IDF_DRIVER_VFS
#include "driver/uart_vfs.h"
#else
#include "esp_vfs_dev.h"
#endif
#else
#if !CONFIG_ESP_CONSOLE_USB_SERIAL_JTAG
#error "rvne console is USB-Serial/JTAG: set Component config > ESP System Settings > Channel for console output to USB Serial/JTAG"
#endif
#include "driver/usb_serial_jtag.h"
#if RVNE_IDF_DRIVER_VFS
#include "driver/usb_serial_jtag_vfs.h"
#else
#include "esp_vfs_dev.h"
#endif
#endif

#if CONFIG_IDF_TARGET_LINUX
static int image_given;

/* The flash file, before the first esp_partition call maps it: the user's
 * image (used at its own size), or none, and ESP-IDF makes a temporary
 * erased one. */
static int console_install(void)
{
    const char *image = getenv("RVNE_FLASH_IMAGE");
    image_given = 0;
    if (image == NULL || image[0] == '\0')
        return 0;
    esp_partition_file_mmap_ctrl_t *in = esp_partition_get_file_mmap_ctrl_input();
    if (strlen(image) >= sizeof in->flash_file_name) {
        printf("rvne: RVNE_FLASH_IMAGE is longer than %u bytes; using an erased flash\n",
               (unsigned)sizeof in->flash_file_name - 1);
        return 0;
    }
    strcpy(in->flash_file_name, image);
    image_given = 1;
    return 0;
}

/* ESP-IDF's temporary flash file (/tmp/idf-partition-*) is deleted only by
 * esp_partition_file_munmap, which a process killed by its user never
 * reaches. Once mapped it needs no name: unlink it now, so no run leaves
 * one behind. The user's image is never touched. */
static void forget_temporary_flash(void)
{
    if (image_given)
        return;
    const esp_partition_file_mmap_ctrl_t *act = esp_partition_get_file_mmap_ctrl_act();
    if (act != NULL && act->flash_file_name[0] != '\0')
        unlink(act->flash_file_name);
}
#else
static int console_install(void)
{
#if CONFIG_RVNE_CONSOLE_UART0
    /* RX buffer holds two protocol lines; TX goes through the FIFO. */
    if (uart_driver_install(UART_NUM_0, 2 * CONFIG_RVNE_LINE_MAX, 0, 0, NULL, 0) != ESP_OK)
        return -1;
    if (uart_set_baudrate(UART_NUM_0, CONFIG_RVNE_BAUD) != ESP_OK)
        return -1;
#if RVNE_IDF_DRIVER_VFS
    uart_vfs_dev_use_driver(UART_NUM_0);
#else
    esp_vfs_dev_uart_use_driver(UART_NUM_0);
#endif
#else
    usb_serial_jtag_driver_config_t usj = USB_SERIAL_JTAG_DRIVER_CONFIG_DEFAULT();
    usj.rx_buffer_size = 2 * CONFIG_RVNE_LINE_MAX;
    if (usb_serial_jtag_driver_install(&usj) != ESP_OK)
        return -1;
#if RVNE_IDF_DRIVER_VFS
    usb_serial_jtag_vfs_use_driver();
#else
    esp_vfs_usb_serial_jtag_use_driver();
#endif
#endif
    return 0;
}

static void forget_temporary_flash(void) {}
#endif

void app_main(void)
{
    /* Replies are written with write(2); nothing may sit in stdio buffers. */
    setvbuf(stdout, NULL, _IONBF, 0);
    if (console_install() != 0)
        printf("rvne: console driver not installed; serving on the default console\n");
    temporal_task_cfg cfg;
    temporal_task_default_cfg(&cfg);
    int err = temporal_task_start(&cfg);
    forget_temporary_flash();
    if (err != 0)
        printf("rvne: temporal task not started: error %d (%s)\n", err, rvne_status_name(err));
#if CONFIG_RVNE_EXAMPLE_PRODUCER
    else
        example_producer_start();
#endif
}
