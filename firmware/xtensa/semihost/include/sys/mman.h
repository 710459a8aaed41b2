/* mmap of a whole file, read-only: a heap copy here (no MMU in use); the
 * host build of the same test maps it for real. */
#ifndef LX6_SYS_MMAN_H
#define LX6_SYS_MMAN_H
#include <stddef.h>
#define PROT_READ 1
#define MAP_PRIVATE 2
#define MAP_FAILED ((void *)-1)
void *mmap(void *addr, size_t len, int prot, int flags, int fd, long off);
int munmap(void *addr, size_t len);
#endif
