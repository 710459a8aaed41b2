/* Polled driver for the 16550 UART of QEMU's xtfpga boards (lx60). */
#ifndef XTBOARD_UART16550_H
#define XTBOARD_UART16550_H
#include <stddef.h>
#include <stdint.h>

void uart_init(void);
/* Blocks until the transmitter takes every byte. */
void uart_write(const void *buf, size_t n);
void uart_puts(const char *s);
/* Non-blocking: bytes already received, at most cap; 0 when none. */
size_t uart_read(uint8_t *buf, size_t cap);
/* Sleeps until a byte has been received (the UART's interrupt wakes the
 * core); returns at once when one is waiting. */
void uart_wait_rx(void);

#endif
