/* The portable CRC-32 against known check values, its zlib-style chaining,
 * and rvne_crc32_hook_ok telling a good hook from subtly wrong ones. */
#include <string.h>
#include "check.h"
#include "rvne/crc32.h"
#include "rvne/status.h"

/* Bit-at-a-time from the definition: an oracle independent of the table. */
static uint32_t crc_bitwise(uint32_t crc, const uint8_t *buf, uint32_t len)
{
    uint32_t c = ~crc, i;
    int b;
    for (i = 0; i < len; i++) {
        c ^= buf[i];
        for (b = 0; b < 8; b++)
            c = (c & 1u) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    return ~c;
}

/* Wrong in ways a ROM routine with other conventions would be. */
static uint32_t crc_no_chain(uint32_t crc, const uint8_t *buf, uint32_t len)
{
    (void)crc;
    return rvne_crc32(0u, buf, len);
}

static uint32_t crc_no_final_xor(uint32_t crc, const uint8_t *buf, uint32_t len)
{
    return ~rvne_crc32(~crc, buf, len);
}

static uint32_t crc_off_by_one(uint32_t crc, const uint8_t *buf, uint32_t len)
{
    return rvne_crc32(crc, buf, len ? len - 1u : 0u);
}

int main(void)
{
    static const uint8_t check[] = "123456789";
    uint8_t buf[1027];
    uint32_t i, a;

    CHECK_EQ(rvne_crc32(0u, check, 9u), 0xCBF43926u);
    CHECK_EQ(rvne_crc32(0u, check, 0u), 0u);
    CHECK_EQ(rvne_crc32(0u, (const uint8_t *)"a", 1u), 0xE8B7BE43u);
    CHECK_EQ(rvne_crc32(0u, (const uint8_t *)"The quick brown fox jumps over the lazy dog", 43u), 0x414FA339u);

    /* Pseudo-random bytes, every split point of a prefix, against the
     * bitwise oracle. */
    a = 12345u;
    for (i = 0; i < sizeof buf; i++) {
        a = a * 1103515245u + 12345u;
        buf[i] = (uint8_t)(a >> 16);
    }
    CHECK_EQ(rvne_crc32(0u, buf, (uint32_t)sizeof buf), crc_bitwise(0u, buf, (uint32_t)sizeof buf));
    for (i = 0; i <= 64u; i++) {
        uint32_t whole = crc_bitwise(0u, buf, 64u);
        CHECK_EQ(rvne_crc32(rvne_crc32(0u, buf, i), buf + i, 64u - i), whole);
    }

    CHECK_EQ(rvne_crc32_hook_ok(rvne_crc32), 1);
    CHECK_EQ(rvne_crc32_hook_ok(crc_bitwise), 1);
    CHECK_EQ(rvne_crc32_hook_ok(NULL), 0);
    CHECK_EQ(rvne_crc32_hook_ok(crc_no_chain), 0);
    CHECK_EQ(rvne_crc32_hook_ok(crc_no_final_xor), 0);
    CHECK_EQ(rvne_crc32_hook_ok(crc_off_by_one), 0);
    return CHECK_DONE("test_crc32");
}
