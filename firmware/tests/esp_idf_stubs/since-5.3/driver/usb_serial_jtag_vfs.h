/* v5.3+ (unchanged in v6.x) components/esp_driver_usb_serial_jtag/include/driver/usb_serial_jtag_vfs.h. */
#ifndef STUB_DRIVER_USB_SERIAL_JTAG_VFS_H
#define STUB_DRIVER_USB_SERIAL_JTAG_VFS_H
#include "esp_err.h"
esp_err_t usb_serial_jtag_vfs_register(void);
void usb_serial_jtag_vfs_use_driver(void);
void usb_serial_jtag_vfs_use_nonblocking(void);
#endif
