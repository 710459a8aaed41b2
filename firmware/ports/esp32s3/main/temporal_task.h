/* The ESP32-S3 port's one task: maps the `rvne` blob partition, loads it with
 * the portable core, and serves the serial protocol on the console while
 * pushing frames other firmware tasks hand it through a queue.
 *
 * Start it once (temporal_task_start) before any producer calls
 * temporal_task_push_frame; after that the push is safe from any task. */
#ifndef RVNE_TEMPORAL_TASK_H
#define RVNE_TEMPORAL_TASK_H
#include <stdint.h>
#include "rvne/blob.h"

/* Negative codes of this module, below the core's rvne_status range. */
#define TEMPORAL_TASK_E_FULL (-100)       /* the queue was full: frame dropped */
#define TEMPORAL_TASK_E_NO_MODEL (-101)   /* no blob loaded (or no queue): frame dropped */
#define TEMPORAL_TASK_E_PLATFORM (-102)   /* an ESP-IDF / FreeRTOS call failed */
#define TEMPORAL_TASK_E_STARTED (-103)    /* started twice */

/* Partition the task reads: type data, this subtype, this label
 * (partitions.csv's `rvne` row). */
#define TEMPORAL_TASK_PARTITION_LABEL "rvne"
#define TEMPORAL_TASK_PARTITION_SUBTYPE 0x40

typedef struct temporal_task_cfg {
    int in_fd, out_fd;          /* the console, through VFS: fileno(stdin), fileno(stdout) */
    uint32_t window;            /* W at boot */
    uint32_t arena_window;      /* the arena is sized for max(window, this): WINDOW can grow to it */
    rvne_limits limits;         /* largest dims accepted (rule 16) */
    uint32_t queue_depth;       /* frames temporal_task_push_frame may have in flight */
    uint32_t stack_bytes;       /* the task's own stack */
    uint32_t priority;
    int core;                   /* pinned to this core (1: the other one runs Wi-Fi/system tasks) */
} temporal_task_cfg;

/* The values chosen in menuconfig (Kconfig.projbuild), console on stdio. */
void temporal_task_default_cfg(temporal_task_cfg *cfg);

/* Finds, maps and validates the partition, sizes the arena, creates the
 * queue, then creates the task pinned to cfg->core. A missing, erased or
 * corrupt blob is not an error here: the task reports it (a log line, the
 * banner, INFO) and keeps answering. Returns 0, TEMPORAL_TASK_E_PLATFORM
 * when the task could not be created, RVNE_E_INVAL for a bad cfg. */
int temporal_task_start(const temporal_task_cfg *cfg);

/* Everything temporal_task_start does except creating the task; for the
 * host tests and for a caller that runs the loop itself. */
int temporal_task_init(const temporal_task_cfg *cfg);

/* One turn of the task's loop: prints the banner on the first turn, answers
 * the console bytes available, pushes queued frames; when there was nothing
 * to do, sleeps up to wait_ticks until console bytes or a frame arrive, and
 * serves what woke it. */
void temporal_task_step(uint32_t wait_ticks);

/* Non-blocking, no allocation: copies len floats (must equal the model's
 * input_dim) into the queue. 0 when queued; otherwise the frame is dropped,
 * counted in STATS drops=, and a negative code says why. */
int temporal_task_push_frame(const float *frame, uint32_t len);

/* What the task hands back for each frame that came through
 * temporal_task_push_frame, once the head has consumed it
 * (docs/esp32s3.md, Feeding frames from your own task). */
typedef struct temporal_task_result {
    uint32_t frame;             /* frames pushed into the head so far, protocol PUSHes included (STATS pushes=) */
    uint32_t cls;               /* the class: index of the largest logit (the first of equals) */
    const float *logits;        /* n_classes floats; valid only during the callback */
    uint32_t n_classes;
} temporal_task_result;

typedef void (*temporal_task_result_fn)(const temporal_task_result *result, void *ctx);

/* The one result callback (fn NULL: none). It runs on the rvne task after
 * each queued frame: keep it short and never block; to hand results to
 * another task, copy what you need into your own queue with 0 ticks. Set it
 * before the first temporal_task_push_frame. */
void temporal_task_on_result(temporal_task_result_fn fn, void *ctx);

/* The loaded model's input_dim (the floats temporal_task_push_frame takes)
 * and n_classes; 0 when no blob is loaded or no queue could be made. */
uint32_t temporal_task_input_dim(void);
uint32_t temporal_task_n_classes(void);

/* Writes "rvne: <msg>\n" on the console. Call it from the rvne task only
 * (a result callback): its lines then never cut into a protocol reply. */
void temporal_task_log(const char *msg);

/* 1 when the blob CRC was computed by the ROM's esp_rom_crc32_le (it passed
 * rvne_crc32_hook_ok), 0 when by the portable rvne_crc32. */
int temporal_task_crc_from_rom(void);

/* The load result INFO reports (RVNE_OK or RVNE_E_*). */
int temporal_task_load_status(void);

/* Bytes taken from the heap at init (arena, queue storage). */
uint32_t temporal_task_heap_bytes(void);

/* Forget everything (host tests only: frees the arena and the queue). */
void temporal_task_deinit(void);

#endif
