#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "vdev.h"

static void empty(part_map *pm, const char *path, const char *what)
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
        empty(pm, path, strerror(errno));
        return;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        empty(pm, path, "not a regular file");
        close(fd);
        return;
    }
    if (st.st_size == 0 || (unsigned long long)st.st_size > (unsigned long long)(size_t)-1) {
        empty(pm, path, st.st_size == 0 ? "empty file" : "too large to map");
        close(fd);
        return;
    }
    /* Read-only and shared, as the device reads its flash through the cache:
     * the weights are never copied. */
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        empty(pm, path, strerror(errno));
        return;
    }
    pm->data = p;
    pm->len = (size_t)st.st_size;
}

void part_map_close(part_map *pm)
{
    if (pm->data) munmap((void *)pm->data, pm->len);
    pm->data = NULL;
    pm->len = 0;
}
