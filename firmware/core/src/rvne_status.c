#include "rvne/status.h"

/* Indexed by -status; the order is the enum's, which is docs/format.md's. */
static const char *const k_names[] = {
    "OK",
    "E_TOO_SHORT",
    "E_ERASED",
    "E_BAD_MAGIC",
    "E_BAD_VERSION",
    "E_BAD_FLAGS",
    "E_RESERVED",
    "E_LENGTH",
    "E_CRC",
    "E_ZERO_DIM",
    "E_GQA",
    "E_NO_LAYERS",
    "E_FEW_CLASSES",
    "E_ELEM_SIZE",
    "E_CONTRACT",
    "E_ALIGN",
    "E_TOO_LARGE",
    "E_ARENA",
    "E_INVAL",
    "E_NO_PARTITION",
    "E_FLASH",
    "E_NO_SLOTS",
    "E_UPDATE_BUSY",
    "E_NO_UPDATE",
    "E_UPDATE_SIZE",
    "E_UPDATE_ORDER",
    "E_CHUNK_CRC",
    "E_INCOMPLETE",
    "E_UPDATE_CRC",
    "E_VERIFY",
    "E_QPARAM",
    "E_NONFINITE",
    "E_UNSIGNED",
    "E_BAD_SIGNATURE",
    "E_UNTRUSTED_KEY",
    "E_REVOKED_KEY",
    "E_ROLLBACK",
};

const char *rvne_status_name(int status)
{
    const int n = (int)(sizeof k_names / sizeof k_names[0]);
    /* Compare before negating: -INT_MIN would overflow. */
    if (status > 0 || status <= -n)
        return "E_UNKNOWN";
    return k_names[-status];
}
