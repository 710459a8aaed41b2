/* The <stdio.h> the core's unit tests use, over QEMU's Xtensa semihosting
 * (semihost.c): formatted output, and reading files of the build directory. */
#ifndef LX6_STDIO_H
#define LX6_STDIO_H
#include <stdarg.h>
#include <stddef.h>
typedef struct FILE FILE;
extern FILE *stdout, *stderr;
#define EOF (-1)
int printf(const char *fmt, ...);
int fprintf(FILE *f, const char *fmt, ...);
int snprintf(char *buf, size_t cap, const char *fmt, ...);
int vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap);
int fflush(FILE *f);
FILE *fopen(const char *path, const char *mode);
int fclose(FILE *f);
size_t fread(void *buf, size_t size, size_t n, FILE *f);
/* Only %Ns and %u conversions, whitespace-separated (test_head's index). */
int fscanf(FILE *f, const char *fmt, ...);
#endif
