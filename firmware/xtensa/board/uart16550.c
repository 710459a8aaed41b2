#include "uart16550.h"

/* The lx60 board's 16550 sits at 0xfd050020 with registers 4 bytes apart. */
#define UART_BASE 0xfd050020u
#define REG(n) (*(volatile uint32_t *)(UART_BASE + 4u * (n)))
#define THR 0   /* write: transmit holding */
#define RBR 0   /* read: receive buffer */
#define IER 1
#define FCR 2
#define LCR 3
#define MCR 4
#define LSR 5
#define LSR_DR 0x01u
#define IER_RX 0x01u
/* The lx60 board wires the UART to external interrupt 0 = core interrupt 0. */
#define UART_IRQ_MASK (1u << 0)

void port_wait_irq(uint32_t mask);
#define LSR_THRE 0x20u

void uart_init(void)
{
    REG(IER) = IER_RX;      /* polled; the interrupt only wakes an idle core */
    REG(LCR) = 0x03;        /* 8N1; the emulated line has no baud rate */
    REG(FCR) = 0x07;        /* enable and clear the FIFOs */
    REG(MCR) = 0x03;        /* DTR, RTS */
}

void uart_write(const void *buf, size_t n)
{
    const uint8_t *p = (const uint8_t *)buf;
    for (size_t i = 0; i < n; i++) {
        while (!(REG(LSR) & LSR_THRE))
            ;
        REG(THR) = p[i];
    }
}

void uart_puts(const char *s)
{
    while (*s) {
        while (!(REG(LSR) & LSR_THRE))
            ;
        REG(THR) = (uint8_t)*s++;
    }
}

size_t uart_read(uint8_t *buf, size_t cap)
{
    size_t n = 0;
    while (n < cap && (REG(LSR) & LSR_DR))
        buf[n++] = (uint8_t)REG(RBR);
    return n;
}

void uart_wait_rx(void)
{
    /* Busy-polling would keep a host CPU at 100% per idle emulated board. */
    if (!(REG(LSR) & LSR_DR))
        port_wait_irq(UART_IRQ_MASK);
}
