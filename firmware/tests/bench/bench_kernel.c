/* Per-push cost of the streaming head against recomputing the whole window
 * at every step (what a classifier without a KV cache does per classify).
 * tools/bench_kernel.py drives it, under callgrind too; it prints numbers
 * and judges nothing.
 *
 *   bench_kernel stream    W STEPS [fp16]  time STEPS pushes into a full window
 *   bench_kernel recompute W STEPS [fp16]  STEPS x (reset, push the last W frames)
 *   bench_kernel arena     W               arena bytes, FP32 and FP16
 *
 * The model has the upstream example's dims 16/4/1/32/2/4 with synthetic
 * weights: the cost does not depend on their values. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rvne/blob.h"
#include "rvne/head.h"
#include "rvne/status.h"

static const uint16_t k_dims[6] = {16, 4, 1, 32, 2, 4};

static uint32_t g_rng = 0x12345678u;
static float next_value(float scale)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 17;
    g_rng ^= g_rng << 5;
    return ((float)(g_rng >> 8) / 16777216.0f - 0.5f) * scale;
}

static void put(uint8_t *p, uint32_t v, int n)
{
    int i;
    for (i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void fill_header(rvne_header *h, int fp16)
{
    memset(h, 0, sizeof *h);
    h->magic = RVNE_MAGIC;
    h->version = RVNE_VERSION;
    h->flags = fp16 ? RVNE_FLAG_FP16 : 0u;
    h->input_dim = k_dims[0];
    h->n_q_heads = k_dims[1];
    h->n_kv_heads = k_dims[2];
    h->head_dim = k_dims[3];
    h->n_layers = k_dims[4];
    h->n_classes = k_dims[5];
}

/* A blob in a malloc'd (so aligned) buffer; NULL on failure. */
static uint8_t *make_blob(int fp16, size_t *len)
{
    rvne_header h;
    uint32_t wl, i;
    uint8_t *p;
    int j;

    fill_header(&h, fp16);
    if (rvne_expected_weights_len(&h, &wl) != RVNE_OK)
        return NULL;
    *len = 28u + (size_t)wl;
    p = malloc(*len);
    if (p == NULL)
        return NULL;
    put(p, RVNE_MAGIC, 4);
    put(p + 4, RVNE_VERSION, 2);
    p[6] = h.flags;
    p[7] = 0u;
    for (j = 0; j < 6; j++)
        put(p + 8 + 2 * j, k_dims[j], 2);
    put(p + 20, wl, 4);
    for (i = 0; i < wl; i += fp16 ? 2u : 4u) {
        float f = next_value(0.2f);
        uint32_t u;
        memcpy(&u, &f, 4);
        if (fp16) /* a half of the FP32 weights' scale: |w| in [2^-6, 2^-3) */
            put(p + 24 + i, (u & 0x80000000u ? 0x8000u : 0u) | ((9u + (u & 1u) + ((u >> 1) & 1u)) << 10) | ((u >> 3) & 0x3FFu), 2);
        else
            put(p + 24 + i, u, 4);
    }
    put(p + 24 + wl, rvne_crc32(0u, p, 24u + wl), 4);
    return p;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_kernel stream|recompute W STEPS [fp16] | bench_kernel arena W\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *mode;
    long w_arg, steps_arg;
    uint32_t window, steps, n_frames, s, i;
    int fp16, rc;
    uint8_t *raw;
    size_t len, need;
    rvne_blob b;
    rvne_head t;
    void *arena;
    float *frames;
    double t0, t1, checksum = 0.0;

    if (argc < 3)
        return usage();
    mode = argv[1];
    w_arg = strtol(argv[2], NULL, 10);
    if (w_arg < 1 || w_arg > 1000000)
        return usage();
    window = (uint32_t)w_arg;

    if (strcmp(mode, "arena") == 0) {
        for (fp16 = 0; fp16 <= 1; fp16++) {
            rvne_header h;
            fill_header(&h, fp16);
            rc = rvne_head_arena_size(&h, window, &need);
            if (rc != RVNE_OK) {
                fprintf(stderr, "bench_kernel: arena size: %s\n", rvne_status_name(rc));
                return 1;
            }
            printf("arena dims=16,4,1,32,2,4 window=%u dtype=%s bytes=%zu\n", (unsigned)window,
                   fp16 ? "fp16" : "fp32", need);
        }
        return 0;
    }
    if (argc < 4)
        return usage();
    steps_arg = strtol(argv[3], NULL, 10);
    if (steps_arg < 1 || steps_arg > 100000000)
        return usage();
    steps = (uint32_t)steps_arg;
    fp16 = argc > 4 && strcmp(argv[4], "fp16") == 0;
    if (strcmp(mode, "stream") != 0 && strcmp(mode, "recompute") != 0)
        return usage();

    raw = make_blob(fp16, &len);
    if (raw == NULL) {
        fprintf(stderr, "bench_kernel: out of memory\n");
        return 1;
    }
    rc = rvne_blob_open(&b, raw, len, NULL);
    if (rc == RVNE_OK)
        rc = rvne_head_arena_size(&b.hdr, window, &need);
    arena = rc == RVNE_OK ? malloc(need) : NULL;
    if (rc == RVNE_OK && arena == NULL)
        rc = RVNE_E_ARENA;
    if (rc == RVNE_OK)
        rc = rvne_head_init(&t, &b, window, arena, need);
    /* Frames cycle through a pool: steps + window frames would not fit memory for long runs. */
    n_frames = 4096u;
    frames = malloc((size_t)n_frames * k_dims[0] * sizeof *frames);
    if (rc != RVNE_OK || frames == NULL) {
        fprintf(stderr, "bench_kernel: setup failed: %s\n", rvne_status_name(rc));
        return 1;
    }
    for (i = 0; i < n_frames * k_dims[0]; i++)
        frames[i] = next_value(2.0f);

#define FRAME(k) (frames + (size_t)((k) % n_frames) * k_dims[0])
    if (strcmp(mode, "stream") == 0) {
        /* Fill the window first: the steady state is a full ring. */
        for (i = 0; i < window; i++)
            rvne_head_push(&t, FRAME(i));
        t0 = now_s();
        for (s = 0; s < steps; s++) {
            rvne_head_push(&t, FRAME(window + s));
            checksum += rvne_head_logits(&t)[0];
        }
        t1 = now_s();
    } else {
        t0 = now_s();
        for (s = 0; s < steps; s++) {
            rvne_head_reset(&t);
            for (i = 0; i < window; i++)
                rvne_head_push(&t, FRAME(s + i));
            checksum += rvne_head_logits(&t)[0];
        }
        t1 = now_s();
    }
    /* The checksum keeps the compiler from dropping the work. */
    printf("%s window=%u dtype=%s steps=%u ns_per_step=%.1f checksum=%.6g\n", mode, (unsigned)window,
           fp16 ? "fp16" : "fp32", (unsigned)steps, (t1 - t0) * 1e9 / steps, checksum);
    free(frames);
    free(arena);
    free(raw);
    return 0;
}
