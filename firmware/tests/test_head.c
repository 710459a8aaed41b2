/* The streaming kernel against the float64 reference: golden blobs, frames,
 * logits and per-logit error bounds written by gen_golden.py into
 * BUILD/golden/. The verdict is docs/model.md's: every logit within its
 * bound, everything finite. The blob is mapped read-only, as a flash
 * partition is, so a kernel that wrote to or depended on copying its
 * weights would fault here. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "rvne/blob.h"
#include "rvne/head.h"
#include "rvne/status.h"

#define UPSTREAM_CRC 0xDC807956u

/* Each golden case's first pass runs traced (docs/protocol.md, TRACE).
 * Where the build can write files (RVNE_TRACE_TAG, the host's `make test`)
 * the trace goes to NAME.trace-TAG beside the case, for judge_traces.py to
 * judge step by step (docs/model.md, "Step by step"): rvne check's rule.
 * The emulated core's semihosting here (QEMU 7.2) opens files for reading
 * only, so there the traced push is checked through its logits alone. */
typedef struct mapped {
    void *p;
    size_t n;
} mapped;

static int map_ro(const char *dir, const char *name, const char *ext, mapped *m)
{
    char path[4096];
    struct stat st;
    int fd;
    snprintf(path, sizeof path, "%s/%s%s", dir, name, ext);
    fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
        fprintf(stderr, "test_head: cannot read %s (make generates it)\n", path);
        if (fd >= 0)
            close(fd);
        return 0;
    }
    m->n = (size_t)st.st_size;
    m->p = mmap(NULL, m->n, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    return m->p != MAP_FAILED;
}

static double rd_f64(const uint8_t *p)
{
    uint64_t u = 0;
    double d;
    int i;
    for (i = 7; i >= 0; i--)
        u = (u << 8) | p[i];
    memcpy(&d, &u, sizeof d);
    return d;
}

static float rd_f32(const uint8_t *p)
{
    uint32_t u = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Push n frames from `first`, comparing each step's logits with want rows
 * from `first` under their bounds. Returns the worst |a-b| / bound. */
static double run_and_compare(rvne_head *t, const uint8_t *frames, const uint8_t *want, const uint8_t *bound,
                              uint32_t first, uint32_t n, const char *name, int trace_fd, size_t trace_floats)
{
    const uint32_t D = t->config.dim, C = t->config.n_classes;
    float frame[1024];
    double worst = 0.0;
    uint32_t i, j, bad = 0;
    for (i = first; i < first + n; i++) {
        const float *got;
        for (j = 0; j < D; j++)
            frame[j] = rd_f32(frames + ((size_t)i * D + j) * 4u);
        CHECK_STATUS(rvne_head_push(t, frame), RVNE_OK);
#if defined(RVNE_TRACE_TAG)
        if (trace_fd >= 0)
            CHECK_EQ(write(trace_fd, t->state.trace, trace_floats * sizeof(float)),
                     (long)(trace_floats * sizeof(float)));
#else
        (void)trace_fd, (void)trace_floats;
#endif
        got = rvne_head_logits(t);
        for (j = 0; j < C; j++) {
            const double b = rd_f64(want + ((size_t)i * C + j) * 8u);
            const double e = rd_f64(bound + ((size_t)i * C + j) * 8u);
            const double diff = fabs((double)got[j] - b);
            /* Finite on both sides and a finite bound, or it does not agree. */
            const double ratio = (isfinite(b) && isfinite(got[j]) && isfinite(e)) ? (diff == 0.0 ? 0.0 : diff / e)
                                                                                  : INFINITY;
            if (!(ratio <= 1.0) && bad++ < 5)
                fprintf(stderr, "%s: frame %u logit %u: got %.9g, reference %.17g, bound %.3g\n", name, (unsigned)i,
                        (unsigned)j, (double)got[j], b, e);
            if (!(ratio <= worst))
                worst = ratio;
        }
    }
    CHECK_EQ(bad, 0);
    return worst;
}

static void run_case(const char *dir, const char *name, uint32_t window, uint32_t n)
{
    mapped mb, mf, ml, me;
    rvne_blob b;
    rvne_head t;
    rvne_load_cfg cfg;
    size_t need = 0;
    void *arena;
    double worst, worst2;
    uint32_t i;
    size_t trace_floats = 0;
    float *trace;
    char path[4400];            /* dir (< 4000) / name (< 256) .trace-TAG */
    int fd;

    if (!map_ro(dir, name, ".blob", &mb) || !map_ro(dir, name, ".frames", &mf) || !map_ro(dir, name, ".logits", &ml) ||
        !map_ro(dir, name, ".bound", &me)) {
        CHECK(0 && "golden files present");
        return;
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.exact_length = 1;
    CHECK_STATUS(rvne_blob_open(&b, mb.p, mb.n, &cfg), RVNE_OK);
    if (strncmp(name, "up_fp32", 7) == 0)
        CHECK_EQ(b.crc_stored, UPSTREAM_CRC); /* format.md: upstream's example blob */
    CHECK(n > window); /* the window must slide */
    CHECK(b.hdr.input_dim <= 1024u);
    CHECK_EQ(mf.n, (size_t)n * b.hdr.input_dim * 4u);
    CHECK_EQ(ml.n, (size_t)n * b.hdr.n_classes * 8u);
    CHECK_EQ(me.n, (size_t)n * b.hdr.n_classes * 8u);
    if (mf.n != (size_t)n * b.hdr.input_dim * 4u || ml.n != (size_t)n * b.hdr.n_classes * 8u ||
        me.n != ml.n || b.hdr.input_dim > 1024u)
        goto out;

    CHECK_STATUS(rvne_head_arena_size(&b.hdr, window, &need), RVNE_OK);
    /* Exactly the size asked for: ASan catches a kernel that strays past it. */
    arena = malloc(need);
    if (arena == NULL) {
        CHECK(0 && "malloc");
        goto out;
    }
    CHECK_STATUS(rvne_head_init(&t, &b, window, arena, need - 1u), RVNE_E_ARENA);
    CHECK_STATUS(rvne_head_init(&t, &b, window, arena, need), RVNE_OK);
    CHECK(t.weights.base == b.weights); /* the weights are read where they lie */
    CHECK_EQ(t.state.n_pushed, 0);
    for (i = 0; i < b.hdr.n_classes; i++)
        CHECK(rvne_head_logits(&t)[i] == 0.0f);

    /* The first pass traced: a traced push computes the same logits. */
    CHECK_STATUS(rvne_head_trace_floats(&b.hdr, window, &trace_floats), RVNE_OK);
    trace = malloc(trace_floats * sizeof(float));
    CHECK(trace != NULL);
    fd = -1;
#if defined(RVNE_TRACE_TAG)
    snprintf(path, sizeof path, "%s/%s.trace-%s", dir, name, RVNE_TRACE_TAG);
    fd = trace == NULL ? -1 : open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
#else
    (void)path;
#endif
    rvne_head_set_trace(&t, trace);
    worst = run_and_compare(&t, mf.p, ml.p, me.p, 0, n, name, fd, trace_floats);
#if defined(RVNE_TRACE_TAG)
    if (fd >= 0)
        close(fd);
#endif
    rvne_head_set_trace(&t, NULL);
    CHECK_EQ(t.state.n_pushed, n);
    CHECK_EQ(t.state.n_cached, window);

    /* After reset the stream starts over: the same first frames give the
     * same logits as at the start, whatever the ring held. */
    rvne_head_reset(&t);
    CHECK_EQ(t.state.n_cached, 0);
    worst2 = run_and_compare(&t, mf.p, ml.p, me.p, 0, window + 2u < n ? window + 2u : n, name, -1, 0);
    fprintf(stderr, "%s: W=%u, %u frames, %s, worst error %.3g of its bound (%.3g after reset)\n", name,
            (unsigned)window, (unsigned)n, t.config.fp16 ? "fp16" : "fp32", worst, worst2);
    free(arena);
    free(trace);
out:
    munmap(mb.p, mb.n);
    munmap(mf.p, mf.n);
    munmap(ml.p, ml.n);
    munmap(me.p, me.n);
}

/* Refusals of rvne_head_init and push on a good blob. */
static void run_refusals(const char *dir, const char *name)
{
    mapped mb;
    rvne_blob b, moved;
    rvne_head t;
    rvne_load_cfg cfg;
    size_t need = 0;
    uint8_t *copy;
    float *arena;

    if (!map_ro(dir, name, ".blob", &mb)) {
        CHECK(0 && "golden blob present");
        return;
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.exact_length = 1;
    CHECK_STATUS(rvne_blob_open(&b, mb.p, mb.n, &cfg), RVNE_OK);
    CHECK_STATUS(rvne_head_arena_size(&b.hdr, 7u, &need), RVNE_OK);
    arena = malloc(need + sizeof(float));
    copy = malloc(mb.n + 4u);
    if (arena == NULL || copy == NULL) {
        CHECK(0 && "malloc");
        free(arena);
        free(copy);
        munmap(mb.p, mb.n);
        return;
    }
    CHECK_STATUS(rvne_head_init(&t, &b, 0u, arena, need), RVNE_E_INVAL);
    CHECK_STATUS(rvne_head_init(&t, NULL, 7u, arena, need), RVNE_E_INVAL);
    CHECK_STATUS(rvne_head_init(&t, &b, 7u, NULL, need), RVNE_E_ARENA);
    /* An arena off float alignment is refused, not used misaligned. */
    CHECK_STATUS(rvne_head_init(&t, &b, 7u, (uint8_t *)arena + 1, need), RVNE_E_ARENA);
    /* Weights moved to an odd address (a blob opened elsewhere). */
    memcpy(copy + 1, mb.p, mb.n);
    moved = b;
    moved.weights = copy + 1 + RVNE_HEADER_LEN;
    CHECK_STATUS(rvne_head_init(&t, &moved, 7u, arena, need), RVNE_E_ALIGN);
    /* A blob struct whose length is not the contract's is never run. */
    moved = b;
    moved.hdr.weights_len += 4u;
    CHECK_STATUS(rvne_head_init(&t, &moved, 7u, arena, need), RVNE_E_CONTRACT);
    moved = b;
    moved.crc_valid = 0;
    CHECK_STATUS(rvne_head_init(&t, &moved, 7u, arena, need), RVNE_E_INVAL);

    CHECK_STATUS(rvne_head_init(&t, &b, 7u, arena, need), RVNE_OK);
    CHECK_STATUS(rvne_head_push(&t, NULL), RVNE_E_INVAL);
    CHECK_STATUS(rvne_head_push(NULL, arena), RVNE_E_INVAL);
    CHECK(rvne_head_logits(NULL) == NULL);
    rvne_head_reset(NULL); /* must not crash */
    free(arena);
    free(copy);
    munmap(mb.p, mb.n);
}

/* Logits of frames [0, n) pushed into t, appended to out. */
static void push_frames(rvne_head *t, const uint8_t *frames, uint32_t n, float *out)
{
    const uint32_t D = t->config.dim, C = t->config.n_classes;
    float frame[1024];
    uint32_t i, j;
    for (i = 0; i < n; i++) {
        for (j = 0; j < D; j++)
            frame[j] = rd_f32(frames + ((size_t)i * D + j) * 4u);
        CHECK_STATUS(rvne_head_push(t, frame), RVNE_OK);
        memcpy(out + (size_t)i * C, rvne_head_logits(t), C * sizeof *out);
    }
}

/* WINDOW on the head (rvne_head_set_window): a head set to window 3 after
 * pushes at 7 computes, bit for bit, what a head initialised at 3 does,
 * with the config, weights and FP16 scan of its load; a refusal leaves the
 * head as it was. */
static void run_set_window(const char *dir, const char *name)
{
    mapped mb, mf;
    rvne_blob b;
    rvne_head t, fresh, before;
    rvne_load_cfg cfg;
    size_t need3 = 0, need7 = 0;
    float *arena = NULL, *arena3 = NULL, *got = NULL, *want = NULL;
    uint32_t n = 0, i;

    if (!map_ro(dir, name, ".blob", &mb) || !map_ro(dir, name, ".frames", &mf)) {
        CHECK(0 && "golden files present");
        return;
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.exact_length = 1;
    CHECK_STATUS(rvne_blob_open(&b, mb.p, mb.n, &cfg), RVNE_OK);
    CHECK(b.hdr.input_dim <= 1024u);
    n = (uint32_t)(mf.n / ((size_t)b.hdr.input_dim * 4u));
    CHECK(n > 7u);
    CHECK_STATUS(rvne_head_arena_size(&b.hdr, 3u, &need3), RVNE_OK);
    CHECK_STATUS(rvne_head_arena_size(&b.hdr, 7u, &need7), RVNE_OK);
    arena = malloc(need7 + sizeof(float));
    arena3 = malloc(need3);
    got = malloc((size_t)n * b.hdr.n_classes * sizeof *got);
    want = malloc((size_t)n * b.hdr.n_classes * sizeof *want);
    if (b.hdr.input_dim > 1024u || n <= 7u || arena == NULL || arena3 == NULL || got == NULL || want == NULL) {
        CHECK(0 && "golden case usable, malloc");
        goto out;
    }

    CHECK_STATUS(rvne_head_init(&fresh, &b, 3u, arena3, need3), RVNE_OK);
    push_frames(&fresh, mf.p, n, want);

    CHECK_STATUS(rvne_head_init(&t, &b, 7u, arena, need7), RVNE_OK);
    push_frames(&t, mf.p, 5u, got);
    memcpy(&before, &t, sizeof t); /* padding too: memcmp below compares it */
    CHECK_STATUS(rvne_head_set_window(NULL, 3u, arena, need3), RVNE_E_INVAL);
    CHECK_STATUS(rvne_head_set_window(&t, 0u, arena, need7), RVNE_E_INVAL);
    CHECK_STATUS(rvne_head_set_window(&t, 3u, NULL, need3), RVNE_E_ARENA);
    CHECK_STATUS(rvne_head_set_window(&t, 3u, arena, need3 - 1u), RVNE_E_ARENA);
    CHECK_STATUS(rvne_head_set_window(&t, 3u, (uint8_t *)arena + 2, need3), RVNE_E_ARENA);
    CHECK_STATUS(rvne_head_set_window(&t, 8u, arena, need7), RVNE_E_ARENA);
    CHECK(memcmp(&t, &before, sizeof t) == 0);
    memset(&fresh, 0, sizeof fresh);        /* never initialised */
    CHECK_STATUS(rvne_head_set_window(&fresh, 3u, arena, need3), RVNE_E_INVAL);

    CHECK_STATUS(rvne_head_set_window(&t, 3u, arena, need3), RVNE_OK);
    CHECK_EQ(t.config.window, 3u);
    CHECK_EQ(t.state.n_pushed, 0u);
    CHECK_EQ(t.state.n_cached, 0u);
    CHECK(t.weights.base == b.weights && t.config.fp16 == before.config.fp16 &&
          t.config.fp16_finite == before.config.fp16_finite);
    for (i = 0; i < b.hdr.n_classes; i++)
        CHECK(rvne_head_logits(&t)[i] == 0.0f);
    push_frames(&t, mf.p, n, got);
    CHECK(memcmp(got, want, (size_t)n * b.hdr.n_classes * sizeof *got) == 0);
    fprintf(stderr, "%s: WINDOW 7 -> 3 after 5 pushes: %u frames bit for bit as a head set up at 3\n", name,
            (unsigned)n);
out:
    free(arena);
    free(arena3);
    free(got);
    free(want);
    munmap(mb.p, mb.n);
    munmap(mf.p, mf.n);
}

/* A one-dimensional head whose logits follow by hand, with scores of 1e6:
 * expf overflows unless the softmax subtracts its max. Weights wq = wk =
 * 100, wv = wo = 1, wc = (1, -1); window 2. */
static void run_huge_scores(void)
{
    static uint32_t store[16]; /* 4-aligned: the weights land on a word */
    uint8_t *p = (uint8_t *)store;
    static const float w[6] = {100.0f, 100.0f, 1.0f, 1.0f, 1.0f, -1.0f};
    static const uint8_t hdr[24] = {0x45, 0x4e, 0x56, 0x52, 1, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 2, 0, 24, 0, 0, 0};
    float arena[64];
    rvne_blob b;
    rvne_head t;
    size_t need = 0;
    uint32_t crc;
    float f;
    int i;

    memcpy(p, hdr, 24);
    for (i = 0; i < 6; i++) {
        uint32_t u;
        memcpy(&u, &w[i], 4);
        p[24 + 4 * i] = (uint8_t)u;
        p[25 + 4 * i] = (uint8_t)(u >> 8);
        p[26 + 4 * i] = (uint8_t)(u >> 16);
        p[27 + 4 * i] = (uint8_t)(u >> 24);
    }
    crc = rvne_crc32(0u, p, 48u);
    p[48] = (uint8_t)crc;
    p[49] = (uint8_t)(crc >> 8);
    p[50] = (uint8_t)(crc >> 16);
    p[51] = (uint8_t)(crc >> 24);
    CHECK_STATUS(rvne_blob_open(&b, p, 52u, NULL), RVNE_OK);
    CHECK_STATUS(rvne_head_arena_size(&b.hdr, 2u, &need), RVNE_OK);
    CHECK(need <= sizeof arena);
    CHECK_STATUS(rvne_head_init(&t, &b, 2u, arena, sizeof arena), RVNE_OK);

    /* Frame 10: one position, o = v = 10, x = 20. */
    f = 10.0f;
    CHECK_STATUS(rvne_head_push(&t, &f), RVNE_OK);
    CHECK(rvne_head_logits(&t)[0] == 20.0f && rvne_head_logits(&t)[1] == -20.0f);
    /* Frame 10 again: equal scores 1e6, a = (1/2, 1/2), o = 10, x = 20. */
    CHECK_STATUS(rvne_head_push(&t, &f), RVNE_OK);
    CHECK(rvne_head_logits(&t)[0] == 20.0f && rvne_head_logits(&t)[1] == -20.0f);
    /* Frame 9: q = 900 scores 8.1e5 against itself and 9e5 against the 10
     * still in the window (the first 10 has left it): a difference of 9e4,
     * so all weight on the 10, o = 10, x = 19. */
    f = 9.0f;
    CHECK_STATUS(rvne_head_push(&t, &f), RVNE_OK);
    CHECK(rvne_head_logits(&t)[0] == 19.0f && rvne_head_logits(&t)[1] == -19.0f);
    /* Frame 10: scores 1e6 (this) against 9e5: all weight on this one,
     * o = 10, x = 20. */
    f = 10.0f;
    CHECK_STATUS(rvne_head_push(&t, &f), RVNE_OK);
    CHECK(rvne_head_logits(&t)[0] == 20.0f && rvne_head_logits(&t)[1] == -20.0f);
}

int main(int argc, char **argv)
{
    char dir[4000], path[4096], name[256];
    unsigned window, n;
    int cases = 0;
    FILE *idx;

    CHECK_FATAL(argc >= 2);
    snprintf(dir, sizeof dir, "%s/golden", argv[1]);
    snprintf(path, sizeof path, "%s/index.txt", dir);
    idx = fopen(path, "r");
    if (idx == NULL)
        fprintf(stderr, "test_head: cannot open %s (make runs gen_golden.py)\n", path);
    CHECK_FATAL(idx != NULL);
    while (fscanf(idx, "%255s %u %u", name, &window, &n) == 3) {
        run_case(dir, name, window, n);
        cases++;
    }
    fclose(idx);
    CHECK(cases >= 6); /* FP32 and FP16 at W = 1, 7, 100 at least */
    run_refusals(dir, "up_fp32_w7");
    run_set_window(dir, "up_fp32_w7");
    run_set_window(dir, "gqa_fp16_w7");
    run_huge_scores();
    return CHECK_DONE("test_head");
}
