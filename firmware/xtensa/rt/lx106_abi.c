/* The libgcc names the compiler calls on lx106, over the portable runtime.
 * Target only: on the host these names belong to the host's libgcc.
 * Floats cross as bit patterns through memcpy, never through a float
 * operation (which would call back in here). Only what Debian's libgcc for
 * lx106 lacks is defined; the rest (__divsf3, __fixsfsi, comparisons,
 * __modsi3, __moddi3, ...) comes from libgcc. */
#include "rt_bits.h"
#include "rvne_rt.h"

#if !defined(__XTENSA__)
#error "lx106_abi.c defines libgcc's own symbols: build it for xtensa-lx106 only"
#endif

/* Declared here because no header does; the prototypes are libgcc's. */
float __addsf3(float a, float b);
float __subsf3(float a, float b);
float __mulsf3(float a, float b);
float __floatsisf(int32_t i);
float __floatunsisf(uint32_t u);
uint32_t __fixunssfsi(float a);
double __extendsfdf2(float a);
float __truncdfsf2(double a);
int32_t __divsi3(int32_t a, int32_t b);
uint32_t __udivsi3(uint32_t a, uint32_t b);
uint32_t __umodsi3(uint32_t a, uint32_t b);
uint64_t __umulsidi3(uint32_t a, uint32_t b);
uint64_t __muldi3(uint64_t a, uint64_t b);
int64_t __divdi3(int64_t a, int64_t b);
uint64_t __udivdi3(uint64_t a, uint64_t b);
uint64_t __umoddi3(uint64_t a, uint64_t b);

float __addsf3(float a, float b) { return bitsf(rvne_rt_addsf3(fbits(a), fbits(b))); }
float __subsf3(float a, float b) { return bitsf(rvne_rt_subsf3(fbits(a), fbits(b))); }
float __mulsf3(float a, float b) { return bitsf(rvne_rt_mulsf3(fbits(a), fbits(b))); }
float __floatsisf(int32_t i) { return bitsf(rvne_rt_floatsisf(i)); }
float __floatunsisf(uint32_t u) { return bitsf(rvne_rt_floatunsisf(u)); }
uint32_t __fixunssfsi(float a) { return rvne_rt_fixunssfsi(fbits(a)); }
double __extendsfdf2(float a) { return bitsd(rvne_rt_extendsfdf2(fbits(a))); }
float __truncdfsf2(double a) { return bitsf(rvne_rt_truncdfsf2(dbits(a))); }
int32_t __divsi3(int32_t a, int32_t b) { return rvne_rt_divsi3(a, b); }
uint32_t __udivsi3(uint32_t a, uint32_t b) { return rvne_rt_udivsi3(a, b); }
uint32_t __umodsi3(uint32_t a, uint32_t b) { return rvne_rt_umodsi3(a, b); }
uint64_t __umulsidi3(uint32_t a, uint32_t b) { return rvne_rt_umulsidi3(a, b); }
uint64_t __muldi3(uint64_t a, uint64_t b) { return rvne_rt_muldi3(a, b); }
int64_t __divdi3(int64_t a, int64_t b) { return rvne_rt_divdi3(a, b); }
uint64_t __udivdi3(uint64_t a, uint64_t b) { return rvne_rt_udivdi3(a, b); }
uint64_t __umoddi3(uint64_t a, uint64_t b) { return rvne_rt_umoddi3(a, b); }
