/* The virtual device's flash (`rvne-vdev --flash IMAGE`): a whole flash
 * image, as `rvne flash --image` writes it, behind the core's rvne_flash
 * (rvne/flash.h). Reads and the loader's map come from a private copy in
 * memory (a board's flash does not shrink under its firmware either);
 * every erase and program goes to that copy and, with pwrite, to the file,
 * so a device killed at any point restarts from what a board would find.
 *
 * Power cuts for tests (docs/protocol.md, "The virtual device"):
 * RVNE_VDEV_CUT=KIND:N kills the device with SIGKILL inside its N-th
 * operation of KIND (1-based), after half of that operation reached the
 * file: erase, prog (slot erase/program), sel-erase, sel-prog (the
 * selector's), or rx (after N bytes received on the serving stream).
 *
 * Flash timing for benchmarks: RVNE_VDEV_FLASH_US=E,P makes every erase
 * block take E microseconds and every 256 programmed bytes P (a real
 * chip's sector erase and page program; the host's file is far faster). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "rvne/ptable.h"
#include "rvne/status.h"
#include "vdev.h"

#define FLASH_MAX ((size_t)256 << 20)

enum { CUT_NONE, CUT_ERASE, CUT_PROG, CUT_SEL_ERASE, CUT_SEL_PROG, CUT_RX };

static int cut_kind = CUT_NONE;
static unsigned long cut_at, cut_count;
static unsigned long erase_us, prog_us_256;

static void parse_timing(void)
{
    const char *v = getenv("RVNE_VDEV_FLASH_US");
    char *end;
    if (v == NULL || *v == '\0') return;
    errno = 0;
    erase_us = strtoul(v, &end, 10);
    if (errno == 0 && *end == ',') prog_us_256 = strtoul(end + 1, &end, 10);
    if (errno != 0 || *end != '\0') {
        fprintf(stderr, "rvne-vdev: RVNE_VDEV_FLASH_US=%s is not ERASE_US,PROG_US_PER_256; ignored\n", v);
        erase_us = prog_us_256 = 0;
    }
}

/* The time a chip would take; the work itself is done at host speed. */
static void take(unsigned long us)
{
    struct timespec ts;
    if (us == 0) return;
    ts.tv_sec = (time_t)(us / 1000000ul);
    ts.tv_nsec = (long)(us % 1000000ul) * 1000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void parse_cut(void)
{
    static const struct { const char *name; int kind; } kinds[] = {
        {"erase", CUT_ERASE}, {"prog", CUT_PROG}, {"sel-erase", CUT_SEL_ERASE},
        {"sel-prog", CUT_SEL_PROG}, {"rx", CUT_RX},
    };
    const char *v = getenv("RVNE_VDEV_CUT");
    const char *colon;
    char *end;
    size_t i;
    if (v == NULL || *v == '\0') return;
    colon = strchr(v, ':');
    if (colon != NULL) {
        for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            if (strlen(kinds[i].name) == (size_t)(colon - v) && strncmp(v, kinds[i].name, (size_t)(colon - v)) == 0) {
                errno = 0;
                cut_at = strtoul(colon + 1, &end, 10);
                if (errno == 0 && *end == '\0' && cut_at > 0) {
                    cut_kind = kinds[i].kind;
                    return;
                }
            }
        }
    }
    fprintf(stderr, "rvne-vdev: RVNE_VDEV_CUT=%s is not KIND:N (erase, prog, sel-erase, sel-prog, rx); ignored\n", v);
}

/* 1 when this operation is the one to cut. */
static int cut_now(int kind)
{
    return cut_kind == kind && ++cut_count == cut_at;
}

static void power_off(void)
{
    /* As a board losing power: no cleanup, no flush beyond what reached the file. */
    raise(SIGKILL);
    _exit(137);
}

static int store(flash_file *ff, size_t at, const uint8_t *src, size_t n)
{
    size_t done = 0;
    memcpy(ff->mem + at, src, n);
    while (done < n) {
        ssize_t w = pwrite(ff->fd, ff->mem + at + done, n - done, (off_t)(at + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return RVNE_E_FLASH;
        done += (size_t)w;
    }
    return 0;
}

static int in_part(const flash_file *ff, int part, uint32_t off, uint32_t n)
{
    return part >= 0 && part < RVNE_PART_COUNT && (uint64_t)off + n <= ff->flash.part_size[part];
}

static int ff_read(void *ctx, int part, uint32_t off, void *buf, uint32_t n)
{
    flash_file *ff = ctx;
    if (!in_part(ff, part, off, n)) return RVNE_E_FLASH;
    memcpy(buf, ff->mem + ff->flash.part_offset[part] + off, n);
    return 0;
}

static int ff_erase(void *ctx, int part, uint32_t off, uint32_t n)
{
    flash_file *ff = ctx;
    uint8_t ones[4096];
    size_t at, done, upto;
    int cut;
    if (!in_part(ff, part, off, n) || off % ff->flash.erase_size || n % ff->flash.erase_size) return RVNE_E_FLASH;
    memset(ones, 0xFF, sizeof ones);
    at = ff->flash.part_offset[part] + off;
    cut = cut_now(part == RVNE_PART_SEL ? CUT_SEL_ERASE : CUT_ERASE);
    upto = cut ? n / 2 : n;
    take(erase_us * (n / ff->flash.erase_size));
    for (done = 0; done < upto; done += sizeof ones) {
        size_t k = upto - done < sizeof ones ? upto - done : sizeof ones;
        if (store(ff, at + done, ones, k) != 0) return RVNE_E_FLASH;
    }
    if (cut) power_off();
    return 0;
}

static int ff_prog(void *ctx, int part, uint32_t off, const void *buf, uint32_t n)
{
    flash_file *ff = ctx;
    const uint8_t *src = buf;
    const uint8_t *dst;
    uint8_t tmp[256];
    uint32_t i, done, upto;
    int cut;
    if (!in_part(ff, part, off, n) || off % ff->flash.prog_size || n % ff->flash.prog_size) return RVNE_E_FLASH;
    dst = ff->mem + ff->flash.part_offset[part] + off;
    cut = cut_now(part == RVNE_PART_SEL ? CUT_SEL_PROG : CUT_PROG);
    upto = cut ? n / 2 : n;
    take(prog_us_256 * ((n + 255u) / 256u));
    /* NOR: a program only clears bits. The core never programs a byte twice
     * without an erase; a port that did would corrupt, and so does this. */
    for (done = 0; done < upto; done += (uint32_t)sizeof tmp) {
        uint32_t k = upto - done < sizeof tmp ? upto - done : (uint32_t)sizeof tmp;
        for (i = 0; i < k; i++) tmp[i] = dst[done + i] & src[done + i];
        if (store(ff, ff->flash.part_offset[part] + off + done, tmp, k) != 0) return RVNE_E_FLASH;
    }
    if (cut) power_off();
    return 0;
}

static const void *ff_map(void *ctx, int part)
{
    flash_file *ff = ctx;
    if (part < 0 || part >= RVNE_PART_COUNT) return NULL;
    return ff->mem + ff->flash.part_offset[part];
}

int flash_file_open(flash_file *ff, const char *path, uint32_t erase_size, uint32_t prog_size)
{
    struct stat st;
    size_t got = 0;
    int rc;
    memset(ff, 0, sizeof *ff);
    ff->fd = -1;
    parse_cut();
    parse_timing();
    /* O_NONBLOCK: a FIFO is refused below without waiting for a writer. */
    ff->fd = open(path, O_RDWR | O_NONBLOCK | O_NOCTTY);
    if (ff->fd < 0) {
        snprintf(ff->why, sizeof ff->why, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(ff->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(ff->why, sizeof ff->why, "%s: not a regular file", path);
        goto fail;
    }
    if ((unsigned long long)st.st_size > FLASH_MAX || st.st_size < (off_t)(RVNE_PTABLE_OFFSET + RVNE_PTABLE_LEN)) {
        snprintf(ff->why, sizeof ff->why, "%s: a flash image is %u ... %u bytes (this one %lld)", path,
                 (unsigned)(RVNE_PTABLE_OFFSET + RVNE_PTABLE_LEN), (unsigned)FLASH_MAX, (long long)st.st_size);
        goto fail;
    }
    ff->mem = malloc((size_t)st.st_size);
    if (ff->mem == NULL) {
        snprintf(ff->why, sizeof ff->why, "%s: out of memory", path);
        goto fail;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = pread(ff->fd, ff->mem + got, (size_t)st.st_size - got, (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            snprintf(ff->why, sizeof ff->why, "%s: %s", path, n < 0 ? strerror(errno) : "shrank while read");
            goto fail;
        }
        got += (size_t)n;
    }
    ff->len = got;
    rc = rvne_ptable_flash(ff->mem + RVNE_PTABLE_OFFSET, RVNE_PTABLE_LEN, (uint32_t)ff->len, &ff->flash);
    if (rc != RVNE_PTABLE_OK) {
        snprintf(ff->why, sizeof ff->why, "%s: model partitions (rvne_a/rvne_b/rvne_sel or rvne): %s", path,
                 rvne_ptable_strerror(rc));
        goto fail;
    }
    ff->flash.ctx = ff;
    ff->flash.read = ff_read;
    ff->flash.erase = ff_erase;
    ff->flash.prog = ff_prog;
    ff->flash.map = ff_map;
    ff->flash.erase_size = erase_size;
    ff->flash.prog_size = prog_size;
    return 0;
fail:
    free(ff->mem);
    ff->mem = NULL;
    close(ff->fd);
    ff->fd = -1;
    return -1;
}

void flash_file_close(flash_file *ff)
{
    free(ff->mem);
    ff->mem = NULL;
    if (ff->fd >= 0) close(ff->fd);
    ff->fd = -1;
}

void vdev_feed(rvne_server *s, const uint8_t *buf, size_t n)
{
    if (cut_kind == CUT_RX && cut_count + n >= cut_at) {
        rvne_server_feed(s, buf, cut_at - cut_count);
        power_off();
    }
    if (cut_kind == CUT_RX) cut_count += n;
    rvne_server_feed(s, buf, n);
}
