#include "bench_input.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "rvne/fp16.h"
#include "rvne/status.h"

static void *read_file(const char *dir, const char *name, const char *file, size_t *len)
{
    char path[512];
    struct stat st;
    void *p;
    int fd;
    snprintf(path, sizeof path, "%s/bench/%s/%s", dir, name, file);
    fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0 ||
        (p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
        printf("bench %s: cannot read %s\n", name, path);
        return NULL;
    }
    close(fd);
    *len = (size_t)st.st_size;
    return p;
}

int bench_input_open(bench_input *in, const char *build_dir, const char *name, unsigned default_expand)
{
    char path[512];
    size_t blob_len, frames_len, arena_len, exp_bytes = 0;
    void *blob, *arena;
    char *exp_buf;
    FILE *fp;

    snprintf(path, sizeof path, "%s/bench/%s/params.txt", build_dir, name);
    fp = fopen(path, "r");
    if (fp == NULL || fscanf(fp, "%u %u %u", &in->window, &in->fill, &in->steps) != 3) {
        printf("bench %s: cannot read %s\n", name, path);
        return 2;
    }
    if (fscanf(fp, "%u", &in->fp16_expand) != 1)
        in->fp16_expand = default_expand;
    fclose(fp);
    blob = read_file(build_dir, name, "model.rvne", &blob_len);
    in->frames = read_file(build_dir, name, "frames.f32", &frames_len);
    if (blob == NULL || in->frames == NULL)
        return 2;
    if (rvne_blob_open(&in->blob, blob, blob_len, NULL) != RVNE_OK ||
        rvne_head_arena_size(&in->blob.hdr, in->window, &arena_len) != RVNE_OK ||
        (arena = malloc(arena_len)) == NULL ||
        rvne_head_init(&in->head, &in->blob, in->window, arena, arena_len) != RVNE_OK ||
        frames_len < (size_t)(in->fill + in->steps) * in->blob.hdr.input_dim * sizeof(float)) {
        printf("bench %s: the blob, the window or the frames do not fit together\n", name);
        return 2;
    }
    if (rvne_head_expanded_size(&in->blob.hdr, &exp_bytes) != RVNE_OK)
        exp_bytes = 0;
    if (in->fp16_expand && exp_bytes > 0u) {
        if ((exp_buf = malloc(exp_bytes + 15u)) == NULL) {
            printf("bench %s: no memory for the expanded weights\n", name);
            return 2;
        }
        /* 16-byte aligned as the app places them: the S3 kernels' block loads care. */
        exp_buf += (16u - ((uintptr_t)exp_buf & 15u)) & 15u;
        rvne_fp16_expand((float *)(void *)exp_buf, (const uint16_t *)(const void *)in->blob.weights,
                         exp_bytes / sizeof(float));
        rvne_head_use_f32_weights(&in->head, (const float *)(const void *)exp_buf);
    }
    if (rvne_is_int8(&in->blob.hdr)) {
        /* As the board does at load (INFO weights=int8-prepared), unless asked to decode. */
        size_t prep_bytes = 0;
        void *prep;
        if (in->fp16_expand && rvne_head_prepared_size(&in->blob.hdr, &prep_bytes) == RVNE_OK && prep_bytes > 0u &&
            (prep = malloc(prep_bytes)) != NULL && rvne_head_use_prepared_i8(&in->head, prep) == RVNE_OK) {
            printf("weights int8-prepared\n");
            return 0;
        }
        printf("weights int8\n");
        return 0;
    }
    printf("weights %s\n", exp_bytes == 0u ? "fp32" : in->fp16_expand ? "expanded" : "decoded");
    return 0;
}

const float *bench_input_frame(const bench_input *in, unsigned i)
{
    return in->frames + (size_t)i * in->blob.hdr.input_dim;
}
