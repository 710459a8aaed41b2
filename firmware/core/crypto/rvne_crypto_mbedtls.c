/* The port's cryptography for signed models (rvne/sig.h) from mbedtls:
 * SHA-256 and RSA-PSS verification as espsecure's Secure Boot v2 blocks
 * need them (RSA-3072, MGF1-SHA-256, 32-byte salt). Mbed TLS 2.28 (Debian
 * 12, the boards' build from Debian's source) or 3.x (ESP-IDF 5). */
#include <string.h>
#include "mbedtls/rsa.h"
#include "mbedtls/sha256.h"
#include "mbedtls/version.h"
#include "rvne/crypto_mbedtls.h"

static int sha256(const uint8_t *p, size_t n, uint8_t out[32])
{
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
    return mbedtls_sha256(p, n, out, 0);
#else
    return mbedtls_sha256_ret(p, n, out, 0);
#endif
}

static int rsa_pss_verify(const uint8_t n_be[384], uint32_t e, const uint8_t hash[32], const uint8_t sig_be[384])
{
    mbedtls_rsa_context rsa;
    uint8_t e_be[4];
    int rc;
    e_be[0] = (uint8_t)(e >> 24);
    e_be[1] = (uint8_t)(e >> 16);
    e_be[2] = (uint8_t)(e >> 8);
    e_be[3] = (uint8_t)e;
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
    mbedtls_rsa_init(&rsa);
    rc = mbedtls_rsa_set_padding(&rsa, MBEDTLS_RSA_PKCS_V21, MBEDTLS_MD_SHA256);
#else
    mbedtls_rsa_init(&rsa, MBEDTLS_RSA_PKCS_V21, MBEDTLS_MD_SHA256);
    rc = 0;
#endif
    if (rc == 0) rc = mbedtls_rsa_import_raw(&rsa, n_be, 384, 0, 0, 0, 0, 0, 0, e_be, sizeof e_be);
    if (rc == 0) rc = mbedtls_rsa_complete(&rsa);
    if (rc == 0) rc = mbedtls_rsa_check_pubkey(&rsa);
    if (rc == 0 && mbedtls_rsa_get_len(&rsa) != 384u) rc = -1;   /* RSA-3072 only, as Secure Boot v2 */
#if MBEDTLS_VERSION_NUMBER >= 0x03000000
    if (rc == 0) rc = mbedtls_rsa_rsassa_pss_verify_ext(&rsa, MBEDTLS_MD_SHA256, 32, hash, MBEDTLS_MD_SHA256, 32, sig_be);
#else
    if (rc == 0)
        rc = mbedtls_rsa_rsassa_pss_verify_ext(&rsa, 0, 0, MBEDTLS_RSA_PUBLIC, MBEDTLS_MD_SHA256, 32, hash,
                                               MBEDTLS_MD_SHA256, 32, sig_be);
#endif
    mbedtls_rsa_free(&rsa);
    return rc;
}

const rvne_crypto rvne_crypto_mbedtls = {sha256, rsa_pss_verify};
