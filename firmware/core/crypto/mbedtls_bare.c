/* What Mbed TLS needs from a bare-metal board (mbedtls_config_bare.h): its
 * heap, a static buffer handed to its own allocator, and an exit. */
#include <stddef.h>
#include <stdint.h>
#include "mbedtls/memory_buffer_alloc.h"
#include "rvne/crypto_mbedtls.h"

/* An RSA-3072 public-key operation's big numbers, with room to spare. */
static uint32_t heap[16384 / 4];
static int heap_ready;

void rvne_mbedtls_heap_init(void)
{
    if (!heap_ready) mbedtls_memory_buffer_alloc_init((unsigned char *)heap, sizeof heap);
    heap_ready = 1;
}

/* A damaged heap is a bug: an illegal instruction, which the board's fault
 * handler reports (docs/flash-layout.md, "Boot output"), rather than a hang. */
void rvne_mbedtls_exit(int status)
{
    (void)status;
    for (;;) {
#if defined(__XTENSA__)
        __asm__ volatile("ill");
#endif
    }
}
