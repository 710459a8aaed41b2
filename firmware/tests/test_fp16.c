/* rvne_fp16_to_f32 against numpy's conversion of every half pattern (the
 * table gen_fp16_table.py writes), bit for bit: NaN payloads and the sign of
 * zero included, which a value comparison would let slip. */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "rvne/fp16.h"
#include "rvne/status.h"

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

int main(int argc, char **argv)
{
    char path[4096];
    unsigned char raw[4];
    FILE *fp;
    uint32_t h;
    int mismatches = 0, inline_mismatches = 0;

    CHECK_FATAL(argc >= 2);
    snprintf(path, sizeof path, "%s/tests/fp16_table.bin", argv[1]);
    fp = fopen(path, "rb");
    if (fp == NULL)
        fprintf(stderr, "test_fp16: cannot open %s (make generates it)\n", path);
    CHECK_FATAL(fp != NULL);
    for (h = 0; h < 65536u; h++) {
        uint32_t want, got;
        if (fread(raw, 1, 4, fp) != 4)
            break;
        want = (uint32_t)raw[0] | ((uint32_t)raw[1] << 8) | ((uint32_t)raw[2] << 16) | ((uint32_t)raw[3] << 24);
        got = f32_bits(rvne_fp16_to_f32((uint16_t)h));
        if (got != want && mismatches++ < 10)
            fprintf(stderr, "half 0x%04x: got 0x%08x, numpy 0x%08x\n", (unsigned)h, (unsigned)got, (unsigned)want);
        got = f32_bits(rvne_fp16_to_f32_inline((uint16_t)h));
        if (got != want && inline_mismatches++ < 10)
            fprintf(stderr, "half 0x%04x: inline got 0x%08x, numpy 0x%08x\n", (unsigned)h, (unsigned)got, (unsigned)want);
    }
    fclose(fp);
    CHECK_EQ(h, 65536u); /* the table held every pattern */
    CHECK_EQ(mismatches, 0);
    CHECK_EQ(inline_mismatches, 0);

    /* Landmarks, independent of the table, so a wrong table cannot hide a
     * wrong decoder (and the other way round). */
    CHECK(rvne_fp16_to_f32(0x3C00u) == 1.0f);
    CHECK(rvne_fp16_to_f32(0xC000u) == -2.0f);
    CHECK(rvne_fp16_to_f32(0x7BFFu) == 65504.0f);
    CHECK(rvne_fp16_to_f32(0x0001u) == 5.9604644775390625e-8f); /* 2^-24 */
    CHECK(rvne_fp16_to_f32(0x0400u) == 6.103515625e-5f);        /* 2^-14 */
    CHECK_EQ(f32_bits(rvne_fp16_to_f32(0x8000u)), 0x80000000u);
    CHECK_EQ(f32_bits(rvne_fp16_to_f32(0x7C00u)), 0x7F800000u);
    CHECK_EQ(f32_bits(rvne_fp16_to_f32(0xFE01u)), 0xFFC02000u);
    return CHECK_DONE("test_fp16");
}
