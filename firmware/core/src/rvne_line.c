/* The line codec of docs/protocol.md (rvne/line.h): replies built in a
 * bounded buffer and sealed with their CRC, and the number forms of requests. */
#include <string.h>
#include "rvne/crc32.h"
#include "rvne/line.h"

void rvne_line_mem(rvne_text *t, const char *s, size_t n)
{
    if (t->over || t->cap - t->len < n) {
        t->over = 1;
        return;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
}

void rvne_line_str(rvne_text *t, const char *s) { rvne_line_mem(t, s, strlen(s)); }

size_t rvne_line_fmt_u64(char *buf, uint64_t v) /* buf: 20 chars */
{
    char tmp[20];
    size_t n = 0, i;
    do {
        tmp[n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0u);
    for (i = 0; i < n; i++) buf[i] = tmp[n - 1 - i];
    return n;
}

void rvne_line_u64(rvne_text *t, uint64_t v)
{
    char buf[20];
    rvne_line_mem(t, buf, rvne_line_fmt_u64(buf, v));
}

void rvne_line_hex32(rvne_text *t, uint32_t v)
{
    static const char hex[] = "0123456789ABCDEF";
    char buf[8];
    int i;
    for (i = 7; i >= 0; i--, v >>= 4) buf[i] = hex[v & 15u];
    rvne_line_mem(t, buf, 8);
}

size_t rvne_line_digits_u64(uint64_t v)
{
    char buf[20];
    return rvne_line_fmt_u64(buf, v);
}

int rvne_line_seal(rvne_text *t, size_t line_max)
{
    uint32_t crc;
    if (t->over || t->len + RVNE_LINE_TRAILER_LEN > line_max) return 0;
    crc = rvne_crc32(0u, (const uint8_t *)t->p, (uint32_t)t->len);
    rvne_line_str(t, "*");
    rvne_line_hex32(t, crc);
    rvne_line_str(t, "\n");
    return !t->over;
}

int rvne_line_hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Canonical decimal 1 ... 4294967295: no sign, no leading zero. */
int rvne_line_parse_u32(const char *p, size_t n, uint32_t *out)
{
    uint64_t v = 0;
    size_t i;
    if (n == 0 || n > 10 || p[0] == '0') return 0;
    for (i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        v = v * 10u + (uint64_t)(p[i] - '0');
    }
    if (v > 0xFFFFFFFFu) return 0;
    *out = (uint32_t)v;
    return 1;
}

/* Canonical decimal 0 ... 4294967295 (offsets start at 0). */
int rvne_line_parse_u32_0(const char *p, size_t n, uint32_t *out)
{
    if (n == 1 && p[0] == '0') {
        *out = 0;
        return 1;
    }
    return rvne_line_parse_u32(p, n, out);
}

int rvne_line_parse_hex32(const char *p, size_t n, uint32_t *out)
{
    uint32_t v = 0;
    size_t i;
    if (n != 8) return 0;
    for (i = 0; i < n; i++) {
        int d = rvne_line_hexval(p[i]);
        if (d < 0) return 0;
        v = (v << 4) | (uint32_t)d;
    }
    *out = v;
    return 1;
}
