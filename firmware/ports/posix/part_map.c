#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "vdev.h"

/* No partition: a file that cannot be opened or mapped (the loader reports
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
    void *p;
    int fd = open(path, O_RDONLY);
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
        /* Nothing to map, but the partition exists: E_TOO_SHORT. */
        static const unsigned char nothing[1];
        pm->data = nothing;
        pm->len = 0;
        snprintf(pm->why, sizeof pm->why, "%s: empty file", path);
        close(fd);
        return;
    }
    if ((unsigned long long)st.st_size > (unsigned long long)(size_t)-1) {
        absent(pm, path, "too large to map");
        close(fd);
        return;
    }
    /* Read-only and shared, as the device reads its flash through the cache:
     * the weights are never copied. */
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        absent(pm, path, strerror(errno));
        return;
    }
    pm->data = p;
    pm->len = (size_t)st.st_size;
}

void part_map_close(part_map *pm)
{
    if (pm->data && pm->len > 0) munmap((void *)pm->data, pm->len); /* an empty file maps nothing */
    pm->data = NULL;
    pm->len = 0;
}
