"""rvne.flash.partition against the semantics of ESP-IDF's gen_esp32part.py: CSV
parsing with auto-placed offsets and K/M sizes, the 32-byte binary entries,
the MD5 row and the 0xC00 padding, and the refusals."""

import hashlib
import struct
from pathlib import Path

import pytest

from rvne.errors import PartitionError
from rvne.flash import partition as P

REPO = Path(__file__).resolve().parents[1]

# ESP-IDF's partitions_singleapp.csv, written the way its users write it.
SINGLEAPP = """\
# ESP-IDF Partition Table
# Name,   Type, SubType, Offset,  Size, Flags
nvs,      data, nvs,     0x9000,  0x6000,
phy_init, data, phy,     0xf000,  0x1000,
factory,  app,  factory, 0x10000, 1M,
"""


def entry(name, ptype, sub, offset, size, flags=0):
    """One binary row, packed here independently of the module."""
    return b"\xAA\x50" + struct.pack("<BBII", ptype, sub, offset, size) + name.encode().ljust(16, b"\0") \
        + struct.pack("<I", flags)


def test_project_csv_has_two_model_slots_and_a_selector():
    # docs/flash-layout.md, "Slots and selector": both slots 64 KiB aligned
    # and sized (the lx60 CFI flash's sector), the selector two sectors of
    # either flash (64 KiB lx60, 4 KiB ESP32-S3), all inside 4 MiB (the lx60
    # image; the S3's 8 MiB holds it too).
    table = P.read_csv(REPO / "partitions.csv")
    a, b, sel = table.find("rvne_a"), table.find("rvne_b"), table.find("rvne_sel")
    for part in (a, b, sel):
        assert part.type == P.DATA
        assert part.offset % 0x10000 == 0 and part.size % 0x10000 == 0
    assert a.subtype == b.subtype == 0x40 and sel.subtype == 0x41
    assert a.size == b.size >= 1024 * 1024
    assert sel.size == 2 * 0x10000
    factory = table.find("factory", ptype=P.APP)
    assert factory.offset == 0x10000
    assert table.flash_size() <= 4 * 1024 * 1024


def test_singleapp_binary_matches_hand_packed_rows():
    rows = entry("nvs", 1, 2, 0x9000, 0x6000) + entry("phy_init", 1, 1, 0xF000, 0x1000) \
        + entry("factory", 0, 0, 0x10000, 0x100000)
    expected = rows + b"\xEB\xEB" + b"\xFF" * 14 + hashlib.md5(rows).digest()
    expected += b"\xFF" * (0xC00 - len(expected))
    assert P.parse_csv(SINGLEAPP).to_binary() == expected


def test_round_trip_binary_and_table():
    table = P.read_csv(REPO / "partitions.csv")
    binary = table.to_binary()
    assert len(binary) == 0xC00
    back = P.PartitionTable.from_binary(binary)
    assert back == table
    assert back.to_binary() == binary
    # A board's read-back has the rest of the 4 KiB sector too (erased).
    assert P.PartitionTable.from_binary(binary + b"\xFF" * 0x400) == table


def test_empty_offsets_are_placed_like_gen_esp32part():
    table = P.parse_csv("""
        nvs,      data, nvs,     ,  0x6000
        phy_init, data, phy,     ,  4K
        factory,  app,  factory, ,  0x100000
        small,    data, 0x40,    ,  0x1800
        after,    data, 0x41,    ,  0x1000
        app2,     app,  ota_0,   ,  64K
    """)
    got = [(p.name, hex(p.offset), hex(p.size)) for p in table]
    assert got == [
        ("nvs", "0x9000", "0x6000"),          # right after the table sector
        ("phy_init", "0xf000", "0x1000"),
        ("factory", "0x10000", "0x100000"),    # apps align to 64 KiB
        ("small", "0x110000", "0x1800"),
        ("after", "0x112000", "0x1000"),       # data aligns to 4 KiB
        ("app2", "0x120000", "0x10000"),
    ]
    assert table.find("app2", ptype=P.APP).subtype == 0x10


def test_sizes_keywords_flags_and_defaults():
    table = P.parse_csv("a, data, , 0x10000, 2M, encrypted\nb, 0x40, 0x99, , 0x1k, readonly:encrypted\n")
    a, b = table.partitions
    assert (a.subtype, a.size, a.flags) == (0x06, 2 * 1024 * 1024, 1)   # empty data subtype: undefined
    assert (b.type, b.subtype, b.offset, b.size, b.flags) == (0x40, 0x99, 0x210000, 0x400, 3)
    assert P.parse_int("0x10") == 16 and P.parse_int("4K") == 4096 and P.parse_int("3m") == 3 << 20


@pytest.mark.parametrize("csv, words", [
    ("a, data, nvs, 0x8000, 0x1000", "overlaps the partition table"),
    ("a, data, nvs, 0x9000, 0x2000\nb, data, nvs, 0xa000, 0x1000", "overlaps the previous"),
    ("a, app, factory, 0x18000, 0x1000", "not aligned to 0x10000"),
    ("a, data, nvs, 0x9800, 0x1000", "not aligned to 0x1000"),
    ("a, data, nvs, 0x9000, 0x1000\na, data, nvs, , 0x1000", "appears twice"),
    ("averyveryverylongname, data, nvs, , 0x1000", "longer than 16"),
    ("a, dta, nvs, , 0x1000", "invalid type 'dta'"),
    ("a, data, nvs, , ", "size is empty"),
    ("a, app, , , 0x10000", "needs a subtype"),
    ("a, data, nvs, , 0x1000, shiny", "unknown flag 'shiny'"),
    ("a, data, nvs, , 12Q", "invalid size"),
])
def test_csv_refusals_name_the_problem(csv, words):
    with pytest.raises(PartitionError, match=words):
        P.parse_csv(csv)


def test_csv_refusal_gives_the_line_number():
    with pytest.raises(PartitionError, match="line 3"):
        P.parse_csv("# comment\nnvs, data, nvs, , 0x1000\nx, data, bogus, , 0x1000\n")


def test_flash_size_check():
    table = P.parse_csv("big, data, 0x40, 0x10000, 4M")
    with pytest.raises(PartitionError, match="past the 0x400000-byte flash"):
        table.verify(flash_size=4 * 1024 * 1024)


def _binary():
    return bytearray(P.read_csv(REPO / "partitions.csv").to_binary())


def test_binary_md5_mismatch_is_refused():
    b = _binary()
    b[4] ^= 0x01                                  # an offset byte of entry 0
    with pytest.raises(PartitionError, match="MD5 mismatch"):
        P.PartitionTable.from_binary(b)


def test_binary_without_md5_row_is_read():
    rows = entry("rvne", 1, 0x40, 0x110000, 0x200000)
    table = P.PartitionTable.from_binary(rows + b"\xFF" * (0xC00 - 32))
    assert table.find("rvne").offset == 0x110000


@pytest.mark.parametrize("mutate, words", [
    (lambda b: b.__setitem__(slice(32, 34), b"\x12\x34"), "magic 1234"),
    (lambda b: b.__setitem__(slice(0, 0xC00), b"\xFF" * 0xC00), "empty"),
    (lambda b: b.__setitem__(slice(0, 0xC00), b"\x00" * 0xC00), "magic 0000"),
])
def test_binary_refusals(mutate, words):
    b = _binary()
    mutate(b)
    with pytest.raises(PartitionError, match=words):
        P.PartitionTable.from_binary(b)


def test_binary_without_end_marker_is_refused():
    rows = b"".join(entry(f"p{i}", 1, 0x40, 0x10000 * (i + 1), 0x1000) for i in range(0xC00 // 32))
    with pytest.raises(PartitionError, match="no end marker"):
        P.PartitionTable.from_binary(rows)


def test_find_by_label_and_type():
    table = P.parse_csv("rvne, app, factory, 0x10000, 0x10000\nnvs, data, nvs, , 0x1000")
    with pytest.raises(PartitionError, match=r"no data partition labelled 'rvne'.*has: rvne, nvs"):
        P.find_partition(table, "rvne")
    assert table.find("rvne", ptype=None).type == P.APP
