/* Helpers shared by the libFuzzer harnesses (fuzz_blob.c, fuzz_proto.c):
 * an independent bitwise CRC-32 to check the core's against, a writer of
 * valid blobs, and the seed-corpus writer. Header-only, static inline functions. */
#ifndef RVNE_FUZZ_UTIL_H
#define RVNE_FUZZ_UTIL_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rvne/blob.h"
#include "rvne/status.h"

/* Stops the run with a message; libFuzzer saves the input as a crash. */
#define FUZZ_ASSERT(cond)                                                              \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* CRC-32 IEEE bit by bit, zlib chaining: deliberately not the core's table. */
static inline uint32_t fz_crc32(uint32_t crc, const uint8_t *p, uint32_t n)
{
    uint32_t i;
    int k;
    crc = ~crc;
    for (i = 0; i < n; i++) {
        crc ^= p[i];
        for (k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static inline uint16_t fz_rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline uint32_t fz_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline void fz_put16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void fz_put32(uint8_t *p, uint32_t v)
{
    fz_put16(p, v & 0xFFFFu);
    fz_put16(p + 2, v >> 16);
}

static inline uint32_t fz_rng(uint32_t *s)
{
    /* xorshift32; the state must not be 0. */
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Contract weights_len of docs/model.md in 128 bits (never wraps here). */
static inline unsigned __int128 fz_contract_len(const uint16_t d[6], int fp16)
{
    unsigned __int128 D = d[0], Q = (unsigned __int128)d[1] * d[3], K = (unsigned __int128)d[2] * d[3];
    return ((unsigned __int128)d[4] * (2u * D * Q + 2u * D * K) + D * d[5]) * (fp16 ? 2u : 4u);
}

/* An int8 blob's parameter block P and exp tables T (docs/format.md), in bytes. */
static inline unsigned __int128 fz_int8_params_len(const uint16_t d[6])
{
    unsigned __int128 Q = (unsigned __int128)d[1] * d[3], K = (unsigned __int128)d[2] * d[3];
    return 4u * (2u + (unsigned __int128)d[4] * 2u * (Q + 2u * K + d[0] + 3u) + d[5]);
}

static inline unsigned __int128 fz_int8_len(const uint16_t d[6])
{
    return fz_int8_params_len(d) + 512u * (unsigned __int128)d[4] + fz_contract_len(d, 0) / 4u;
}

/* A valid int8 blob (flags bit 1): every parameter inside its rule, tables
 * falling, weights in [-127, 127]. Returns its length, 0 when it does not fit. */
static inline size_t fz_build_blob_i8(uint8_t *p, size_t cap, const uint16_t d[6], uint32_t seed)
{
    unsigned __int128 wl128 = fz_int8_len(d);
    uint32_t wl, i, np, nt, s = seed ? seed : 1u;
    if (wl128 + 28u > cap) return 0;
    wl = (uint32_t)wl128;
    np = (uint32_t)fz_int8_params_len(d);
    nt = 512u * d[4];
    fz_put32(p, RVNE_MAGIC);
    fz_put16(p + 4, RVNE_VERSION);
    p[6] = 0x02u;
    p[7] = 0u;
    for (i = 0; i < 6; i++) fz_put16(p + 8 + 2 * i, d[i]);
    fz_put32(p + 20, wl);
    fz_put32(p + 24, 0x40800000u);     /* in_scale_inv 4 */
    fz_put32(p + 28, 0x3E800000u);     /* x_scale 1/4 */
    for (i = 8; i + 4u * d[5] < np; i += 8) {
        fz_put32(p + 24 + i, 0x40000000u | (fz_rng(&s) & 0x3FFFFFFFu));
        fz_put32(p + 28 + i, 30u + fz_rng(&s) % 17u);
    }
    for (; i < np; i += 4) fz_put32(p + 24 + i, 0x3C23D70Au); /* logit_scale 0.01 */
    for (i = 0; i < nt; i += 2) fz_put16(p + 24 + np + i, 32768u >> ((i / 2u) % 256u / 16u));
    for (i = np + nt; i < wl; i++) p[24 + i] = (uint8_t)(int8_t)((int32_t)(fz_rng(&s) % 255u) - 127);
    fz_put32(p + 24 + wl, fz_crc32(0u, p, 24u + wl));
    return 28u + wl;
}

/* A valid blob (dims D,HQ,HKV,HD,L,C) with small finite weights into p;
 * returns its length, 0 when it does not fit cap. */
static inline size_t fz_build_blob(uint8_t *p, size_t cap, const uint16_t d[6], int fp16, uint32_t seed)
{
    unsigned __int128 wl128 = fz_contract_len(d, fp16);
    uint32_t wl, i, s = seed ? seed : 1u;
    if (wl128 + 28u > cap) return 0;
    wl = (uint32_t)wl128;
    fz_put32(p, RVNE_MAGIC);
    fz_put16(p + 4, RVNE_VERSION);
    p[6] = fp16 ? RVNE_FLAG_FP16 : 0u;
    p[7] = 0u;
    for (i = 0; i < 6; i++) fz_put16(p + 8 + 2 * i, d[i]);
    fz_put32(p + 20, wl);
    for (i = 0; i < wl; i += fp16 ? 2u : 4u) {
        uint32_t r = fz_rng(&s);
        if (fp16) /* sign, exponent 10..16 (|w| about 2^-5 ... 2), any mantissa */
            fz_put16(p + 24 + i, (r & 0x8000u) | ((10u + (r >> 16) % 7u) << 10) | (r & 0x3FFu));
        else /* sign, exponent 122..127, any mantissa */
            fz_put32(p + 24 + i, (r & 0x80000000u) | ((122u + (r >> 24) % 6u) << 23) | (r & 0x7FFFFFu));
    }
    fz_put32(p + 24 + wl, fz_crc32(0u, p, 24u + wl));
    return 28u + wl;
}

/* The seed corpus: RVNE_FUZZ_SEED_DIR names a directory; each harness's
 * LLVMFuzzerInitialize writes its seeds there and exits instead of fuzzing. */
static inline const char *fz_seed_dir(void) { return getenv("RVNE_FUZZ_SEED_DIR"); }

static inline void fz_write_seed(const char *dir, const char *name, const void *data, size_t n)
{
    char path[4096];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write seed %s\n", path);
        exit(1);
    }
}

#endif
