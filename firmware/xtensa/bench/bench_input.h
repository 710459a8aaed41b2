/* What a bench run of the core reads, and the head it runs on: shared by
 * the lx6 phase profile (phases.c) and the ESP32-S3 ICOUNT bench
 * (ports/esp32s3-bare/bench/push_icount.c), both run by
 * tools/bench_icount.py under semihosting; not a test.
 *
 * From <build>/bench/<name>/: params.txt (window, fill, steps and
 * optionally fp16_expand: 1 runs FP16 weights expanded to FP32 at load,
 * 16-byte aligned as the app places them, 0 decodes them at every push;
 * absent: the caller's default; docs/model.md, "FP16 weights"),
 * model.rvne and frames.f32 (at least fill + steps frames of input_dim
 * floats). Prints how it runs the weights: "weights expanded|decoded|fp32". */
#ifndef RVNE_BENCH_INPUT_H
#define RVNE_BENCH_INPUT_H
#include "rvne/blob.h"
#include "rvne/head.h"

typedef struct bench_input {
    rvne_blob blob;
    rvne_head head;             /* set up on an arena of its own, window `window` */
    const float *frames;
    unsigned window, fill, steps, fp16_expand;
} bench_input;

/* 0, or 2 (the run's exit code) after printing "bench <name>: <what is wrong>". */
int bench_input_open(bench_input *in, const char *build_dir, const char *name, unsigned default_expand);

/* Frame i (< fill + steps). */
const float *bench_input_frame(const bench_input *in, unsigned i);

#endif
