/* v5.3-v5.5 components/vfs/include/esp_vfs_usb_serial_jtag.h: deprecated in
 * favour of driver/usb_serial_jtag_vfs.h. */
#ifndef STUB_ESP_VFS_USB_SERIAL_JTAG_H
#define STUB_ESP_VFS_USB_SERIAL_JTAG_H
#include "esp_err.h"
esp_err_t esp_vfs_dev_usb_serial_jtag_register(void)
    __attribute__((deprecated("use usb_serial_jtag_vfs_register")));
#endif
