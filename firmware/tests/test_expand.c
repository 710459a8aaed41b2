/* FP16 weights expanded to FP32 at load (rvne_model_load with
 * rvne_load_cfg.fp16_expand; docs/model.md, "FP16 weights"): the logits are
 * bit for bit those of the decode at every push (a blob with an inf or NaN
 * weight is refused at load: rule 18), on whichever kernels the build links (the C twins on the host, the assembly
 * on the emulated esp32-class core). And the expansion's place in the arena:
 * taken only where it fits beside the head's state, given up when WINDOW or
 * TRACE needs the room, taken again when the room comes back. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "rvne/blob.h"
#include "rvne/crc32.h"
#include "rvne/head.h"
#include "rvne/proto.h"
#include "rvne/status.h"

#define WINDOW 7u
#define MAX_FRAMES 40u

static void *read_file(const char *dir, const char *name, size_t *n)
{
    char path[4096];
    struct stat st;
    void *p = NULL;
    int fd;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    fd = open(path, O_RDONLY);
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
        /* A private copy, 4-aligned (malloc's), that the test may change. */
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            p = malloc((size_t)st.st_size);
            if (p != NULL)
                memcpy(p, m, (size_t)st.st_size);
            munmap(m, (size_t)st.st_size);
            *n = (size_t)st.st_size;
        }
    }
    if (fd >= 0)
        close(fd);
    if (p == NULL)
        fprintf(stderr, "test_expand: cannot read %s (make generates it)\n", path);
    return p;
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Logits of frames [0, n) pushed after a reset, appended to out. */
static void run(rvne_model *m, const float *frames, uint32_t n, float *out)
{
    const uint32_t d = m->blob.hdr.input_dim, c = m->blob.hdr.n_classes;
    uint32_t i;
    rvne_head_reset(&m->head);
    for (i = 0; i < n; i++) {
        CHECK_STATUS(rvne_head_push(&m->head, frames + (size_t)i * d), RVNE_OK);
        memcpy(out + (size_t)i * c, rvne_head_logits(&m->head), c * sizeof *out);
    }
}

/* Bit for bit, NaN payloads included. */
static int differ(const float *a, const float *b, size_t n, const char *what)
{
    size_t i, bad = 0;
    for (i = 0; i < n; i++)
        if (bits(a[i]) != bits(b[i]) && bad++ < 3)
            fprintf(stderr, "test_expand: %s: logit %u: 0x%08x, decoded 0x%08x\n", what, (unsigned)i,
                    (unsigned)bits(a[i]), (unsigned)bits(b[i]));
    return bad != 0u;
}

static int load(rvne_model *m, const void *blob, size_t len, void *arena, size_t arena_len, int expand)
{
    rvne_load_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.exact_length = 1;
    cfg.fp16_expand = expand;
    return rvne_model_load(m, blob, len, WINDOW, arena, arena_len, &cfg);
}

static void run_case(const char *dir, const char *name)
{
    static rvne_model m;
    char fname[300];
    size_t blob_len = 0, frames_len = 0, need = 0, need8 = 0, trace_floats = 0, exp_bytes = 0, arena_len;
    uint8_t *blob;
    float *frames, *arena = NULL, *want = NULL, *got = NULL;
    uint32_t n, nl;

    snprintf(fname, sizeof fname, "%s.blob", name);
    blob = read_file(dir, fname, &blob_len);
    snprintf(fname, sizeof fname, "%s.frames", name);
    frames = read_file(dir, fname, &frames_len);
    CHECK(blob != NULL && frames != NULL);
    if (blob == NULL || frames == NULL)
        goto out;
    CHECK_STATUS(load(&m, blob, blob_len, NULL, 0, 0), RVNE_E_TOO_LARGE); /* opens the header */
    CHECK(m.blob.hdr.flags & RVNE_FLAG_FP16);
    n = (uint32_t)(frames_len / (m.blob.hdr.input_dim * sizeof(float)));
    if (n > MAX_FRAMES)
        n = MAX_FRAMES;
    CHECK(n > WINDOW + 1u);             /* the window slides */
    nl = n * m.blob.hdr.n_classes;
    CHECK_STATUS(rvne_head_arena_size(&m.blob.hdr, WINDOW, &need), RVNE_OK);
    CHECK_STATUS(rvne_head_arena_size(&m.blob.hdr, WINDOW + 1u, &need8), RVNE_OK);
    CHECK_STATUS(rvne_head_trace_floats(&m.blob.hdr, WINDOW, &trace_floats), RVNE_OK);
    CHECK_STATUS(rvne_head_expanded_size(&m.blob.hdr, &exp_bytes), RVNE_OK);
    CHECK_EQ(exp_bytes, 2u * m.blob.hdr.weights_len);
    /* Room for W = 7 and the expansion, not for W = 8 or the trace beside it. */
    arena_len = need + exp_bytes + 16u;     /* 16: the expansion's alignment */
    CHECK(need8 > need + 16u && trace_floats * sizeof(float) > 16u);
    arena = malloc(arena_len + trace_floats * sizeof(float) + need8);
    want = malloc(nl * sizeof *want);
    got = malloc(nl * sizeof *got);
    CHECK(arena != NULL && want != NULL && got != NULL);
    if (arena == NULL || want == NULL || got == NULL)
        goto out;

    /* The decode: expansion off. */
    CHECK_STATUS(load(&m, blob, blob_len, arena, arena_len, 0), RVNE_OK);
    CHECK(m.expanded == NULL && m.head.config.fp16 && m.head.config.fp16_finite);
    CHECK_EQ(m.arena_used, need);
    run(&m, frames, n, want);

    /* The scan is the load's, once: WINDOW reads no weight. An inf written
     * into the weights after the load goes unseen by two WINDOWs (a rescan
     * would send the decode to the exact kernel); with the weight put back,
     * the logits are the load's. */
    {
        uint8_t *last = blob + RVNE_HEADER_LEN + m.blob.hdr.weights_len - 2u;
        const uint8_t keep[2] = {last[0], last[1]};
        last[0] = 0x00u;
        last[1] = 0x7Cu;
        CHECK_STATUS(rvne_model_set_window(&m, WINDOW + 1u), RVNE_OK);
        CHECK_STATUS(rvne_model_set_window(&m, WINDOW), RVNE_OK);
        CHECK(m.head.config.fp16 && m.head.config.fp16_finite);
        last[0] = keep[0];
        last[1] = keep[1];
        run(&m, frames, n, got);
        CHECK(!differ(got, want, nl, "decoded after WINDOW"));
    }

    /* Expanded: FP32 weights at the arena's end, the same logits. */
    CHECK_STATUS(load(&m, blob, blob_len, arena, arena_len, 1), RVNE_OK);
    CHECK(m.expanded != NULL && !m.head.config.fp16);
    CHECK(((uintptr_t)m.expanded & 15u) == 0u);
    CHECK((const uint8_t *)m.expanded >= (const uint8_t *)arena + need);
    CHECK((const uint8_t *)m.expanded + exp_bytes <= (const uint8_t *)arena + arena_len);
    CHECK_EQ(m.arena_used, need + exp_bytes);
    run(&m, frames, n, got);
    CHECK(!differ(got, want, nl, "expanded"));

    /* WINDOW 8 needs the room: decoded, branch-free as the load's scan
     * found; back to 7: expanded again. */
    CHECK_STATUS(rvne_model_set_window(&m, WINDOW + 1u), RVNE_OK);
    CHECK(m.expanded == NULL && m.head.config.fp16 && m.head.config.fp16_finite);
    CHECK_EQ(m.arena_used, need8);
    CHECK_STATUS(rvne_model_set_window(&m, WINDOW), RVNE_OK);
    CHECK(m.expanded != NULL && !m.head.config.fp16);
    run(&m, frames, n, got);
    CHECK(!differ(got, want, nl, "expanded again after WINDOW"));
    /* TRACE ON likewise; OFF gives the room back. */
    CHECK_STATUS(rvne_model_set_trace(&m, 1), RVNE_OK);
    CHECK(m.expanded == NULL);
    run(&m, frames, n, got);
    CHECK(!differ(got, want, nl, "decoded while tracing"));
    CHECK_STATUS(rvne_model_set_trace(&m, 0), RVNE_OK);
    CHECK(m.expanded != NULL);
    run(&m, frames, n, got);
    CHECK(!differ(got, want, nl, "expanded after TRACE OFF"));

    /* No room at load: the decode, and arena counts the state alone. */
    CHECK_STATUS(load(&m, blob, blob_len, arena, need + exp_bytes - 4u, 1), RVNE_OK);
    CHECK(m.expanded == NULL && m.head.config.fp16);
    CHECK_EQ(m.arena_used, need);
    run(&m, frames, n, got);
    CHECK(!differ(got, want, nl, "no room"));

    /* An inf weight (the classifier's last), then a NaN: since rule 18 of
     * docs/format.md (issue 33) the loader refuses the blob, expanded or
     * not, and the host's reader does the same; the model is left without
     * a head (status E_NONFINITE), nothing is pushed through it. */
    {
        static const struct {
            uint16_t half;
            const char *what;
        } bad[] = {{0x7C00u, "an inf weight"}, {0xFE01u, "a NaN weight"}};
        const uint32_t wl = m.blob.hdr.weights_len;
        uint8_t *w = blob + RVNE_HEADER_LEN;
        size_t k;
        for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            uint32_t crc;
            w[wl - 2u] = (uint8_t)bad[k].half;
            w[wl - 1u] = (uint8_t)(bad[k].half >> 8);
            crc = rvne_crc32(0u, blob, RVNE_HEADER_LEN + wl);
            memcpy(blob + RVNE_HEADER_LEN + wl, &crc, 4); /* little-endian, as the host here and the core are */
            CHECK_STATUS(load(&m, blob, blob_len, arena, arena_len, 0), RVNE_E_NONFINITE);
            CHECK_STATUS(load(&m, blob, blob_len, arena, arena_len, 1), RVNE_E_NONFINITE);
            CHECK(m.status == RVNE_E_NONFINITE && m.expanded == NULL);
        }
    }
    fprintf(stderr, "test_expand: %s: %u frames, %u logits bit for bit: decoded, expanded, no room; inf and NaN refused\n",
            name, (unsigned)n, (unsigned)nl);
out:
    free(blob);
    free(frames);
    free(arena);
    free(want);
    free(got);
}

int main(int argc, char **argv)
{
    char dir[4000];
    static rvne_model m;
    static float arena[4096];
    CHECK_FATAL(argc >= 2);
    snprintf(dir, sizeof dir, "%s/golden", argv[1]);
    run_case(dir, "up_fp16_w7");
    run_case(dir, "gqa_fp16_w7");
    /* An FP32 blob is never expanded. */
    {
        size_t len = 0;
        void *blob = read_file(dir, "up_fp32_w7.blob", &len);
        CHECK(blob != NULL);
        if (blob != NULL) {
            CHECK_STATUS(load(&m, blob, len, arena, sizeof arena, 1), RVNE_OK);
            CHECK(m.expanded == NULL && m.expand_bytes == 0u);
            CHECK_STATUS(rvne_head_use_f32_weights(&m.head, arena), RVNE_E_INVAL);
            free(blob);
        }
    }
    return CHECK_DONE("test_expand");
}
