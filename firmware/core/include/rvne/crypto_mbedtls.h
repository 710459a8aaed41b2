/* rvne_crypto (rvne/sig.h) over mbedtls: firmware/core/crypto/rvne_crypto_mbedtls.c,
 * linked only by builds with the signed policy (they link mbedtls too). */
#ifndef RVNE_CRYPTO_MBEDTLS_H
#define RVNE_CRYPTO_MBEDTLS_H
#include "rvne/sig.h"

extern const rvne_crypto rvne_crypto_mbedtls;

/* Bare-metal builds (mbedtls_config_bare.h, mbedtls_bare.c): hand Mbed TLS
 * its heap once before the first check. */
void rvne_mbedtls_heap_init(void);

#endif
