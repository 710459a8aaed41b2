/* The virtual device's policy and trusted keys: a build option, as on a
 * board (docs/format.md "Signed models"): `make posix-signed
 * RVNE_TRUSTED_KEYS=D1[,D2[,D3]] [RVNE_REVOKED_KEYS=...]` builds
 * build/posix-signed/rvne-vdev with -DRVNE_SIGNED and mbedtls; `make posix`
 * stays unsigned and links no cryptography. */
#include <string.h>
#include "vdev.h"
#ifdef RVNE_SIGNED
#include "rvne/crypto_mbedtls.h"
#endif

#ifndef RVNE_TRUSTED_KEYS
#define RVNE_TRUSTED_KEYS ""
#endif
#ifndef RVNE_REVOKED_KEYS
#define RVNE_REVOKED_KEYS ""
#endif

int vdev_trust(rvne_trust *t)
{
    memset(t, 0, sizeof *t);
#ifdef RVNE_SIGNED
    t->policy = RVNE_POLICY_SIGNED;
    t->crypto = &rvne_crypto_mbedtls;
    t->n_trusted = rvne_sig_parse_digests(RVNE_TRUSTED_KEYS, t->trusted);
    t->n_revoked = rvne_sig_parse_digests(RVNE_REVOKED_KEYS, t->revoked);
    if (t->n_trusted < 0 || t->n_revoked < 0) return -1;
#endif
    return 0;
}
