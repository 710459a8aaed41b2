/* The double-precision calls LLVM emits for the unit tests (the esp32-class
 * core has no double unit; test_head computes its tolerance in double), over
 * the host-tested binary64 runtime of ../rt (df_arith.c, bit-exact
 * against the host in firmware/tests/test_softfloat.c). */
#include <stdint.h>
#include "rt_bits.h"
#include "rvne_rt.h"

/* Declared here because no header does; the prototypes are libgcc's. */
double __adddf3(double a, double b);
double __subdf3(double a, double b);
double __muldf3(double a, double b);
double __divdf3(double a, double b);
double __extendsfdf2(float a);
float __truncdfsf2(double a);
int __ledf2(double a, double b);
int __ltdf2(double a, double b);
int __gedf2(double a, double b);
int __gtdf2(double a, double b);
int __eqdf2(double a, double b);
int __nedf2(double a, double b);
int __unorddf2(double a, double b);

double __adddf3(double a, double b) { return bitsd(rvne_rt_adddf3(dbits(a), dbits(b))); }
double __subdf3(double a, double b) { return bitsd(rvne_rt_subdf3(dbits(a), dbits(b))); }
double __muldf3(double a, double b) { return bitsd(rvne_rt_muldf3(dbits(a), dbits(b))); }
double __divdf3(double a, double b) { return bitsd(rvne_rt_divdf3(dbits(a), dbits(b))); }
double __extendsfdf2(float a) { return bitsd(rvne_rt_extendsfdf2(fbits(a))); }
float __truncdfsf2(double a) { return bitsf(rvne_rt_truncdfsf2(dbits(a))); }
/* Unordered (a NaN) makes each comparison false: +1 for <= and <, -1 for
 * >= and >, non-zero for == and !=' s "not equal". */
int __ledf2(double a, double b) { return rvne_rt_cmpdf2(dbits(a), dbits(b), 1); }
int __ltdf2(double a, double b) { return rvne_rt_cmpdf2(dbits(a), dbits(b), 1); }
int __gedf2(double a, double b) { return rvne_rt_cmpdf2(dbits(a), dbits(b), -1); }
int __gtdf2(double a, double b) { return rvne_rt_cmpdf2(dbits(a), dbits(b), -1); }
int __eqdf2(double a, double b) { return rvne_rt_cmpdf2(dbits(a), dbits(b), 1); }
int __nedf2(double a, double b) { return rvne_rt_cmpdf2(dbits(a), dbits(b), 1); }
int __unorddf2(double a, double b) { return rvne_rt_cmpdf2(dbits(a), dbits(b), 1) == 1 && (dbits(a) << 1 > 0xFFE0000000000000ull || dbits(b) << 1 > 0xFFE0000000000000ull); }
