/* Last resort for an exception: the firmware polls with interrupts masked,
 * so any exception is a bug. Say so on the console, then keep saying so to
 * every request, rather than hang silently. */
#include <stdint.h>
#include "board_core.h"
#include "fault_kinds.h"
#include "uart16550.h"

void port_fault(uint32_t kind, uint32_t cause, uint32_t epc, uint32_t vaddr, uint32_t depc)
    __attribute__((noreturn));

static const char *kind_name(uint32_t kind)
{
    switch (kind) {
    case FAULT_DEBUG: return "debug";
    case FAULT_NMI: return "nmi";
    case FAULT_KERNEL: return "kernel";
    case FAULT_USER: return "user";
    case FAULT_DOUBLE: return "double";
    case FAULT_RETURN: return "main-returned";
    default: return "unknown";
    }
}

static void put_hex(uint32_t v)
{
    char s[11] = "0x";
    for (int i = 0; i < 8; i++)
        s[2 + i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 15u];
    s[10] = '\0';
    uart_puts(s);
}

static void report(uint32_t kind, uint32_t cause, uint32_t epc, uint32_t vaddr, uint32_t depc)
{
    uart_puts("\nrvne: " BOARD_CORE " FAULT ");
    uart_puts(kind_name(kind));
    uart_puts(" exccause=");
    put_hex(cause);
    uart_puts(" epc1=");
    put_hex(epc);
    uart_puts(" excvaddr=");
    put_hex(vaddr);
    uart_puts(" depc=");
    put_hex(depc);
    uart_puts(" (halted; restart the device)\n");
}

void port_fault(uint32_t kind, uint32_t cause, uint32_t epc, uint32_t vaddr, uint32_t depc)
{
    uint8_t c;
    report(kind, cause, epc, vaddr, depc);
    /* The host ignores lines without '<', so a protocol client times out;
     * repeating the report on each request line puts the cause in its log. */
    for (;;) {
        uart_wait_rx();
        if (uart_read(&c, 1) == 1 && c == '\n')
            report(kind, cause, epc, vaddr, depc);
    }
}
