/* Signed models (docs/format.md "Signed models"): the blob, a 16-byte
 * trailer with the model's version, 0xFF to a 4 KiB boundary, then the
 * signature sector `espsecure sign_data --version 2` appends (up to three
 * 1,216-byte Secure Boot v2 blocks, RSA-3072 PSS over SHA-256).
 *
 * The checks here are the rules; the cryptography is the port's, through
 * rvne_crypto (a maintained library: mbedtls on the virtual device and the
 * boards, ESP-IDF's in the app), so the core links on ports without one. */
#ifndef RVNE_SIG_H
#define RVNE_SIG_H
#include <stddef.h>
#include <stdint.h>

#define RVNE_SIG_TRAILER_MAGIC 0x31535652u /* bytes "RVS1" */
#define RVNE_SIG_TRAILER_LEN 16u
#define RVNE_SIG_SECTOR 4096u
#define RVNE_SIG_BLOCK_LEN 1216u
#define RVNE_SIG_MAX_KEYS 3

enum { RVNE_POLICY_UNSIGNED = 0, RVNE_POLICY_SIGNED = 1 };

/* The port's cryptography. Both return 0 on success, anything else fails.
 * rsa_pss_verify: RSA-3072 (n big-endian, 384 bytes; public exponent e)
 * PSS with MGF1-SHA-256 and a 32-byte salt over the SHA-256 `hash`; `sig`
 * big-endian. */
typedef struct rvne_crypto {
    int (*sha256)(const uint8_t *p, size_t n, uint8_t out[32]);
    int (*rsa_pss_verify)(const uint8_t n_be[384], uint32_t e, const uint8_t hash[32], const uint8_t sig_be[384]);
} rvne_crypto;

/* What the device trusts: a board configuration (docs/format.md). */
typedef struct rvne_trust {
    int policy;                                 /* RVNE_POLICY_* */
    int n_trusted, n_revoked;
    uint8_t trusted[RVNE_SIG_MAX_KEYS][32];     /* SHA-256 of a key as its signature block holds it */
    uint8_t revoked[RVNE_SIG_MAX_KEYS][32];
    const rvne_crypto *crypto;                  /* required under the signed policy */
} rvne_trust;

/* What a slot's signature said. */
typedef struct rvne_sig_info {
    int is_signed;              /* a trailer follows the blob */
    uint32_t version;           /* its model version (0: unsigned) */
    uint32_t total_len;         /* the signed file's length, P + 4096 (blob_len when unsigned) */
    int verified;               /* the signature was checked and held */
    uint8_t signer[32];         /* with verified: the digest of the key that signed */
} rvne_sig_info;

/* The length of the signed file around a blob of blob_len bytes. */
uint32_t rvne_sig_total_len(uint32_t blob_len);

/* The trailer and layout over p[0, len) (len: the bytes that belong to the
 * model: SIZE of an update, the slot at boot), the blob being blob_len
 * bytes: fills *out, RVNE_OK, RVNE_E_UNSIGNED (no trailer) or
 * RVNE_E_BAD_SIGNATURE (a trailer, but the layout does not hold). With
 * exact, len must be the signed file's length; else it may be longer. */
int rvne_sig_layout(const uint8_t *p, size_t len, uint32_t blob_len, int exact, rvne_sig_info *out);

/* The signature rules of docs/format.md over a layout-valid signed model:
 * RVNE_OK (out->verified, out->signer), RVNE_E_BAD_SIGNATURE,
 * RVNE_E_UNTRUSTED_KEY or RVNE_E_REVOKED_KEY. */
int rvne_sig_verify(const rvne_trust *t, const uint8_t *p, uint32_t blob_len, rvne_sig_info *out);

/* Everything the policy asks of a model at p[0, len) whose blob (blob_len
 * bytes) already passed the loader, and its version against floor (the
 * serving model's; 0 for none): RVNE_OK or the first failing rule's
 * RVNE_E_*. The unsigned policy asks nothing of a bare blob and only the
 * layout of a signed one (its signature is not checked: out->verified 0). */
int rvne_sig_check(const rvne_trust *t, const uint8_t *p, size_t len, uint32_t blob_len, int exact,
                   uint32_t floor, rvne_sig_info *out);

/* Parse up to three comma-separated 64-hex-digit digests (a build option's
 * text) into keys; returns how many, or -1 for text that is not that. */
int rvne_sig_parse_digests(const char *text, uint8_t keys[RVNE_SIG_MAX_KEYS][32]);

/* The signed policy with `crypto` and the digests of two build options
 * (rvne_sig_parse_digests' text): 0, or -1 when one is malformed (then
 * nothing is trusted). */
int rvne_trust_init(rvne_trust *t, const rvne_crypto *crypto, const char *trusted, const char *revoked);

#endif
