/* Status codes shared by every part of the core. Names and order follow
 * docs/format.md (rules 1-16) so the host, the firmware and INFO's reason=
 * speak of a refusal with the same word. */
#ifndef RVNE_STATUS_H
#define RVNE_STATUS_H

typedef enum rvne_status {
    RVNE_OK = 0,
    RVNE_E_TOO_SHORT = -1,
    RVNE_E_ERASED = -2,
    RVNE_E_BAD_MAGIC = -3,
    RVNE_E_BAD_VERSION = -4,
    RVNE_E_BAD_FLAGS = -5,
    RVNE_E_RESERVED = -6,
    RVNE_E_LENGTH = -7,
    RVNE_E_CRC = -8,
    RVNE_E_ZERO_DIM = -9,
    RVNE_E_GQA = -10,
    RVNE_E_NO_LAYERS = -11,
    RVNE_E_FEW_CLASSES = -12,
    RVNE_E_ELEM_SIZE = -13,
    RVNE_E_CONTRACT = -14,
    RVNE_E_ALIGN = -15,
    RVNE_E_TOO_LARGE = -16,
    RVNE_E_ARENA = -17,   /* the caller's arena is smaller than rvne_head_arena_size() */
    RVNE_E_INVAL = -18,   /* a NULL pointer or a zero window from the caller */
    RVNE_E_NO_PARTITION = -19, /* the port found no blob partition (none in the
                                * table, not mappable, no such file) */
    /* Updates (docs/protocol.md "Updating the model"). */
    RVNE_E_FLASH = -20,         /* a port's read/erase/prog callback failed */
    RVNE_E_NO_SLOTS = -21,      /* no two-slot layout (or the port cannot write it) */
    RVNE_E_UPDATE_BUSY = -22,   /* UPDATE_BEGIN while an update is in flight */
    RVNE_E_NO_UPDATE = -23,     /* UPDATE_CHUNK/-COMMIT without UPDATE_BEGIN */
    RVNE_E_UPDATE_SIZE = -24,   /* the size does not fit the slot, or below a header */
    RVNE_E_UPDATE_ORDER = -25,  /* a chunk not at the next offset, or past the size */
    RVNE_E_CHUNK_CRC = -26,     /* a chunk's data does not match its CRC: resend it */
    RVNE_E_INCOMPLETE = -27,    /* UPDATE_COMMIT before all bytes arrived */
    RVNE_E_UPDATE_CRC = -28,    /* the CRC of COMMIT, BEGIN and the blob disagree */
    RVNE_E_VERIFY = -29,        /* the slot read back differs from what was sent */
    /* Appended, not placed beside E_CONTRACT: the codes above keep their
     * numbers. An int8 blob's parameter block, exp tables or weights break a
     * rule of docs/format.md (int8); checked right after rule 14. */
    RVNE_E_QPARAM = -30,
    /* Rule 18: an FP32 or FP16 weight is NaN or infinite (checked after 17). */
    RVNE_E_NONFINITE = -31,
    /* Signed models (docs/format.md "Signed models"), under the signed policy. */
    RVNE_E_UNSIGNED = -32,      /* no signature where the policy asks for one */
    RVNE_E_BAD_SIGNATURE = -33, /* the signature sector or a signature does not hold */
    RVNE_E_UNTRUSTED_KEY = -34, /* signed, but by no key the device trusts */
    RVNE_E_REVOKED_KEY = -35,   /* signed by a key the device has revoked */
    RVNE_E_ROLLBACK = -36       /* a model version below the one serving */
} rvne_status;

/* "OK" or "E_TOO_SHORT", ... ; "E_UNKNOWN" for anything else. Never NULL. */
const char *rvne_status_name(int status);

#endif
