/* Test double of ESP-IDF v5.x components/esp_rom/include/esp_rom_crc.h. The
 * double can be told to behave like a ROM that does not give the IEEE result
 * (esp_double.h), to prove the port only plugs it in once checked. */
#ifndef ESP_DOUBLE_ESP_ROM_CRC_H
#define ESP_DOUBLE_ESP_ROM_CRC_H
#include <stdint.h>

uint32_t esp_rom_crc32_le(uint32_t crc, uint8_t const *buf, uint32_t len);

#endif
