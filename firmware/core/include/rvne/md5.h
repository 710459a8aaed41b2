/* MD5 (RFC 1321) for the partition table's MD5 row; not for security. */
#ifndef RVNE_MD5_H
#define RVNE_MD5_H
#include <stddef.h>
#include <stdint.h>

void rvne_md5(const uint8_t *data, size_t len, uint8_t digest[16]);

#endif
