/* components/driver (v5.1-v5.2) or esp_driver_uart (v5.3+):
 * include/driver/uart.h, the calls the app makes. Same in every version. */
#ifndef STUB_DRIVER_UART_H
#define STUB_DRIVER_UART_H
#include <stdint.h>
#include "esp_err.h"
#include "freertos/FreeRTOS.h"
#include "freertos/queue.h"

typedef enum { UART_NUM_0, UART_NUM_1, UART_NUM_2, UART_NUM_MAX } uart_port_t;

esp_err_t uart_driver_install(uart_port_t uart_num, int rx_buffer_size, int tx_buffer_size, int queue_size,
                              QueueHandle_t *uart_queue, int intr_alloc_flags);
esp_err_t uart_set_baudrate(uart_port_t uart_num, uint32_t baudrate);
#endif
