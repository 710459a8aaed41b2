/* What ESP-IDF generates from Kconfig.projbuild, with the values the host
 * tests of the esp32s3 port are built for (small, so tests stay fast). */
#ifndef ESP_DOUBLE_SDKCONFIG_H
#define ESP_DOUBLE_SDKCONFIG_H

#define CONFIG_RVNE_WINDOW 8
#define CONFIG_RVNE_ARENA_WINDOW 16
#define CONFIG_RVNE_LINE_MAX 4096
#define CONFIG_RVNE_MAX_INPUT_DIM 64
#define CONFIG_RVNE_MAX_HEADS 16
#define CONFIG_RVNE_MAX_HEAD_DIM 64
#define CONFIG_RVNE_MAX_LAYERS 8
#define CONFIG_RVNE_MAX_CLASSES 32
#define CONFIG_RVNE_MAX_WINDOW 64
#define CONFIG_RVNE_QUEUE_DEPTH 4
#define CONFIG_RVNE_TASK_STACK 8192
#define CONFIG_RVNE_TASK_PRIORITY 5
#define CONFIG_RVNE_TASK_CORE 1
/* The console choice and the target, as menuconfig would set them: UART0
 * on the chip unless the build passes -DCONFIG_RVNE_CONSOLE_USB_SERIAL_JTAG=1
 * or -DCONFIG_IDF_TARGET_LINUX=1 (esp32s3/port.mk builds each). */
#if !defined(CONFIG_RVNE_CONSOLE_USB_SERIAL_JTAG) && !defined(CONFIG_IDF_TARGET_LINUX)
#define CONFIG_RVNE_CONSOLE_UART0 1
#define CONFIG_ESP_CONSOLE_UART_DEFAULT 1
#endif
#if defined(CONFIG_RVNE_CONSOLE_USB_SERIAL_JTAG)
#define CONFIG_ESP_CONSOLE_USB_SERIAL_JTAG 1
#endif
#define CONFIG_RVNE_BAUD 115200
#define CONFIG_RVNE_EXAMPLE_PRODUCER 1
#define CONFIG_RVNE_EXAMPLE_RATE_HZ 20
#define CONFIG_RVNE_EXAMPLE_PRINT_EVERY 3
#define CONFIG_FREERTOS_HZ 1000

#endif
