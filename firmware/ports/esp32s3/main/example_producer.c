/* Example producer: what a sensor task does with the rvne task. It owns
 * its frame buffer, pushes without blocking (a full queue drops the frame:
 * counted here and in STATS drops=) and gets each class back in a callback
 * on the rvne task, which prints one line every RVNE_EXAMPLE_PRINT_EVERY
 * results. Replace example_producer_frame with your sensor's features. */
#include "example_producer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "freertos/FreeRTOS.h"
#include "freertos/task.h"
#include "sdkconfig.h"
#include "temporal_task.h"

#if CONFIG_RVNE_EXAMPLE_PRODUCER

#define PRODUCER_STACK 3072
#define PERIOD_MS (1000 / CONFIG_RVNE_EXAMPLE_RATE_HZ)

static example_producer_counts counts;
static float frame[CONFIG_RVNE_MAX_INPUT_DIM];

void example_producer_frame(uint32_t n, float *out, uint32_t dim)
{
    for (uint32_t i = 0; i < dim; i++)
        out[i] = sinf(0.05f * (float)n * (float)(i + 1) / (float)dim + 0.3f * (float)i);
}

/* On the rvne task: count, and print now and then (not every frame: the
 * console also carries the protocol). */
static void on_result(const temporal_task_result *r, void *ctx)
{
    (void)ctx;
    counts.results++;
    if (counts.results % CONFIG_RVNE_EXAMPLE_PRINT_EVERY != 0)
        return;
    char line[120];
    snprintf(line, sizeof line, "example: frame %u class %u logit %.4f drops %u", (unsigned)r->frame,
             (unsigned)r->cls, (double)r->logits[r->cls], (unsigned)counts.dropped);
    temporal_task_log(line);
    counts.printed++;
}

int example_producer_tick(void)
{
    uint32_t dim = temporal_task_input_dim();
    example_producer_frame(counts.produced, frame, dim);
    counts.produced++;
    int err = temporal_task_push_frame(frame, dim);
    if (err != 0)
        counts.dropped++;
    return err;
}

static void producer_task(void *arg)
{
    (void)arg;
    TickType_t period = pdMS_TO_TICKS(PERIOD_MS);
    for (;;) {
        example_producer_tick();
        vTaskDelay(period > 0 ? period : 1);
    }
}

int example_producer_start(void)
{
    memset(&counts, 0, sizeof counts);
    if (temporal_task_input_dim() == 0) {
        printf("rvne: example producer not started: no model loaded\n");
        return TEMPORAL_TASK_E_NO_MODEL;
    }
    temporal_task_on_result(on_result, NULL);
    /* Core 0, below the rvne task: a sensor task's usual place. */
    if (xTaskCreatePinnedToCore(producer_task, "rvne_example", PRODUCER_STACK, NULL, CONFIG_RVNE_TASK_PRIORITY - 1,
                                NULL, 0) != pdPASS) {
        temporal_task_on_result(NULL, NULL);
        return TEMPORAL_TASK_E_PLATFORM;
    }
    return 0;
}

const example_producer_counts *example_producer_counts_get(void) { return &counts; }

#endif
