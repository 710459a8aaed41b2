/* The lx106 runtime (firmware/xtensa/rt) on the host, bit for bit
 * against the host's own IEEE-754 arithmetic: hand-picked edge cases and
 * 10^6 seeded random operand pairs per function, drawn so that every
 * exponent, cancellation, ties, subnormal results and both overflow edges
 * come up. Integer division against the host's / and %.
 *
 * The reference is the C operator on volatile operands (never constant
 * folded), built with -ffp-contract=off -fno-fast-math (tests.mk). NaN
 * payloads are compared exactly on x86 (the runtime follows SSE's rule,
 * rvne_rt.h); elsewhere only NaN-ness is. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "rvne_rt.h"

#ifdef __FAST_MATH__
#error "test_softfloat needs IEEE semantics: build without -ffast-math"
#endif
#if FLT_EVAL_METHOD != 0
#error "test_softfloat needs float arithmetic evaluated in float (SSE-like)"
#endif
#if defined(__x86_64__) || defined(__i386__)
#define NAN_PAYLOADS_LIKE_SSE 1
#else
#define NAN_PAYLOADS_LIKE_SSE 0
#endif

#define N_RANDOM 1000000L
#define SEED 0x52564E45F10A7ull
#define MAX_SHOWN 5

/* ---- bits <-> values ------------------------------------------------- */
static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint64_t d2u(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double u2d(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
static int is_nan32(uint32_t a) { return (a & 0x7FFFFFFFu) > 0x7F800000u; }
static int is_nan64(uint64_t a) { return (a & ~(1ull << 63)) > (0x7FFull << 52); }

/* ---- the native reference -------------------------------------------- */
static uint32_t nat_add(uint32_t a, uint32_t b)
{
    volatile float x = u2f(a), y = u2f(b);
    volatile float r = x + y;
    return f2u(r);
}
static uint32_t nat_sub(uint32_t a, uint32_t b)
{
    volatile float x = u2f(a), y = u2f(b);
    volatile float r = x - y;
    return f2u(r);
}
static uint32_t nat_mul(uint32_t a, uint32_t b)
{
    volatile float x = u2f(a), y = u2f(b);
    volatile float r = x * y;
    return f2u(r);
}
static uint32_t nat_div(uint32_t a, uint32_t b)
{
    volatile float x = u2f(a), y = u2f(b);
    volatile float r = x / y;
    return f2u(r);
}

/* ---- per-function tallies --------------------------------------------- */
typedef struct tally {
    const char *name;
    long cases, bad, ties, subnormal, overflow, nan;
} tally;

static void report_bad(tally *t, const char *what)
{
    t->bad++;
    if (t->bad <= MAX_SHOWN)
        fprintf(stderr, "%s: %s\n", t->name, what);
}

/* Binary op result: bit-exact unless NaN; NaN payloads as SSE gives them
 * (one NaN operand: it, quieted; both: either, ours the first; invalid:
 * the default NaN). */
static void judge_binary(tally *t, uint32_t a, uint32_t b, uint32_t got, uint32_t want)
{
    char msg[160];
    int ok;
    t->cases++;
    if (!is_nan32(want)) {
        ok = got == want;
    } else if (!is_nan32(got)) {
        ok = 0;
    } else if (!NAN_PAYLOADS_LIKE_SSE) {
        ok = 1;
    } else if (is_nan32(a) && is_nan32(b)) {
        ok = got == (a | 0x00400000u) &&
             (want == (a | 0x00400000u) || want == (b | 0x00400000u));
    } else if (is_nan32(a) || is_nan32(b)) {
        ok = got == want;
    } else {
        ok = got == 0xFFC00000u && got == want;
    }
    if (!ok) {
        snprintf(msg, sizeof msg, "a=0x%08x b=0x%08x got 0x%08x want 0x%08x",
                 (unsigned)a, (unsigned)b, (unsigned)got, (unsigned)want);
        report_bad(t, msg);
    }
    if (is_nan32(want))
        t->nan++;
    else if ((want & 0x7FFFFFFFu) == 0x7F800000u && (a & 0x7F800000u) != 0x7F800000u &&
             (b & 0x7F800000u) != 0x7F800000u)
        t->overflow++;      /* infinity from finite operands */
    else if ((want & 0x7F800000u) == 0 && (want & 0x007FFFFFu))
        t->subnormal++;
}

/* Whether the exact result lay exactly halfway between two floats. The exact
 * product of two floats always fits a double; an exact sum fits one whenever
 * the exponents are close enough for a tie to be possible at all. */
static int was_tie(double exact, uint32_t rounded)
{
    float r = u2f(rounded), other;
    double d;
    if (is_nan32(rounded) || isinf(r) || isinf(exact))
        return 0;
    d = exact - (double)r;
    if (d == 0.0)
        return 0;
    other = nextafterf(r, d > 0 ? INFINITY : -INFINITY);
    return !isinf(other) && (double)other - exact == d;
}

static void check_add(tally *t, uint32_t a, uint32_t b)
{
    uint32_t want = nat_add(a, b);
    judge_binary(t, a, b, rvne_rt_addsf3(a, b), want);
    t->ties += was_tie((double)u2f(a) + (double)u2f(b), want);
}
static void check_sub(tally *t, uint32_t a, uint32_t b)
{
    uint32_t want = nat_sub(a, b);
    judge_binary(t, a, b, rvne_rt_subsf3(a, b), want);
    t->ties += was_tie((double)u2f(a) - (double)u2f(b), want);
}
static void check_mul(tally *t, uint32_t a, uint32_t b)
{
    uint32_t want = nat_mul(a, b);
    judge_binary(t, a, b, rvne_rt_mulsf3(a, b), want);
    t->ties += was_tie((double)u2f(a) * (double)u2f(b), want);
}
/* A binary32 quotient is never a tie (it would need a 25-bit significand
 * from two 24-bit ones), so only the other hard cases are counted. */
static void check_div(tally *t, uint32_t a, uint32_t b)
{
    judge_binary(t, a, b, rvne_rt_divsf3(a, b), nat_div(a, b));
}
/* sqrt as a binary op with b = +0 (sqrtf(+0) = +0), so NaNs are judged the
 * same way: a NaN operand quieted, sqrt(negative) the default NaN. */
static void check_sqrt(tally *t, uint32_t a)
{
    volatile float x = u2f(a);
    volatile float r = sqrtf(x);
    judge_binary(t, a, 0u, rvne_rt_sqrtsf(a), f2u(r));
}

/* ---- the operand generator -------------------------------------------- */
static uint64_t rng_state = SEED;
static uint64_t rnd64(void)        /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint32_t rnd32(void) { return (uint32_t)(rnd64() >> 32); }
static uint32_t rnd_below(uint32_t n) { return (uint32_t)(((uint64_t)rnd32() * n) >> 32); }

/* A mantissa that is random, or has only its top few bits set (so sums and
 * products land exactly on ties and exact results), or is all ones. */
static uint32_t rnd_frac(void)
{
    uint32_t f = rnd32() & 0x007FFFFFu;
    switch (rnd_below(4)) {
    case 0: return f;
    case 1: return f & ~(0x007FFFFFu >> rnd_below(24));
    case 2: return f & (0x007FFFFFu << rnd_below(24)) & 0x007FFFFFu;
    default: return rnd_below(2) ? 0x007FFFFFu : 0;
    }
}
static uint32_t make_float(uint32_t sign, int32_t e, uint32_t frac)
{
    if (e < 0) e = 0;
    if (e > 255) e = 255;
    if (e == 255 && rnd_below(2)) frac = 0;        /* infinities as often as NaNs */
    return (sign << 31) | ((uint32_t)e << 23) | frac;
}

/* Operand pairs: uniform bit patterns (every exponent alike); b's exponent
 * near a's (cancellation, ties in addition); exponents summing to the
 * underflow or overflow edge of a product; exponents at the ends. */
static void rnd_pair(uint32_t *a, uint32_t *b)
{
    int32_t ea = (int32_t)rnd_below(256), d;
    switch (rnd_below(5)) {
    case 0:
        *a = rnd32();
        *b = rnd32();
        return;
    case 1:
        d = (int32_t)rnd_below(55) - 27;
        *a = make_float(rnd_below(2), ea, rnd_frac());
        *b = make_float(rnd_below(2), ea + d, rnd_frac());
        return;
    case 2:     /* ea + eb - 127 around 0 (subnormal products) */
        ea = 1 + (int32_t)rnd_below(254);
        *a = make_float(rnd_below(2), ea, rnd_frac());
        *b = make_float(rnd_below(2), 127 - ea + (int32_t)rnd_below(30) - 24, rnd_frac());
        return;
    case 3:     /* ea + eb - 127 around 254 (overflowing products) */
        ea = 128 + (int32_t)rnd_below(127);
        *a = make_float(rnd_below(2), ea, rnd_frac());
        *b = make_float(rnd_below(2), 381 - ea + (int32_t)rnd_below(5) - 2, rnd_frac());
        return;
    default: {
        static const int32_t ends[] = {0, 0, 1, 2, 24, 25, 126, 127, 128, 229, 253, 254, 254, 255};
        int32_t n = (int32_t)(sizeof ends / sizeof ends[0]);
        *a = make_float(rnd_below(2), ends[rnd_below((uint32_t)n)], rnd_frac());
        *b = make_float(rnd_below(2), ends[rnd_below((uint32_t)n)], rnd_frac());
        return;
    }
    }
}

/* A 32-bit integer of random magnitude (every bit length alike). */
static uint32_t rnd_int_bits(void) { return rnd32() >> rnd_below(32); }
static uint64_t rnd_int_bits64(void) { return rnd64() >> rnd_below(64); }

/* ---- hand-picked operands ---------------------------------------------- */
static const uint32_t edges[] = {
    0x00000000u, 0x80000000u,                       /* +-0 */
    0x00000001u, 0x80000001u, 0x00000002u, 0x00000003u, /* smallest subnormals */
    0x00400000u, 0x007FFFFEu, 0x007FFFFFu, 0x807FFFFFu, /* largest subnormals */
    0x00800000u, 0x80800000u, 0x00800001u, 0x00FFFFFFu, 0x01000000u, /* min normal */
    0x33000000u, 0x33800000u, 0x33800001u, 0x34000000u, /* 2^-25, 2^-24, 2^-23 */
    0x3F000000u, 0x3F7FFFFFu, 0x3F800000u, 0xBF800000u, 0x3F800001u, 0x3F800003u,
    0x3FC00000u, 0x40000000u, 0x3EAAAAABu, 0x1F800000u, 0x5F800000u, 0x20000000u,
    0x4B000000u, 0x4B7FFFFFu, 0x4B800000u, 0x4B800001u, /* 2^23, 2^24 */
    0x7F000000u, 0x7F7FFFFEu, 0x7F7FFFFFu, 0xFF7FFFFFu, /* max finite */
    0x7F800000u, 0xFF800000u,                       /* +-inf */
    0x7FC00000u, 0xFFC00000u, 0x7FC12345u,          /* quiet NaNs */
    0x7F800001u, 0xFF800001u, 0x7FBFFFFFu,          /* signalling NaNs */
};
#define N_EDGES (sizeof edges / sizeof edges[0])

/* Results fixed by IEEE-754 alone, independent of the host. */
static void check_known_results(void)
{
    /* signed zeros */
    CHECK_EQ(rvne_rt_addsf3(0x80000000u, 0x00000000u), 0x00000000u);
    CHECK_EQ(rvne_rt_addsf3(0x80000000u, 0x80000000u), 0x80000000u);
    CHECK_EQ(rvne_rt_subsf3(0x80000000u, 0x00000000u), 0x80000000u);
    CHECK_EQ(rvne_rt_subsf3(0x3FC00000u, 0x3FC00000u), 0x00000000u);
    CHECK_EQ(rvne_rt_addsf3(0x807FFFFFu, 0x007FFFFFu), 0x00000000u);
    CHECK_EQ(rvne_rt_mulsf3(0x80000000u, 0x3F800000u), 0x80000000u);
    CHECK_EQ(rvne_rt_mulsf3(0x00000001u, 0x3F000000u), 0x00000000u); /* tie to even 0 */
    CHECK_EQ(rvne_rt_mulsf3(0x00000003u, 0x3F000000u), 0x00000002u); /* 1.5 ulp: to even 2 */
    CHECK_EQ(rvne_rt_mulsf3(0x80000001u, 0x3F000001u), 0x80000001u); /* just above the tie */
    /* ties in addition: 1 + 2^-24 stays 1; (1 + 2^-23) + 2^-24 goes up to even */
    CHECK_EQ(rvne_rt_addsf3(0x3F800000u, 0x33800000u), 0x3F800000u);
    CHECK_EQ(rvne_rt_addsf3(0x3F800001u, 0x33800000u), 0x3F800002u);
    CHECK_EQ(rvne_rt_addsf3(0x3F800000u, 0x33800001u), 0x3F800001u);
    /* subnormal sums are exact; min normal - min subnormal is subnormal */
    CHECK_EQ(rvne_rt_addsf3(0x00000001u, 0x00000001u), 0x00000002u);
    CHECK_EQ(rvne_rt_subsf3(0x00800000u, 0x00000001u), 0x007FFFFFu);
    CHECK_EQ(rvne_rt_addsf3(0x007FFFFFu, 0x00000001u), 0x00800000u);
    /* overflow */
    CHECK_EQ(rvne_rt_addsf3(0x7F7FFFFFu, 0x7F7FFFFFu), 0x7F800000u);
    CHECK_EQ(rvne_rt_addsf3(0x7F7FFFFFu, 0x73000000u), 0x7F800000u); /* +half ulp: tie to even = up */
    CHECK_EQ(rvne_rt_addsf3(0x7F7FFFFFu, 0x72FFFFFFu), 0x7F7FFFFFu);
    CHECK_EQ(rvne_rt_mulsf3(0xFF7FFFFFu, 0x40000000u), 0xFF800000u);
    /* infinities and NaNs */
    CHECK_EQ(rvne_rt_subsf3(0x7F800000u, 0x7F800000u), 0xFFC00000u);
    CHECK_EQ(rvne_rt_mulsf3(0x00000000u, 0xFF800000u), 0xFFC00000u);
    CHECK_EQ(rvne_rt_addsf3(0xFF800000u, 0x7F7FFFFFu), 0xFF800000u);
    CHECK_EQ(rvne_rt_addsf3(0x3F800000u, 0x7F800001u), 0x7FC00001u);
    CHECK_EQ(rvne_rt_subsf3(0x3F800000u, 0x7FC00000u), 0x7FC00000u);
    CHECK_EQ(rvne_rt_mulsf3(0xFFC00001u, 0x7FC00002u), 0xFFC00001u);
    /* integers */
    CHECK_EQ(rvne_rt_floatsisf(INT32_MIN), 0xCF000000u);
    CHECK_EQ(rvne_rt_floatsisf(INT32_MAX), 0x4F000000u);
    CHECK_EQ(rvne_rt_floatsisf(16777217), 0x4B800000u);  /* 2^24+1: tie down to even */
    CHECK_EQ(rvne_rt_floatsisf(16777219), 0x4B800002u);  /* 2^24+3: tie up to even */
    CHECK_EQ(rvne_rt_floatsisf(0), 0x00000000u);
    CHECK_EQ(rvne_rt_floatunsisf(UINT32_MAX), 0x4F800000u);
    CHECK_EQ(rvne_rt_fixunssfsi(0x4F800000u), UINT32_MAX);   /* 2^32 saturates */
    CHECK_EQ(rvne_rt_fixunssfsi(0x4F7FFFFFu), 0xFFFFFF00u);
    CHECK_EQ(rvne_rt_fixunssfsi(0xBF800000u), 0u);           /* -1 saturates to 0 */
    CHECK_EQ(rvne_rt_fixunssfsi(0xBF7FFFFFu), 0u);           /* -0.99.. truncates to 0 */
    CHECK_EQ(rvne_rt_fixunssfsi(0x7FC00000u), 0u);
    CHECK_EQ(rvne_rt_fixunssfsi(0x7F800000u), UINT32_MAX);
    CHECK_EQ(rvne_rt_fixunssfsi(0x3FFFFFFFu), 1u);
    CHECK_EQ(rvne_rt_extendsfdf2(0x00000001u), 0x36A0000000000000ull);
    CHECK_EQ(rvne_rt_truncdfsf2(0x36A0000000000000ull), 0x00000001u);
    CHECK_EQ(rvne_rt_truncdfsf2(0x3690000000000000ull), 0x00000000u); /* 2^-150: tie to 0 */
    CHECK_EQ(rvne_rt_truncdfsf2(0x3690000000000001ull), 0x00000001u);
    CHECK_EQ(rvne_rt_truncdfsf2(0x47EFFFFFF0000000ull), 0x7F800000u); /* max + half ulp */
    CHECK_EQ(rvne_rt_divsi3(INT32_MIN, -1), INT32_MIN);
    CHECK_EQ(rvne_rt_divsi3(7, 0), -1);
    CHECK_EQ(rvne_rt_udivsi3(7, 0), UINT32_MAX);
    CHECK_EQ(rvne_rt_umodsi3(7, 0), 7);
    CHECK_EQ(rvne_rt_divdi3(INT64_MIN, -1), INT64_MIN);
    CHECK_EQ(rvne_rt_udivdi3(7, 0), (long long)UINT64_MAX);
    CHECK_EQ(rvne_rt_umoddi3(7, 0), 7);
}

/* ---- binary32 arithmetic ----------------------------------------------- */
static void check_arith(tally *add, tally *sub, tally *mul, tally *div, tally *sq)
{
    size_t i, j;
    long n;
    uint32_t a, b;
    for (i = 0; i < N_EDGES; i++)
        for (j = 0; j < N_EDGES; j++) {
            check_add(add, edges[i], edges[j]);
            check_sub(sub, edges[i], edges[j]);
            check_mul(mul, edges[i], edges[j]);
            check_div(div, edges[i], edges[j]);
        }
    for (i = 0; i < N_EDGES; i++)
        check_sqrt(sq, edges[i]);
    for (n = 0; n < N_RANDOM; n++) {
        rnd_pair(&a, &b);
        check_add(add, a, b);
        rnd_pair(&a, &b);
        check_sub(sub, a, b);
        rnd_pair(&a, &b);
        check_mul(mul, a, b);
        rnd_pair(&a, &b);
        check_div(div, a, b);
        check_sqrt(sq, a);
    }
}

/* ---- binary64 arithmetic ----------------------------------------------- */
static uint64_t nat_d(int op, uint64_t a, uint64_t b)
{
    volatile double x = u2d(a), y = u2d(b);
    volatile double r = op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y : x / y;
    return d2u(r);
}

static int nat_dcmp_le(uint64_t a, uint64_t b)
{
    volatile double x = u2d(a), y = u2d(b);
    return x <= y;
}

static void judge_binary64(tally *t, uint64_t a, uint64_t b, uint64_t got, uint64_t want)
{
    char msg[200];
    int ok;
    t->cases++;
    if (!is_nan64(want))
        ok = got == want;
    else if (!is_nan64(got))
        ok = 0;
    else if (!NAN_PAYLOADS_LIKE_SSE)
        ok = 1;
    else if (is_nan64(a) && is_nan64(b))
        ok = got == (a | (1ull << 51));
    else if (is_nan64(a) || is_nan64(b))
        ok = got == want;
    else
        ok = got == 0xFFF8000000000000ull && got == want;
    if (!ok) {
        snprintf(msg, sizeof msg, "a=0x%016llx b=0x%016llx got 0x%016llx want 0x%016llx",
                 (unsigned long long)a, (unsigned long long)b, (unsigned long long)got,
                 (unsigned long long)want);
        report_bad(t, msg);
    }
    if (is_nan64(want))
        t->nan++;
    else if ((want & ~(1ull << 63)) == (0x7FFull << 52) && ((a >> 52) & 0x7FF) != 0x7FF &&
             ((b >> 52) & 0x7FF) != 0x7FF)
        t->overflow++;
    else if ((want & (0x7FFull << 52)) == 0 && (want & ((1ull << 52) - 1)))
        t->subnormal++;
}

static uint64_t make_double(uint64_t sign, int32_t e, uint64_t frac)
{
    if (e < 0)
        e = 0;
    if (e > 2047)
        e = 2047;
    return (sign << 63) | ((uint64_t)e << 52) | (frac & ((1ull << 52) - 1));
}

static uint64_t rnd_dfrac(void)
{
    uint64_t f = rnd64();
    switch (rnd_below(3)) {
    case 0: return f >> rnd_below(53);                  /* few low bits: near-exact */
    case 1: return f & (~0ull << rnd_below(53));         /* trailing zeros: ties */
    default: return f;
    }
}

static void rnd_dpair(uint64_t *a, uint64_t *b)
{
    static const int32_t ends[] = {0, 0, 1, 2, 53, 54, 1022, 1023, 1024, 2045, 2046, 2046, 2047};
    int32_t ea = (int32_t)rnd_below(2048);
    switch (rnd_below(5)) {
    case 0:
        *a = rnd64();
        *b = rnd64();
        return;
    case 1:
        *a = make_double(rnd_below(2), ea, rnd_dfrac());
        *b = make_double(rnd_below(2), ea + (int32_t)rnd_below(121) - 60, rnd_dfrac());
        return;
    case 2:     /* products and quotients around the subnormal range */
        ea = 1 + (int32_t)rnd_below(2046);
        *a = make_double(rnd_below(2), ea, rnd_dfrac());
        *b = make_double(rnd_below(2), rnd_below(2) ? 1023 - ea + (int32_t)rnd_below(60) - 54
                                                   : ea + 1023 - (int32_t)rnd_below(60), rnd_dfrac());
        return;
    case 3:     /* around overflow */
        ea = 1024 + (int32_t)rnd_below(1023);
        *a = make_double(rnd_below(2), ea, rnd_dfrac());
        *b = make_double(rnd_below(2), rnd_below(2) ? 3069 - ea + (int32_t)rnd_below(5) - 2
                                                   : ea - 1023 - (int32_t)rnd_below(5), rnd_dfrac());
        return;
    default: {
        uint32_t n = (uint32_t)(sizeof ends / sizeof ends[0]);
        *a = make_double(rnd_below(2), ends[rnd_below(n)], rnd_dfrac());
        *b = make_double(rnd_below(2), ends[rnd_below(n)], rnd_dfrac());
        return;
    }
    }
}

static void check_double(tally *t)      /* t[0..3] add sub mul div, t[4] compare */
{
    long n;
    uint64_t a, b;
    for (n = 0; n < N_RANDOM; n++) {
        int op = (int)(n & 3);
        uint64_t got;
        rnd_dpair(&a, &b);
        got = op == 0 ? rvne_rt_adddf3(a, b) : op == 1 ? rvne_rt_subdf3(a, b)
            : op == 2 ? rvne_rt_muldf3(a, b) : rvne_rt_divdf3(a, b);
        judge_binary64(&t[op], a, b, got, nat_d(op, a, b));
        {
            /* __ledf2's rule: <= 0 exactly when a <= b; NaN gives +1. */
            int32_t c = rvne_rt_cmpdf2(a, b, 1);
            t[4].cases++;
            if ((c <= 0) != nat_dcmp_le(a, b) || ((is_nan64(a) || is_nan64(b)) && c != 1)) {
                char msg[120];
                snprintf(msg, sizeof msg, "a=0x%016llx b=0x%016llx cmp %d", (unsigned long long)a,
                         (unsigned long long)b, (int)c);
                report_bad(&t[4], msg);
            }
        }
    }
}

/* ---- conversions --------------------------------------------------------- */
static void judge_u32(tally *t, uint32_t in, uint32_t got, uint32_t want, int nan_ok)
{
    char msg[120];
    int ok = got == want;
    t->cases++;
    if (!ok && nan_ok && is_nan32(want) && is_nan32(got) && !NAN_PAYLOADS_LIKE_SSE)
        ok = 1;
    if (!ok) {
        snprintf(msg, sizeof msg, "in=0x%08x got 0x%08x want 0x%08x",
                 (unsigned)in, (unsigned)got, (unsigned)want);
        report_bad(t, msg);
    }
}

static void check_floatsisf(tally *t, int32_t i)
{
    volatile int32_t v = i;
    volatile float r = (float)v;
    judge_u32(t, (uint32_t)i, rvne_rt_floatsisf(i), f2u(r), 0);
    t->ties += was_tie((double)i, f2u(r));
}
static void check_floatunsisf(tally *t, uint32_t u)
{
    volatile uint32_t v = u;
    volatile float r = (float)v;
    judge_u32(t, u, rvne_rt_floatunsisf(u), f2u(r), 0);
    t->ties += was_tie((double)u, f2u(r));
}
/* C defines (unsigned)f only on (-1, 2^32); the rest is the runtime's
 * documented saturation, written here with native comparisons. */
static void check_fixunssfsi(tally *t, uint32_t a)
{
    volatile float f = u2f(a);
    uint32_t want;
    if (isnan(f) || f <= -1.0f)
        want = 0;
    else if (f >= 4294967296.0f)
        want = UINT32_MAX;
    else
        want = (uint32_t)f;
    judge_u32(t, a, rvne_rt_fixunssfsi(a), want, 0);
}
static void check_truncdfsf2(tally *t, uint64_t a)
{
    volatile double d = u2d(a);
    volatile float r = (float)d;
    char msg[120];
    uint32_t got = rvne_rt_truncdfsf2(a), want = f2u(r);
    int ok = got == want || (is_nan32(got) && is_nan32(want) && !NAN_PAYLOADS_LIKE_SSE);
    t->cases++;
    if (!ok) {
        snprintf(msg, sizeof msg, "in=0x%016llx got 0x%08x want 0x%08x",
                 (unsigned long long)a, (unsigned)got, (unsigned)want);
        report_bad(t, msg);
    }
    if (!is_nan32(want) && (want & 0x7F800000u) == 0 && (want & 0x007FFFFFu))
        t->subnormal++;
    t->ties += !is_nan64(a) && was_tie(u2d(a), want);
}
static void check_extendsfdf2(tally *t, uint32_t a)
{
    volatile float f = u2f(a);
    volatile double r = (double)f;
    char msg[120];
    uint64_t got = rvne_rt_extendsfdf2(a), want = d2u(r);
    int ok = got == want || (is_nan64(got) && is_nan64(want) && !NAN_PAYLOADS_LIKE_SSE);
    t->cases++;
    if (!ok) {
        snprintf(msg, sizeof msg, "in=0x%08x got 0x%016llx want 0x%016llx", (unsigned)a,
                 (unsigned long long)got, (unsigned long long)want);
        report_bad(t, msg);
    }
}

/* A double near the binary32 range, with low bits that put it on, beside or
 * away from a rounding tie. */
static uint64_t rnd_double_near_float(void)
{
    uint64_t sign = (uint64_t)rnd_below(2) << 63;
    uint64_t e = 1023 - 155 + rnd_below(290);
    uint64_t f = rnd64() & 0x000FFFFFFFFFFFFFull;
    switch (rnd_below(4)) {
    case 0: break;
    case 1: f = (f & ~0x1FFFFFFFull) | 0x10000000ull; break;     /* a tie */
    case 2: f = (f & ~0x1FFFFFFFull) | (0x10000000ull + (rnd_below(2) ? 1 : -1)); break;
    default: f &= ~0x1FFFFFFFull; break;                          /* exact */
    }
    return sign | (e << 52) | f;
}

static void check_conversions(tally *si, tally *usi, tally *fix, tally *ext, tally *trn)
{
    static const int32_t ints[] = {0, 1, -1, 2, 3, INT32_MIN, INT32_MIN + 1, INT32_MAX,
                                   INT32_MAX - 1, 16777215, 16777216, 16777217, 16777218,
                                   16777219, -16777217, -16777219, 33554435, 0x7FFFFFC0,
                                   0x7FFFFF80, 0x7FFFFF7F, -0x7FFFFFC0};
    static const uint32_t uints[] = {0u, 1u, 16777217u, 0x80000000u, 0x80000001u,
                                     0x80000080u, 0x80000081u, 0x80000180u, 0xFFFFFF7Fu,
                                     0xFFFFFF80u, 0xFFFFFFFFu, 0x7FFFFFFFu};
    static const uint64_t doubles[] = {0, 1ull << 63, 1, 0x000FFFFFFFFFFFFFull,
                                       0x3FF0000000000000ull, 0x3FF0000010000000ull,
                                       0x3FF0000030000000ull, 0x3FF000000FFFFFFFull,
                                       0x47EFFFFFE0000000ull, 0x47EFFFFFEFFFFFFFull,
                                       0x47EFFFFFF0000000ull, 0x47F0000000000000ull,
                                       0x380FFFFFF0000000ull, 0x380FFFFFE0000000ull,
                                       0x3690000000000000ull, 0x3690000000000001ull,
                                       0x368FFFFFFFFFFFFFull, 0x7FF0000000000000ull,
                                       0xFFF0000000000000ull, 0x7FF8000000000000ull,
                                       0x7FF0000000000001ull, 0xFFF4000000000001ull,
                                       0x7FF00000E0000000ull};
    size_t i;
    long n;
    uint32_t a;
    for (i = 0; i < sizeof ints / sizeof ints[0]; i++)
        check_floatsisf(si, ints[i]);
    for (i = 0; i < sizeof uints / sizeof uints[0]; i++)
        check_floatunsisf(usi, uints[i]);
    for (i = 0; i < N_EDGES; i++) {
        check_fixunssfsi(fix, edges[i]);
        check_extendsfdf2(ext, edges[i]);
    }
    for (i = 0; i < sizeof doubles / sizeof doubles[0]; i++)
        check_truncdfsf2(trn, doubles[i]);
    for (a = 0x4F7FFFF0u; a <= 0x4F800010u; a++)      /* around 2^32 */
        check_fixunssfsi(fix, a);
    for (a = 0xBF7FFFF0u; a <= 0xBF800010u; a++)      /* around -1 */
        check_fixunssfsi(fix, a);
    for (n = 0; n < N_RANDOM; n++) {
        uint32_t bits = rnd_int_bits();
        check_floatsisf(si, (int32_t)(rnd_below(2) ? bits : 0u - bits));
        check_floatunsisf(usi, rnd_int_bits());
        /* Half uniform patterns, half exponents around the integer range. */
        a = rnd_below(2) ? rnd32()
                         : make_float(rnd_below(8) == 0, 110 + (int32_t)rnd_below(55), rnd_frac());
        check_fixunssfsi(fix, a);
        check_extendsfdf2(ext, rnd_below(2) ? rnd32() : make_float(rnd_below(2), (int32_t)rnd_below(256), rnd_frac()));
        check_truncdfsf2(trn, rnd_below(4) ? rnd_double_near_float() : rnd64());
    }
}

/* ---- integer division and multiplication ------------------------------- */
static void judge_u64(tally *t, uint64_t x, uint64_t y, uint64_t got, uint64_t want)
{
    char msg[160];
    t->cases++;
    if (got != want) {
        snprintf(msg, sizeof msg, "x=0x%llx y=0x%llx got 0x%llx want 0x%llx",
                 (unsigned long long)x, (unsigned long long)y, (unsigned long long)got,
                 (unsigned long long)want);
        report_bad(t, msg);
    }
}

/* Native division except where C leaves it undefined: there the rule of
 * rvne_rt.h (x/0 all ones, x%0 = x, MIN/-1 = MIN). */
static void check_int_pair(tally *t, uint32_t x, uint32_t y)
{
    volatile uint32_t vx = x, vy = y;
    volatile int32_t sx = (int32_t)x, sy = (int32_t)y;
    int32_t sq;
    judge_u64(&t[0], x, y, rvne_rt_udivsi3(x, y), y ? vx / vy : UINT32_MAX);
    judge_u64(&t[1], x, y, rvne_rt_umodsi3(x, y), y ? vx % vy : x);
    if (y == 0)
        sq = -1;
    else if (sx == INT32_MIN && sy == -1)
        sq = INT32_MIN;
    else
        sq = sx / sy;
    judge_u64(&t[2], x, y, (uint32_t)rvne_rt_divsi3(sx, sy), (uint32_t)sq);
    judge_u64(&t[3], x, y, rvne_rt_umulsidi3(x, y), (uint64_t)vx * vy);
}

static void check_int64_pair(tally *t, uint64_t x, uint64_t y)
{
    volatile uint64_t vx = x, vy = y;
    volatile int64_t sx = (int64_t)x, sy = (int64_t)y;
    int64_t sq;
    judge_u64(&t[0], x, y, rvne_rt_udivdi3(x, y), y ? vx / vy : UINT64_MAX);
    judge_u64(&t[1], x, y, rvne_rt_umoddi3(x, y), y ? vx % vy : x);
    if (y == 0)
        sq = -1;
    else if (sx == INT64_MIN && sy == -1)
        sq = INT64_MIN;
    else
        sq = sx / sy;
    judge_u64(&t[2], x, y, (uint64_t)rvne_rt_divdi3(sx, sy), (uint64_t)sq);
    judge_u64(&t[3], x, y, rvne_rt_muldi3(x, y), vx * vy);
}

static void check_integers(tally *t32, tally *t64)
{
    static const uint32_t i32[] = {0u, 1u, 2u, 3u, 7u, 0x7FFFFFFFu, 0x80000000u, 0x80000001u,
                                   0xFFFFFFFFu, 0xFFFFFFFEu, 0x10000u, 0xFFFFu, 0x12345678u};
    static const uint64_t i64[] = {0u, 1u, 2u, 3u, 0xFFFFFFFFull, 0x100000000ull,
                                   0x7FFFFFFFFFFFFFFFull, 0x8000000000000000ull,
                                   0x8000000000000001ull, 0xFFFFFFFFFFFFFFFFull,
                                   0xFFFFFFFFFFFFFFFEull, 0x123456789ABCDEFull};
    size_t i, j;
    long n;
    for (i = 0; i < sizeof i32 / sizeof i32[0]; i++)
        for (j = 0; j < sizeof i32 / sizeof i32[0]; j++)
            check_int_pair(t32, i32[i], i32[j]);
    for (i = 0; i < sizeof i64 / sizeof i64[0]; i++)
        for (j = 0; j < sizeof i64 / sizeof i64[0]; j++)
            check_int64_pair(t64, i64[i], i64[j]);
    for (n = 0; n < N_RANDOM; n++) {
        check_int_pair(t32, rnd_below(3) ? rnd_int_bits() : rnd32(), rnd_int_bits());
        check_int64_pair(t64, rnd_below(3) ? rnd_int_bits64() : rnd64(), rnd_int_bits64());
    }
}

int main(void)
{
    tally add = {"addsf3", 0, 0, 0, 0, 0, 0}, sub = {"subsf3", 0, 0, 0, 0, 0, 0};
    tally mul = {"mulsf3", 0, 0, 0, 0, 0, 0}, div = {"divsf3", 0, 0, 0, 0, 0, 0};
    tally sq = {"sqrtsf", 0, 0, 0, 0, 0, 0};
    tally si = {"floatsisf", 0, 0, 0, 0, 0, 0}, usi = {"floatunsisf", 0, 0, 0, 0, 0, 0};
    tally fix = {"fixunssfsi", 0, 0, 0, 0, 0, 0}, ext = {"extendsfdf2", 0, 0, 0, 0, 0, 0};
    tally trn = {"truncdfsf2", 0, 0, 0, 0, 0, 0};
    tally t32[4] = {{"udivsi3", 0, 0, 0, 0, 0, 0}, {"umodsi3", 0, 0, 0, 0, 0, 0},
                    {"divsi3", 0, 0, 0, 0, 0, 0}, {"umulsidi3", 0, 0, 0, 0, 0, 0}};
    tally t64[4] = {{"udivdi3", 0, 0, 0, 0, 0, 0}, {"umoddi3", 0, 0, 0, 0, 0, 0},
                    {"divdi3", 0, 0, 0, 0, 0, 0}, {"muldi3", 0, 0, 0, 0, 0, 0}};
    tally dt[5] = {{"adddf3", 0, 0, 0, 0, 0, 0}, {"subdf3", 0, 0, 0, 0, 0, 0},
                   {"muldf3", 0, 0, 0, 0, 0, 0}, {"divdf3", 0, 0, 0, 0, 0, 0},
                   {"cmpdf2", 0, 0, 0, 0, 0, 0}};
    tally *all[] = {&add, &sub, &mul, &div, &sq, &dt[0], &dt[1], &dt[2], &dt[3], &dt[4], &si, &usi, &fix, &ext, &trn,
                    &t32[0], &t32[1], &t32[2], &t32[3], &t64[0], &t64[1], &t64[2], &t64[3]};
    size_t i;

    /* A host flushing subnormals (FTZ/DAZ) would be no reference at all. */
    CHECK_FATAL(nat_add(0x00000001u, 0x00000000u) == 0x00000001u);
    CHECK_FATAL(nat_mul(0x00800000u, 0x3F000000u) == 0x00400000u);

    check_known_results();
    check_arith(&add, &sub, &mul, &div, &sq);
    check_double(dt);
    check_conversions(&si, &usi, &fix, &ext, &trn);
    check_integers(t32, t64);

    printf("test_softfloat: seed 0x%llx\n", (unsigned long long)SEED);
    printf("%-12s %9s %8s %7s %9s %8s %7s\n", "function", "cases", "mismatch", "ties",
           "subnormal", "overflow", "nan");
    for (i = 0; i < sizeof all / sizeof all[0]; i++) {
        tally *t = all[i];
        printf("%-12s %9ld %8ld %7ld %9ld %8ld %7ld\n", t->name, t->cases, t->bad, t->ties,
               t->subnormal, t->overflow, t->nan);
        CHECK_EQ(t->bad, 0);
        CHECK(t->cases >= (t >= &dt[0] && t <= &dt[3] ? N_RANDOM / 4 : N_RANDOM));
    }
    /* The generator must actually reach the hard cases it was built for. */
    CHECK(add.ties > 1000 && sub.ties > 1000 && mul.ties > 1000 && trn.ties > 1000);
    CHECK(add.subnormal > 1000 && mul.subnormal > 1000 && trn.subnormal > 1000);
    CHECK(add.overflow > 100 && mul.overflow > 1000);
    CHECK(add.nan > 1000 && mul.nan > 1000 && div.nan > 1000);
    CHECK(div.subnormal > 1000 && div.overflow > 1000 && sq.nan > 1000);
    CHECK(dt[0].subnormal > 100 && dt[2].subnormal > 1000 && dt[3].subnormal > 1000);
    CHECK(dt[0].overflow > 100 && dt[2].overflow > 1000 && dt[0].nan > 1000 && dt[3].nan > 1000);
    CHECK(si.ties > 100 && usi.ties > 100);
    fflush(stdout);
    return CHECK_DONE("test_softfloat");
}
