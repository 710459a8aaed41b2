/* Standard base64 of RFC 4648 section 4 (alphabet A-Z a-z 0-9 + /, '='
 * padding), strict: the decoder refuses anything another encoder would not
 * have written, so one tensor has exactly one spelling on the wire. */
#ifndef RVNE_BASE64_H
#define RVNE_BASE64_H
#include <stddef.h>
#include <stdint.h>

#define RVNE_B64_E_SYNTAX (-1)  /* length not a multiple of 4, bad char, bad padding */
#define RVNE_B64_E_SPACE (-2)   /* the output buffer is too small */

/* Characters the encoding of n bytes takes; 0 when that does not fit size_t. */
size_t rvne_b64_encoded_len(size_t n);

/* Writes the encoding of in[0, n) to out (no NUL). Returns the number of
 * characters, or RVNE_B64_E_SPACE (out untouched) when out_cap is short. */
long rvne_b64_encode(char *out, size_t out_cap, const uint8_t *in, size_t n);

/* Bytes text[0, n) decodes to, or RVNE_B64_E_SYNTAX; checks the whole text. */
long rvne_b64_decoded_len(const char *text, size_t n);

/* Decodes text[0, n) into out. Returns the byte count, RVNE_B64_E_SYNTAX, or
 * RVNE_B64_E_SPACE; out is untouched on any error. Padding is required, the
 * unused bits of the last character must be zero, no whitespace. */
long rvne_b64_decode(uint8_t *out, size_t out_cap, const char *text, size_t n);

/* Incremental encoder, for output produced piece by piece (logits frame by
 * frame) straight into a reply buffer the caller has already sized. */
typedef struct rvne_b64_enc {
    char *out;
    size_t cap, len;
    uint8_t carry[2];
    unsigned n_carry;
    int overflow;               /* set once a write would pass cap */
} rvne_b64_enc;

void rvne_b64_enc_start(rvne_b64_enc *e, char *out, size_t cap);
void rvne_b64_enc_feed(rvne_b64_enc *e, const uint8_t *in, size_t n);
/* Flushes the carry with padding. Returns the total characters written or
 * RVNE_B64_E_SPACE when cap was passed at any point. */
long rvne_b64_enc_finish(rvne_b64_enc *e);

#endif
