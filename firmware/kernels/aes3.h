/* Assembler helpers of the ESP32-S3's kernels (dsp/NAME_aes3.S; GNU as only:
 * llvm-mc has no EE.* instructions). `ee.ldf.128.ip f11, f10, f9, f8`
 * puts the lowest-addressed float in f8; EE.LDF.64 / EE.STF.64 pairs
 * likewise. Both loads ignore the address's low bits (four, three). */
#ifndef RVNE_LX6_AES3_H
#define RVNE_LX6_AES3_H
#include "dsp.h"

#ifdef __ASSEMBLER__

/* acc += fx * f8 .. f11, or acc = (MUL4: a block's first row, so no sums
 * need zeroing), for four accumulators. */
    .macro  MAC4 fx, a0, a1, a2, a3
    madd.s  \a0, \fx, f8
    madd.s  \a1, \fx, f9
    madd.s  \a2, \fx, f10
    madd.s  \a3, \fx, f11
    .endm
    .macro  MUL4 fx, a0, a1, a2, a3
    mul.s   \a0, \fx, f8
    mul.s   \a1, \fx, f9
    mul.s   \a2, \fx, f10
    mul.s   \a3, \fx, f11
    .endm

/* Row counts of a pass over n rows of x from address xr, x loaded four at
 * a time once 16-byte aligned: p rows one at a time until then (at most
 * n), g groups of four, r rows left. */
    .macro  COUNTS xr, n, p, g, r
    neg     \p, \xr
    extui   \p, \p, 2, 2
    minu    \p, \p, \n
    sub     \g, \n, \p
    extui   \r, \g, 0, 2
    srli    \g, \g, 2
    .endm

/* f0-f7 = +0.0 from 16 zero bytes at zr. */
    .macro  ZERO8 zr
    ee.ldf.128.ip f3, f2, f1, f0, \zr, 0
    ee.ldf.128.ip f7, f6, f5, f4, \zr, 0
    .endm

/* The fields of the rvne_attn at ar (rvne/kernels.h) into the named
 * registers. */
    .macro  ATTN_FIELDS ar, hd, n, g, q_stride, kv_stride
    l32i    \hd, \ar, 0
    l32i    \n, \ar, 4
    l32i    \g, \ar, 8
    l32i    \q_stride, \ar, 12
    l32i    \kv_stride, \ar, 16
    .endm

/* The kernel's arguments a2-a6 as they came, to the LX6 driver fn for
 * the shapes the S3 kernel does not take; then return. */
    .macro  FALLBACK fn
    mov     a10, a2
    mov     a11, a3
    mov     a12, a4
    mov     a13, a5
    mov     a14, a6
    movi    a8, \fn
    callx8  a8
    retw
    .endm

/* 16 zero bytes, 16-byte aligned, for ZERO8. */
    .macro  ZEROS16 name
    .pushsection .rodata.\name, "a"
    .balign 16
\name:
    .space  16
    .popsection
    .endm

#endif
#endif
