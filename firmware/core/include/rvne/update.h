/* Model slots, the selector record and over-the-line updates
 * (docs/flash-layout.md "Slots and selector", docs/protocol.md "Updating the
 * model"). The port fills an rvne_flash (rvne/flash.h) and calls
 * rvne_slots_boot instead of rvne_model_load; handing &slots to the server
 * (rvne_server_cfg.slots) enables the UPDATE_* commands. Nothing here
 * allocates: the state below is the port's (static) memory. */
#ifndef RVNE_UPDATE_H
#define RVNE_UPDATE_H
#include <stddef.h>
#include <stdint.h>
#include "rvne/blob.h"
#include "rvne/flash.h"
#include "rvne/sig.h"

struct rvne_model;

/* One selector record copy (32 bytes, little-endian, docs/flash-layout.md). */
#define RVNE_SEL_MAGIC 0x4C455352u  /* bytes "RSEL" */
#define RVNE_SEL_RECORD_LEN 32u

typedef struct rvne_sel_record {
    uint32_t seq;               /* 1 ... 0xFFFFFFFE; the higher valid one wins */
    uint32_t slot;              /* RVNE_PART_A or RVNE_PART_B */
    uint32_t blob_len;          /* 28 + weights_len of the blob in that slot */
    uint32_t blob_crc;          /* its stored CRC (INFO crc=) */
} rvne_sel_record;

/* What a record copy held at boot. */
enum { RVNE_SEL_VALID = 0, RVNE_SEL_ERASED = 1, RVNE_SEL_CORRUPT = 2 };

/* Encode / decode one copy. decode returns RVNE_SEL_VALID, _ERASED (all
 * 32 bytes 0xFF) or _CORRUPT (anything else that fails a rule). */
void rvne_sel_encode(const rvne_sel_record *r, uint8_t out[RVNE_SEL_RECORD_LEN]);
int rvne_sel_decode(const uint8_t in[RVNE_SEL_RECORD_LEN], rvne_sel_record *r);

typedef struct rvne_update_state {
    int active;                 /* an UPDATE_BEGIN was accepted and not ended */
    uint32_t slot;              /* the slot being written (the inactive one) */
    uint32_t size, crc;         /* from UPDATE_BEGIN */
    uint32_t received;          /* bytes acknowledged, = the next offset */
    uint32_t erased_to;         /* [0, erased_to) of the slot is erased */
    uint32_t written;           /* [0, written) is in flash (programmed and read back) or in carry */
    int failed;                 /* a deferred write failed: its code, reported by the next command */
    int flash_err;              /* the port's own code of the last failed flash call (for E_FLASH's reply) */
    uint8_t carry[16];          /* received bytes of a prog_size unit not yet whole */
} rvne_update_state;

typedef struct rvne_slots {
    const rvne_flash *flash;    /* NULL: the port has no slots at all */
    struct rvne_model *model;
    const rvne_load_cfg *load_cfg;
    int layout;                 /* RVNE_LAYOUT_* */
    int active;                 /* slot serving now, -1 none */
    rvne_sel_record current;    /* the record in force: the serving slot's, else the newest valid one (seq 0: none) */
    int current_copy;           /* its copy: 0, 1, or -1: no valid record */
    int copy_state[2];          /* RVNE_SEL_* of each copy at boot */
    int boot_note;              /* RVNE_BOOT_*: how the slot was chosen */
    rvne_sig_info running;      /* the serving model's signature (its version is the rollback floor) */
    int refused;                /* the last update's refusal at COMMIT (INFO refused=), RVNE_OK for none */
    rvne_update_state upd;
} rvne_slots;

enum { RVNE_LAYOUT_NONE = 0, RVNE_LAYOUT_SINGLE = 1, RVNE_LAYOUT_SLOTS = 2 };

/* How boot chose (for the log line and INFO's boot= field). */
enum {
    RVNE_BOOT_RECORD = 0,       /* the higher valid record's slot */
    RVNE_BOOT_FALLBACK = 1,     /* that slot failed; the other record's slot serves */
    RVNE_BOOT_NO_RECORD = 2,    /* both copies erased: slot A (a freshly flashed board) */
    RVNE_BOOT_SEL_CORRUPT = 3,  /* no valid copy, at least one corrupt: slot A, else B */
    RVNE_BOOT_SINGLE = 4        /* the previous single-partition layout */
};

/* Choose and load the slot as docs/flash-layout.md says, into m (as
 * rvne_model_load does: m->status says why when nothing loads). flash NULL
 * (the port found no model partition) or a slot map() cannot map:
 * E_NO_PARTITION. Returns m->status. */
int rvne_slots_boot(rvne_slots *sl, const rvne_flash *flash, struct rvne_model *m, uint32_t window,
                    void *arena, size_t arena_len, const rvne_load_cfg *cfg);

/* One log line (no newline) saying what boot chose, for the port to print. */
void rvne_slots_describe(const rvne_slots *sl, char *buf, size_t cap);

/* The update steps behind UPDATE_BEGIN, _CHUNK, _COMMIT and _ABORT. Each
 * returns RVNE_OK or a negative RVNE_E_* naming the refusal; on any error
 * the model serving now is untouched. *expect: the offset expected next.
 *
 * A chunk is two steps so that the flash work overlaps the line: accept
 * checks it (CRC, order, size) and acknowledges it; write erases, programs
 * and reads back those bytes, which stay in the caller's buffer until it
 * returns. The server replies between the two, so the host sends the next
 * chunk while the device writes; a write that fails is reported by the next
 * UPDATE_CHUNK or UPDATE_COMMIT (and the update is abandoned). chunk does
 * both at once. */
int rvne_update_begin(rvne_slots *sl, uint32_t size, uint32_t crc);
int rvne_update_accept(rvne_slots *sl, uint32_t offset, const uint8_t *data, uint32_t n, uint32_t crc,
                       uint32_t *expect);
int rvne_update_write(rvne_slots *sl, const uint8_t *data, uint32_t n);
int rvne_update_chunk(rvne_slots *sl, uint32_t offset, const uint8_t *data, uint32_t n, uint32_t crc,
                      uint32_t *expect);
int rvne_update_commit(rvne_slots *sl, uint32_t crc, int *load_status);
void rvne_update_abort(rvne_slots *sl);

#endif
