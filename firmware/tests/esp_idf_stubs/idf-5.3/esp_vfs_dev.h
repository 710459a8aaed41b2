/* v5.3-v5.5 components/vfs/include/esp_vfs_dev.h: the UART calls moved to
 * esp_driver_uart (driver/uart_vfs.h); the old names remain, deprecated. */
#ifndef STUB_ESP_VFS_DEV_H
#define STUB_ESP_VFS_DEV_H
void esp_vfs_dev_uart_register(void) __attribute__((deprecated("use uart_vfs_dev_register")));
void esp_vfs_dev_uart_use_driver(int uart_num) __attribute__((deprecated("use uart_vfs_dev_use_driver")));
void esp_vfs_usb_serial_jtag_use_driver(void);
#endif
