/* Instructions per push on the ESP32-S3's core, counted exactly by the
 * core's ICOUNT special register (no QEMU -icount): run by
 * tools/bench_icount.py on Espressif's QEMU (-machine esp32s3, booted by
 * the chip's ROM, semihosting; s3.mk `make s3-bench`), once per kernel set
 * and compiler; not a test.
 *
 * How ICOUNT counts: icount.h.
 *
 * Reads <build>/bench/s3/{model.rvne, frames.f32, params.txt} (params:
 * window, fill, steps, and optionally fp16_expand: FP16 weights expanded
 * to FP32 at load, 16-byte aligned as the app places them, when 1 or
 * absent, decoded at every push when 0; docs/model.md, "FP16 weights"),
 * says how it ran them (weights expanded|decoded|fp32), checks the counter on a loop of known length, pushes
 * `fill` frames, then counts each of the next `steps` pushes, and prints
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
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "rvne/blob.h"
#include "rvne/fp16.h"
#include "rvne/head.h"
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

static void *read_file(const char *dir, const char *name, size_t *len)
{
    char path[512];
    struct stat st;
    void *p;
    int fd;
    snprintf(path, sizeof path, "%s/bench/s3/%s", dir, name);
    fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0 ||
        (p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
        printf("push_icount: cannot read %s\n", path);
        return NULL;
    }
    close(fd);
    *len = (size_t)st.st_size;
    return p;
}

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
    char path[512];
    rvne_blob b;
    rvne_head h;
    size_t blob_len, frames_len, arena_len;
    const float *frames;
    void *blob, *arena;
    unsigned window, fill, steps, i, expand = 1;
    size_t exp_bytes = 0;
    char *exp_buf;
    uint32_t t1, t2, t3, read, total = 0, lo = 0xFFFFFFFFu, hi = 0;
    FILE *fp;

    if (argc < 2)
        return 2;
    snprintf(path, sizeof path, "%s/bench/s3/params.txt", argv[1]);
    fp = fopen(path, "r");
    if (fp == NULL || fscanf(fp, "%u %u %u", &window, &fill, &steps) != 3) {
        printf("push_icount: cannot read %s\n", path);
        return 2;
    }
    if (fscanf(fp, "%u", &expand) != 1)
        expand = 1;
    fclose(fp);
    blob = read_file(argv[1], "model.rvne", &blob_len);
    frames = read_file(argv[1], "frames.f32", &frames_len);
    if (blob == NULL || frames == NULL)
        return 2;
    if (rvne_blob_open(&b, blob, blob_len, NULL) != RVNE_OK ||
        rvne_head_arena_size(&b.hdr, window, &arena_len) != RVNE_OK ||
        (arena = malloc(arena_len)) == NULL ||
        rvne_head_init(&h, &b, window, arena, arena_len) != RVNE_OK ||
        frames_len < (size_t)(fill + steps) * b.hdr.input_dim * sizeof(float)) {
        printf("push_icount: the blob, the window or the frames do not fit together\n");
        return 2;
    }
    if (rvne_head_expanded_size(&b.hdr, &exp_bytes) != RVNE_OK)
        exp_bytes = 0;
    if (expand && exp_bytes > 0u) {
        if ((exp_buf = malloc(exp_bytes + 15u)) == NULL) {
            printf("push_icount: the blob, the window or the frames do not fit together\n");
            return 2;
        }
        /* 16-byte aligned as the app places them: the S3 kernels' block loads care. */
        exp_buf += (16u - ((uintptr_t)exp_buf & 15u)) & 15u;
        rvne_fp16_expand((float *)(void *)exp_buf, (const uint16_t *)(const void *)b.weights,
                         exp_bytes / sizeof(float));
        rvne_head_use_f32_weights(&h, (const float *)(const void *)exp_buf);
    }
    printf("weights %s\n", exp_bytes == 0u ? "fp32" : expand ? "expanded" : "decoded");

    s3_icount_on();
    read = s3_icount_cost;
    t1 = s3_icount_loop(1000u);
    t2 = s3_icount_loop(3000u);
    printf("icount loop_a=1000 insns_a=%u loop_b=3000 insns_b=%u read=%u\n", (unsigned)t1, (unsigned)t2,
           (unsigned)read);

    for (i = 0; i < fill + steps; i++) {
        int rc;
        if (i >= fill)
            PROFILE_COUNTING(1);
        t3 = s3_icount_read();
        rc = rvne_head_push(&h, frames + (size_t)i * b.hdr.input_dim);
        t3 = s3_icount_read() - t3 - read;
        if (i >= fill)
            PROFILE_COUNTING(0);
        if (rc != RVNE_OK) {
            printf("push_icount: push %u failed (%d)\n", i, rc);
            return 2;
        }
        if (i >= fill) {
            total += t3;
            lo = t3 < lo ? t3 : lo;
            hi = t3 > hi ? t3 : hi;
        }
        print_logits(rvne_head_logits(&h), b.hdr.n_classes);
    }
    printf("push fill=%u steps=%u insns=%u min=%u max=%u\n", fill, steps, (unsigned)total, (unsigned)lo,
           (unsigned)hi);
#if defined(RVNE_PROFILE)
    printf("phase");
    for (i = 0; i < RVNE_PHASE_COUNT; i++)
        printf(" %s=%u", phase_names[i], (unsigned)phase_insns[i]);
    printf(" markers=%u\n", (unsigned)phase_markers);
#endif
    return 0;
}
