/* v5.3+ (unchanged in v6.x) components/esp_driver_uart/include/driver/uart_vfs.h. */
#ifndef STUB_DRIVER_UART_VFS_H
#define STUB_DRIVER_UART_VFS_H
void uart_vfs_dev_register(void);
void uart_vfs_dev_use_nonblocking(int uart_num);
void uart_vfs_dev_use_driver(int uart_num);
#endif
