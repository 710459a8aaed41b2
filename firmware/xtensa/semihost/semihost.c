/* The C library the core's unit tests need on the emulated esp32-class core,
 * over QEMU's Xtensa semihosting (sh_call.S): console output, files of the
 * build directory, a heap, and the exit code that make reads. Small and
 * plain: it serves firmware/tests/test_*.c, nothing else. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "rt_bits.h"
#include "rvne_rt.h"

int sh_call(int nr, int a, int b, int c, int *err);

/* Variadic arguments, read by hand: llc-22's Xtensa va_start points the
 * va_list's register area at the first *unnamed* argument's save slot while
 * the ABI (and its own va_arg) index it from a2's, and its va_arg gets the
 * arguments passed on the stack wrong (a 64-bit value after five words,
 * anything after it). VA_START corrects the register area; VA_ARG walks the
 * Windowed ABI's layout: a2..a7 at reg + 0..23, the caller's stack arguments
 * at stk + 32 on, 8-byte values 8-aligned, nothing split between the two
 * (docs/targets.md; llvm-bugs/va_start.c). */
typedef struct xt_va {
    char *stk, *reg;
    int ndx;
} xt_va;

#if defined(__clang__)
static void lx6_va_fix(va_list *ap)
{
    xt_va *v = (xt_va *)ap;
    v->reg -= v->ndx;
}
#endif

static void *lx6_va_next(va_list *ap, int size)
{
    xt_va *v = (xt_va *)ap;
    int align = size > 4 ? 8 : 4, ndx = (v->ndx + align - 1) & -align;
    size = (size + 3) & -4;
    if (ndx + size <= 24) {
        v->ndx = ndx + size;
        return v->reg + ndx;
    }
    if (ndx < 32)
        ndx = 32;
    v->ndx = ndx + size;
    return v->stk + ndx;
}

/* GCC's va_start (the ESP32-S3 build, ports/esp32s3-bare) sets the
 * register area as the ABI says: nothing to correct. */
#if defined(__clang__)
#define VA_START(ap, last) (va_start(ap, last), lx6_va_fix(&(ap)))
#else
#define VA_START(ap, last) va_start(ap, last)
#endif
#define VA_ARG(ap, type) (*(type *)lx6_va_next(&(ap), (int)sizeof(type)))


/* QEMU's Xtensa semihosting call numbers (target/xtensa/xtensa-semi.c). */
enum { SYS_EXIT = 1, SYS_READ = 3, SYS_WRITE = 4, SYS_OPEN = 5, SYS_CLOSE = 6, SYS_LSEEK = 19 };

void exit(int code)
{
    for (;;)
        sh_call(SYS_EXIT, code, 0, 0, 0);
}

void abort(void)
{
    static const char msg[] = "abort()\n";
    sh_call(SYS_WRITE, 2, (int)(uintptr_t)msg, sizeof msg - 1, 0);
    exit(134);
}

/* start.S's exception entry: a test that faults says so and fails. */
void port_fault(uint32_t kind, uint32_t cause, uint32_t epc, uint32_t vaddr, uint32_t depc)
    __attribute__((noreturn));
void port_fault(uint32_t kind, uint32_t cause, uint32_t epc, uint32_t vaddr, uint32_t depc)
{
    fprintf(stderr, "lx6 test FAULT kind=%u exccause=0x%08x epc1=0x%08x excvaddr=0x%08x depc=0x%08x\n",
            (unsigned)kind, (unsigned)cause, (unsigned)epc, (unsigned)vaddr, (unsigned)depc);
    exit(70);
}

int open(const char *path, int flags, ...)
{
    return sh_call(SYS_OPEN, (int)(uintptr_t)path, flags, 0, 0);
}

int close(int fd) { return sh_call(SYS_CLOSE, fd, 0, 0, 0); }

long read(int fd, void *buf, size_t n)
{
    return sh_call(SYS_READ, fd, (int)(uintptr_t)buf, (int)n, 0);
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        int k = sh_call(SYS_WRITE, fd, (int)(uintptr_t)p, (int)n, 0);
        if (k <= 0)
            return;
        p += k;
        n -= (size_t)k;
    }
}

int fstat(int fd, struct stat *st)
{
    int end = sh_call(SYS_LSEEK, fd, 0, 2, 0);
    if (end < 0 || sh_call(SYS_LSEEK, fd, 0, 0, 0) < 0)
        return -1;
    st->st_size = end;
    return 0;
}

/* ---- heap: a bump allocator over the RAM above the stack ------------- */
extern char _heap_start[], _heap_end[];
static char *heap_top = _heap_start;

void *malloc(size_t n)
{
    char *p = heap_top;
    n = (n + 15u) & ~(size_t)15u;
    if (n > (size_t)(_heap_end - heap_top))
        return NULL;
    heap_top += n;
    return p;
}

void *calloc(size_t n, size_t size)
{
    void *p = (size && n > (size_t)-1 / size) ? NULL : malloc(n * size);
    return p ? memset(p, 0, n * size) : NULL;
}

void free(void *p) { (void)p; }       /* the tests allocate little, once */

void *mmap(void *addr, size_t len, int prot, int flags, int fd, long off)
{
    char *p = malloc(len);
    size_t got = 0;
    (void)addr, (void)prot, (void)flags;
    if (p == NULL || off != 0)
        return MAP_FAILED;
    while (got < len) {
        long k = read(fd, p + got, len - got);
        if (k <= 0)
            return MAP_FAILED;
        got += (size_t)k;
    }
    return p;
}

int munmap(void *addr, size_t len) { (void)addr, (void)len; return 0; }

unsigned long long strtoull(const char *s, char **end, int base)
{
    unsigned long long v = 0;
    for (;; s++) {
        int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'z' ? *s - 'a' + 10
              : *s >= 'A' && *s <= 'Z' ? *s - 'A' + 10 : 99;
        if (d >= base)
            break;
        v = v * (unsigned)base + (unsigned)d;
    }
    if (end)
        *end = (char *)s;
    return v;
}

unsigned long strtoul(const char *s, char **end, int base)
{
    return (unsigned long)strtoull(s, end, base);
}

/* ---- FILE: console streams and read-only files ------------------------ */
struct FILE {
    int fd;
    int peek;       /* one byte of look-ahead for fscanf, or EOF */
};
static FILE files[8] = {{1, EOF}, {2, EOF}};
FILE *stdout = &files[0], *stderr = &files[1];

FILE *fopen(const char *path, const char *mode)
{
    int fd;
    if (mode[0] != 'r')
        return NULL;
    fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    for (size_t i = 2; i < sizeof files / sizeof files[0]; i++)
        if (files[i].fd == 0) {
            files[i].fd = fd;
            files[i].peek = EOF;
            return &files[i];
        }
    close(fd);
    return NULL;
}

int fclose(FILE *f)
{
    int rc = close(f->fd);
    f->fd = 0;
    return rc;
}

int fflush(FILE *f) { (void)f; return 0; }

size_t fread(void *buf, size_t size, size_t n, FILE *f)
{
    size_t want = size * n, got = 0;
    while (got < want) {
        long k = read(f->fd, (char *)buf + got, want - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    return size ? got / size : 0;
}

static int getc_(FILE *f)
{
    unsigned char c;
    if (f->peek != EOF) {
        int c0 = f->peek;
        f->peek = EOF;
        return c0;
    }
    return read(f->fd, &c, 1) == 1 ? c : EOF;
}

static int is_space(int c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

int fscanf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    int done = 0;
    VA_START(ap, fmt);
    for (; *fmt; fmt++) {
        int c, width = 0, n = 0;
        if (is_space(*fmt) || *fmt != '%')
            continue;
        while (fmt[1] >= '0' && fmt[1] <= '9')
            width = width * 10 + (*++fmt - '0');
        fmt++;
        do
            c = getc_(f);
        while (is_space(c));
        if (c == EOF)
            break;
        if (*fmt == 's') {
            char *s = VA_ARG(ap, char *);
            for (; c != EOF && !is_space(c) && (width == 0 || n < width); c = getc_(f))
                s[n++] = (char)c;
            s[n] = 0;
        } else if (*fmt == 'u') {
            unsigned v = 0;
            for (; c >= '0' && c <= '9'; c = getc_(f), n++)
                v = v * 10u + (unsigned)(c - '0');
            if (n == 0)
                break;
            *VA_ARG(ap, unsigned *) = v;
        } else {
            break;
        }
        f->peek = c;
        done++;
    }
    va_end(ap);
    return done;
}

/* ---- formatted output ------------------------------------------------- */

typedef struct out {
    char *buf;
    size_t cap, len;
} out;

static void put(out *o, char c)
{
    if (o->len + 1 < o->cap)
        o->buf[o->len] = c;
    o->len++;
}

static void put_pad(out *o, const char *s, size_t n, int width, int left, char fill)
{
    int pad = width > (int)n ? width - (int)n : 0;
    if (!left && fill == '0' && n > 0 && *s == '-') {
        put(o, *s++);
        n--;
    }
    if (!left)
        while (pad-- > 0)
            put(o, fill);
    while (n--)
        put(o, *s++);
    if (left)
        while (pad-- > 0)
            put(o, ' ');
}

/* Digits of a float, for diagnostics only: %e-like for %g/%e, fixed for %f,
 * `prec` digits after the point, computed in single precision (the FPU's),
 * so the last digits of a 9-digit %g are approximate. */
static size_t fmt_float(char *s, float v, int prec, char conv)
{
    size_t n = 0;
    int e = 0;
    if (v != v)
        return (size_t)(memcpy(s, "nan", 3), 3);
    if (v < 0) {
        s[n++] = '-';
        v = -v;
    }
    if (v > 3.4e38f)
        return memcpy(s + n, "inf", 3), n + 3;
    if (prec > 9)
        prec = 9;
    if (conv != 'f' && v != 0.0f) {
        while (v >= 10.0f) { v /= 10.0f; e++; }
        while (v < 1.0f) { v *= 10.0f; e--; }
    }
    {
        unsigned ip = (unsigned)v;
        float frac = v - (float)ip;
        char tmp[12];
        int k = 0;
        do tmp[k++] = (char)('0' + ip % 10u); while ((ip /= 10u) != 0u);
        while (k)
            s[n++] = tmp[--k];
        if (prec > 0) {
            s[n++] = '.';
            for (int i = 0; i < prec; i++) {
                frac *= 10.0f;
                unsigned d = (unsigned)frac;
                s[n++] = (char)('0' + (d > 9u ? 9u : d));
                frac -= (float)d;
            }
        }
    }
    if (conv != 'f') {
        unsigned ae = (unsigned)(e < 0 ? -e : e);
        s[n++] = 'e';
        s[n++] = e < 0 ? '-' : '+';
        s[n++] = (char)('0' + ae / 10u);
        s[n++] = (char)('0' + ae % 10u);
    }
    return n;
}

int vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap)
{
    out o = {buf, cap, 0};
    for (; *fmt; fmt++) {
        char tmp[72], fill = ' ';
        const char *s = tmp;
        size_t n = 0;
        int left = 0, width = 0, prec = -1, lng = 0;
        if (*fmt != '%') {
            put(&o, *fmt);
            continue;
        }
        for (fmt++; *fmt == '-' || *fmt == '0'; fmt++) {
            if (*fmt == '-') left = 1;
            else fill = '0';
        }
        if (*fmt == '*') {
            width = VA_ARG(ap, int);
            fmt++;
        }
        for (; *fmt >= '0' && *fmt <= '9'; fmt++)
            width = width * 10 + (*fmt - '0');
        if (*fmt == '.') {
            prec = 0;
            if (*++fmt == '*') {
                prec = VA_ARG(ap, int);
                fmt++;
            }
            for (; *fmt >= '0' && *fmt <= '9'; fmt++)
                prec = prec * 10 + (*fmt - '0');
        }
        for (; *fmt == 'l' || *fmt == 'z' || *fmt == 'h'; fmt++)
            lng += *fmt == 'l' ? 1 : (*fmt == 'z' ? 0 : 0);
        switch (*fmt) {
        case 'd': case 'i': case 'u': case 'x': case 'X': case 'p': {
            unsigned long long v;
            int neg = 0;
            unsigned base = (*fmt == 'x' || *fmt == 'X' || *fmt == 'p') ? 16u : 10u;
            const char *dig = *fmt == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
            char rev[24];
            int k = 0;
            if (*fmt == 'p')
                v = (uintptr_t)VA_ARG(ap, void *);
            else if (*fmt == 'd' || *fmt == 'i') {
                long long sv = lng >= 2 ? VA_ARG(ap, long long) : lng ? VA_ARG(ap, long) : VA_ARG(ap, int);
                neg = sv < 0;
                v = neg ? 0ull - (unsigned long long)sv : (unsigned long long)sv;
            } else
                v = lng >= 2 ? VA_ARG(ap, unsigned long long) : lng ? VA_ARG(ap, unsigned long) : VA_ARG(ap, unsigned);
            do rev[k++] = dig[v % base]; while ((v /= base) != 0u);
            if (neg)
                tmp[n++] = '-';
            while (k)
                tmp[n++] = rev[--k];
            break;
        }
        case 'c':
            tmp[n++] = (char)VA_ARG(ap, int);
            break;
        case 's':
            s = VA_ARG(ap, const char *);
            if (s == NULL)
                s = "(null)";
            n = strlen(s);
            if (prec >= 0 && (size_t)prec < n)
                n = (size_t)prec;
            fill = ' ';
            break;
        case 'f': case 'g': case 'e':
            /* The double's bits (passed like a long long in the windowed
             * ABI), narrowed by the runtime: no double arithmetic here. */
            n = fmt_float(tmp, bitsf(rvne_rt_truncdfsf2(VA_ARG(ap, unsigned long long))),
                          prec < 0 ? 6 : prec, *fmt);
            break;
        case '%':
            tmp[n++] = '%';
            break;
        default:
            tmp[n++] = '?';
            break;
        }
        put_pad(&o, s, n, width, left, fill);
    }
    if (cap > 0)
        buf[o.len < cap ? o.len : cap - 1] = 0;
    return (int)o.len;
}

int snprintf(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    int n;
    VA_START(ap, fmt);
    n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}

static int vfprintf_(FILE *f, const char *fmt, va_list ap)
{
    char buf[1024];
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    write_all(f->fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    return n;
}

int fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    int n;
    VA_START(ap, fmt);
    n = vfprintf_(f, fmt, ap);
    va_end(ap);
    return n;
}

int printf(const char *fmt, ...)
{
    va_list ap;
    int n;
    VA_START(ap, fmt);
    n = vfprintf_(stdout, fmt, ap);
    va_end(ap);
    return n;
}

/* ---- entry: start.S calls main(); the test's own main gets the build
 * directory as argv[1], as on the host, and its status becomes QEMU's exit
 * code. */
int rvne_test_main(int argc, char **argv);

int main(void)
{
    static char name[] = "test", dir[] = RVNE_TEST_BUILD_DIR;
    static char *argv[] = {name, dir, NULL};
    exit(rvne_test_main(2, argv));
}
