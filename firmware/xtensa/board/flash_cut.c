/* The power-cut build's hooks (flash_cut.h). Halting is the cut: the board
 * says where on the UART, then sleeps with every interrupt masked, and the
 * host kills QEMU; what reached the image file by then is what a board
 * losing power at that instant would keep. */
/* Only the power-cut build links this file. */
#define XTB_FLASH_CUT 1
#include "board_core.h"
#include "flash_cut.h"
#include "uart16550.h"

void port_wait_irq(uint32_t mask);

static int cut_kind;
static uint32_t cut_at, cut_count[5];

static uint32_t le32(const volatile uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void cut_init(const cfi_flash *f)
{
    const volatile uint8_t *b = f->map + CUT_BLOCK;
    for (unsigned i = 0; i < 8; i++)
        if (b[i] != (uint8_t)CUT_MAGIC[i])
            return;
    uint32_t kind = le32(b + 8), n = le32(b + 12);
    if (kind >= CUT_ERASE && kind <= CUT_SEL_PROG && n > 0u) {
        cut_kind = (int)kind;
        cut_at = n;
        uart_puts("rvne: " BOARD_CORE " power-cut build: will halt in a flash operation\n");
    }
}

static int is_cut(int kind)
{
    return kind == cut_kind && ++cut_count[kind] == cut_at;
}

static void halt(int kind) __attribute__((noreturn));
static void halt(int kind)
{
    static const char *const names[] = {"", "erase", "prog", "sel-erase", "sel-prog"};
    char n[11];
    int i = 10;
    uint32_t v = cut_at;
    n[i] = '\0';
    do {
        n[--i] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0u && i > 0);
    uart_puts("\nrvne: " BOARD_CORE " CUT ");
    uart_puts(names[kind]);
    uart_puts(":");
    uart_puts(n + i);
    uart_puts(" (halted for the host to kill)\n");
    for (;;)
        port_wait_irq(0);
}

void cut_after_erase(int kind)
{
    if (is_cut(kind))
        halt(kind);
}

void cut_in_prog(int kind, const cfi_flash *f, uint32_t at, const void *buf, uint32_t n)
{
    if (!is_cut(kind))
        return;
    /* Word by word, so the half that lands is torn mid-operation, not at a
     * write-buffer boundary. */
    cfi_flash words = *f;
    words.buffer_size = 0;
    (void)cfi_flash_write(&words, at, buf, (n / 2u) & ~1u);
    halt(kind);
}
