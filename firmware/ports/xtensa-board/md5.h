#ifndef XTBOARD_MD5_H
#define XTBOARD_MD5_H
#include <stddef.h>
#include <stdint.h>

void md5(const uint8_t *data, size_t len, uint8_t digest[16]);

#endif
