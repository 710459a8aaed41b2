/* v5.1/v5.2 components/vfs/include/esp_vfs_usb_serial_jtag.h: registration
 * only; the use_driver call is in esp_vfs_dev.h in these versions. */
#ifndef STUB_ESP_VFS_USB_SERIAL_JTAG_H
#define STUB_ESP_VFS_USB_SERIAL_JTAG_H
#include "esp_err.h"
esp_err_t esp_vfs_dev_usb_serial_jtag_register(void);
#endif
