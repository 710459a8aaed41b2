/* Model slots, the selector record and the update steps: the rules of
 * docs/flash-layout.md ("Slots and selector") over the port's rvne_flash.
 *
 * What keeps a model serving through any cut: the running slot is never
 * written; the new blob goes to the other slot, is read back and validated
 * like at boot, and only then the record naming it is written, into the copy
 * that does not hold the record in force. Until that record is whole (its
 * own CRC) the old one wins; once it is, the new slot holds a verified blob. */
#include <string.h>
#include "rvne/crc32.h"
#include "rvne/head.h"
#include "rvne/model.h"
#include "rvne/status.h"
#include "rvne/update.h"

#define SEQ_MAX 0xFFFFFFFEu

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* ---- the record ----------------------------------------------------------------- */

void rvne_sel_encode(const rvne_sel_record *r, uint8_t out[RVNE_SEL_RECORD_LEN])
{
    memset(out, 0, RVNE_SEL_RECORD_LEN);
    put_le32(out + 0, RVNE_SEL_MAGIC);
    put_le32(out + 4, r->seq);
    put_le32(out + 8, r->slot);
    put_le32(out + 12, r->blob_len);
    put_le32(out + 16, r->blob_crc);
    put_le32(out + 28, rvne_crc32(0u, out, 28u));
}

int rvne_sel_decode(const uint8_t in[RVNE_SEL_RECORD_LEN], rvne_sel_record *r)
{
    size_t i;
    int erased = 1;
    memset(r, 0, sizeof *r);
    for (i = 0; i < RVNE_SEL_RECORD_LEN; i++)
        if (in[i] != 0xFFu) erased = 0;
    if (erased) return RVNE_SEL_ERASED;
    if (le32(in) != RVNE_SEL_MAGIC || le32(in + 28) != rvne_crc32(0u, in, 28u)) return RVNE_SEL_CORRUPT;
    if (le32(in + 20) != 0u || le32(in + 24) != 0u) return RVNE_SEL_CORRUPT;
    r->seq = le32(in + 4);
    r->slot = le32(in + 8);
    r->blob_len = le32(in + 12);
    r->blob_crc = le32(in + 16);
    if (r->seq == 0u || r->seq > SEQ_MAX || r->slot > 1u || r->blob_len < RVNE_HEADER_LEN + RVNE_FOOTER_LEN) {
        memset(r, 0, sizeof *r);
        return RVNE_SEL_CORRUPT;
    }
    return RVNE_SEL_VALID;
}

static uint32_t copy_offset(const rvne_flash *f, int copy)
{
    return copy == 0 ? 0u : f->part_size[RVNE_PART_SEL] / 2u;
}

/* ---- boot ------------------------------------------------------------------------- */

/* Loads slot into m; with rec, the blob must also be the one it names. */
/* Loads slot into m; with rec, the blob must also be the one it names. Under
 * the signed policy the slot's signature must hold too (any version: both
 * slots' models were accepted once), else nothing serves from it. */
static int load_slot(rvne_slots *sl, int slot, const rvne_sel_record *rec, uint32_t window, void *arena,
                     size_t arena_len)
{
    const rvne_flash *f = sl->flash;
    const void *p = f->map ? f->map(f->ctx, slot) : 0;
    int rc = rvne_model_load(sl->model, p, p ? f->part_size[slot] : 0u, window, arena, arena_len, sl->load_cfg);
    if (rc == RVNE_OK && rec != 0 &&
        (sl->model->blob.total_len != rec->blob_len || sl->model->blob.crc_stored != rec->blob_crc)) {
        /* A whole blob, but not the one the record names: not this record's. */
        rc = RVNE_E_CRC;
        sl->model->status = rc;
    }
    if (rc == RVNE_OK) {
        rc = rvne_sig_check(sl->load_cfg ? sl->load_cfg->trust : 0, (const uint8_t *)p, f->part_size[slot],
                            sl->model->blob.total_len, 0, 0u, &sl->running);
        if (rc != RVNE_OK) sl->model->status = rc;
    }
    if (rc != RVNE_OK) memset(&sl->running, 0, sizeof sl->running);
    return rc;
}

/* The slots are usable for updates only with a geometry the rules hold on. */
static int geometry_ok(const rvne_flash *f)
{
    uint32_t e = f->erase_size;
    if (!rvne_flash_writable(f)) return 0;
    return f->part_size[RVNE_PART_SEL] % (2u * e) == 0u && f->part_size[RVNE_PART_A] % e == 0u &&
           f->part_size[RVNE_PART_B] % e == 0u;
}

int rvne_slots_boot(rvne_slots *sl, const rvne_flash *f, struct rvne_model *m, uint32_t window, void *arena,
                    size_t arena_len, const rvne_load_cfg *cfg)
{
    rvne_sel_record rec[2];
    int order[2], n_valid = 0, c, first_fail = -1, rc;

    if (sl == 0 || m == 0) return RVNE_E_INVAL;
    memset(sl, 0, sizeof *sl);
    sl->flash = f;
    sl->model = m;
    sl->load_cfg = cfg;
    sl->active = -1;
    sl->current_copy = -1;
    if (f == 0) {
        sl->layout = RVNE_LAYOUT_NONE;
        return rvne_model_load(m, 0, 0, window, arena, arena_len, cfg);
    }
    if (!rvne_flash_has_slots(f)) {
        sl->layout = RVNE_LAYOUT_SINGLE;
        sl->boot_note = RVNE_BOOT_SINGLE;
        rc = load_slot(sl, RVNE_PART_A, 0, window, arena, arena_len);
        if (rc == RVNE_OK) sl->active = RVNE_PART_A;
        return rc;
    }
    sl->layout = RVNE_LAYOUT_SLOTS;
    for (c = 0; c < 2; c++) {
        uint8_t raw[RVNE_SEL_RECORD_LEN];
        if (f->part_size[RVNE_PART_SEL] < 2u * RVNE_SEL_RECORD_LEN || f->read == 0 ||
            f->read(f->ctx, RVNE_PART_SEL, copy_offset(f, c), raw, sizeof raw) != 0) {
            sl->copy_state[c] = RVNE_SEL_CORRUPT;
            memset(&rec[c], 0, sizeof rec[c]);
            continue;
        }
        sl->copy_state[c] = rvne_sel_decode(raw, &rec[c]);
        if (sl->copy_state[c] == RVNE_SEL_VALID) order[n_valid++] = c;
    }
    if (n_valid == 2 && rec[order[1]].seq > rec[order[0]].seq) {
        c = order[0];
        order[0] = order[1];
        order[1] = c;
    }
    for (c = 0; c < n_valid; c++) {
        const rvne_sel_record *r = &rec[order[c]];
        rc = load_slot(sl, (int)r->slot, r, window, arena, arena_len);
        if (rc == RVNE_OK) {
            sl->active = (int)r->slot;
            sl->current = *r;
            sl->current_copy = order[c];
            sl->boot_note = c == 0 ? RVNE_BOOT_RECORD : RVNE_BOOT_FALLBACK;
            return rc;
        }
        if (first_fail < 0) first_fail = (int)r->slot;
    }
    if (n_valid > 0) {
        /* Records exist but name no loadable blob: serve none rather than a
         * blob no record vouches for; report the winner's slot. The winner
         * stays the record in force: an update writes the other slot and
         * the other copy, so what it names is kept for a human to recover. */
        sl->boot_note = RVNE_BOOT_RECORD;
        sl->current = rec[order[0]];
        sl->current_copy = order[0];
        return load_slot(sl, first_fail, 0, window, arena, arena_len);
    }
    /* No record: a freshly flashed board (both erased) or damage (a corrupt
     * copy); slot A, else B, like ESP-IDF boots its first app without otadata. */
    sl->boot_note = (sl->copy_state[0] == RVNE_SEL_ERASED && sl->copy_state[1] == RVNE_SEL_ERASED)
                        ? RVNE_BOOT_NO_RECORD
                        : RVNE_BOOT_SEL_CORRUPT;
    for (c = RVNE_PART_A; c <= RVNE_PART_B; c++) {
        if (load_slot(sl, c, 0, window, arena, arena_len) == RVNE_OK) {
            sl->active = c;
            return RVNE_OK;
        }
    }
    return load_slot(sl, RVNE_PART_A, 0, window, arena, arena_len);
}

/* ---- log line ---------------------------------------------------------------------- */

typedef struct out {
    char *p;
    size_t cap, len;
} out;

static void o_str(out *o, const char *s)
{
    while (*s && o->len + 1 < o->cap) o->p[o->len++] = *s++;
    if (o->cap) o->p[o->len] = '\0';
}

static void o_u32(out *o, uint32_t v)
{
    char b[11];
    int i = 10;
    b[i] = '\0';
    do {
        b[--i] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v && i > 0);
    o_str(o, b + i);
}

static const char *copy_word(int st)
{
    return st == RVNE_SEL_VALID ? "valid" : st == RVNE_SEL_ERASED ? "erased" : "corrupt";
}

void rvne_slots_describe(const rvne_slots *sl, char *buf, size_t cap)
{
    out o = {buf, cap, 0};
    if (cap == 0) return;
    buf[0] = '\0';
    if (sl == 0 || sl->layout == RVNE_LAYOUT_NONE) {
        o_str(&o, "no model partition (neither rvne_a/rvne_b/rvne_sel nor rvne)");
        return;
    }
    if (sl->layout == RVNE_LAYOUT_SINGLE) {
        o_str(&o, "single-partition layout 'rvne' (no updates over the line; reflash with partitions.csv for two slots)");
        return;
    }
    o_str(&o, "selector copies ");
    o_str(&o, copy_word(sl->copy_state[0]));
    o_str(&o, "/");
    o_str(&o, copy_word(sl->copy_state[1]));
    if (sl->active < 0) {
        o_str(&o, sl->boot_note == RVNE_BOOT_RECORD ? "; the recorded slot holds no valid blob: no model"
                                                    : "; no slot holds a valid blob: no model");
        return;
    }
    o_str(&o, "; serving slot ");
    o_str(&o, sl->active == RVNE_PART_A ? "a" : "b");
    switch (sl->boot_note) {
    case RVNE_BOOT_RECORD: o_str(&o, " (record seq "); o_u32(&o, sl->current.seq); o_str(&o, ")"); break;
    case RVNE_BOOT_FALLBACK:
        o_str(&o, " (older record seq ");
        o_u32(&o, sl->current.seq);
        o_str(&o, ": the newer record's slot holds no valid blob)");
        break;
    case RVNE_BOOT_NO_RECORD: o_str(&o, " (no record yet)"); break;
    default: o_str(&o, " (no valid record: selector damaged)"); break;
    }
}

/* ---- updates ------------------------------------------------------------------------ */

static int target_slot(const rvne_slots *sl)
{
    if (sl->active >= 0) return sl->active == RVNE_PART_A ? RVNE_PART_B : RVNE_PART_A;
    /* Nothing serving: keep whatever the newest record names, for a human to recover. */
    if (sl->current_copy >= 0) return sl->current.slot == RVNE_PART_A ? RVNE_PART_B : RVNE_PART_A;
    return RVNE_PART_B;
}

int rvne_update_begin(rvne_slots *sl, uint32_t size, uint32_t crc)
{
    int slot;
    if (sl == 0 || sl->flash == 0 || sl->layout != RVNE_LAYOUT_SLOTS || !geometry_ok(sl->flash))
        return RVNE_E_NO_SLOTS;
    if (sl->upd.active) return RVNE_E_UPDATE_BUSY;
    slot = target_slot(sl);
    if (size < RVNE_HEADER_LEN + RVNE_FOOTER_LEN || size > sl->flash->part_size[slot]) return RVNE_E_UPDATE_SIZE;
    memset(&sl->upd, 0, sizeof sl->upd);
    sl->upd.active = 1;
    sl->upd.slot = (uint32_t)slot;
    sl->upd.size = size;
    sl->upd.crc = crc;
    return RVNE_OK;
}

void rvne_update_abort(rvne_slots *sl)
{
    if (sl != 0) memset(&sl->upd, 0, sizeof sl->upd);
}

/* A failed flash operation: the port's own code is kept for the reply. */
static int flash_failed(rvne_slots *sl, int port_rc)
{
    sl->upd.flash_err = port_rc;
    return RVNE_E_FLASH;
}

/* Erase the slot ahead of the bytes about to be programmed. */
static int erase_to(rvne_slots *sl, uint32_t end)
{
    const rvne_flash *f = sl->flash;
    int slot = (int)sl->upd.slot, rc;
    while (sl->upd.erased_to < end) {
        rc = f->erase(f->ctx, slot, sl->upd.erased_to, f->erase_size);
        if (rc != 0) return flash_failed(sl, rc);
        sl->upd.erased_to += f->erase_size;
    }
    return RVNE_OK;
}

/* Program [off, off + n) from p and read it back. */
static int prog_verify(rvne_slots *sl, uint32_t off, const uint8_t *p, uint32_t n)
{
    const rvne_flash *f = sl->flash;
    int slot = (int)sl->upd.slot;
    uint8_t back[64];
    uint32_t done;
    int rc = erase_to(sl, off + n);
    if (rc != RVNE_OK) return rc;
    rc = f->prog(f->ctx, slot, off, p, n);
    if (rc != 0) return flash_failed(sl, rc);
    for (done = 0; done < n; done += (uint32_t)sizeof back) {
        uint32_t k = n - done < sizeof back ? n - done : (uint32_t)sizeof back;
        rc = f->read(f->ctx, slot, off + done, back, k);
        if (rc != 0) return flash_failed(sl, rc);
        if (memcmp(back, p + done, k) != 0) return RVNE_E_VERIFY;
    }
    return RVNE_OK;
}

/* A deferred write failed: report it once, end the update. */
static int take_failure(rvne_slots *sl)
{
    int rc = sl->upd.failed, err = sl->upd.flash_err;
    rvne_update_abort(sl);
    sl->upd.flash_err = err;
    return rc;
}

int rvne_update_accept(rvne_slots *sl, uint32_t offset, const uint8_t *data, uint32_t n, uint32_t crc,
                       uint32_t *expect)
{
    rvne_update_state *u;
    if (expect) *expect = 0;
    if (sl == 0 || !sl->upd.active) return RVNE_E_NO_UPDATE;
    u = &sl->upd;
    if (u->failed) return take_failure(sl);
    if (expect) *expect = u->received;
    if (u->written != u->received) return RVNE_E_INVAL; /* the previous chunk was never written */
    if (rvne_crc32(0u, data, n) != crc) return RVNE_E_CHUNK_CRC;
    if (offset != u->received) return RVNE_E_UPDATE_ORDER;
    if (n == 0u || n > u->size - u->received) return RVNE_E_UPDATE_SIZE;
    u->received += n;
    if (expect) *expect = u->received;
    return RVNE_OK;
}

int rvne_update_write(rvne_slots *sl, const uint8_t *data, uint32_t n)
{
    rvne_update_state *u;
    uint32_t ps, head, carry, body;
    int rc;
    if (sl == 0 || !sl->upd.active || sl->upd.failed) return RVNE_E_NO_UPDATE;
    u = &sl->upd;
    if (u->received - u->written != n) return RVNE_E_INVAL;

    /* Program whole prog_size units. The bytes of a unit not yet complete
     * wait in flash order in carry (at most prog_size - 1 of them): the host
     * does not send them again. */
    ps = sl->flash->prog_size;
    carry = u->written % ps;
    head = 0;
    rc = RVNE_OK;
    if (carry != 0u) {
        uint8_t unit[16];
        uint32_t take = ps - carry < n ? ps - carry : n;
        memcpy(unit, u->carry, carry);
        memcpy(unit + carry, data, take);
        head = take;
        if (carry + take < ps && u->written + take < u->size) {
            memcpy(u->carry + carry, data, take);
            u->written += take;
            return RVNE_OK;
        }
        memset(unit + carry + take, 0xFF, ps - (carry + take));
        rc = prog_verify(sl, u->written - carry, unit, ps);
    }
    body = (n - head) / ps * ps;
    if (rc == RVNE_OK && body != 0u) rc = prog_verify(sl, u->written + head, data + head, body);
    if (rc == RVNE_OK && head + body < n) {
        uint32_t rest = n - head - body;
        if (u->written + n == u->size) {
            /* The blob's last bytes: pad the unit with erased bytes. */
            uint8_t unit[16];
            memset(unit, 0xFF, sizeof unit);
            memcpy(unit, data + head + body, rest);
            rc = prog_verify(sl, u->written + head + body, unit, ps);
        } else {
            memcpy(u->carry, data + head + body, rest);
        }
    }
    if (rc != RVNE_OK) {
        /* What the slot holds is unknown now: the update ends at the next
         * command, which says why. */
        sl->upd.failed = rc;
        return rc;
    }
    u->written += n;
    return RVNE_OK;
}

int rvne_update_chunk(rvne_slots *sl, uint32_t offset, const uint8_t *data, uint32_t n, uint32_t crc,
                      uint32_t *expect)
{
    int rc = rvne_update_accept(sl, offset, data, n, crc, expect);
    if (rc != RVNE_OK) return rc;
    rc = rvne_update_write(sl, data, n);
    return rc == RVNE_OK ? RVNE_OK : take_failure(sl);
}

/* Erase the copy not in force and write rec there; read it back. */
static int write_record(rvne_slots *sl, const rvne_sel_record *rec, int copy)
{
    const rvne_flash *f = sl->flash;
    uint8_t raw[RVNE_SEL_RECORD_LEN], back[RVNE_SEL_RECORD_LEN];
    uint32_t off = copy_offset(f, copy);
    int rc;
    rvne_sel_encode(rec, raw);
    rc = f->erase(f->ctx, RVNE_PART_SEL, off, f->erase_size);
    if (rc == 0) rc = f->prog(f->ctx, RVNE_PART_SEL, off, raw, sizeof raw);
    if (rc == 0) rc = f->read(f->ctx, RVNE_PART_SEL, off, back, sizeof back);
    if (rc != 0) return flash_failed(sl, rc);
    return memcmp(raw, back, sizeof raw) == 0 ? RVNE_OK : RVNE_E_VERIFY;
}

int rvne_update_commit(rvne_slots *sl, uint32_t crc, int *load_status)
{
    const rvne_flash *f;
    rvne_update_state *u;
    rvne_model *m;
    rvne_blob b;
    rvne_sel_record rec;
    rvne_sig_info sig;
    const void *p;
    size_t need = 0;
    uint32_t max_seq = 0;
    int rc, copy, old_slot, c;

    if (load_status) *load_status = RVNE_OK;
    if (sl == 0 || !sl->upd.active) return RVNE_E_NO_UPDATE;
    if (sl->upd.failed) return take_failure(sl);
    f = sl->flash;
    u = &sl->upd;
    m = sl->model;
    if (u->received != u->size) return RVNE_E_INCOMPLETE; /* the host may still send the rest */
    if (u->written != u->size) return RVNE_E_INVAL;
    if (crc != u->crc) {
        rvne_update_abort(sl);
        return RVNE_E_UPDATE_CRC;
    }
    /* The blob as the loader will see it: through the mapping, every rule of
     * docs/format.md, the port's limits, and the arena at the window now
     * served; the head itself is not touched (its arena is in use). */
    p = f->map ? f->map(f->ctx, (int)u->slot) : 0;
    /* Over SIZE bytes, not the slot: a header naming more bytes than were
     * sent is E_LENGTH (rule 7), not the CRC of whatever lies past them. */
    rc = p ? rvne_blob_open(&b, p, u->size, sl->load_cfg) : RVNE_E_NO_PARTITION;
    if (rc == RVNE_OK && b.crc_stored != u->crc) rc = RVNE_E_UPDATE_CRC;
    /* SIZE is the blob, or the signed model around it; the policy's rules
     * (signature, trusted key, version not below the serving model's). */
    if (rc == RVNE_OK)
        rc = rvne_sig_check(sl->load_cfg ? sl->load_cfg->trust : 0, (const uint8_t *)p, u->size, b.total_len, 1,
                            sl->active >= 0 ? sl->running.version : 0u, &sig);
    if (rc == RVNE_OK) {
        uint32_t max_window = sl->load_cfg ? sl->load_cfg->limits.max_window : 0u;
        if (max_window != 0u && m->window > max_window) rc = RVNE_E_TOO_LARGE;
        else rc = rvne_head_arena_size(&b.hdr, m->window, &need);
        if (rc == RVNE_OK && (m->arena == 0 || need > m->arena_len)) rc = RVNE_E_TOO_LARGE;
    }
    if (rc != RVNE_OK) {
        if (load_status) *load_status = rc;
        sl->refused = rc;
        rvne_update_abort(sl);
        return rc;
    }

    for (c = 0; c < 2; c++) {
        uint8_t raw[RVNE_SEL_RECORD_LEN];
        rvne_sel_record r;
        if (f->read(f->ctx, RVNE_PART_SEL, copy_offset(f, c), raw, sizeof raw) == 0 &&
            rvne_sel_decode(raw, &r) == RVNE_SEL_VALID && r.seq > max_seq)
            max_seq = r.seq;
    }
    if (max_seq >= SEQ_MAX) {
        rvne_update_abort(sl);
        return RVNE_E_NO_SLOTS;
    }
    rec.seq = max_seq + 1u;
    rec.slot = u->slot;
    rec.blob_len = b.total_len;
    rec.blob_crc = u->crc;
    copy = sl->current_copy == 0 ? 1 : 0;
    rc = write_record(sl, &rec, copy);
    if (rc != RVNE_OK) {
        /* The copy in force was not touched: the old model stays, now and at boot. */
        int err = sl->upd.flash_err;
        rvne_update_abort(sl);
        sl->upd.flash_err = err;
        return rc;
    }

    old_slot = sl->active;
    rc = rvne_model_load(m, p, f->part_size[u->slot], m->window, m->arena, m->arena_len, sl->load_cfg);
    if (rc != RVNE_OK) {
        /* Validated above, so not expected; keep serving what served. */
        if (load_status) *load_status = rc;
        if (old_slot >= 0) (void)load_slot(sl, old_slot, 0, m->window, m->arena, m->arena_len);
        rvne_update_abort(sl);
        return rc;
    }
    sl->active = (int)u->slot;
    sl->running = sig;
    sl->refused = RVNE_OK;
    sl->current = rec;
    sl->current_copy = copy;
    sl->copy_state[copy] = RVNE_SEL_VALID;
    sl->boot_note = RVNE_BOOT_RECORD;
    rvne_update_abort(sl);
    return RVNE_OK;
}
