#ifndef LX6_FCNTL_H
#define LX6_FCNTL_H
#define O_RDONLY 0
int open(const char *path, int flags, ...);
#endif
