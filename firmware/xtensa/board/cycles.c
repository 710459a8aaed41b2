#include "cycles.h"

static uint32_t last;
static uint64_t high;

uint64_t cycles_now(void)
{
    uint32_t c = ccount();
    if (c < last)
        high += (uint64_t)1 << 32;
    last = c;
    return high | c;
}
