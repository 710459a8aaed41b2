/* The inner loops of the forward pass (docs/model.md), esp-dsp style: each
 * kernel rvne_<name> has a plain-C twin rvne_<name>_c (rvne_kernels.c), the
 * readable reference and the fallback on every target, and a port may supply
 * a faster rvne_<name>_ae32 with the same signature by defining
 * RVNE_HAVE_<NAME>_AE32 when it compiles the core. The port's tests check
 * each one against its twin on awkward lengths. The kernels live by
 * operation in firmware/kernels/<op>/ (the declarations below, each core's
 * assembly and the twin tests side by side); the esp32-class cores have
 * them in Xtensa assembly, every other target runs the C twins
 * (docs/targets.md, "Kernels").
 *
 * Shapes: vectors are contiguous floats; a matrix is row-major; a "stride"
 * is the distance in floats between consecutive rows of the key or value
 * cache (one row per position). No output may alias an input. */
#ifndef RVNE_KERNELS_H
#define RVNE_KERNELS_H
#include <stdint.h>
#include "rvne_kernel_types.h"
#include "matvec/rvne_matvec.h"
#include "scores/rvne_scores.h"
#include "softmax/rvne_softmax.h"
#include "wsum/rvne_wsum.h"

#endif
