/* The esp32s3 port's task (ports/esp32s3/main/temporal_task.c) on the host,
 * against the ESP-IDF/FreeRTOS double (tests/esp_double): the console is a
 * pair of pipes, the partition a file mapped read-only, the scheduler this
 * test calling temporal_task_step(). Argument: a directory for the files. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "esp_double.h"
#include "esp_rom_crc.h"
#include "example_producer.h"
#include "temporal_task.h"
#include "rvne/base64.h"
#include "rvne/crc32.h"
#include "rvne/head.h"
#include "rvne/proto.h"
#include "rvne/status.h"

/* ---- every libc allocation in this program, counted (port.mk links with
 * --wrap); the double's heap_caps/queue/task counters cover ESP-IDF's. ---- */
static unsigned libc_allocs;
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n) { libc_allocs++; return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { libc_allocs++; return __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { libc_allocs++; return __real_realloc(p, n); }

/* ---- a small loadable blob (docs/format.md, docs/model.md) ---------------- */
enum { D = 4, HQ = 2, HKV = 1, HD = 4, L = 1, C = 3 };
#define WEIGHTS_FLOATS (L * (2 * D * HQ * HD + 2 * D * HKV * HD) + D * C)
#define BLOB_LEN (28 + WEIGHTS_FLOATS * 4)
#define PART_LEN 0x10000

static uint8_t blob[BLOB_LEN];
static char dir[400];


static uint32_t make_blob(uint32_t seed)
{
    memset(blob, 0, sizeof blob);
    put32(blob, RVNE_MAGIC);
    put16(blob + 4, 1);
    put16(blob + 8, D);
    put16(blob + 10, HQ);
    put16(blob + 12, HKV);
    put16(blob + 14, HD);
    put16(blob + 16, L);
    put16(blob + 18, C);
    put32(blob + 20, WEIGHTS_FLOATS * 4);
    uint32_t s = seed;
    for (int i = 0; i < WEIGHTS_FLOATS; i++) {
        s = s * 1664525u + 1013904223u;
        float w = ((float)(s >> 8) / 16777216.0f - 0.5f) * 0.8f;
        memcpy(blob + 24 + 4 * i, &w, 4);
    }
    uint32_t crc = rvne_crc32(0, blob, 24 + WEIGHTS_FLOATS * 4);
    put32(blob + 24 + WEIGHTS_FLOATS * 4, crc);
    return crc;
}

/* A partition file: `head` bytes of blob, the rest erased flash (0xFF). */
static const char *write_partition(const char *name, const uint8_t *head, size_t n)
{
    static char path[512];
    static uint8_t img[PART_LEN];
    memset(img, 0xFF, sizeof img);
    memcpy(img, head, n);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(img, 1, sizeof img, f) != sizeof img) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    fclose(f);
    return path;
}

/* ---- the console: pipes, and the protocol spoken from the host side ------- */
static int to_dev[2], from_dev[2];
static char got[1 << 16];
static size_t got_len;

static void start_console(void)
{
    if (pipe(to_dev) != 0 || pipe(from_dev) != 0)
        exit(2);
    fcntl(from_dev[0], F_SETFL, fcntl(from_dev[0], F_GETFL, 0) | O_NONBLOCK);
    got_len = 0;
}

static void stop_console(void)
{
    close(to_dev[0]); close(to_dev[1]); close(from_dev[0]); close(from_dev[1]);
}

static void drain_output(void)
{
    for (;;) {
        ssize_t n = read(from_dev[0], got + got_len, sizeof got - 1 - got_len);
        if (n <= 0)
            break;
        got_len += (size_t)n;
    }
    got[got_len] = 0;
}

static temporal_task_cfg test_cfg(void)
{
    temporal_task_cfg c;
    temporal_task_default_cfg(&c);
    c.in_fd = to_dev[0];
    c.out_fd = from_dev[1];
    return c;
}

/* Sends `>seq body*CRC`, runs the task once, returns the reply's fields
 * (after "<seq ") in a static buffer, or "" when there was no reply. */
static const char *ask(uint32_t seq, const char *body)
{
    static char line[8192], reply[8192];
    int n = snprintf(line, sizeof line - 12, ">%u %s", (unsigned)seq, body);
    uint32_t crc = rvne_crc32(0, (const uint8_t *)line, (uint32_t)n);
    n += snprintf(line + n, 12, "*%08X\n", (unsigned)crc);
    if (write(to_dev[1], line, (size_t)n) != n)
        exit(2);
    size_t before = got_len;
    temporal_task_step(0);
    drain_output();
    char want[16];
    snprintf(want, sizeof want, "<%u ", (unsigned)seq);
    reply[0] = 0;
    for (const char *p = got + before; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, want, strlen(want)) == 0) {
            const char *e = strchr(p, '*');
            size_t k = e ? (size_t)(e - p) : strlen(p);
            if (k >= sizeof reply) k = sizeof reply - 1;
            memcpy(reply, p + strlen(want), k - strlen(want));
            reply[k - strlen(want)] = 0;
            break;
        }
    }
    return reply;
}

/* key=value out of a reply, "" when absent. */
static const char *field(const char *reply, const char *key)
{
    static char val[8192];
    size_t kl = strlen(key);
    val[0] = 0;
    for (const char *p = reply; (p = strstr(p, key)) != NULL; p++) {
        if ((p == reply || p[-1] == ' ') && p[kl] == '=') {
            size_t n = strcspn(p + kl + 1, " ");
            if (n >= sizeof val) n = sizeof val - 1;
            memcpy(val, p + kl + 1, n);
            val[n] = 0;
            break;
        }
    }
    return val;
}

static void boot(const char *part_path, const temporal_task_cfg *maybe)
{
    start_console();
    esp_double_set_partition("rvne", 0x01, 0x40, part_path);
    temporal_task_cfg c = maybe ? *maybe : test_cfg();
    CHECK_EQ(temporal_task_start(&c), 0);
    temporal_task_step(0);      /* the first turn prints the banner */
    drain_output();
}

static void shutdown(void)
{
    temporal_task_deinit();
    esp_double_reset();
    stop_console();
}

/* ---- tests ------------------------------------------------------------------ */
static void test_loads_and_serves(void)
{
    uint32_t crc = make_blob(1);
    boot(write_partition("good.bin", blob, sizeof blob), NULL);
    char crc_hex[9];
    snprintf(crc_hex, sizeof crc_hex, "%08X", (unsigned)crc);

    CHECK(strstr(got, "rvne/" RVNE_FW_VERSION " esp32s3 ready: OK") != NULL);
    CHECK(strstr(got, crc_hex) != NULL);
    const esp_double_task *t = esp_double_task_get();
    CHECK(t->created);
    CHECK_EQ(t->core, 1);
    CHECK_EQ(t->stack_bytes, CONFIG_RVNE_TASK_STACK);
    CHECK_EQ(t->priority, CONFIG_RVNE_TASK_PRIORITY);
    CHECK_EQ(esp_double_counts_get()->mmaps, 1);

    const char *r = ask(1, "INFO");
    CHECK(strncmp(r, "OK", 2) == 0);
    CHECK(strcmp(field(r, "status"), "loaded") == 0);
    CHECK(strcmp(field(r, "reason"), "OK") == 0);
    CHECK(strcmp(field(r, "port"), "esp32s3") == 0);
    CHECK(strcmp(field(r, "crc"), crc_hex) == 0);
    CHECK_EQ(atoi(field(r, "window")), CONFIG_RVNE_WINDOW);
    CHECK_EQ(atoi(field(r, "line_max")), CONFIG_RVNE_LINE_MAX);
    CHECK(strcmp(field(r, "clock"), "ns") == 0);
    /* The arena was sized for the larger window: WINDOW can grow to it. */
    char req[32];
    snprintf(req, sizeof req, "WINDOW %d", CONFIG_RVNE_ARENA_WINDOW);
    r = ask(2, req);
    CHECK(strncmp(r, "OK", 2) == 0);
    CHECK_EQ(atoi(field(r, "window")), CONFIG_RVNE_ARENA_WINDOW);
    snprintf(req, sizeof req, "WINDOW %d", CONFIG_RVNE_ARENA_WINDOW + 1);
    r = ask(3, req);
    CHECK(strstr(r, "ERR E_TOO_LARGE") == r);
    /* The ROM CRC passed the check, so it computed the blob's CRC too. */
    CHECK_EQ(temporal_task_crc_from_rom(), 1);
    CHECK(esp_double_counts_get()->rom_crc_bytes >= 24 + WEIGHTS_FLOATS * 4);
    shutdown();
}

static void test_nonconforming_rom_crc_is_not_used(void)
{
    uint32_t crc = make_blob(2);
    const char *path = write_partition("rom.bin", blob, sizeof blob);
    esp_double_faults_get()->rom_crc = ESP_DOUBLE_ROM_CRC_RAW;
    /* The conforming double and the check string agree, the raw one does not. */
    CHECK_EQ(rvne_crc32_hook_ok(esp_rom_crc32_le), 0);
    esp_double_faults_get()->rom_crc = ESP_DOUBLE_ROM_CRC_IEEE;
    CHECK_EQ(rvne_crc32_hook_ok(esp_rom_crc32_le), 1);
    esp_double_reset();

    esp_double_faults_get()->rom_crc = ESP_DOUBLE_ROM_CRC_RAW;
    boot(path, NULL);
    CHECK_EQ(temporal_task_crc_from_rom(), 0);
    /* Only the check string went through the ROM routine, not the blob. */
    CHECK(esp_double_counts_get()->rom_crc_bytes < 24);
    CHECK_STATUS(temporal_task_load_status(), RVNE_OK);
    char crc_hex[9];
    snprintf(crc_hex, sizeof crc_hex, "%08X", (unsigned)crc);
    CHECK(strcmp(field(ask(1, "INFO"), "crc"), crc_hex) == 0);
    shutdown();
}

static void expect_unloaded(const char *reason, const char *log_words)
{
    CHECK(strstr(got, "ready: ") != NULL);
    if (log_words != NULL)
        CHECK(strstr(got, log_words) != NULL);
    const char *r = ask(1, "INFO");
    CHECK(strcmp(field(r, "status"), "error") == 0);
    CHECK(strcmp(field(r, "reason"), reason) == 0);
    if (strcmp(field(r, "reason"), reason) != 0)
        fprintf(stderr, "  INFO: %s\n", r);
    /* Keeps answering: PING works, PUSH says why there is no model. */
    CHECK(strcmp(ask(2, "PING"), "OK") == 0);
    CHECK(strstr(ask(3, "PUSH 1 AAAAAAAAAAAAAAAAAAAAAA=="), "ERR E_NO_MODEL") != NULL);
    float f[D] = {0};
    CHECK_EQ(temporal_task_push_frame(f, D), TEMPORAL_TASK_E_NO_MODEL);
    CHECK(strcmp(field(ask(4, "STATS"), "drops"), "1") == 0);
}

static void test_missing_partition(void)
{
    boot(NULL, NULL);
    expect_unloaded("E_NO_PARTITION", "no data partition labelled 'rvne_a', 'rvne_b', 'rvne_sel' nor 'rvne'");
    CHECK_EQ(esp_double_counts_get()->mmaps, 0);
    shutdown();

    /* Right label, wrong subtype: not the blob partition either. */
    make_blob(3);
    start_console();
    esp_double_set_partition("rvne", 0x01, 0x81, write_partition("fat.bin", blob, sizeof blob));
    temporal_task_cfg c = test_cfg();
    CHECK_EQ(temporal_task_start(&c), 0);
    temporal_task_step(0);
    drain_output();
    expect_unloaded("E_NO_PARTITION", "no data partition");
    shutdown();
}

/* A partition that exists but holds fewer bytes than a header: mapped and
 * refused by rule 1 (E_TOO_SHORT), not taken for a missing one. */
static void test_short_partition(void)
{
    static char path[512];
    static const uint8_t bytes[10] = {0x45, 0x4E, 0x56, 0x52, 1, 0, 0, 0, 4, 0};
    snprintf(path, sizeof path, "%s/%s", dir, "short.bin");
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(bytes, 1, sizeof bytes, f) != sizeof bytes) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    fclose(f);
    boot(path, NULL);
    CHECK_EQ(esp_double_counts_get()->mmaps, 1);
    CHECK(strstr(got, "ready: E_TOO_SHORT") != NULL);
    expect_unloaded("E_TOO_SHORT", "not loaded: E_TOO_SHORT");
    shutdown();
}

static void test_erased_partition(void)
{
    uint8_t erased[4] = {0xFF, 0xFF, 0xFF, 0xFF};
    boot(write_partition("erased.bin", erased, sizeof erased), NULL);
    CHECK(strstr(got, "ready: E_ERASED") != NULL);
    expect_unloaded("E_ERASED", "not loaded: E_ERASED");
    shutdown();
}

static void test_bad_crc(void)
{
    make_blob(4);
    blob[40] ^= 0x01;
    boot(write_partition("badcrc.bin", blob, sizeof blob), NULL);
    expect_unloaded("E_CRC", "not loaded: E_CRC");
    /* The header was readable, so INFO still shows the dims. */
    CHECK(strcmp(field(ask(9, "INFO"), "dims"), "4,2,1,4,1,3") == 0);
    shutdown();
}

static void test_mmap_failure(void)
{
    make_blob(5);
    const char *path = write_partition("mmap.bin", blob, sizeof blob);
    esp_double_faults_get()->mmap_fails = 1;
    boot(path, NULL);
    expect_unloaded("E_NO_PARTITION", "cannot map partition 'rvne'");
    shutdown();
}

static void test_no_heap_for_arena(void)
{
    make_blob(6);
    const char *path = write_partition("heap.bin", blob, sizeof blob);
    esp_double_faults_get()->heap_fails_above = 16;
    boot(path, NULL);
    expect_unloaded("E_TOO_LARGE", "no heap for the arena");
    shutdown();
}

/* FP16 weights (RVNE_FP16_EXPAND, docs/model.md "FP16 weights"): expanded
 * when the heap holds the arena with them, else decoded (weights=no-room)
 * with the model still loaded. */
static void test_fp16_expanded_when_the_heap_has_room(void)
{
    size_t n16 = 24 + WEIGHTS_FLOATS * 2, need = 0;
    rvne_header h;
    make_blob(7);
    blob[6] = 1;                                /* flags: FP16 */
    put32(blob + 20, WEIGHTS_FLOATS * 2);
    for (int i = 0; i < WEIGHTS_FLOATS; i++)   /* finite halves in (-1, 1) */
        put16(blob + 24 + 2 * i, (uint16_t)((blob[24 + 2 * WEIGHTS_FLOATS + i] & 0x83u) << 8 | (i & 0xFFu)));
    put32(blob + n16, rvne_crc32(0, blob, (uint32_t)n16));
    const char *path = write_partition("fp16.bin", blob, n16 + 4);
    boot(path, NULL);
    const char *r = ask(1, "INFO");
    CHECK(strcmp(field(r, "status"), "loaded") == 0);
    CHECK(strcmp(field(r, "dtype"), "fp16") == 0);
    CHECK(strcmp(field(r, "weights"), "expanded") == 0);
    shutdown();

    memset(&h, 0, sizeof h);
    h.input_dim = D, h.n_q_heads = HQ, h.n_kv_heads = HKV, h.head_dim = HD, h.n_layers = L, h.n_classes = C;
    h.flags = RVNE_FLAG_FP16;
    /* Room for W alone: the arena sized for the arena window would hold the
     * expansion beside W's state. */
    CHECK_STATUS(rvne_head_arena_size(&h, CONFIG_RVNE_WINDOW, &need), RVNE_OK);
    esp_double_faults_get()->heap_fails_above = (int)need;   /* one slot: no update floor */
    boot(path, NULL);
    r = ask(1, "INFO");
    CHECK(strcmp(field(r, "status"), "loaded") == 0);
    CHECK(strcmp(field(r, "weights"), "no-room") == 0);
    CHECK_EQ(atoi(field(r, "window")), CONFIG_RVNE_WINDOW);
    shutdown();
}

/* Logits of the core's own head fed the same frames: what the port's queue
 * path must reproduce bit for bit (same code, same order). */
static void reference_logits(const float (*frames)[D], int n, float *out)
{
    rvne_blob b;
    rvne_load_cfg lc;
    memset(&lc, 0, sizeof lc);
    CHECK_STATUS(rvne_blob_open(&b, blob, sizeof blob, &lc), RVNE_OK);
    size_t need = 0;
    CHECK_STATUS(rvne_head_arena_size(&b.hdr, CONFIG_RVNE_WINDOW, &need), RVNE_OK);
    static float arena[1 << 14];
    CHECK(need <= sizeof arena);
    rvne_head h;
    CHECK_STATUS(rvne_head_init(&h, &b, CONFIG_RVNE_WINDOW, arena, sizeof arena), RVNE_OK);
    for (int i = 0; i < n; i++)
        CHECK_STATUS(rvne_head_push(&h, frames[i]), RVNE_OK);
    memcpy(out, rvne_head_logits(&h), sizeof(float) * C);
}

static void test_queue_full_drops_and_logits(void)
{
    make_blob(7);
    boot(write_partition("queue.bin", blob, sizeof blob), NULL);
    float frames[CONFIG_RVNE_QUEUE_DEPTH + 3][D];
    for (int i = 0; i < CONFIG_RVNE_QUEUE_DEPTH + 3; i++)
        for (int j = 0; j < D; j++)
            frames[i][j] = 0.25f * (float)(i + 1) - 0.1f * (float)j;

    /* Nobody drains while the producer pushes: the queue fills, the rest drop
     * without blocking (the double aborts on a blocking send). */
    for (int i = 0; i < CONFIG_RVNE_QUEUE_DEPTH; i++)
        CHECK_EQ(temporal_task_push_frame(frames[i], D), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(temporal_task_push_frame(frames[CONFIG_RVNE_QUEUE_DEPTH + i], D), TEMPORAL_TASK_E_FULL);
    CHECK_EQ(esp_double_counts_get()->queue_full, 3);
    /* A frame of the wrong length is refused and counted too. */
    CHECK_EQ(temporal_task_push_frame(frames[0], D + 1), RVNE_E_INVAL);
    CHECK_EQ(temporal_task_push_frame(NULL, D), RVNE_E_INVAL);

    const char *r = ask(1, "STATS");
    CHECK(strcmp(field(r, "drops"), "5") == 0);
    CHECK(strcmp(field(r, "pushes"), "4") == 0);

    float want[C], gotl[C];
    reference_logits((const float (*)[D])frames, CONFIG_RVNE_QUEUE_DEPTH, want);
    r = ask(2, "LOGITS");
    const char *b64 = field(r, "logits");
    CHECK_EQ(rvne_b64_decode((uint8_t *)gotl, sizeof gotl, b64, strlen(b64)), (long)sizeof gotl);
    CHECK(memcmp(gotl, want, sizeof want) == 0);

    /* After the task drained it, the queue takes frames again. */
    CHECK_EQ(temporal_task_push_frame(frames[0], D), 0);
    shutdown();
}

/* ---- feeding frames from a firmware task: results back through the callback */
static struct {
    int calls;
    uint32_t frame[16], cls[16];
    float logits[16][C];
    uint32_t n_classes;
} seen;

static void record_result(const temporal_task_result *r, void *ctx)
{
    CHECK(ctx == &seen);
    if (seen.calls < 16) {
        seen.frame[seen.calls] = r->frame;
        seen.cls[seen.calls] = r->cls;
        memcpy(seen.logits[seen.calls], r->logits, sizeof(float) * C);
    }
    seen.n_classes = r->n_classes;
    seen.calls++;
}

static uint32_t argmax(const float *v, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

static void test_results_come_back_through_the_callback(void)
{
    make_blob(12);
    boot(write_partition("result.bin", blob, sizeof blob), NULL);
    CHECK_EQ(temporal_task_input_dim(), D);
    CHECK_EQ(temporal_task_n_classes(), C);
    memset(&seen, 0, sizeof seen);
    temporal_task_on_result(record_result, &seen);

    float frames[3][D];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < D; j++)
            frames[i][j] = 0.7f * (float)(i + 1) * (j % 2 ? -1.0f : 1.0f) + 0.05f * (float)j;
    /* A protocol PUSH first: it counts in frame numbers, but only queued
     * frames are reported. */
    const char *r = ask(1, "RESET");
    CHECK(strncmp(r, "OK", 2) == 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(temporal_task_push_frame(frames[i], D), 0);
    CHECK_EQ(seen.calls, 0);            /* nothing before the task runs */
    temporal_task_step(0);
    CHECK_EQ(seen.calls, 3);
    CHECK_EQ(seen.n_classes, C);
    for (int i = 0; i < 3; i++) {
        float want[C];
        reference_logits((const float (*)[D])frames, i + 1, want);
        CHECK(memcmp(seen.logits[i], want, sizeof want) == 0);
        CHECK_EQ(seen.cls[i], argmax(want, C));
        CHECK_EQ(seen.frame[i], (uint32_t)(i + 1));
    }
    CHECK(strcmp(field(ask(2, "STATS"), "pushes"), "3") == 0);

    /* Removed: frames still go in, nothing is called. */
    temporal_task_on_result(NULL, NULL);
    CHECK_EQ(temporal_task_push_frame(frames[0], D), 0);
    temporal_task_step(0);
    CHECK_EQ(seen.calls, 3);
    CHECK(strcmp(field(ask(3, "STATS"), "pushes"), "4") == 0);
    shutdown();

    /* No model: no dims to push. */
    boot(write_partition("result-erased.bin", (const uint8_t *)"", 0), NULL);
    CHECK_EQ(temporal_task_input_dim(), 0);
    CHECK_EQ(temporal_task_n_classes(), 0);
    shutdown();
}

/* The example producer (menuconfig RVNE_EXAMPLE_PRODUCER): its task, its
 * frames, its drops counted in STATS, its class lines on the console. */
static void test_example_producer(void)
{
    make_blob(13);
    boot(write_partition("example.bin", blob, sizeof blob), NULL);
    CHECK_EQ(example_producer_start(), 0);
    const esp_double_task *t = esp_double_task_get();
    CHECK(strcmp(t->name, "rvne_example") == 0);
    CHECK_EQ(t->core, 0);
    CHECK(t->priority < CONFIG_RVNE_TASK_PRIORITY);

    /* Two more frames than the queue holds before the rvne task runs. */
    for (int i = 0; i < CONFIG_RVNE_QUEUE_DEPTH + 2; i++)
        CHECK_EQ(example_producer_tick(), i < CONFIG_RVNE_QUEUE_DEPTH ? 0 : TEMPORAL_TASK_E_FULL);
    const example_producer_counts *n = example_producer_counts_get();
    CHECK_EQ(n->produced, CONFIG_RVNE_QUEUE_DEPTH + 2);
    CHECK_EQ(n->dropped, 2);
    const char *r = ask(1, "STATS");
    CHECK(strcmp(field(r, "drops"), "2") == 0);
    CHECK(strcmp(field(r, "pushes"), "4") == 0);
    CHECK_EQ(n->results, CONFIG_RVNE_QUEUE_DEPTH);
    CHECK_EQ(n->printed, CONFIG_RVNE_QUEUE_DEPTH / CONFIG_RVNE_EXAMPLE_PRINT_EVERY);

    /* The printed line: the 3rd result, with the class of the reference. */
    float frames[CONFIG_RVNE_EXAMPLE_PRINT_EVERY][D], want[C];
    for (int i = 0; i < CONFIG_RVNE_EXAMPLE_PRINT_EVERY; i++)
        example_producer_frame((uint32_t)i, frames[i], D);
    reference_logits((const float (*)[D])frames, CONFIG_RVNE_EXAMPLE_PRINT_EVERY, want);
    char line[96];
    snprintf(line, sizeof line, "rvne: example: frame %d class %u ", CONFIG_RVNE_EXAMPLE_PRINT_EVERY,
             (unsigned)argmax(want, C));
    CHECK(strstr(got, line) != NULL);
    CHECK(strstr(got, "drops 2\n") != NULL);   /* whole lines, drops so far */

    /* The stream is deterministic and moves. */
    float a[D], b[D];
    example_producer_frame(5, a, D);
    example_producer_frame(5, b, D);
    CHECK(memcmp(a, b, sizeof a) == 0);
    example_producer_frame(6, b, D);
    CHECK(memcmp(a, b, sizeof a) != 0);
    shutdown();

    /* Without a model it says so and starts nothing. */
    boot(write_partition("example-erased.bin", (const uint8_t *)"", 0), NULL);
    CHECK_EQ(example_producer_start(), TEMPORAL_TASK_E_NO_MODEL);
    CHECK(strcmp(esp_double_task_get()->name, "rvne") == 0);
    shutdown();
}

static void test_push_path_does_not_allocate(void)
{
    make_blob(8);
    boot(write_partition("alloc.bin", blob, sizeof blob), NULL);
    float f[D] = {0.5f, -0.25f, 1.0f, 0.0f};
    (void)ask(1, "STATS");
    unsigned heap0 = esp_double_counts_get()->heap_allocs, libc0 = libc_allocs;
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < CONFIG_RVNE_QUEUE_DEPTH + 2; i++)
            (void)temporal_task_push_frame(f, D);
        temporal_task_step(0);
    }
    const char *r = ask(2, "STATS");
    CHECK_EQ(esp_double_counts_get()->heap_allocs, heap0);
    CHECK_EQ(libc_allocs, libc0);
    CHECK(strcmp(field(r, "drops"), "100") == 0);
    CHECK(strcmp(field(r, "pushes"), "200") == 0);
    /* The counter can fail: init itself does allocate (arena, queue, task). */
    CHECK(heap0 >= 3);
    shutdown();
}

static void test_platform_failures(void)
{
    make_blob(9);
    const char *path = write_partition("fail.bin", blob, sizeof blob);

    start_console();
    esp_double_set_partition("rvne", 0x01, 0x40, path);
    esp_double_faults_get()->task_create_fails = 1;
    temporal_task_cfg c = test_cfg();
    CHECK_EQ(temporal_task_start(&c), TEMPORAL_TASK_E_PLATFORM);
    drain_output();
    CHECK(strstr(got, "cannot create the rvne task") != NULL);
    shutdown();

    /* No queue: the model still serves the protocol, producers are refused. */
    esp_double_faults_get()->queue_create_fails = 1;
    boot(path, NULL);
    CHECK(strstr(got, "no heap for the frame queue") != NULL);
    CHECK(strcmp(field(ask(1, "INFO"), "status"), "loaded") == 0);
    float f[D] = {0};
    CHECK_EQ(temporal_task_push_frame(f, D), TEMPORAL_TASK_E_NO_MODEL);
    CHECK(strcmp(field(ask(2, "STATS"), "drops"), "1") == 0);
    shutdown();

    /* A bad configuration is refused before anything is touched. */
    start_console();
    c = test_cfg();
    c.window = 0;
    CHECK_EQ(temporal_task_start(&c), RVNE_E_INVAL);
    CHECK_EQ(esp_double_task_get()->created, 0);
    shutdown();
}

static void test_new_blob_after_reset(void)
{
    make_blob(10);
    const char *path = write_partition("reflash.bin", blob, sizeof blob);
    boot(path, NULL);
    const char *r = ask(1, "INFO");
    char first[16];
    snprintf(first, sizeof first, "%s", field(r, "crc"));
    shutdown();

    /* `rvne flash` rewrites the partition, then resets the board. */
    uint32_t crc = make_blob(11);
    path = write_partition("reflash.bin", blob, sizeof blob);
    boot(path, NULL);
    char crc_hex[9];
    snprintf(crc_hex, sizeof crc_hex, "%08X", (unsigned)crc);
    r = ask(1, "INFO");
    CHECK(strcmp(field(r, "crc"), crc_hex) == 0);
    CHECK(strcmp(first, crc_hex) != 0);
    shutdown();
}

/* Something to do arriving while the task sleeps idle: a request on the
 * console, or a producer's frame. */
typedef struct later {
    int request;            /* 1: write `line` to the console; 0: push `frame` */
    const char *line;
    float frame[D];
} later;

static void count_result(const temporal_task_result *r, void *ctx)
{
    (void)r;
    ++*(int *)ctx;
}

static void *arrive_later(void *arg)
{
    const later *l = arg;
    struct timespec ts = {0, 150 * 1000 * 1000};
    nanosleep(&ts, NULL);
    if (l->request) {
        if (write(to_dev[1], l->line, strlen(l->line)) < 0)
            exit(2);
    } else if (temporal_task_push_frame(l->frame, D) != 0) {
        exit(3);
    }
    return NULL;
}

/* The idle task sleeps in select() on the console and on the producers'
 * eventfd: what arrives while it waits is served in that same turn, not a
 * polling period later (before, a request waited up to the whole wait). */
static void test_idle_wait_wakes_for_a_request_and_a_frame(void)
{
    make_blob(9);
    boot(write_partition("wake.bin", blob, sizeof blob), NULL);
    static char line[64];
    int n = snprintf(line, sizeof line - 12, ">%u PING", 41u);
    uint32_t crc = rvne_crc32(0, (const uint8_t *)line, (uint32_t)n);
    snprintf(line + n, 12, "*%08X\n", (unsigned)crc);

    later req = {1, line, {0}};
    pthread_t th;
    size_t before = got_len;
    CHECK_EQ(pthread_create(&th, NULL, arrive_later, &req), 0);
    temporal_task_step(pdMS_TO_TICKS(10000));
    pthread_join(th, NULL);
    drain_output();
    CHECK(strstr(got + before, "<41 OK") != NULL);

    /* The frame is pushed (its result delivered) by that step itself. */
    later frame = {0, NULL, {0}};
    for (int j = 0; j < D; j++)
        frame.frame[j] = 0.5f - 0.125f * (float)j;
    int results = 0;
    temporal_task_on_result(count_result, &results);
    CHECK_EQ(pthread_create(&th, NULL, arrive_later, &frame), 0);
    temporal_task_step(pdMS_TO_TICKS(10000));
    pthread_join(th, NULL);
    CHECK_EQ(results, 1);
    temporal_task_on_result(NULL, NULL);
    shutdown();
}

int main(int argc, char **argv)
{
    snprintf(dir, sizeof dir, "%s", argc > 1 ? argv[1] : ".");
    test_loads_and_serves();
    test_nonconforming_rom_crc_is_not_used();
    test_missing_partition();
    test_short_partition();
    test_erased_partition();
    test_bad_crc();
    test_mmap_failure();
    test_no_heap_for_arena();
    test_fp16_expanded_when_the_heap_has_room();
    test_queue_full_drops_and_logits();
    test_results_come_back_through_the_callback();
    test_example_producer();
    test_push_path_does_not_allocate();
    test_platform_failures();
    test_new_blob_after_reset();
    test_idle_wait_wakes_for_a_request_and_a_frame();
    return CHECK_DONE("test_temporal_task");
}
