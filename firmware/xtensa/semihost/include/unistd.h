#ifndef LX6_UNISTD_H
#define LX6_UNISTD_H
#include <stddef.h>
int close(int fd);
long read(int fd, void *buf, size_t n);
#endif
