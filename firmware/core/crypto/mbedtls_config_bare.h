/* Mbed TLS configuration for the bare-metal boards (MBEDTLS_CONFIG_FILE):
 * only what a signed model's check needs (rvne/sig.h): SHA-256, RSA with
 * PKCS#1 v2.1 (PSS) verification, big numbers. No OS: no entropy, no
 * standard I/O; the heap is Mbed TLS's own buffer allocator over a static
 * array (mbedtls_bare.c). OID_C is only a prerequisite of RSA_C in its
 * check_config.h; oid.c itself is not linked (PKCS#1 v1.5 is off). */
#ifndef RVNE_MBEDTLS_CONFIG_BARE_H
#define RVNE_MBEDTLS_CONFIG_BARE_H

#define MBEDTLS_BIGNUM_C
#define MBEDTLS_OID_C
#define MBEDTLS_RSA_C
#define MBEDTLS_PKCS1_V21
#define MBEDTLS_MD_C
#define MBEDTLS_SHA256_C
#define MBEDTLS_SHA256_SMALLER
#define MBEDTLS_PLATFORM_C
#define MBEDTLS_PLATFORM_MEMORY
#define MBEDTLS_PLATFORM_NO_STD_FUNCTIONS
#define MBEDTLS_MEMORY_BUFFER_ALLOC_C
#define MBEDTLS_NO_PLATFORM_ENTROPY

/* memory_buffer_alloc.c ends the program on a corrupted heap: the board's fault report. */
void rvne_mbedtls_exit(int status);
#define MBEDTLS_PLATFORM_EXIT_MACRO rvne_mbedtls_exit

#include "mbedtls/check_config.h"
#endif
