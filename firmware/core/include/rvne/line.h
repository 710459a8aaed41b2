/* The line codec of docs/protocol.md, the protocol's commands' own
 * (rvne_proto.c; ports use rvne/proto.h): a reply built in a bounded buffer,
 * never past its cap, sealed with its "*CRC\n" trailer, and the canonical
 * number forms a request's tokens take. */
#ifndef RVNE_LINE_H
#define RVNE_LINE_H
#include <stddef.h>
#include <stdint.h>

typedef struct rvne_text {
    char *p;
    size_t cap, len;
    int over;                   /* a write would have passed cap */
} rvne_text;

/* "*CRC\n" of docs/protocol.md: the reply line may not pass line_max. */
#define RVNE_LINE_TRAILER_LEN 9u

/* Append n bytes (a C string); past cap nothing more is written and over is set. */
void rvne_line_mem(rvne_text *t, const char *s, size_t n);
void rvne_line_str(rvne_text *t, const char *s);
/* v in decimal into buf (20 chars), its length returned; its digit count. */
size_t rvne_line_fmt_u64(char *buf, uint64_t v);
size_t rvne_line_digits_u64(uint64_t v);
/* Append v in decimal; v as 8 upper-case hex digits. */
void rvne_line_u64(rvne_text *t, uint64_t v);
void rvne_line_hex32(rvne_text *t, uint32_t v);
/* Append "*CRC\n" over what t holds; 0 when it did not fit line_max (or did not before). */
int rvne_line_seal(rvne_text *t, size_t line_max);

/* A hex digit's value, -1 for any other byte. */
int rvne_line_hexval(char c);
/* The token p[0, n) as canonical decimal 1 ... 4294967295 (rvne_line_parse_u32_0:
 * 0 ... 4294967295) or exactly 8 hex digits; 1 when it is one, else 0. */
int rvne_line_parse_u32(const char *p, size_t n, uint32_t *out);
int rvne_line_parse_u32_0(const char *p, size_t n, uint32_t *out);
int rvne_line_parse_hex32(const char *p, size_t n, uint32_t *out);

#endif
