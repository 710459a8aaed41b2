/* Updating the model of the esp32s3 app (ports/esp32s3/main/temporal_task.c)
 * over its console, on the host against the ESP-IDF double: the two-slot
 * layout as three partitions (rvne_a, rvne_b, rvne_sel, each a file), the
 * core's UPDATE_* commands going through the app's flash callbacks to
 * esp_partition_erase_range / esp_partition_write / esp_partition_read
 * (NOR semantics: a write ANDs). A flash call failing at each point of an
 * update (the double's flash_fail_at) must leave the old model serving, now
 * and after a reboot from the same files, and the next update must work.
 * Argument: a directory for the files. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "esp_double.h"
#include "temporal_task.h"
#include "rvne/base64.h"
#include "rvne/crc32.h"
#include "rvne/proto.h"
#include "rvne/update.h"

/* Dims within sdkconfig.h's limits, big enough for several chunks and
 * sectors: 20,788 bytes over six 4 KiB sectors. */
enum { D = 16, HQ = 4, HKV = 1, HD = 16, NL = 2, NC = 4 };
#define WEIGHTS_OF(d) (NL * (2 * (d) * HQ * HD + 2 * (d) * HKV * HD) + (d) * NC)
#define LEN_OF(d) (24 + 4 * WEIGHTS_OF(d) + 4)
#define N_WEIGHTS WEIGHTS_OF(D)
#define MODEL_LEN LEN_OF(D)
#define D_NARROW 8              /* a model of another input_dim */
#define SLOT_LEN 0x8000
#define SEL_LEN 0x2000          /* two 4 KiB sectors: one record copy each */

static char dir[400];
static char path_a[512], path_b[512], path_sel[512];
static uint8_t model_old[MODEL_LEN], model_new[MODEL_LEN], model_narrow[LEN_OF(D_NARROW)];
static uint32_t crc_old, crc_new, crc_narrow;

static uint32_t build_model(uint8_t *m, uint32_t seed, uint32_t d)
{
    uint32_t s = seed, n_weights = WEIGHTS_OF(d), len = LEN_OF(d);
    memset(m, 0, len);
    put32(m, RVNE_MAGIC);
    put16(m + 4, 1);
    put16(m + 8, (uint16_t)d);
    put16(m + 10, HQ);
    put16(m + 12, HKV);
    put16(m + 14, HD);
    put16(m + 16, NL);
    put16(m + 18, NC);
    put32(m + 20, 4 * n_weights);
    for (uint32_t i = 0; i < n_weights; i++) {
        s = s * 1103515245u + 12345u;
        float w = (float)((int32_t)(s >> 9) - (1 << 22)) / (float)(1 << 25);
        memcpy(m + 24 + 4 * i, &w, 4);
    }
    uint32_t crc = rvne_crc32(0, m, len - 4);
    put32(m + len - 4, crc);
    return crc;
}

static uint8_t file_buf[SLOT_LEN];

static void write_file(const char *path, size_t len, size_t at, const void *data, size_t n)
{
    uint8_t *img = file_buf;
    memset(img, 0xFF, len);
    if (data != NULL)
        memcpy(img + at, data, n);
    FILE *f = fopen(path, "wb");
    if (img == NULL || f == NULL || fwrite(img, 1, len, f) != len) {
        fprintf(stderr, "test_model_update: cannot write %s\n", path);
        exit(2);
    }
    fclose(f);
}

static int file_holds(const char *path, size_t at, const void *data, size_t n)
{
    uint8_t *buf = file_buf;
    FILE *f = fopen(path, "rb");
    int same = n <= sizeof file_buf && f != NULL && fseek(f, (long)at, SEEK_SET) == 0 && fread(buf, 1, n, f) == n &&
               memcmp(buf, data, n) == 0;
    if (f != NULL)
        fclose(f);
    return same;
}

/* Slot A holds OLD, a record (seq 1, copy 0) names it, slot B is erased. */
static void flash_old(void)
{
    rvne_sel_record r = {1u, RVNE_PART_A, MODEL_LEN, crc_old};
    uint8_t rec[RVNE_SEL_RECORD_LEN];
    rvne_sel_encode(&r, rec);
    write_file(path_a, SLOT_LEN, 0, model_old, MODEL_LEN);
    write_file(path_b, SLOT_LEN, 0, NULL, 0);
    write_file(path_sel, SEL_LEN, 0, rec, sizeof rec);
}

/* fopen allocates: the test binaries count every allocation (port.mk). */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n) { return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return __real_realloc(p, n); }

/* ---- the app's console, driven from here ----------------------------------------- */
static int in_pipe[2], out_pipe[2];
static char console[1 << 17];
static size_t console_len;
static uint32_t next_seq = 1;

static void read_console(void)
{
    ssize_t n;
    while ((n = read(out_pipe[0], console + console_len, sizeof console - 1 - console_len)) > 0)
        console_len += (size_t)n;
    console[console_len] = '\0';
}

static void power_on(void)
{
    temporal_task_cfg c;
    if (pipe(in_pipe) != 0 || pipe(out_pipe) != 0)
        exit(2);
    fcntl(out_pipe[0], F_SETFL, fcntl(out_pipe[0], F_GETFL, 0) | O_NONBLOCK);
    console_len = 0;
    esp_double_set_partition("rvne_a", 0x01, 0x40, path_a);
    esp_double_add_partition("rvne_b", 0x01, 0x40, path_b);
    esp_double_add_partition("rvne_sel", 0x01, 0x41, path_sel);
    temporal_task_default_cfg(&c);
    c.in_fd = in_pipe[0];
    c.out_fd = out_pipe[1];
    CHECK_EQ(temporal_task_start(&c), 0);
    temporal_task_step(0);
    read_console();
}

static void power_off(void)
{
    temporal_task_deinit();
    esp_double_reset();
    close(in_pipe[0]);
    close(in_pipe[1]);
    close(out_pipe[0]);
    close(out_pipe[1]);
}

/* One request (printf-style body); the reply line's text after "<SEQ ",
 * without its CRC, or "(none)". */
static const char *request(const char *fmt, ...)
{
    static char line[8192];
    static char reply[512];
    va_list ap;
    uint32_t seq = next_seq++;
    int n = snprintf(line, sizeof line, ">%u ", (unsigned)seq);
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 12, fmt, ap);
    va_end(ap);
    n += snprintf(line + n, 12, "*%08X\n", (unsigned)rvne_crc32(0, (const uint8_t *)line, (uint32_t)n));
    if (write(in_pipe[1], line, (size_t)n) != n)
        exit(2);
    size_t from = console_len;
    temporal_task_step(0);
    read_console();
    char tag[16];
    int tl = snprintf(tag, sizeof tag, "<%u ", (unsigned)seq);
    const char *p = strstr(console + from, tag);
    if (p == NULL)
        return "(none)";
    size_t k = strcspn(p + tl, "*\n");
    if (k >= sizeof reply)
        k = sizeof reply - 1;
    memcpy(reply, p + tl, k);
    reply[k] = '\0';
    return reply;
}

static int has(const char *reply, const char *words) { return strstr(reply, words) != NULL; }

/* UPDATE_BEGIN .. UPDATE_COMMIT of `m`; the first reply that is not OK, or
 * NULL when all were. */
static const char *update_len(const uint8_t *m, uint32_t len, uint32_t crc);

static const char *update(const uint8_t *m, uint32_t crc) { return update_len(m, MODEL_LEN, crc); }

static const char *update_len(const uint8_t *m, uint32_t len, uint32_t crc)
{
    static char b64[4200];
    static char failed[512];
    const char *r = request("UPDATE_BEGIN %u %08X", (unsigned)len, (unsigned)crc);
    const char *c = strstr(r, " chunk=");
    if (strncmp(r, "OK", 2) != 0 || c == NULL)
        return strcpy(failed, r);
    uint32_t chunk = (uint32_t)strtoul(c + 7, NULL, 10);
    if (chunk == 0 || chunk > 3072)
        return "chunk size out of range";
    for (uint32_t off = 0; off < len; off += chunk) {
        uint32_t n = len - off < chunk ? len - off : chunk;
        long k = rvne_b64_encode(b64, sizeof b64 - 1, m + off, n);
        if (k < 0)
            return "base64";
        b64[k] = '\0';
        r = request("UPDATE_CHUNK %u %08X %s", (unsigned)off, (unsigned)rvne_crc32(0, m + off, n), b64);
        if (strncmp(r, "OK", 2) != 0)
            return strcpy(failed, r);
    }
    r = request("UPDATE_COMMIT %08X", (unsigned)crc);
    return strncmp(r, "OK", 2) == 0 ? NULL : strcpy(failed, r);
}

static int serves(uint32_t crc, const char *slot)
{
    char want[64];
    const char *r = request("INFO");
    snprintf(want, sizeof want, " crc=%08X", (unsigned)crc);
    return has(r, " status=loaded") && has(r, want) && has(r, slot);
}

/* ---- tests ------------------------------------------------------------------------- */
static void test_update_goes_through_esp_partition(void)
{
    flash_old();
    power_on();
    CHECK(has(console, "ready: OK"));
    CHECK(serves(crc_old, " slot=a"));
    const char *why = update(model_new, crc_new);
    CHECK(why == NULL);
    if (why != NULL)
        fprintf(stderr, "test_model_update: update refused: %s\n", why);
    CHECK(serves(crc_new, " slot=b"));
    /* Through the app's callbacks: whole sectors erased, the blob written
     * (the core pads its end to 4 bytes), read back from flash. */
    const esp_double_counts *n = esp_double_counts_get();
    CHECK_EQ(n->flash_erases, (MODEL_LEN + ESP_DOUBLE_SECTOR - 1) / ESP_DOUBLE_SECTOR + 1);
    CHECK(n->flash_write_bytes >= MODEL_LEN + RVNE_SEL_RECORD_LEN);
    CHECK(n->flash_reads > 0);
    power_off();
    CHECK(file_holds(path_b, 0, model_new, MODEL_LEN));
    CHECK(file_holds(path_a, 0, model_old, MODEL_LEN));

    /* The files are the flash: a reboot serves NEW by its record, and a
     * second update goes back into slot A. */
    power_on();
    CHECK(serves(crc_new, " slot=b"));
    CHECK(has(request("INFO"), " seq=2"));
    CHECK(update(model_old, crc_old) == NULL);
    CHECK(serves(crc_old, " slot=a"));
    CHECK(has(request("INFO"), " seq=3"));
    power_off();
}

/* Every flash call of an update failing in turn (an erase or write
 * returning ESP_FAIL, as a flash fault or a power cut inside it would
 * leave the call): the update is refused with E_FLASH and a log line
 * naming the call, OLD keeps serving, also after a reboot from the same
 * files, and the same update then succeeds. */
static void test_a_failing_flash_call_keeps_the_old_model(void)
{
    unsigned ops;
    /* How many erase/write calls a whole update makes (none fails). */
    flash_old();
    power_on();
    esp_double_faults_get()->flash_fail_at = 1000000;
    CHECK(update(model_new, crc_new) == NULL);
    ops = esp_double_counts_get()->flash_ops;
    power_off();
    CHECK(ops >= 8);
    for (unsigned at = 1; at <= ops; at++) {
        flash_old();
        power_on();
        esp_double_faults_get()->flash_fail_at = at;
        const char *why = update(model_new, crc_new);
        CHECK(why != NULL && has(why, "E_FLASH"));
        CHECK(has(console, "failed: esp_err 0xffffffff"));
        CHECK(serves(crc_old, " slot=a"));
        power_off();
        power_on();
        CHECK(serves(crc_old, " slot=a"));
        CHECK(update(model_new, crc_new) == NULL);
        CHECK(serves(crc_new, " slot=b"));
        power_off();
    }
}

/* The number after " NAME=" in a STATS reply (-1: none). */
static long stats_field(const char *reply, const char *name)
{
    char key[32];
    snprintf(key, sizeof key, " %s=", name);
    const char *at = reply != NULL ? strstr(reply, key) : NULL;
    return at != NULL ? strtol(at + strlen(key), NULL, 10) : -1;
}

/* A board flashed without a model (both slots and the selector erased)
 * takes its first one by update: the arena floor (CONFIG_RVNE_UPDATE_ARENA_BYTES)
 * holds it, and frames from temporal_task_push_frame reach it once it
 * serves. A later model of another input_dim gets a queue of its own. */
static void test_first_model_by_update_and_frames_follow(void)
{
    float frame[D];
    memset(frame, 0, sizeof frame);
    write_file(path_a, SLOT_LEN, 0, NULL, 0);
    write_file(path_b, SLOT_LEN, 0, NULL, 0);
    write_file(path_sel, SEL_LEN, 0, NULL, 0);
    power_on();
    CHECK(has(request("INFO"), " status=error"));
    CHECK_EQ(temporal_task_input_dim(), 0);
    CHECK_EQ(temporal_task_push_frame(frame, D), TEMPORAL_TASK_E_NO_MODEL);
    CHECK(update(model_new, crc_new) == NULL);
    CHECK(serves(crc_new, " slot=b"));
    temporal_task_step(0);
    CHECK_EQ(temporal_task_input_dim(), D);
    CHECK_EQ(temporal_task_push_frame(frame, D), 0);
    temporal_task_step(0);
    CHECK(has(request("STATS"), " pushes=1"));

    /* A frame left queued for the wide model when the narrow one starts
     * serving is dropped and counted; the queue is made anew for the
     * narrow model's frames, which reach it at once. */
    CHECK_EQ(temporal_task_push_frame(frame, D), 0);
    CHECK(update_len(model_narrow, LEN_OF(D_NARROW), crc_narrow) == NULL);
    CHECK(serves(crc_narrow, " slot=a"));
    temporal_task_step(0);
    CHECK_EQ(temporal_task_input_dim(), D_NARROW);
    CHECK(temporal_task_push_frame(frame, D) != 0);
    {
        char before[256];
        snprintf(before, sizeof before, "%s", request("STATS"));
        CHECK(has(before, " drops=2"));
        CHECK_EQ(temporal_task_push_frame(frame, D_NARROW), 0);
        temporal_task_step(0);
        CHECK(stats_field(request("STATS"), "pushes") == stats_field(before, "pushes") + 1);
    }
    CHECK(update(model_old, crc_old) == NULL);
    temporal_task_step(0);
    CHECK_EQ(temporal_task_input_dim(), D);
    CHECK_EQ(temporal_task_push_frame(frame, D), 0);
    power_off();
}

/* The double's flash calls take what ESP-IDF v5.1 takes and refuse what it
 * refuses, and writes AND like NOR flash. */
static void test_double_flash_calls(void)
{
    uint8_t zero[4] = {0, 0, 0, 0}, ff[4] = {0xFF, 0xFF, 0xFF, 0xFF}, back[4];
    flash_old();
    esp_double_set_partition("rvne_b", 0x01, 0x40, path_b);
    const esp_partition_t *p = esp_partition_find_first(ESP_PARTITION_TYPE_DATA, ESP_PARTITION_SUBTYPE_ANY, "rvne_b");
    CHECK(p != NULL);
    if (p == NULL)
        return;
    CHECK_EQ(esp_partition_write(p, 8, zero, 4), ESP_OK);
    CHECK_EQ(esp_partition_write(p, 8, ff, 4), ESP_OK);
    CHECK_EQ(esp_partition_read(p, 8, back, 4), ESP_OK);
    CHECK(memcmp(back, zero, 4) == 0);
    CHECK_EQ(esp_partition_erase_range(p, 0, ESP_DOUBLE_SECTOR), ESP_OK);
    CHECK_EQ(esp_partition_read(p, 8, back, 4), ESP_OK);
    CHECK(memcmp(back, ff, 4) == 0);
    CHECK_EQ(esp_partition_erase_range(p, 1, ESP_DOUBLE_SECTOR), ESP_ERR_INVALID_ARG);
    CHECK_EQ(esp_partition_erase_range(p, 0, 100), ESP_ERR_INVALID_SIZE);
    CHECK_EQ(esp_partition_erase_range(p, SLOT_LEN, ESP_DOUBLE_SECTOR), ESP_ERR_INVALID_SIZE);
    CHECK_EQ(esp_partition_write(p, SLOT_LEN + 1, ff, 1), ESP_ERR_INVALID_ARG);
    CHECK_EQ(esp_partition_write(p, SLOT_LEN - 2, ff, 4), ESP_ERR_INVALID_SIZE);
    CHECK_EQ(esp_partition_read(p, SLOT_LEN - 2, back, 4), ESP_ERR_INVALID_SIZE);
    esp_double_reset();
}

int main(int argc, char **argv)
{
    snprintf(dir, sizeof dir, "%s", argc > 1 ? argv[1] : ".");
    snprintf(path_a, sizeof path_a, "%s/upd_rvne_a.bin", dir);
    snprintf(path_b, sizeof path_b, "%s/upd_rvne_b.bin", dir);
    snprintf(path_sel, sizeof path_sel, "%s/upd_rvne_sel.bin", dir);
    crc_old = build_model(model_old, 7, D);
    crc_new = build_model(model_new, 8, D);
    crc_narrow = build_model(model_narrow, 9, D_NARROW);
    test_update_goes_through_esp_partition();
    test_a_failing_flash_call_keeps_the_old_model();
    test_first_model_by_update_and_frames_follow();
    test_double_flash_calls();
    return CHECK_DONE("test_model_update");
}
