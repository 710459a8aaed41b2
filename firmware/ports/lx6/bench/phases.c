/* Where a push spends its instructions on the emulated esp32-class core:
 * the core built with RVNE_PROFILE, whose phase markers (rvne/profile.h)
 * land here and read the cycle counter. Run by tools/bench_icount.py under
 * qemu -icount shift=0 -semihosting (`make lx6-phases`, and with
 * LX6_KERNELS=c for the C kernels); not a test.
 *
 * Reads <build>/bench/phases/{model.rvne, frames.f32, params.txt} (params:
 * window, fill, steps, and optionally fp16_expand: 1 runs FP16 weights
 * expanded to FP32 as a port that asks for it at load, 0 or absent decodes
 * them; docs/model.md, "FP16 weights"), pushes `fill` frames, then counts the next `steps`
 * pushes and prints, in CCOUNT ticks (instructions = ticks * loop_insns /
 * loop_ticks, as the board's calibration):
 *   phases loop_insns=L loop_ticks=T marker_ticks=M markers=K steps=S
 *   phase rest=.. proj=.. scores=.. softmax=.. wsum=.. classifier=..
 * marker_ticks is what 1000 back-to-back markers cost: each marker's own
 * instructions are inside the phase figures (K markers over the S pushes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "cycles.h"
#include "rvne/blob.h"
#include "rvne/fp16.h"
#include "rvne/head.h"
#include "rvne/profile.h"
#include "rvne/status.h"

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

static void *read_file(const char *dir, const char *name, size_t *len)
{
    char path[512];
    struct stat st;
    void *p;
    int fd;
    snprintf(path, sizeof path, "%s/bench/phases/%s", dir, name);
    fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0 ||
        (p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
        printf("phases: cannot read %s\n", path);
        return NULL;
    }
    close(fd);
    *len = (size_t)st.st_size;
    return p;
}

int main(int argc, char **argv)
{
    char path[512];
    rvne_blob b;
    rvne_head h;
    size_t blob_len, frames_len, arena_len;
    const float *frames;
    void *blob, *arena;
    unsigned window, fill, steps, i, k, marker_ticks, expand = 0;
    size_t exp_bytes = 0;
    float *expanded = NULL;
    uint32_t t0;
    FILE *fp;

    if (argc < 2)
        return 2;
    snprintf(path, sizeof path, "%s/bench/phases/params.txt", argv[1]);
    fp = fopen(path, "r");
    if (fp == NULL || fscanf(fp, "%u %u %u", &window, &fill, &steps) != 3) {
        printf("phases: cannot read %s\n", path);
        return 2;
    }
    if (fscanf(fp, "%u", &expand) != 1)
        expand = 0;
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
        printf("phases: the blob, the window or the frames do not fit together\n");
        return 2;
    }
    if (expand && rvne_head_expanded_size(&b.hdr, &exp_bytes) == RVNE_OK && exp_bytes > 0u) {
        if ((expanded = malloc(exp_bytes)) == NULL) {
            printf("phases: no memory for the expanded weights\n");
            return 2;
        }
        rvne_fp16_expand(expanded, (const uint16_t *)(const void *)b.weights, exp_bytes / sizeof(float));
        rvne_head_use_f32_weights(&h, expanded);
    }
    for (i = 0; i < fill; i++)
        rvne_head_push(&h, frames + (size_t)i * b.hdr.input_dim);
    counting = 0;
    t0 = ccount();
    for (k = 0; k < 1000u; k++)
        rvne_profile_enter(RVNE_PHASE_REST);
    marker_ticks = ccount() - t0;
    counting = 1;
    for (; i < fill + steps; i++) {
        rvne_profile_enter(RVNE_PHASE_REST);
        markers--;                      /* the harness's own, not the core's */
        rvne_head_push(&h, frames + (size_t)i * b.hdr.input_dim);
        rvne_profile_enter(RVNE_PHASE_REST);
        counting = 0;
        rvne_profile_enter(RVNE_PHASE_REST);
        counting = 1;
    }
    printf("phases loop_insns=%u loop_ticks=%u marker_ticks=%u markers=%u steps=%u\n", 2u * CALIB_TURNS,
           (unsigned)port_calib_loop(CALIB_TURNS), marker_ticks, (unsigned)markers, steps);
    printf("phase");
    for (k = 0; k < RVNE_PHASE_COUNT; k++)
        printf(" %s=%u", names[k], (unsigned)ticks[k]);
    printf("\n");
    return 0;
}
