/* The harness's own check (tests.mk, lx6-test-selftest): a test whose checks
 * fail and one that faults must end QEMU with a non-zero status and say why
 * on the console, or a miscompiled core could pass `make lx6-test` unseen.
 * Built twice: -DSELFTEST_FAULT makes it execute an illegal instruction. */
#include <stdio.h>
#include "check.h"

int rvne_test_main(int argc, char **argv)
{
    volatile int zero = 0;
    (void)argc;
    (void)argv;
#ifdef SELFTEST_FAULT
    __asm__ volatile(".byte 0x00, 0x00, 0x00");     /* ILL */
#endif
    CHECK(zero == 1);
    CHECK_EQ(zero, 2);
    return CHECK_DONE("selftest");
}
