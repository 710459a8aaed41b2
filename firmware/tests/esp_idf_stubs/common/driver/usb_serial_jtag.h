/* components/driver (v5.1-v5.2) or esp_driver_usb_serial_jtag (v5.3+):
 * include/driver/usb_serial_jtag.h, the calls the app makes. */
#ifndef STUB_DRIVER_USB_SERIAL_JTAG_H
#define STUB_DRIVER_USB_SERIAL_JTAG_H
#include <stdint.h>
#include "esp_err.h"

typedef struct {
    uint32_t tx_buffer_size;
    uint32_t rx_buffer_size;
} usb_serial_jtag_driver_config_t;

#define USB_SERIAL_JTAG_DRIVER_CONFIG_DEFAULT() \
    (usb_serial_jtag_driver_config_t) { .tx_buffer_size = 256, .rx_buffer_size = 256 }

esp_err_t usb_serial_jtag_driver_install(usb_serial_jtag_driver_config_t *cfg);
#endif
