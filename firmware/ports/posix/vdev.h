/* The pieces of the POSIX virtual device (rvne-vdev). */
#ifndef RVNE_VDEV_H
#define RVNE_VDEV_H
#include <stddef.h>
#include <stdint.h>
#include "rvne/flash.h"
#include "rvne/proto.h"
#include "rvne/sig.h"

/* The build's policy and trusted keys (trust.c); -1: a malformed build option. */
int vdev_trust(rvne_trust *t);

/* The partition file, read once into memory (a file truncated under a map
 * would SIGBUS the device). A file that does not exist, cannot be opened or
 * read, or is not a regular file (a FIFO is refused without waiting for a
 * writer) is no partition (data NULL: INFO reason
 * E_NO_PARTITION), like a board whose table has none; an empty file is an
 * existing, empty partition (data not NULL, len 0: E_TOO_SHORT). Either way
 * the device still boots and INFO says why (why[] is also logged). */
typedef struct part_map {
    const void *data;           /* NULL when there is no partition */
    size_t len;
    char why[160];              /* "" when mapped */
} part_map;

void part_map_open(part_map *pm, const char *path);
void part_map_close(part_map *pm);

/* --flash: a whole flash image with its partition table, written through
 * the core's rvne_flash (flash_file.c). open returns 0, or -1 with why[]. */
typedef struct flash_file {
    int fd;
    uint8_t *mem;               /* the image, read once; writes go here and to fd */
    size_t len;
    rvne_flash flash;
    char why[200];
} flash_file;

int flash_file_open(flash_file *ff, const char *path, uint32_t erase_size, uint32_t prog_size);
void flash_file_close(flash_file *ff);

/* rvne_server_feed, with RVNE_VDEV_CUT=rx:N's power cut. */
void vdev_feed(rvne_server *s, const uint8_t *buf, size_t n);

/* Serving loops; both return 0 on a clean stop (EOF on stdin, SIGTERM or
 * SIGINT) and 1 when the byte stream itself failed. */
int serve_stdio(rvne_server *s, rvne_model *m);
/* Creates a pty, prints "PTY <path>" on stdout, and serves on it. */
int serve_pty(rvne_server *s, rvne_model *m);

/* Port callbacks over a file descriptor held in ctx (an int *). */
int vdev_write(void *ctx, const void *buf, size_t n);
uint64_t vdev_now_ns(void *ctx);

#endif
