/* rvne-vdev: the virtual device. The portable core behind a file that stands
 * in for the flash partition, served on stdio or on a pseudo-terminal.
 *
 *   rvne-vdev [--window W] [--line-max N] [--fp16 expand|decode] [--pty] PARTITION_FILE
 *   rvne-vdev [...] --flash [--erase-size E] [--prog-size P] FLASH_IMAGE
 *
 * --fp16: FP16 weights expanded to FP32 once at load (the default) or
 * decoded at every push (docs/model.md, "FP16 weights"); INFO's weights=.
 * The first serves a blob (or one partition's bytes), read-only. The second
 * boots a whole flash image as a board does, by its partition table and
 * selector, and writes updates into it (flash_file.c).
 * Only a usage error exits non-zero before serving: a missing, empty or
 * invalid partition boots anyway and INFO tells why, like a real board. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rvne/proto.h"
#include "rvne/status.h"
#include "vdev.h"

#define DEFAULT_WINDOW 100u
#define DEFAULT_LINE_MAX 16384u
#define LINE_MAX_MIN 1024u
#define LINE_MAX_MAX (16u * 1024u * 1024u)
/* The kernel's caches for any window WINDOW may ask for; untouched pages of
 * this cost nothing. */
#define ARENA_BYTES (64u * 1024u * 1024u)
/* The ESP32-S3's flash sector and a word; --erase-size 65536 models the lx60's CFI flash. */
#define DEFAULT_ERASE 4096u
#define DEFAULT_PROG 4u
#define USAGE "usage: rvne-vdev [--window W] [--line-max N] [--fp16 expand|decode] [--pty] PARTITION_FILE\n" \
              "       rvne-vdev [--window W] [--line-max N] [--fp16 expand|decode] [--pty] --flash [--erase-size E] " \
              "[--prog-size P] FLASH_IMAGE"

static uint64_t arena[ARENA_BYTES / sizeof(uint64_t)];

static int usage(const char *why)
{
    fprintf(stderr, "rvne-vdev: %s\n%s\n", why, USAGE);
    return 2;
}

/* Canonical decimal in [lo, hi]. */
static int parse_num(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
    char *end;
    unsigned long v;
    if (s == NULL || *s < '0' || *s > '9') return 0;
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

int main(int argc, char **argv)
{
    unsigned long window = DEFAULT_WINDOW, line_max = DEFAULT_LINE_MAX;
    unsigned long erase_size = DEFAULT_ERASE, prog_size = DEFAULT_PROG;
    const char *path = NULL;
    int use_pty = 0, use_flash = 0, fp16_expand = 1, fd_out = STDOUT_FILENO, i, rc;
    static rvne_model model;
    static rvne_server server;
    static rvne_slots slots;
    static flash_file ff;
    rvne_server_cfg cfg;
    rvne_load_cfg load;
    static rvne_trust trust;
    part_map pm;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pty") == 0) {
            use_pty = 1;
        } else if (strcmp(argv[i], "--window") == 0) {
            if (!parse_num(i + 1 < argc ? argv[++i] : NULL, 1, 0xFFFFFFFFul, &window))
                return usage("--window takes a whole number 1 ... 4294967295");
        } else if (strcmp(argv[i], "--line-max") == 0) {
            if (!parse_num(i + 1 < argc ? argv[++i] : NULL, LINE_MAX_MIN, LINE_MAX_MAX, &line_max))
                return usage("--line-max takes a whole number 1024 ... 16777216");
        } else if (strcmp(argv[i], "--fp16") == 0) {
            const char *v = i + 1 < argc ? argv[++i] : "";
            if (strcmp(v, "expand") != 0 && strcmp(v, "decode") != 0)
                return usage("--fp16 takes expand or decode");
            fp16_expand = strcmp(v, "expand") == 0;
        } else if (strcmp(argv[i], "--flash") == 0) {
            use_flash = 1;
        } else if (strcmp(argv[i], "--erase-size") == 0) {
            if (!parse_num(i + 1 < argc ? argv[++i] : NULL, 1, 1ul << 24, &erase_size) ||
                (erase_size & (erase_size - 1)) != 0)
                return usage("--erase-size takes a power of two 1 ... 16777216");
        } else if (strcmp(argv[i], "--prog-size") == 0) {
            if (!parse_num(i + 1 < argc ? argv[++i] : NULL, 1, 16, &prog_size) || (prog_size & (prog_size - 1)) != 0)
                return usage("--prog-size takes a power of two 1 ... 16");
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("%s\n", USAGE);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "rvne-vdev: unknown option %s\n", argv[i]);
            return usage("see usage");
        } else if (path == NULL) {
            path = argv[i];
        } else {
            return usage("give exactly one PARTITION_FILE");
        }
    }
    if (path == NULL) return usage("missing PARTITION_FILE (a blob or a partition image)");

    memset(&load, 0, sizeof load);
    load.exact_length = 0; /* a blob file or a whole partition image */
    load.fp16_expand = fp16_expand;
    if (vdev_trust(&trust) != 0) {
        fprintf(stderr, "rvne-vdev: RVNE_TRUSTED_KEYS / RVNE_REVOKED_KEYS of this build are not up to three "
                        "comma-separated 64-hex-digit digests; rebuild with `make posix-signed`\n");
        return 2;
    }
    load.trust = &trust;
    memset(&pm, 0, sizeof pm);
    if (use_flash) {
        char note[200];
        if (flash_file_open(&ff, path, (uint32_t)erase_size, (uint32_t)prog_size) != 0)
            fprintf(stderr, "rvne-vdev: %s; serving without a model\n", ff.why);
        rc = rvne_slots_boot(&slots, ff.mem ? &ff.flash : NULL, &model, (uint32_t)window, arena, sizeof arena,
                             &load);
        rvne_slots_describe(&slots, note, sizeof note);
        fprintf(stderr, "rvne-vdev: %s\n", note);
    } else {
        part_map_open(&pm, path);
        if (pm.why[0] != '\0')
            fprintf(stderr, "rvne-vdev: %s; serving %s\n", pm.why,
                    pm.data ? "with an empty partition" : "without a partition");
        rc = rvne_model_load(&model, pm.data, pm.len, (uint32_t)window, arena, sizeof arena, &load);
        if (rc == RVNE_OK) {
            /* The policy holds for a partition file too (rvne_slots_boot checks its slots). */
            rvne_sig_info sig;
            rc = rvne_sig_check(&trust, (const uint8_t *)pm.data, pm.len, model.blob.total_len, 0, 0u, &sig);
            if (rc != RVNE_OK) model.status = rc;
        }
    }
    if (rc != RVNE_OK)
        fprintf(stderr, "rvne-vdev: no model loaded from %s: %s\n", path, rvne_status_name(rc));

    memset(&cfg, 0, sizeof cfg);
    cfg.port.ctx = &fd_out;
    cfg.port.name = "posix";
    cfg.port.write = vdev_write;
    cfg.port.now = vdev_now_ns;
    cfg.port.clock_unit = "ns";
    cfg.line_max = line_max;
    cfg.line_buf = malloc(line_max + 1);
    cfg.out_buf = malloc(line_max + 16);
    cfg.frame_buf = malloc((line_max * 3 / 16 + 1) * sizeof(float));
    cfg.slots = use_flash ? &slots : NULL;
    cfg.trust = &trust;
    if (!cfg.line_buf || !cfg.out_buf || !cfg.frame_buf) {
        fprintf(stderr, "rvne-vdev: out of memory for --line-max %lu\n", line_max);
        return 1;
    }
    rc = rvne_server_init(&server, &cfg, &model);
    if (rc != RVNE_OK) {
        fprintf(stderr, "rvne-vdev: server init failed: %s\n", rvne_status_name(rc));
        return 1;
    }
    rc = use_pty ? serve_pty(&server, &model) : serve_stdio(&server, &model);
    part_map_close(&pm);
    if (use_flash) flash_file_close(&ff);
    free(cfg.line_buf);
    free(cfg.out_buf);
    free(cfg.frame_buf);
    return rc;
}
