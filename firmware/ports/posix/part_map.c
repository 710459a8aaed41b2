#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "vdev.h"

/* Larger than any board's flash: a bigger file is not a partition. */
#define PART_MAX ((size_t)256 << 20)

/* No partition: a file that cannot be opened or read (the loader reports
 * E_NO_PARTITION). An empty file is an existing, empty partition instead. */
static void absent(part_map *pm, const char *path, const char *what)
{
    pm->data = NULL;
    pm->len = 0;
    snprintf(pm->why, sizeof pm->why, "%s: %s", path, what);
}

void part_map_open(part_map *pm, const char *path)
{
    struct stat st;
    unsigned char *buf;
    size_t got = 0;
    /* O_NONBLOCK: opening a FIFO nobody writes would block forever; it is
     * refused below like any file that is not regular. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    memset(pm, 0, sizeof *pm);
    if (fd < 0) {
        absent(pm, path, strerror(errno));
        return;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        absent(pm, path, "not a regular file");
        close(fd);
        return;
    }
    if (st.st_size == 0) {
        /* Nothing to read, but the partition exists: E_TOO_SHORT. */
        static const unsigned char nothing[1];
        pm->data = nothing;
        pm->len = 0;
        snprintf(pm->why, sizeof pm->why, "%s: empty file", path);
        close(fd);
        return;
    }
    if ((unsigned long long)st.st_size > (unsigned long long)PART_MAX) {
        absent(pm, path, "larger than any flash (256 MiB)");
        close(fd);
        return;
    }
    /* A private copy, not a shared map: a map of a file that another
     * program truncates kills its reader with SIGBUS; a flash chip cannot
     * shrink under the firmware, and neither can this copy. */
    buf = malloc((size_t)st.st_size);
    if (buf == NULL) {
        absent(pm, path, "out of memory");
        close(fd);
        return;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            absent(pm, path, strerror(errno));
            free(buf);
            close(fd);
            return;
        }
        if (n == 0) break; /* shrank since fstat: serve what is there */
        got += (size_t)n;
    }
    close(fd);
    pm->data = buf;
    pm->len = got;
}

void part_map_close(part_map *pm)
{
    if (pm->data && pm->len > 0) free((void *)pm->data); /* an empty file holds nothing */
    pm->data = NULL;
    pm->len = 0;
}
