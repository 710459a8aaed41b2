/* The example sensor task (menuconfig RVNE_EXAMPLE_PRODUCER): feeds the head
 * a synthetic stream through temporal_task_push_frame at a set rate and
 * prints the class it gets back; a template for your own producer
 * (docs/esp32s3.md, Feeding frames from your own task). */
#ifndef RVNE_EXAMPLE_PRODUCER_H
#define RVNE_EXAMPLE_PRODUCER_H
#include <stdint.h>

typedef struct example_producer_counts {
    uint32_t produced;          /* frames made */
    uint32_t dropped;           /* of those, refused by temporal_task_push_frame */
    uint32_t results;           /* results the callback received */
    uint32_t printed;           /* class lines printed */
} example_producer_counts;

/* Frame n of the synthetic stream: dim floats, a slow sine per channel, so
 * the classes change over time. Deterministic. */
void example_producer_frame(uint32_t n, float *out, uint32_t dim);

/* Registers the result callback and creates the producer task (after
 * temporal_task_start). 0, or TEMPORAL_TASK_E_NO_MODEL without a loaded
 * blob (said on the console), TEMPORAL_TASK_E_PLATFORM without a task. */
int example_producer_start(void);

/* One frame: make it, push it (never blocks). The task's loop body; 0 when
 * queued, else temporal_task_push_frame's code. */
int example_producer_tick(void);

const example_producer_counts *example_producer_counts_get(void);

#endif
