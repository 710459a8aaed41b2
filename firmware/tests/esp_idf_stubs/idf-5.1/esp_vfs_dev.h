/* v5.1/v5.2 components/vfs/include/esp_vfs_dev.h: where both console
 * drivers are handed to VFS in these versions. */
#ifndef STUB_ESP_VFS_DEV_H
#define STUB_ESP_VFS_DEV_H
void esp_vfs_dev_uart_register(void);
void esp_vfs_dev_uart_use_nonblocking(int uart_num);
void esp_vfs_dev_uart_use_driver(int uart_num);
void esp_vfs_usb_serial_jtag_use_driver(void);
void esp_vfs_usb_serial_jtag_use_nonblocking(void);
#endif
