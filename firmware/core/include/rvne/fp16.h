#ifndef RVNE_FP16_H
#define RVNE_FP16_H
#include <stdint.h>

/* Exact IEEE binary16 -> binary32: subnormals, +-0, +-inf and NaN payloads. */
float rvne_fp16_to_f32(uint16_t h);

#endif
