/* newlib's libm, which the GCC build links as the app does (expf, and
 * sqrtf over libgcc's __ieee754_sqrtf), reports range errors through
 * __errno(), which newlib's libc would supply; nothing of that libc is
 * linked here, so one int stands for the calling task's errno. No harness
 * code reads it. */
int *__errno(void);

int *__errno(void)
{
    static int errno_value;
    return &errno_value;
}
