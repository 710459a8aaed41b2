/* llc-22 on Xtensa: va_start saves the unnamed register arguments (a4.. for
 * two named ones) but points the va_list's register area at the first of
 * them, while va_arg indexes that area from a2 by __va_ndx (the named
 * arguments' bytes): the first va_arg here reads the fourth argument. Seen
 * in the assembly: __va_reg (va_list + 4) is set to where a4 was stored,
 * __va_ndx (va_list + 8) to 8. */
#include <stdarg.h>
int second_vararg_reg(int a, int b, ...)
{
    va_list ap;
    int r;
    va_start(ap, b);
    r = va_arg(ap, int);
    va_end(ap);
    return r;
}
