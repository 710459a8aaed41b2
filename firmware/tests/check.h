/* The assertions shared by the firmware unit tests. A failed check prints
 * where and what, and the test keeps going so one run shows every failure;
 * CHECK_DONE() turns the count into the exit status. */
#ifndef RVNE_TEST_CHECK_H
#define RVNE_TEST_CHECK_H
#include <stdint.h>
#include <stdio.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                            \
    do {                                                                       \
        check_count++;                                                         \
        if (!(cond)) {                                                         \
            check_failures++;                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,   \
                    #cond);                                                    \
        }                                                                      \
    } while (0)

/* Integers of any width, shown in decimal and hex. */
#define CHECK_EQ(got, want)                                                    \
    do {                                                                       \
        long long check_g_ = (long long)(got), check_w_ = (long long)(want);   \
        check_count++;                                                         \
        if (check_g_ != check_w_) {                                            \
            check_failures++;                                                  \
            fprintf(stderr, "%s:%d: %s = %lld (0x%llx), want %s = %lld (0x%llx)\n", \
                    __FILE__, __LINE__, #got, check_g_,                        \
                    (unsigned long long)check_g_, #want, check_w_,             \
                    (unsigned long long)check_w_);                             \
        }                                                                      \
    } while (0)

/* Status codes, shown by name. */
#define CHECK_STATUS(got, want)                                                \
    do {                                                                       \
        int check_g_ = (got), check_w_ = (want);                               \
        check_count++;                                                         \
        if (check_g_ != check_w_) {                                            \
            check_failures++;                                                  \
            fprintf(stderr, "%s:%d: %s = %s, want %s\n", __FILE__, __LINE__,   \
                    #got, rvne_status_name(check_g_),                          \
                    rvne_status_name(check_w_));                               \
        }                                                                      \
    } while (0)

/* Stop the test here (e.g. a data file is missing): later checks would only
 * repeat the same failure. */
#define CHECK_FATAL(cond)                                                      \
    do {                                                                       \
        check_count++;                                                         \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: fatal: %s\n", __FILE__, __LINE__, #cond);  \
            return 1;                                                          \
        }                                                                      \
    } while (0)

/* A test that checked nothing has not tested anything: that fails too. */
#define CHECK_DONE(name)                                                       \
    (fprintf(stderr, "%s: %d checks, %d failed\n", (name), check_count,        \
             check_failures),                                                  \
     (check_failures == 0 && check_count > 0) ? 0 : 1)

/* Little-endian stores for building blobs and headers byte by byte, the
 * way docs/format.md lays them out. */
static inline void put16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void put32(uint8_t *p, uint32_t v)
{
    put16(p, v & 0xFFFFu);
    put16(p + 2, v >> 16);
}

#endif
