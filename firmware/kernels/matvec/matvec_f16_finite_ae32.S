/* void rvne_matvec_f16_finite_ae32(float *y, const float *x, const uint16_t *w,
 *                                  uint32_t n_in, uint32_t n_out):
 * rvne/kernels.h's rvne_matvec_f16_finite: matvec_f16_ae32.S without its
 * inf/NaN branch (that file says how and why it is exact). */
#define RVNE_F16_FINITE 1
#include "matvec_f16_ae32.S"
