#include "rvne/base64.h"

#include <limits.h>

/* Sized by its initialiser (64 letters and the string's NUL): a [64] array
 * drops the NUL, which newer compilers warn about
 * (-Wunterminated-string-initialization). */
static const char ALPHABET[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Value of a base64 character, -1 for anything else ('=' included). A switch
 * on ranges rather than a 256-byte table: the core runs from flash on the
 * MCU and this is not a hot path. */
static int sextet(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

size_t rvne_b64_encoded_len(size_t n)
{
    size_t groups = n / 3 + (n % 3 != 0);
    if (groups > SIZE_MAX / 4) return 0;
    return groups * 4;
}

static void encode_group(char *out, const uint8_t *in, unsigned n)
{
    uint32_t v = (uint32_t)in[0] << 16;
    if (n > 1) v |= (uint32_t)in[1] << 8;
    if (n > 2) v |= in[2];
    out[0] = ALPHABET[(v >> 18) & 63];
    out[1] = ALPHABET[(v >> 12) & 63];
    out[2] = n > 1 ? ALPHABET[(v >> 6) & 63] : '=';
    out[3] = n > 2 ? ALPHABET[v & 63] : '=';
}

long rvne_b64_encode(char *out, size_t out_cap, const uint8_t *in, size_t n)
{
    size_t need = rvne_b64_encoded_len(n);
    size_t i, o = 0;
    if ((need == 0 && n != 0) || need > out_cap || need > (size_t)LONG_MAX) return RVNE_B64_E_SPACE;
    for (i = 0; i + 3 <= n; i += 3, o += 4) encode_group(out + o, in + i, 3);
    if (i < n) encode_group(out + o, in + i, (unsigned)(n - i));
    return (long)need;
}

long rvne_b64_decoded_len(const char *text, size_t n)
{
    size_t i, pad = 0;
    if (n % 4 != 0) return RVNE_B64_E_SYNTAX;
    if (n == 0) return 0;
    if (text[n - 1] == '=') pad = (text[n - 2] == '=') ? 2 : 1;
    for (i = 0; i < n - pad; i++)
        if (sextet((unsigned char)text[i]) < 0) return RVNE_B64_E_SYNTAX;
    /* Strictness: the bits a padded group does not carry must be zero, or two
     * texts would decode to the same bytes. */
    if (pad == 1 && (sextet((unsigned char)text[n - 2]) & 0x03)) return RVNE_B64_E_SYNTAX;
    if (pad == 2 && (sextet((unsigned char)text[n - 3]) & 0x0F)) return RVNE_B64_E_SYNTAX;
    if (n / 4 * 3 > (size_t)LONG_MAX) return RVNE_B64_E_SYNTAX;
    return (long)(n / 4 * 3 - pad);
}

long rvne_b64_decode(uint8_t *out, size_t out_cap, const char *text, size_t n)
{
    long len = rvne_b64_decoded_len(text, n);
    size_t i, o = 0;
    if (len < 0) return len;
    if ((size_t)len > out_cap) return RVNE_B64_E_SPACE;
    for (i = 0; i < n; i += 4) {
        uint32_t v = 0;
        unsigned k;
        for (k = 0; k < 4; k++) {
            int s = sextet((unsigned char)text[i + k]);
            v = (v << 6) | (uint32_t)(s < 0 ? 0 : s);
        }
        if (o < (size_t)len) out[o++] = (uint8_t)(v >> 16);
        if (o < (size_t)len) out[o++] = (uint8_t)(v >> 8);
        if (o < (size_t)len) out[o++] = (uint8_t)v;
    }
    return len;
}

void rvne_b64_enc_start(rvne_b64_enc *e, char *out, size_t cap)
{
    e->out = out;
    e->cap = cap;
    e->len = 0;
    e->n_carry = 0;
    e->overflow = 0;
}

static void emit_group(rvne_b64_enc *e, const uint8_t *g, unsigned n)
{
    if (e->overflow || e->cap - e->len < 4) {
        e->overflow = 1;
        return;
    }
    encode_group(e->out + e->len, g, n);
    e->len += 4;
}

void rvne_b64_enc_feed(rvne_b64_enc *e, const uint8_t *in, size_t n)
{
    size_t i = 0;
    while (e->n_carry > 0 && i < n) {
        if (e->n_carry == 1) {
            e->carry[1] = in[i++];
            e->n_carry = 2;
        } else {
            uint8_t g[3];
            g[0] = e->carry[0];
            g[1] = e->carry[1];
            g[2] = in[i++];
            emit_group(e, g, 3);
            e->n_carry = 0;
        }
    }
    for (; i + 3 <= n; i += 3) emit_group(e, in + i, 3);
    /* Fewer than 3 bytes are left here and the carry is empty. */
    while (i < n) e->carry[e->n_carry++] = in[i++];
}

long rvne_b64_enc_finish(rvne_b64_enc *e)
{
    if (e->n_carry > 0) emit_group(e, e->carry, e->n_carry);
    e->n_carry = 0;
    if (e->overflow || e->len > (size_t)LONG_MAX) return RVNE_B64_E_SPACE;
    return (long)e->len;
}
