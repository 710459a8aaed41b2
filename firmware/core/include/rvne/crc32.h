/* CRC-32 IEEE 802.3 (reflected 0xEDB88320, init and xorout 0xFFFFFFFF),
 * zlib semantics: start with crc = 0, feed chunks, the return value is final. */
#ifndef RVNE_CRC32_H
#define RVNE_CRC32_H
#include <stdint.h>

/* Same shape as ESP-IDF's esp_rom_crc32_le(), so a port may plug the ROM
 * routine in directly once it has proven it equal (see rvne_crc32_hook_ok). */
typedef uint32_t (*rvne_crc32_fn)(uint32_t crc, const uint8_t *buf, uint32_t len);

/* Portable, table-driven. */
uint32_t rvne_crc32(uint32_t crc, const uint8_t *buf, uint32_t len);

/* 1 when fn gives the IEEE check value 0xCBF43926 for "123456789", also when
 * fed in two chunks (so it chains like zlib); 0 otherwise. */
int rvne_crc32_hook_ok(rvne_crc32_fn fn);

#endif
