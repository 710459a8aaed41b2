/* ESP32-S3 glue around the portable core (firmware/core): partition ->
 * loader -> head, console -> protocol server, queue -> head. Everything the
 * task needs is taken at init; the loop and the push path never allocate.
 *
 * Only ESP-IDF's portable APIs are used (esp_partition_*, FreeRTOS queues
 * and tasks, esp_timer, the console through VFS file descriptors) so the
 * same file builds for ESP-IDF's linux target and, on the host, against
 * firmware/tests/esp_double. */
#define _POSIX_C_SOURCE 200809L
#include "temporal_task.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "esp_heap_caps.h"
#include "esp_partition.h"
#include "esp_rom_crc.h"
#include "flash_cut.h"
#include "freertos/FreeRTOS.h"
#include "freertos/queue.h"
#include "freertos/task.h"
#include "sdkconfig.h"

#include "rvne/crc32.h"
#include "rvne/flash.h"
#include "rvne/head.h"
#include "rvne/proto.h"
#include "rvne/sig.h"
#include "rvne/status.h"
#include "rvne/update.h"

#define LINE_MAX_BYTES CONFIG_RVNE_LINE_MAX
#define FRAME_FLOATS (LINE_MAX_BYTES * 3 / 16 + 1)
#define RX_CHUNK 256
#define WRITE_RETRIES 1000      /* ~1 s of a console that takes nothing */

#if CONFIG_RVNE_PUSH_ICOUNT
#include "icount.h"
#endif
#if CONFIG_RVNE_SIGNED_MODELS
#include "rvne/crypto_mbedtls.h"
#endif

#include <sys/select.h>
#include <sys/time.h>
#if defined(CONFIG_IDF_TARGET_LINUX) && CONFIG_IDF_TARGET_LINUX
#define PORT_NAME "idf-linux"
#include <sys/eventfd.h>
#include <time.h>
#else
#define PORT_NAME "esp32s3"
#include "esp_timer.h"
#include "esp_vfs_eventfd.h"
#endif

/* Buffers sized at build time (menuconfig), so their cost is visible in the
 * map file rather than discovered on the heap. */
static char line_buf[LINE_MAX_BYTES + 1];
static char out_buf[LINE_MAX_BYTES + 16];
static float frame_buf[FRAME_FLOATS];
static float drain_frame[CONFIG_RVNE_MAX_INPUT_DIM];

static temporal_task_cfg cfg;
static rvne_model model;
static rvne_server server;
static rvne_port port;
/* The model partitions (rvne_a, rvne_b, rvne_sel; or the single rvne as
 * slot A), each mapped once, in place: the kernel reads weights from flash. */
static const esp_partition_t *parts[RVNE_PART_COUNT];
static const void *part_map[RVNE_PART_COUNT];
static esp_partition_mmap_handle_t map_handle[RVNE_PART_COUNT];
static uint8_t part_written[RVNE_PART_COUNT];   /* erased or programmed since mapped */
static rvne_flash flash;
static rvne_slots slots;
static void *arena;
static size_t arena_len;
static QueueHandle_t frames;
static uint32_t frame_dim;       /* frames temporal_task_push_frame takes: this many floats, 0: none */
static uint32_t queue_dim;       /* the queue's frame size */
/* The queue is replaced when a model of another input_dim starts serving.
 * A producer announces itself in queue_users before it touches `frames`
 * and backs off while queue_switching is set; the task sets that flag and
 * waits for the users to leave before it deletes the old queue. */
static uint32_t queue_users, queue_switching;
static uint32_t served_seq;      /* slots.current.seq the queue last followed */
static uint32_t heap_bytes;
static int crc_from_rom;
static int initialised, announced, task_created;
static temporal_task_result_fn result_fn;
static void *result_ctx;
/* Written by producers, taken by the task: the server is only touched by
 * the task, so drops reach STATS without a lock. */
static uint32_t pending_drops;
/* An eventfd a producer's frame sets, so the idle task can sleep in
 * select() on it and the console at once (-1: none); cleared when the
 * console's VFS has no select (ESP-IDF v5.1's USB-Serial/JTAG). */
static int wake_fd = -1;
static int console_selects;

static int console_write(void *ctx, const void *buf, size_t n)
{
    (void)ctx;
    const char *p = buf;
    int retries = 0;
    while (n > 0) {
        ssize_t w = write(cfg.out_fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            retries = 0;
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EINTR) && retries++ < WRITE_RETRIES) {
            vTaskDelay(1);
            continue;
        }
        return -1;
    }
    return 0;
}

static uint64_t console_now_ns(void *ctx)
{
    (void)ctx;
#if defined(CONFIG_IDF_TARGET_LINUX) && CONFIG_IDF_TARGET_LINUX
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#else
    return (uint64_t)esp_timer_get_time() * 1000u;
#endif
}

static void say(const char *msg)
{
    char line[200];
    int n = snprintf(line, sizeof line, "rvne: %s\n", msg);
    if (n <= 0)
        return;
    if ((size_t)n >= sizeof line) {     /* cut, but still one whole line */
        n = (int)sizeof line - 1;
        line[n - 1] = '\n';
    }
    console_write(NULL, line, (size_t)n);
}

void temporal_task_log(const char *msg) { say(msg); }

void temporal_task_default_cfg(temporal_task_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->in_fd = fileno(stdin);
    c->out_fd = fileno(stdout);
    c->window = CONFIG_RVNE_WINDOW;
    c->arena_window = CONFIG_RVNE_ARENA_WINDOW;
    c->limits.max_input_dim = CONFIG_RVNE_MAX_INPUT_DIM;
    c->limits.max_heads = CONFIG_RVNE_MAX_HEADS;
    c->limits.max_head_dim = CONFIG_RVNE_MAX_HEAD_DIM;
    c->limits.max_layers = CONFIG_RVNE_MAX_LAYERS;
    c->limits.max_classes = CONFIG_RVNE_MAX_CLASSES;
    c->limits.max_window = CONFIG_RVNE_MAX_WINDOW;
    c->queue_depth = CONFIG_RVNE_QUEUE_DEPTH;
    c->stack_bytes = CONFIG_RVNE_TASK_STACK;
    c->priority = CONFIG_RVNE_TASK_PRIORITY;
    c->core = CONFIG_RVNE_TASK_CORE;
}

/* The arena: for the largest window asked, else for W alone, else none (the
 * loader then reports why); with RVNE_FP16_EXPAND, each first with room for
 * FP16 weights expanded to FP32 (docs/model.md, "FP16 weights": without it
 * the core decodes them at every push, INFO weights=no-room). All sizes come
 * from the core, never guessed. With two slots, for the larger of the two
 * blobs, so either can serve, and at least CONFIG_RVNE_UPDATE_ARENA_BYTES:
 * room for a model that arrives by update (a board booted without any needs
 * it for its first). */
static void size_arena(const rvne_load_cfg *lcfg)
{
    uint32_t wins[2] = {cfg.arena_window > cfg.window ? cfg.arena_window : cfg.window, cfg.window};
    int blobs = 0;
    size_t floor = parts[RVNE_PART_B] != NULL && parts[RVNE_PART_SEL] != NULL ? CONFIG_RVNE_UPDATE_ARENA_BYTES : 0;
    for (int i = 0; i < 4 && arena == NULL; i++) {
        const int expand = i % 2 == 0 && lcfg->fp16_expand;
        size_t need = floor;
        if (i % 2 == 0 && !lcfg->fp16_expand)
            continue;
        for (int s = RVNE_PART_A; s <= RVNE_PART_B; s++) {
            rvne_blob b;
            size_t n, e = 0;
            if (part_map[s] == NULL || rvne_blob_open(&b, part_map[s], parts[s]->size, lcfg) != RVNE_OK ||
                rvne_head_arena_size(&b.hdr, wins[i / 2], &n) != RVNE_OK ||
                (expand && rvne_head_expanded_size(&b.hdr, &e) != RVNE_OK))
                continue;
            blobs++;
            /* + 16: the expansion's alignment in the arena (rvne_model.c) */
            if (e != 0 && e <= SIZE_MAX - n - 16)
                n += e + 16;
            if (n > need)
                need = n;
        }
        if (need == 0 || need > UINT32_MAX)
            continue;
        /* 16-byte aligned (the heap gives 4): the S3's kernels load the
         * caches and activations four floats at a time (docs/targets.md). */
        arena = heap_caps_aligned_alloc(16, need, MALLOC_CAP_8BIT);
        if (arena != NULL) {
            arena_len = need;
            heap_bytes += (uint32_t)need;
        }
    }
    if (arena == NULL && blobs > 0)
        say("no heap for the arena of this model; INFO reports the load error");
}

/* The core's flash callbacks (rvne/flash.h) over esp_partition_*: reads
 * come from the flash itself, not the cache, so the core's read-back after
 * a write checks what the chip holds; esp_partition_write and _erase_range
 * flush the cache over what they touch, so the mapping follows. A failure
 * is one log line naming the call and its esp_err, and RVNE_E_FLASH to the
 * core, which ends the update and keeps the model serving. */
static int flash_failed(const char *call, int p, uint32_t off, esp_err_t err)
{
    char msg[160];
    snprintf(msg, sizeof msg, "%s of partition '%s' at offset 0x%x failed: esp_err 0x%x", call, parts[p]->label,
             (unsigned)off, (unsigned)err);
    say(msg);
    return RVNE_E_FLASH;
}

static int flash_read(void *ctx, int p, uint32_t off, void *buf, uint32_t n)
{
    (void)ctx;
    if (p < 0 || p >= RVNE_PART_COUNT || parts[p] == NULL)
        return RVNE_E_FLASH;
    esp_err_t err = esp_partition_read(parts[p], off, buf, n);
    return err == ESP_OK ? 0 : flash_failed("esp_partition_read", p, off, err);
}

static int flash_erase(void *ctx, int p, uint32_t off, uint32_t n)
{
    (void)ctx;
    if (p < 0 || p >= RVNE_PART_COUNT || parts[p] == NULL)
        return RVNE_E_FLASH;
    part_written[p] = 1;
    rvne_cut_erase(parts[p], p == RVNE_PART_SEL, off, n);
    esp_err_t err = esp_partition_erase_range(parts[p], off, n);
    return err == ESP_OK ? 0 : flash_failed("esp_partition_erase_range", p, off, err);
}

static int flash_prog(void *ctx, int p, uint32_t off, const void *buf, uint32_t n)
{
    (void)ctx;
    if (p < 0 || p >= RVNE_PART_COUNT || parts[p] == NULL)
        return RVNE_E_FLASH;
    part_written[p] = 1;
    rvne_cut_prog(parts[p], p == RVNE_PART_SEL, off, buf, n);
    esp_err_t err = esp_partition_write(parts[p], off, buf, n);
    return err == ESP_OK ? 0 : flash_failed("esp_partition_write", p, off, err);
}

static void map_part(int p);

/* A partition written since it was mapped is mapped again before the core
 * reads it through the map (an update's commit validates and loads the new
 * slot there). On the chip esp_partition_write's cache flush is enough;
 * Espressif's QEMU fills a mapped page from the flash only when its MMU
 * entry changes, so without this the commit saw the slot as it was when
 * mapped (erased: E_ERASED). Only the slot being updated is ever remapped:
 * the model serving reads the other one. */
static const void *flash_map(void *ctx, int p)
{
    (void)ctx;
    if (p < 0 || p >= RVNE_PART_COUNT)
        return NULL;
    if (part_written[p] && part_map[p] != NULL) {
        esp_partition_munmap(map_handle[p]);
        part_map[p] = NULL;
        map_part(p);
    }
    part_written[p] = 0;
    return part_map[p];
}

static void map_part(int p)
{
    char msg[160];
    esp_err_t err = esp_partition_mmap(parts[p], 0, parts[p]->size, ESP_PARTITION_MMAP_DATA, &part_map[p],
                                       &map_handle[p]);
    if (err != ESP_OK) {
        snprintf(msg, sizeof msg, "cannot map partition '%s' (%u bytes at 0x%x): esp_err 0x%x", parts[p]->label,
                 (unsigned)parts[p]->size, (unsigned)parts[p]->address, (unsigned)err);
        say(msg);
        part_map[p] = NULL;
    }
}

static void load_partition(const rvne_load_cfg *lcfg)
{
    static const char *const labels[RVNE_PART_COUNT] = {"rvne_a", "rvne_b", "rvne_sel"};
    const rvne_flash *found = NULL; /* NULL: no partition (E_NO_PARTITION) */
    char msg[200];
    int n = 0;

    for (int p = 0; p < RVNE_PART_COUNT; p++) {
        parts[p] = esp_partition_find_first(ESP_PARTITION_TYPE_DATA, ESP_PARTITION_SUBTYPE_ANY, labels[p]);
        n += parts[p] != NULL;
    }
    if (n != RVNE_PART_COUNT) {
        /* The layout before two slots: one `rvne` partition, served, not updated. */
        memset(parts, 0, sizeof parts);
        parts[RVNE_PART_A] = esp_partition_find_first(
            ESP_PARTITION_TYPE_DATA, (esp_partition_subtype_t)TEMPORAL_TASK_PARTITION_SUBTYPE,
            TEMPORAL_TASK_PARTITION_LABEL);
    }
    if (parts[RVNE_PART_A] == NULL) {
        say("no data partition labelled 'rvne_a', 'rvne_b', 'rvne_sel' nor '" TEMPORAL_TASK_PARTITION_LABEL
            "' (subtype 0x40) in the partition table; flash the app built with partitions.csv");
    } else {
        for (int p = 0; p < RVNE_PART_COUNT; p++) {
            if (parts[p] == NULL)
                continue;
            map_part(p);
            flash.part_offset[p] = parts[p]->address;
            flash.part_size[p] = parts[p]->size;
        }
        flash.read = flash_read;
        flash.map = flash_map;
        flash.erase = flash_erase;
        flash.prog = flash_prog;
        /* The S3's 4 KiB sector; esp_partition_write takes any length (the
         * flash driver splits pages), 4 keeps the core's units word-sized. */
        flash.erase_size = parts[RVNE_PART_A]->erase_size ? parts[RVNE_PART_A]->erase_size : 0x1000u;
        flash.prog_size = 4u;
        found = &flash;
        size_arena(lcfg);
    }
    /* Always through the loader, even with no partition: INFO then reports
     * the same reason words (E_NO_PARTITION, E_TOO_SHORT, E_ERASED, E_CRC,
     * ...) as every port. */
    rvne_slots_boot(&slots, found, &model, cfg.window, arena, arena_len, lcfg);
    if (found != NULL) {
        rvne_slots_describe(&slots, msg, sizeof msg);
        if (slots.layout == RVNE_LAYOUT_SLOTS)
            say(msg);
    }
    if (model.status != RVNE_OK && found != NULL && model.status != RVNE_E_NO_PARTITION) {
        snprintf(msg, sizeof msg, "blob in partition '%s' not loaded: %s; write one with `rvne flash`",
                 parts[slots.active >= 0 ? slots.active : RVNE_PART_A]->label, rvne_status_name(model.status));
        say(msg);
    }
}

static void create_queue(void)
{
    served_seq = slots.current.seq;
    if (model.status != RVNE_OK)
        return;
    uint32_t dim = model.head.config.dim;
    if (dim == 0 || dim > CONFIG_RVNE_MAX_INPUT_DIM || cfg.queue_depth == 0)
        return;
    __atomic_store_n(&frames, xQueueCreate(cfg.queue_depth, dim * sizeof(float)), __ATOMIC_SEQ_CST);
    if (frames == NULL) {
        say("no heap for the frame queue; temporal_task_push_frame drops every frame");
        return;
    }
    heap_bytes += cfg.queue_depth * dim * (uint32_t)sizeof(float);
    queue_dim = dim;
    __atomic_store_n(&frame_dim, dim, __ATOMIC_RELEASE);
}

/* Frames queued for the previous model are dropped (counted in STATS): they
 * are of its input_dim, and it no longer serves. */
static void delete_queue(void)
{
    uint32_t left = 0;
    __atomic_store_n(&frame_dim, 0u, __ATOMIC_SEQ_CST);
    __atomic_store_n(&queue_switching, 1u, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&queue_users, __ATOMIC_SEQ_CST) != 0u)
        vTaskDelay(1);
    left = (uint32_t)uxQueueMessagesWaiting(frames);
    vQueueDelete(frames);
    __atomic_store_n(&frames, NULL, __ATOMIC_SEQ_CST);
    heap_bytes -= cfg.queue_depth * queue_dim * (uint32_t)sizeof(float);
    queue_dim = 0;
    if (left != 0)
        rvne_server_count_drop(&server, left);
}

/* After requests: an UPDATE_COMMIT may have switched the model. A model of
 * the queue's input_dim keeps the queue; one of another dim gets a queue of
 * its own, so temporal_task_push_frame takes its frames at once. */
static void follow_model(void)
{
    if (slots.current.seq == served_seq)
        return;
    if (frames != NULL && (model.status != RVNE_OK || model.head.config.dim != queue_dim))
        delete_queue();
    if (frames == NULL)
        create_queue();
    served_seq = slots.current.seq;
    __atomic_store_n(&queue_switching, 0u, __ATOMIC_SEQ_CST);
}

static void open_wake(void)
{
    if (wake_fd < 0) {
#if !(defined(CONFIG_IDF_TARGET_LINUX) && CONFIG_IDF_TARGET_LINUX)
        esp_vfs_eventfd_config_t ec = ESP_VFS_EVENTD_CONFIG_DEFAULT();
        esp_err_t err = esp_vfs_eventfd_register(&ec);
        if (err != ESP_OK && err != ESP_ERR_INVALID_STATE)     /* INVALID_STATE: registered already */
            return;
#endif
        /* ESP-IDF's eventfd never blocks a read; the host's must be told. */
#ifdef EFD_NONBLOCK
        wake_fd = eventfd(0, EFD_NONBLOCK);
#else
        wake_fd = eventfd(0, 0);
#endif
    }
    console_selects = wake_fd >= 0;
}

int temporal_task_init(const temporal_task_cfg *c)
{
    if (c == NULL || c->window == 0 || c->in_fd < 0 || c->out_fd < 0)
        return RVNE_E_INVAL;
    if (initialised)
        return TEMPORAL_TASK_E_STARTED;
    cfg = *c;

    /* Static: the slots keep a pointer to it (an update's commit checks the
     * new blob with it long after init returned). */
    static rvne_load_cfg lcfg;
    memset(&lcfg, 0, sizeof lcfg);
    lcfg.limits = cfg.limits;
    lcfg.exact_length = 0;
#if defined(CONFIG_RVNE_FP16_EXPAND)
    lcfg.fp16_expand = 1;
#endif
    /* The ROM routine is faster but only trusted once it gives the IEEE
     * check value, chained like zlib (ROM variants differ in conditioning). */
    crc_from_rom = rvne_crc32_hook_ok(esp_rom_crc32_le);
    lcfg.crc32 = crc_from_rom ? esp_rom_crc32_le : NULL;
#if CONFIG_RVNE_SIGNED_MODELS
    /* The board's policy (menuconfig, docs/format.md "Signed models"). */
    static rvne_trust trust;
    if (rvne_trust_init(&trust, &rvne_crypto_mbedtls, CONFIG_RVNE_TRUSTED_KEYS, CONFIG_RVNE_REVOKED_KEYS) != 0)
        say("CONFIG_RVNE_TRUSTED_KEYS / CONFIG_RVNE_REVOKED_KEYS are not up to three 64-hex-digit digests: no key "
            "is trusted");
    lcfg.trust = &trust;
#endif

    port.ctx = NULL;
    port.name = PORT_NAME;
    port.write = console_write;
    port.now = console_now_ns;
    port.clock_unit = "ns";
#if CONFIG_RVNE_PUSH_ICOUNT
    port.now = rvne_icount_now;
    port.clock_unit = "insns";
#endif

    /* Reads must not block: the same loop drains the frame queue. */
    int fl = fcntl(cfg.in_fd, F_GETFL, 0);
    if (fl >= 0)
        fcntl(cfg.in_fd, F_SETFL, fl | O_NONBLOCK);

    open_wake();
    rvne_cut_init(say);
    load_partition(&lcfg);
    create_queue();

    rvne_server_cfg scfg;
    memset(&scfg, 0, sizeof scfg);
    scfg.port = port;
    scfg.line_buf = line_buf;
    scfg.line_max = LINE_MAX_BYTES;
    scfg.out_buf = out_buf;
    scfg.frame_buf = frame_buf;
    scfg.slots = &slots;
    scfg.trust = lcfg.trust;
    int err = rvne_server_init(&server, &scfg, &model);
    if (err != RVNE_OK) {
        say("the protocol server refused its buffers (CONFIG_RVNE_LINE_MAX out of range?)");
        return err;
    }
    initialised = 1;
    announced = 0;
    return 0;
}

static void task_main(void *arg)
{
    (void)arg;
    TickType_t wait = pdMS_TO_TICKS(10);
#if CONFIG_RVNE_PUSH_ICOUNT
    rvne_icount_start();        /* on the core the task is pinned to */
#endif
    for (;;) {
        temporal_task_step(wait > 0 ? wait : 1);
#if CONFIG_RVNE_PUSH_ICOUNT
        (void)rvne_icount_now(NULL);    /* folds ICOUNT before it can wrap */
#endif
    }
}

int temporal_task_start(const temporal_task_cfg *c)
{
    if (task_created)
        return TEMPORAL_TASK_E_STARTED;
    int err = temporal_task_init(c);
    if (err != 0)
        return err;
    BaseType_t core = cfg.core;
    if (portNUM_PROCESSORS < 2)
        core = tskNO_AFFINITY;      /* single-core builds (linux target, unicore) */
    if (xTaskCreatePinnedToCore(task_main, "rvne", cfg.stack_bytes, NULL, cfg.priority, NULL, core) != pdPASS) {
        say("cannot create the rvne task (stack or priority too large?)");
        return TEMPORAL_TASK_E_PLATFORM;
    }
    task_created = 1;
    return 0;
}

static void push_queued(const float *frame)
{
    if (rvne_head_push(&model.head, frame) != RVNE_OK)
        return;
    server.stats.pushes++;
    if (result_fn == NULL)
        return;
    temporal_task_result r;
    r.frame = (uint32_t)server.stats.pushes;
    r.logits = rvne_head_logits(&model.head);
    r.n_classes = model.head.config.n_classes;
    r.cls = 0;
    for (uint32_t i = 1; i < r.n_classes; i++)
        if (r.logits[i] > r.logits[r.cls])
            r.cls = i;
    result_fn(&r, result_ctx);
}

void temporal_task_on_result(temporal_task_result_fn fn, void *ctx)
{
    result_ctx = ctx;
    result_fn = fn;
}

uint32_t temporal_task_input_dim(void) { return __atomic_load_n(&frame_dim, __ATOMIC_ACQUIRE); }

uint32_t temporal_task_n_classes(void) { return frame_dim ? model.head.config.n_classes : 0; }

/* One turn: frames queued, then what the console has; 1 when there was any. */
static int serve_once(void)
{
    if (wake_fd >= 0) {
        /* Cleared before the queue is drained: a frame queued after this
         * sets it again, so none is left waiting for a wake-up. */
        uint64_t v;
        (void)read(wake_fd, &v, sizeof v);
    }
    uint32_t drops = __atomic_exchange_n(&pending_drops, 0u, __ATOMIC_ACQ_REL);
    if (drops != 0)
        rvne_server_count_drop(&server, drops);

    /* Frames queued before a request are pushed before it is answered, so
     * STATS and LOGITS see them. */
    int busy = 0;
    if (frames != NULL)
        while (xQueueReceive(frames, drain_frame, 0) == pdTRUE) {
            push_queued(drain_frame);
            busy = 1;
        }
    uint8_t rx[RX_CHUNK];
    for (int i = 0; i < 16; i++) {  /* bounded, so queued frames are not starved */
        ssize_t n = read(cfg.in_fd, rx, sizeof rx);
        if (n <= 0)
            break;
        rvne_server_feed(&server, rx, (size_t)n);
        busy = 1;
    }
    follow_model();
    return busy;
}

/* Idle: sleep until the console has bytes or a producer queued a frame, at
 * most wait_ticks, in select() on both (the UART driver wakes it as bytes
 * arrive). Without select, sleep on the queue: a frame still wakes the
 * task, a request waits up to wait_ticks. Returns 1 when a frame was taken
 * here (and pushed). */
static int idle_wait(uint32_t wait_ticks)
{
    if (console_selects) {
        fd_set rd;
        FD_ZERO(&rd);
        FD_SET(cfg.in_fd, &rd);
        FD_SET(wake_fd, &rd);
        uint32_t ms = (uint32_t)((uint64_t)wait_ticks * 1000u / configTICK_RATE_HZ);
        struct timeval tv = {(time_t)(ms / 1000u), (suseconds_t)(ms % 1000u) * 1000};
        int n = select((cfg.in_fd > wake_fd ? cfg.in_fd : wake_fd) + 1, &rd, NULL, NULL, &tv);
        if (n >= 0) {
            return 0;
        }
        if (errno != EINTR)
            console_selects = 0;
        return 0;
    }
    if (frames != NULL) {
        if (xQueueReceive(frames, drain_frame, wait_ticks) == pdTRUE) {
            push_queued(drain_frame);
            return 1;
        }
    } else {
        vTaskDelay(wait_ticks);
    }
    return 0;
}

void temporal_task_step(uint32_t wait_ticks)
{
    if (!initialised)
        return;
    if (!announced) {
        rvne_print_banner(&port, &model);
        announced = 1;
    }
    if (serve_once() || wait_ticks == 0)
        return;
    /* What woke the task is served in the same turn. */
    if (!idle_wait(wait_ticks))
        (void)serve_once();
}

int temporal_task_push_frame(const float *frame, uint32_t len)
{
    int err = 0;
    __atomic_fetch_add(&queue_users, 1u, __ATOMIC_SEQ_CST);
    uint32_t dim = __atomic_load_n(&frame_dim, __ATOMIC_SEQ_CST);
    QueueHandle_t q = __atomic_load_n(&frames, __ATOMIC_SEQ_CST);
    if (dim == 0 || q == NULL || __atomic_load_n(&queue_switching, __ATOMIC_SEQ_CST) != 0u)
        err = TEMPORAL_TASK_E_NO_MODEL;
    else if (frame == NULL || len != dim)
        err = RVNE_E_INVAL;
    else if (xQueueSend(q, frame, 0) != pdTRUE)
        err = TEMPORAL_TASK_E_FULL;
    __atomic_fetch_sub(&queue_users, 1u, __ATOMIC_SEQ_CST);
    if (err == 0 && wake_fd >= 0) {
        uint64_t one = 1;
        (void)write(wake_fd, &one, sizeof one);
    }
    if (err != 0)
        __atomic_fetch_add(&pending_drops, 1u, __ATOMIC_ACQ_REL);
    return err;
}

int temporal_task_crc_from_rom(void) { return crc_from_rom; }

int temporal_task_load_status(void) { return initialised ? model.status : RVNE_E_INVAL; }

uint32_t temporal_task_heap_bytes(void) { return heap_bytes; }

void temporal_task_deinit(void)
{
    if (frames != NULL)
        vQueueDelete(frames);
    for (int p = 0; p < RVNE_PART_COUNT; p++)
        if (part_map[p] != NULL)
            esp_partition_munmap(map_handle[p]);
    heap_caps_free(arena);
    frames = NULL;
    arena = NULL;
    arena_len = 0;
    memset(parts, 0, sizeof parts);
    memset(part_map, 0, sizeof part_map);
    memset(part_written, 0, sizeof part_written);
    memset(&flash, 0, sizeof flash);
    memset(&slots, 0, sizeof slots);
    frame_dim = 0;
    queue_dim = 0;
    queue_users = queue_switching = 0;
    served_seq = 0;
    heap_bytes = 0;
    crc_from_rom = 0;
    initialised = announced = task_created = 0;
    pending_drops = 0;
    result_fn = NULL;
    result_ctx = NULL;
    memset(&model, 0, sizeof model);
    memset(&server, 0, sizeof server);
}
