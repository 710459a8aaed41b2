/* Instructions per multiply-accumulate of the int8 projection on the
 * emulated esp32-class core, for tools/bench_int8.py (run under qemu
 * -icount shift=0 -semihosting; not a test): for each n_in x n_out of
 * SHAPES, REPS calls of
 *   asm      rvne_proj_i8_ae32 (MAC16, requantization included)
 *   asm+x16  the same after rvne_x16_i8_c (x widened once per call)
 *   twin     rvne_proj_i8_c, its C twin on the same prepared weights
 *   plain    rvne_matvec_i8_c then rvne_requant_i8_c (the blob's layout)
 *   empty    a call that does nothing, per kernel call: the call's own cost
 * each printed in CCOUNT ticks:
 *   calib loop_insns=L loop_ticks=T
 *   kernel n_in=N n_out=M name=NAME calls=C reps=R ticks=K
 *   band n_in=N n_out=M outputs=B      (outputs the asm handed to C)
 * instructions = ticks * L / T. Random x, weights and per-channel (mult,
 * shift) scaled so the outputs spread over int8, as a calibrated model's. */
#include <stdio.h>
#include <string.h>
#include "cycles.h"
#include "rvne/kernels.h"
#include "dsp.h"

#define REPS 20u
#define CALIB_TURNS 1000000u
#define MAX_IN 256
#define MAX_OUT 128
#define MAX_W (256 * 64)

static const uint32_t shapes[][2] = {{256, 64}, {128, 128}, {128, 16}, {64, 64}, {32, 32}, {16, 128}};

static int8_t xs[MAX_IN], ws[MAX_W], y[MAX_OUT];
static int32_t pairs[2 * MAX_OUT], acc[MAX_OUT];
static uint32_t prep[MAX_W / 2 + 2 * MAX_OUT + 2 + 3 * MAX_OUT + 64];
static int16_t x16[MAX_IN + 8] __attribute__((aligned(4)));

static uint32_t rng = 0x9e3779b9u;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

__attribute__((noinline)) void bench_i8_empty(int8_t *yy, const int16_t *xx, const uint32_t *pp, uint32_t a,
                                              uint32_t b)
{
    __asm__ volatile("" : : "r"(yy), "r"(xx), "r"(pp), "r"(a), "r"(b) : "memory");
}

static void report(uint32_t n_in, uint32_t n_out, const char *name, unsigned calls, uint32_t ticks)
{
    printf("kernel n_in=%u n_out=%u name=%s calls=%u reps=%u ticks=%u\n", (unsigned)n_in, (unsigned)n_out, name,
           calls, REPS, (unsigned)ticks);
}

int main(void)
{
    unsigned s, r;
    printf("calib loop_insns=%u loop_ticks=%u\n", 2u * CALIB_TURNS, (unsigned)port_calib_loop(CALIB_TURNS));
    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const uint32_t n_in = shapes[s][0], n_out = shapes[s][1], k = RVNE_I8_ROW_WORDS(n_in);
        uint32_t i, c, t0, band = 0, sd = 1, bits = 0;
        for (i = 0; i < n_in; i++)
            xs[i] = (int8_t)(rnd() & 0xffu);
        for (i = 0; i < n_in * n_out; i++)
            ws[i] = (int8_t)((int32_t)(rnd() % 255u) - 127);
        /* |acc| spreads about 5400 sqrt(n_in): outputs of about +-32 at shift
         * log2(that * mult / 32). */
        while (sd * sd < n_in)
            sd++;
        sd *= 5400u;
        while ((1u << bits) < sd)
            bits++;
        for (c = 0; c < n_out; c++) {
            pairs[2 * c] = (int32_t)(0x40000000u | (rnd() & 0x3fffffffu));
            pairs[2 * c + 1] = (int32_t)(bits + 31u - 5u);
        }
        rvne_prep_i8_c(prep, ws, pairs, n_in, n_out);
        rvne_x16_i8_c(x16, xs, n_in);

        t0 = ccount();
        for (r = 0; r < REPS; r++)
            bench_i8_empty(y, x16, prep, n_in, n_out);
        report(n_in, n_out, "empty", 1, ccount() - t0);
#if defined(RVNE_HAVE_MATVEC_I8_AE32)
        t0 = ccount();
        for (r = 0; r < REPS; r++)
            rvne_proj_i8_ae32(y, x16, prep, n_in, n_out);
        report(n_in, n_out, "asm", 1, ccount() - t0);
        t0 = ccount();
        for (r = 0; r < REPS; r++) {
            rvne_x16_i8_c(x16, xs, n_in);
            rvne_proj_i8_ae32(y, x16, prep, n_in, n_out);
        }
        report(n_in, n_out, "asm+x16", 2, ccount() - t0);
        for (c = 0; c < n_out; c++) {
            rvne_dsp_pj st;
            st.scale = (const float *)(prep + (size_t)n_out * k + 2u) + c;
            c += rvne_dsp_proj_i8(y + c, x16, prep + (size_t)c * k, &st, n_out - c, k / 2u);
            band += c < n_out;
        }
        printf("band n_in=%u n_out=%u outputs=%u\n", (unsigned)n_in, (unsigned)n_out, (unsigned)band);
#endif
        t0 = ccount();
        for (r = 0; r < REPS; r++)
            rvne_proj_i8_c(y, x16, prep, n_in, n_out);
        report(n_in, n_out, "twin", 1, ccount() - t0);
        t0 = ccount();
        for (r = 0; r < REPS; r++) {
            rvne_matvec_i8_c(acc, xs, ws, n_in, n_out);
            rvne_requant_i8_c(y, acc, pairs, n_out);
        }
        report(n_in, n_out, "plain", 2, ccount() - t0);
    }
    return 0;
}
