/* Instructions per push on the ESP32-S3's core, counted exactly by the
 * core's ICOUNT special register (no QEMU -icount): run by
 * tools/bench_icount.py on Espressif's QEMU (-machine esp32s3, booted by
 * the chip's ROM, semihosting; s3.mk `make s3-bench`), once per kernel set
 * and compiler; not a test.
 *
 * How ICOUNT counts: icount.h.
 *
 * Reads <build>/bench/s3/ (xtensa/bench/bench_input.h; FP16 weights
 * expanded at load unless params.txt says 0, as the app runs them) and says
 * how it ran the weights (weights expanded|decoded|fp32), checks the
 * counter on a loop of known length, pushes `fill` frames, then counts each
 * of the next `steps` pushes, and prints
 *   icount loop_a=N insns_a=I loop_b=M insns_b=J read=R
 *     (s3_icount_loop(N) and (M), 2 instructions per turn: J - I must be
 *     2 * (M - N) exactly; R: what a back-to-back pair of reads counts)
 *   push fill=F steps=S insns=T min=A max=B
 *     (T: all S pushes, the reads' own R taken off each)
 *   logits <hex of each float> ...   one line per push, fill and steps
 * so the host can check the device computed what the reference computes.
 * Built with RVNE_PROFILE (s3.mk's *-prof images, the core's phase markers
 * of rvne/profile.h landing in rvne_profile_enter below), also
 *   phase rest=.. proj=.. scores=.. softmax=.. wsum=.. classifier=.. markers=K
 * the counted pushes' instructions per phase, each marker's own inside
 * (K: the markers counted, the harness's one after each push among them). */
#include <stdio.h>
#include <string.h>
#include "bench_input.h"
#include "rvne/profile.h"
#include "rvne/status.h"
#include "icount.h"

uint32_t s3_icount_loop(uint32_t n);    /* icount_loop.S */

#if defined(RVNE_PROFILE)
static const char *const phase_names[RVNE_PHASE_COUNT] = {"rest", "proj", "scores", "softmax", "wsum",
                                                           "classifier"};
static uint32_t phase_insns[RVNE_PHASE_COUNT], phase_last, phase_markers;
static int phase_now, phase_counting;

void rvne_profile_enter(int phase)
{
    const uint32_t now = s3_icount_read();
    if (phase_counting) {
        phase_insns[phase_now] += now - phase_last;
        phase_markers++;
    }
    phase_last = now;
    phase_now = phase;
}
#define PROFILE_COUNTING(on) (rvne_profile_enter(RVNE_PHASE_REST), phase_counting = (on))
#else
#define PROFILE_COUNTING(on) ((void)0)
#endif

static void print_logits(const float *l, uint32_t n)
{
    uint32_t j, u;
    printf("logits");
    for (j = 0; j < n; j++) {
        memcpy(&u, &l[j], sizeof u);
        printf(" %08x", (unsigned)u);
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    bench_input in;
    unsigned i;
    uint32_t t1, t2, t3, read, total = 0, lo = 0xFFFFFFFFu, hi = 0;

    if (argc < 2 || bench_input_open(&in, argv[1], "s3", 1) != 0)
        return 2;

    s3_icount_on();
    read = s3_icount_cost;
    t1 = s3_icount_loop(1000u);
    t2 = s3_icount_loop(3000u);
    printf("icount loop_a=1000 insns_a=%u loop_b=3000 insns_b=%u read=%u\n", (unsigned)t1, (unsigned)t2,
           (unsigned)read);

    for (i = 0; i < in.fill + in.steps; i++) {
        int rc;
        if (i >= in.fill)
            PROFILE_COUNTING(1);
        t3 = s3_icount_read();
        rc = rvne_head_push(&in.head, bench_input_frame(&in, i));
        t3 = s3_icount_read() - t3 - read;
        if (i >= in.fill)
            PROFILE_COUNTING(0);
        if (rc != RVNE_OK) {
            printf("push_icount: push %u failed (%d)\n", i, rc);
            return 2;
        }
        if (i >= in.fill) {
            total += t3;
            lo = t3 < lo ? t3 : lo;
            hi = t3 > hi ? t3 : hi;
        }
        print_logits(rvne_head_logits(&in.head), in.blob.hdr.n_classes);
    }
    printf("push fill=%u steps=%u insns=%u min=%u max=%u\n", in.fill, in.steps, (unsigned)total, (unsigned)lo,
           (unsigned)hi);
#if defined(RVNE_PROFILE)
    printf("phase");
    for (i = 0; i < RVNE_PHASE_COUNT; i++)
        printf(" %s=%u", phase_names[i], (unsigned)phase_insns[i]);
    printf(" markers=%u\n", (unsigned)phase_markers);
#endif
    return 0;
}
