#include <string.h>
#include "rvne/md5.h"
#include "rvne/ptable.h"

#define ROW 32u
#define TABLE_MAX RVNE_PTABLE_LEN

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int all_ff(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0xFFu)
            return 0;
    return 1;
}

int rvne_ptable_find(const uint8_t *table, size_t table_len, uint32_t flash_size, uint8_t type,
                     const char *label, rvne_ptable_entry *out)
{
    const rvne_ptable_entry none = {0};
    int found = 0;
    size_t n_rows = (table_len < TABLE_MAX ? table_len : TABLE_MAX) / ROW;
    *out = none;
    if (n_rows == 0 || table[0] != 0xAAu || table[1] != 0x50u)
        return RVNE_PTABLE_E_NO_TABLE;
    for (size_t i = 0; i < n_rows; i++) {
        const uint8_t *row = table + i * ROW;
        if (all_ff(row, ROW)) {
            if (!found)
                return RVNE_PTABLE_E_NOT_FOUND;
            if ((uint64_t)out->offset + out->size > flash_size)
                return RVNE_PTABLE_E_RANGE;
            return RVNE_PTABLE_OK;
        }
        if (row[0] == 0xEBu && row[1] == 0xEBu) {
            uint8_t digest[16];
            rvne_md5(table, i * ROW, digest);
            if (memcmp(digest, row + 16, sizeof digest) != 0)
                return RVNE_PTABLE_E_CORRUPT;
            continue;
        }
        if (row[0] != 0xAAu || row[1] != 0x50u)
            return RVNE_PTABLE_E_CORRUPT;
        /* The first match wins, as in esp_partition_find_first; keep reading
         * so a corrupt table is refused even when the entry came early. */
        if (!found && row[2] == type && strncmp((const char *)row + 12, label, 16) == 0 &&
            strlen(label) <= 16) {
            out->type = row[2];
            out->subtype = row[3];
            out->offset = le32(row + 4);
            out->size = le32(row + 8);
            memcpy(out->label, row + 12, 16);
            out->label[16] = '\0';
            found = 1;
        }
    }
    return RVNE_PTABLE_E_CORRUPT; /* no end marker */
}

const char *rvne_ptable_strerror(int err)
{
    switch (err) {
    case RVNE_PTABLE_OK: return "ok";
    case RVNE_PTABLE_E_NOT_FOUND: return "no such partition in the table";
    case RVNE_PTABLE_E_NO_TABLE: return "no partition table at 0x8000";
    case RVNE_PTABLE_E_CORRUPT: return "partition table corrupt (magic, end marker or MD5)";
    case RVNE_PTABLE_E_RANGE: return "partition lies outside the flash";
    default: return "unknown partition error";
    }
}

int rvne_ptable_flash(const uint8_t *table, size_t table_len, uint32_t flash_size, rvne_flash *f)
{
    static const char *const labels[RVNE_PART_COUNT] = {"rvne_a", "rvne_b", "rvne_sel"};
    rvne_ptable_entry e[RVNE_PART_COUNT];
    int i, rc = RVNE_PTABLE_OK;
    for (i = 0; i < RVNE_PART_COUNT; i++) {
        f->part_offset[i] = 0;
        f->part_size[i] = 0;
    }
    for (i = 0; i < RVNE_PART_COUNT && rc == RVNE_PTABLE_OK; i++)
        rc = rvne_ptable_find(table, table_len, flash_size, RVNE_PTABLE_TYPE_DATA, labels[i], &e[i]);
    if (rc == RVNE_PTABLE_OK) {
        for (i = 0; i < RVNE_PART_COUNT; i++) {
            f->part_offset[i] = e[i].offset;
            f->part_size[i] = e[i].size;
        }
        return RVNE_PTABLE_OK;
    }
    if (rc != RVNE_PTABLE_E_NOT_FOUND) return rc;
    /* The layout before two slots: one `rvne` partition, served, not updated. */
    rc = rvne_ptable_find(table, table_len, flash_size, RVNE_PTABLE_TYPE_DATA, "rvne", &e[0]);
    if (rc != RVNE_PTABLE_OK) return rc;
    f->part_offset[RVNE_PART_A] = e[0].offset;
    f->part_size[RVNE_PART_A] = e[0].size;
    return RVNE_PTABLE_OK;
}
