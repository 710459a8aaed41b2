/* Instructions for checking a signed model on the emulated esp32-class core
 * (docs/format.md "Signed models"), for tools/bench_sig.py (run under qemu
 * -icount shift=0 -semihosting, in a directory holding sig_model.bin, a
 * signed model, and sig_key.bin, its signer's 32-byte key digest; not a
 * test). Prints, in CCOUNT ticks:
 *   calib loop_insns=L loop_ticks=T
 *   check bytes=N rc=NAME ticks=K       rvne_sig_check, all of S1-S5
 *   sha256 bytes=P ticks=K              the payload's hash alone
 *   tampered rc=NAME                    one payload byte flipped: must not be OK
 * instructions = ticks * L / T. Mbed TLS from Debian's source package. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cycles.h"
#include "rvne/crypto_mbedtls.h"
#include "rvne/sig.h"
#include "rvne/status.h"

#define CALIB_TURNS 1000000u
#define MAX_MODEL (96u * 1024u)

static uint8_t model[MAX_MODEL];

static long slurp(const char *path, uint8_t *buf, size_t cap)
{
    long n;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    n = (long)read(fd, buf, cap);
    close(fd);
    return n;
}

int main(void)
{
    static rvne_trust trust;
    rvne_sig_info info;
    uint8_t hash[32];
    uint32_t t0, t1, blob_len;
    long n;
    int rc;

    rvne_mbedtls_heap_init();
    memset(&trust, 0, sizeof trust);
    trust.policy = RVNE_POLICY_SIGNED;
    trust.crypto = &rvne_crypto_mbedtls;
    trust.n_trusted = 1;
    n = slurp("sig_model.bin", model, sizeof model);
    if (n < 28 || slurp("sig_key.bin", trust.trusted[0], 32) != 32) {
        printf("error: sig_model.bin or sig_key.bin missing\n");
        return 1;
    }
    blob_len = 28u + ((uint32_t)model[20] | (uint32_t)model[21] << 8 | (uint32_t)model[22] << 16 |
                      (uint32_t)model[23] << 24);
    printf("calib loop_insns=%u loop_ticks=%u\n", 2u * CALIB_TURNS, (unsigned)port_calib_loop(CALIB_TURNS));
    t0 = ccount();
    rc = rvne_sig_check(&trust, model, (size_t)n, blob_len, 1, 0u, &info);
    t1 = ccount();
    printf("check bytes=%ld rc=%s ticks=%u\n", n, rvne_status_name(rc), (unsigned)(t1 - t0));
    t0 = ccount();
    (void)rvne_crypto_mbedtls.sha256(model, (size_t)info.total_len - RVNE_SIG_SECTOR, hash);
    t1 = ccount();
    printf("sha256 bytes=%u ticks=%u\n", (unsigned)(info.total_len - RVNE_SIG_SECTOR), (unsigned)(t1 - t0));
    model[100] ^= 1u;
    rc = rvne_sig_check(&trust, model, (size_t)n, blob_len, 1, 0u, &info);
    printf("tampered rc=%s\n", rvne_status_name(rc));
    return 0;
}
