/* binary32 division, correctly rounded (ties to even). Used where the core
 * has an FPU without a divide instruction (the esp32-class port: LLVM calls
 * __divsf3 for every float division there); lx106 takes libgcc's. */
#include "rvne_rt.h"
#include "rt_sf.h"

uint32_t rvne_rt_divsf3(uint32_t a, uint32_t b)
{
    uint32_t sign = (a ^ b) & SF_SIGN, mag_a = a & ~SF_SIGN, mag_b = b & ~SF_SIGN;
    uint32_t siga, sigb, q, r;
    int32_t ea, eb;
    int i;
    if (sf_is_nan(a) || sf_is_nan(b))
        return sf_pick_nan(a, b);
    if (mag_a == SF_INF)
        return mag_b == SF_INF ? SF_DEFAULT_NAN : (sign | SF_INF);
    if (mag_b == SF_INF)
        return sign;
    if (mag_b == 0)
        return mag_a == 0 ? SF_DEFAULT_NAN : (sign | SF_INF);
    if (mag_a == 0)
        return sign;
    ea = sf_unpack(a, &siga);
    eb = sf_unpack(b, &sigb);
    if (siga < sigb) {          /* quotient of the significands in [1, 2) */
        siga <<= 1;
        ea--;
    }
    /* Long division, 6 quotient bits per step: r < sigb < 2^24, so r << 6
     * stays below 2^30 and one 32-bit divide (quou on the esp32) gives them.
     * 1 + 5 * 6 = 31 bits: the leading one lands on bit 30. */
    q = siga / sigb;            /* 1 */
    r = siga - q * sigb;
    for (i = 0; i < 5; i++) {
        uint32_t d;
        r <<= 6;
        d = r / sigb;
        r -= d * sigb;
        q = (q << 6) | d;
    }
    /* value = q / 2^30 * 2^(ea-eb); the remainder is the sticky bit. */
    return sf_round_pack(sign, ea - eb + 127, q | (r != 0));
}
