/* Signed models: the rules of docs/format.md ("Signed models") over the
 * bytes; hashing and RSA are the port's rvne_crypto (never written here). */
#include <string.h>
#include "rvne/crc32.h"
#include "rvne/sig.h"
#include "rvne/status.h"

/* A Secure Boot v2 signature block, as espsecure writes it (little-endian). */
#define BLK_MAGIC 0xE7u
#define BLK_VERSION_RSA 0x02u
#define BLK_DIGEST 4u           /* SHA-256 of the signed bytes */
#define BLK_KEY 36u             /* n (384, LE), e (u32), rinv (384), m' (u32): the key digest covers these */
#define BLK_KEY_LEN 776u
#define BLK_E 420u
#define BLK_SIG 812u            /* the signature, 384 bytes LE */
#define BLK_CRC 1196u           /* CRC-32 of bytes 0 ... 1195 */
#define RSA_LEN 384u

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t rvne_sig_total_len(uint32_t blob_len)
{
    uint64_t p = ((uint64_t)blob_len + RVNE_SIG_TRAILER_LEN + RVNE_SIG_SECTOR - 1u) / RVNE_SIG_SECTOR * RVNE_SIG_SECTOR;
    p += RVNE_SIG_SECTOR;
    return p > 0xFFFFFFFFu ? 0u : (uint32_t)p;
}

static int all_ff(const uint8_t *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (p[i] != 0xFFu) return 0;
    return 1;
}

int rvne_sig_layout(const uint8_t *p, size_t len, uint32_t blob_len, int exact, rvne_sig_info *out)
{
    uint32_t total = rvne_sig_total_len(blob_len), payload;
    const uint8_t *t = p + blob_len;
    memset(out, 0, sizeof *out);
    out->total_len = blob_len;
    /* Rule S1: a trailer right after the blob. */
    if (len < (size_t)blob_len + RVNE_SIG_TRAILER_LEN || le32(t) != RVNE_SIG_TRAILER_MAGIC) return RVNE_E_UNSIGNED;
    out->is_signed = 1;
    out->version = le32(t + 4);
    /* Rule S2: the trailer's fields, espsecure's 0xFF padding, one whole sector. */
    if (total == 0u || (size_t)total > len || (exact && (size_t)total != len)) return RVNE_E_BAD_SIGNATURE;
    payload = total - RVNE_SIG_SECTOR;
    if (out->version == 0u || le32(t + 8) != blob_len || le32(t + 12) != 0u ||
        !all_ff(t + RVNE_SIG_TRAILER_LEN, payload - blob_len - RVNE_SIG_TRAILER_LEN))
        return RVNE_E_BAD_SIGNATURE;
    out->total_len = total;
    return RVNE_OK;
}

static int all_zero(const uint8_t *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (p[i] != 0u) return 0;
    return 1;
}

static int block_present(const uint8_t *b)
{
    return b[0] == BLK_MAGIC && b[1] == BLK_VERSION_RSA && b[2] == 0u && b[3] == 0u &&
           le32(b + BLK_CRC) == rvne_crc32(0u, b, BLK_CRC) && all_zero(b + BLK_CRC + 4u, 16u);
}

static int in_list(const uint8_t keys[][32], int n, const uint8_t d[32])
{
    int i;
    for (i = 0; i < n; i++)
        if (memcmp(keys[i], d, 32) == 0) return 1;
    return 0;
}

static void reversed(uint8_t *dst, const uint8_t *src, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) dst[i] = src[n - 1u - i];
}

/* One block by a trusted key: its digest of the signed bytes and its RSA signature. */
static int block_holds(const rvne_crypto *c, const uint8_t *b, const uint8_t hash[32])
{
    uint8_t n_be[RSA_LEN], sig_be[RSA_LEN];
    if (memcmp(b + BLK_DIGEST, hash, 32) != 0) return 0;
    reversed(n_be, b + BLK_KEY, RSA_LEN);
    reversed(sig_be, b + BLK_SIG, RSA_LEN);
    return c->rsa_pss_verify(n_be, le32(b + BLK_E), hash, sig_be) == 0;
}

int rvne_sig_verify(const rvne_trust *t, const uint8_t *p, uint32_t blob_len, rvne_sig_info *out)
{
    uint32_t payload = out->total_len - RVNE_SIG_SECTOR;
    const uint8_t *sector = p + payload;
    uint8_t hash[32], kd[32];
    int n_blocks = 0, i, hashed = 0, bad = 0, revoked = 0;
    (void)blob_len;
    if (t == 0 || t->crypto == 0) return RVNE_E_UNTRUSTED_KEY;
    /* Rule S3: present blocks first, then nothing but 0xFF. */
    while (n_blocks < RVNE_SIG_MAX_KEYS && block_present(sector + (size_t)n_blocks * RVNE_SIG_BLOCK_LEN)) n_blocks++;
    if (n_blocks == 0 || !all_ff(sector + (size_t)n_blocks * RVNE_SIG_BLOCK_LEN,
                                 RVNE_SIG_SECTOR - (size_t)n_blocks * RVNE_SIG_BLOCK_LEN))
        return RVNE_E_BAD_SIGNATURE;
    /* Rule S4: one block by a trusted key that holds. */
    for (i = 0; i < n_blocks; i++) {
        const uint8_t *b = sector + (size_t)i * RVNE_SIG_BLOCK_LEN;
        if (t->crypto->sha256(b + BLK_KEY, BLK_KEY_LEN, kd) != 0) return RVNE_E_BAD_SIGNATURE;
        if (in_list(t->revoked, t->n_revoked, kd)) {
            revoked = 1;
            continue;
        }
        if (!in_list(t->trusted, t->n_trusted, kd)) continue;
        if (!hashed) {
            if (t->crypto->sha256(p, payload, hash) != 0) return RVNE_E_BAD_SIGNATURE;
            hashed = 1;
        }
        if (block_holds(t->crypto, b, hash)) {
            out->verified = 1;
            memcpy(out->signer, kd, 32);
            return RVNE_OK;
        }
        bad = 1;
    }
    return bad ? RVNE_E_BAD_SIGNATURE : revoked ? RVNE_E_REVOKED_KEY : RVNE_E_UNTRUSTED_KEY;
}

int rvne_sig_check(const rvne_trust *t, const uint8_t *p, size_t len, uint32_t blob_len, int exact,
                   uint32_t floor, rvne_sig_info *out)
{
    int policy = t ? t->policy : RVNE_POLICY_UNSIGNED;
    int rc = rvne_sig_layout(p, len, blob_len, exact, out);
    if (policy != RVNE_POLICY_SIGNED) {
        /* Today's behaviour: a bare blob; a signed one is taken whole, unchecked. */
        if (rc == RVNE_E_UNSIGNED) return exact && len != blob_len ? RVNE_E_LENGTH : RVNE_OK;
        return rc == RVNE_OK ? RVNE_OK : RVNE_E_LENGTH;
    }
    if (rc != RVNE_OK) return rc;
    rc = rvne_sig_verify(t, p, blob_len, out);
    if (rc != RVNE_OK) return rc;
    /* Rule S5: never older than the model serving. */
    return out->version < floor ? RVNE_E_ROLLBACK : RVNE_OK;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int rvne_sig_parse_digests(const char *text, uint8_t keys[RVNE_SIG_MAX_KEYS][32])
{
    int n = 0, i;
    if (text == 0 || *text == '\0') return 0;
    for (;;) {
        if (n == RVNE_SIG_MAX_KEYS) return -1;
        for (i = 0; i < 64; i++) {
            int d = hexval(text[i]);
            if (d < 0) return -1;
            if (i % 2 == 0) keys[n][i / 2] = (uint8_t)(d << 4);
            else keys[n][i / 2] |= (uint8_t)d;
        }
        text += 64;
        n++;
        if (*text == '\0') return n;
        if (*text++ != ',') return -1;
    }
}

int rvne_trust_init(rvne_trust *t, const rvne_crypto *crypto, const char *trusted, const char *revoked)
{
    memset(t, 0, sizeof *t);
    t->policy = RVNE_POLICY_SIGNED;
    t->crypto = crypto;
    t->n_trusted = rvne_sig_parse_digests(trusted, t->trusted);
    t->n_revoked = rvne_sig_parse_digests(revoked, t->revoked);
    if (t->n_trusted < 0 || t->n_revoked < 0) {
        /* A malformed build option trusts nothing: every signed model is refused. */
        t->n_trusted = t->n_revoked = 0;
        return -1;
    }
    return 0;
}
