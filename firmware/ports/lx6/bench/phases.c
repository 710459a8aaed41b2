/* Where a push spends its instructions on the emulated esp32-class core:
 * the core built with RVNE_PROFILE, whose phase markers (rvne/profile.h)
 * land here and read the cycle counter. Run by tools/bench_icount.py under
 * qemu -icount shift=0 -semihosting (`make lx6-phases`, and with
 * LX6_KERNELS=c for the C kernels); not a test.
 *
 * Reads <build>/bench/phases/ (bench_input.h), pushes `fill` frames, then
 * counts the next `steps` pushes and prints, in CCOUNT ticks (instructions
 * = ticks * loop_insns / loop_ticks, as the board's calibration):
 *   phases loop_insns=L loop_ticks=T marker_ticks=M markers=K steps=S
 *   phase rest=.. proj=.. scores=.. softmax=.. wsum=.. classifier=..
 * marker_ticks is what 1000 back-to-back markers cost: each marker's own
 * instructions are inside the phase figures (K markers over the S pushes). */
#include <stdio.h>
#include "bench_input.h"
#include "cycles.h"
#include "rvne/profile.h"

#define CALIB_TURNS 1000000u

static const char *const names[RVNE_PHASE_COUNT] = {"rest", "proj", "scores", "softmax", "wsum", "classifier"};
static uint32_t ticks[RVNE_PHASE_COUNT];  /* wraps after 2^32: ~10^11 instructions */
static uint32_t last, markers;
static int current, counting;

void rvne_profile_enter(int phase)
{
    const uint32_t now = ccount();
    if (counting) {
        ticks[current] += now - last;
        markers++;
    }
    last = now;
    current = phase;
}

int main(int argc, char **argv)
{
    bench_input in;
    unsigned i, k, marker_ticks;
    uint32_t t0;

    if (argc < 2 || bench_input_open(&in, argv[1], "phases", 0) != 0)
        return 2;
    for (i = 0; i < in.fill; i++)
        rvne_head_push(&in.head, bench_input_frame(&in, i));
    counting = 0;
    t0 = ccount();
    for (k = 0; k < 1000u; k++)
        rvne_profile_enter(RVNE_PHASE_REST);
    marker_ticks = ccount() - t0;
    counting = 1;
    for (; i < in.fill + in.steps; i++) {
        rvne_profile_enter(RVNE_PHASE_REST);
        markers--;                      /* the harness's own, not the core's */
        rvne_head_push(&in.head, bench_input_frame(&in, i));
        rvne_profile_enter(RVNE_PHASE_REST);
        counting = 0;
        rvne_profile_enter(RVNE_PHASE_REST);
        counting = 1;
    }
    printf("phases loop_insns=%u loop_ticks=%u marker_ticks=%u markers=%u steps=%u\n", 2u * CALIB_TURNS,
           (unsigned)port_calib_loop(CALIB_TURNS), marker_ticks, (unsigned)markers, in.steps);
    printf("phase");
    for (k = 0; k < RVNE_PHASE_COUNT; k++)
        printf(" %s=%u", names[k], (unsigned)ticks[k]);
    printf("\n");
    return 0;
}
