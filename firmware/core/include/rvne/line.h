/* The line codec of docs/protocol.md, the protocol's commands' own
 * (rvne_proto.c; ports use rvne/proto.h): a reply built in a bounded buffer,
 * never past its cap, sealed with its "*CRC\n" trailer, and the canonical
 * number forms a request's tokens take. */
#ifndef RVNE_LINE_H
#define RVNE_LINE_H
#include <stddef.h>
#include <stdint.h>

/* The commands call these by their short names; the linked symbols carry
 * the rvne_line_ prefix, so nothing linked beside the core can meet them. */
#define t_mem rvne_line_mem
#define t_str rvne_line_str
#define fmt_u64 rvne_line_fmt_u64
#define t_u64 rvne_line_u64
#define t_hex32 rvne_line_hex32
#define digits_u64 rvne_line_digits_u64
#define t_seal rvne_line_seal
#define hexval rvne_line_hexval
#define parse_u32 rvne_line_parse_u32
#define parse_u32_0 rvne_line_parse_u32_0
#define parse_hex32 rvne_line_parse_hex32

typedef struct text {
    char *p;
    size_t cap, len;
    int over;                   /* a write would have passed cap */
} text;

/* "*CRC\n" of docs/protocol.md: the reply line may not pass line_max. */
#define TRAILER_LEN 9u

/* Append n bytes (a C string); past cap nothing more is written and over is set. */
void t_mem(text *t, const char *s, size_t n);
void t_str(text *t, const char *s);
/* v in decimal into buf (20 chars), its length returned; its digit count. */
size_t fmt_u64(char *buf, uint64_t v);
size_t digits_u64(uint64_t v);
/* Append v in decimal; v as 8 upper-case hex digits. */
void t_u64(text *t, uint64_t v);
void t_hex32(text *t, uint32_t v);
/* Append "*CRC\n" over what t holds; 0 when it did not fit line_max (or did not before). */
int t_seal(text *t, size_t line_max);

/* A hex digit's value, -1 for any other byte. */
int hexval(char c);
/* The token p[0, n) as canonical decimal 1 ... 4294967295 (parse_u32_0:
 * 0 ... 4294967295) or exactly 8 hex digits; 1 when it is one, else 0. */
int parse_u32(const char *p, size_t n, uint32_t *out);
int parse_u32_0(const char *p, size_t n, uint32_t *out);
int parse_hex32(const char *p, size_t n, uint32_t *out);

#endif
