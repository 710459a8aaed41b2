#ifndef LX6_SYS_STAT_H
#define LX6_SYS_STAT_H
struct stat {
    long st_size;
};
int fstat(int fd, struct stat *st);
#endif
