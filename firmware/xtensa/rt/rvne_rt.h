/* The runtime Debian's libgcc for xtensa-lx106 lacks (see
 * ../shared/notes/emulated-xtensa.md), as portable C on bit patterns, so the
 * very same code runs in the host's unit tests (against the host's IEEE-754)
 * and, through lx106_abi.c, under the libgcc names on the target.
 *
 * Integer arithmetic only: on lx106 any float operation in here would call
 * back into this runtime. Nothing here divides or multiplies 64-bit values
 * with C operators either (those are libcalls this runtime supplies).
 *
 * Floats are IEEE binary32 bit patterns (uint32_t), doubles binary64
 * (uint64_t). Rounding is to nearest, ties to even; subnormals are kept (no
 * flush to zero); no exception flags are raised.
 *
 * NaN results follow x86 SSE, so the host comparison can be bit-exact:
 *  - a NaN operand is returned quieted (quiet bit 0x00400000 set, sign and
 *    payload kept); when both are NaN, the first operand's;
 *  - an invalid operation (inf - inf, 0 * inf) returns the default NaN
 *    0xFFC00000;
 *  - widening keeps the payload (shifted up), narrowing keeps its top bits.
 *
 * Cases C leaves undefined are defined here, and never trap:
 *  - float -> unsigned saturates: NaN and anything <= -1 give 0, anything
 *    >= 2^32 (and +inf) gives 0xFFFFFFFF (the ARM VCVT / Rust `as` rule);
 *  - division by zero gives all ones as quotient (-1 signed) and the dividend
 *    as remainder (the RISC-V M-extension rule);
 *  - INT_MIN / -1 gives INT_MIN (and INT64_MIN / -1 gives INT64_MIN). */
#ifndef RVNE_RT_H
#define RVNE_RT_H
#include <stdint.h>

/* binary32 arithmetic */
uint32_t rvne_rt_addsf3(uint32_t a, uint32_t b);
uint32_t rvne_rt_subsf3(uint32_t a, uint32_t b);
uint32_t rvne_rt_mulsf3(uint32_t a, uint32_t b);
uint32_t rvne_rt_divsf3(uint32_t a, uint32_t b);
uint32_t rvne_rt_sqrtsf(uint32_t a);

/* binary64 arithmetic and comparison (cmp: <0, 0, >0, or `unordered`
 * when either is NaN) */
uint64_t rvne_rt_adddf3(uint64_t a, uint64_t b);
uint64_t rvne_rt_subdf3(uint64_t a, uint64_t b);
uint64_t rvne_rt_muldf3(uint64_t a, uint64_t b);
uint64_t rvne_rt_divdf3(uint64_t a, uint64_t b);
int32_t rvne_rt_cmpdf2(uint64_t a, uint64_t b, int32_t unordered);

/* integer <-> binary32 */
uint32_t rvne_rt_floatsisf(int32_t i);
uint32_t rvne_rt_floatunsisf(uint32_t u);
uint32_t rvne_rt_fixunssfsi(uint32_t a);

/* binary32 <-> binary64 */
uint64_t rvne_rt_extendsfdf2(uint32_t a);
uint32_t rvne_rt_truncdfsf2(uint64_t a);

/* 32-bit integer division */
int32_t rvne_rt_divsi3(int32_t a, int32_t b);
uint32_t rvne_rt_udivsi3(uint32_t a, uint32_t b);
uint32_t rvne_rt_umodsi3(uint32_t a, uint32_t b);

/* 64-bit integer multiply and division */
uint64_t rvne_rt_umulsidi3(uint32_t a, uint32_t b);
uint64_t rvne_rt_muldi3(uint64_t a, uint64_t b);
int64_t rvne_rt_divdi3(int64_t a, int64_t b);
uint64_t rvne_rt_udivdi3(uint64_t a, uint64_t b);
uint64_t rvne_rt_umoddi3(uint64_t a, uint64_t b);

#endif
