/* The flush-to-zero variant (firmware/tests/defects.mk): the virtual device
 * with the host FPU flushing subnormal results and inputs to zero from
 * before main, as an MCU FPU without subnormals does. docs/model.md covers
 * it; the verdict must pass it. */
#include <stdint.h>

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
__attribute__((constructor)) static void rvne_variant_ftz(void)
{
    _mm_setcsr(_mm_getcsr() | 0x8040u); /* FTZ (bit 15) and DAZ (bit 6) */
}
#elif defined(__aarch64__)
__attribute__((constructor)) static void rvne_variant_ftz(void)
{
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    fpcr |= (uint64_t)1u << 24; /* FZ */
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
}
#else
#error "the flush-to-zero variant knows the FPU control of x86 and AArch64 hosts only"
#endif
