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
#ifdef RVNE_SIGNED
    return rvne_trust_init(t, &rvne_crypto_mbedtls, RVNE_TRUSTED_KEYS, RVNE_REVOKED_KEYS);
#else
    memset(t, 0, sizeof *t);
    return 0;
#endif
}
