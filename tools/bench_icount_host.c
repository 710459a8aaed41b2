/* Host side of tools/bench_icount.py: the same blob and frames as the
 * emulated board, pushed through the same core, so callgrind can count the
 * host build's instructions for the same work.
 *
 *   bench_icount_host BLOB FRAMES_F32 WINDOW FILL STEPS
 *
 * Pushes FILL frames (filling the window), then STEPS frames inside
 * steady_pushes(), which the script hands to callgrind's --toggle-collect.
 * FP16 weights run expanded to FP32 at load, as the boards run them by
 * default (docs/model.md, "FP16 weights").
 * Prints the last logits so the work cannot be optimised away. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rvne/blob.h"
#include "rvne/fp16.h"
#include "rvne/head.h"
#include "rvne/status.h"

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        if (f)
            fclose(f);
        return NULL;
    }
    buf = malloc((size_t)n + 1u);
    if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* noinline: callgrind toggles collection on entry and exit of this one. */
__attribute__((noinline)) int steady_pushes(rvne_head *t, const float *frames, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        int rc = rvne_head_push(t, frames + (size_t)i * t->config.dim);
        if (rc != RVNE_OK)
            return rc;
    }
    return RVNE_OK;
}

int main(int argc, char **argv)
{
    size_t blob_len, frames_len, arena_len, exp_bytes = 0;
    float *expanded = NULL;
    unsigned char *blob_buf, *frames_buf;
    rvne_load_cfg cfg;
    rvne_blob b;
    rvne_head t;
    void *arena;
    long window, fill, steps;
    int rc;

    if (argc != 6) {
        fprintf(stderr, "usage: bench_icount_host BLOB FRAMES_F32 WINDOW FILL STEPS\n");
        return 2;
    }
    window = strtol(argv[3], NULL, 10);
    fill = strtol(argv[4], NULL, 10);
    steps = strtol(argv[5], NULL, 10);
    if (window < 1 || fill < 0 || steps < 1) {
        fprintf(stderr, "bench_icount_host: WINDOW and STEPS must be >= 1, FILL >= 0\n");
        return 2;
    }
    blob_buf = slurp(argv[1], &blob_len);
    frames_buf = slurp(argv[2], &frames_len);
    if (blob_buf == NULL || frames_buf == NULL) {
        fprintf(stderr, "bench_icount_host: cannot read %s\n", blob_buf == NULL ? argv[1] : argv[2]);
        return 1;
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.exact_length = 1;
    rc = rvne_blob_open(&b, blob_buf, blob_len, &cfg);
    if (rc == RVNE_OK)
        rc = rvne_head_arena_size(&b.hdr, (uint32_t)window, &arena_len);
    arena = rc == RVNE_OK ? malloc(arena_len) : NULL;
    if (rc == RVNE_OK && arena == NULL)
        rc = RVNE_E_ARENA;
    if (rc == RVNE_OK)
        rc = rvne_head_init(&t, &b, (uint32_t)window, arena, arena_len);
    if (rc == RVNE_OK && rvne_head_expanded_size(&b.hdr, &exp_bytes) == RVNE_OK && exp_bytes > 0u) {
        expanded = malloc(exp_bytes);
        if (expanded == NULL)
            rc = RVNE_E_ARENA;
        else {
            rvne_fp16_expand(expanded, (const uint16_t *)(const void *)b.weights, exp_bytes / sizeof(float));
            rc = rvne_head_use_f32_weights(&t, expanded);
        }
    }
    if (rc != RVNE_OK) {
        fprintf(stderr, "bench_icount_host: %s\n", rvne_status_name(rc));
        return 1;
    }
    if (frames_len < (size_t)(fill + steps) * t.config.dim * sizeof(float)) {
        fprintf(stderr, "bench_icount_host: %s holds fewer than %ld frames\n", argv[2], fill + steps);
        return 1;
    }
    {
        const float *frames = (const float *)(const void *)frames_buf;
        rc = RVNE_OK;
        for (long i = 0; rc == RVNE_OK && i < fill; i++)
            rc = rvne_head_push(&t, frames + (size_t)i * t.config.dim);
        if (rc == RVNE_OK)
            rc = steady_pushes(&t, frames + (size_t)fill * t.config.dim, (uint32_t)steps);
    }
    if (rc != RVNE_OK) {
        fprintf(stderr, "bench_icount_host: push: %s\n", rvne_status_name(rc));
        return 1;
    }
    for (uint32_t c = 0; c < t.config.n_classes; c++)
        printf("%s%.9g", c ? " " : "logits=", (double)rvne_head_logits(&t)[c]);
    printf("\n");
    free(arena);
    free(blob_buf);
    free(frames_buf);
    return 0;
}
