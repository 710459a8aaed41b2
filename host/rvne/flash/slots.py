"""The model partitions of a partition table, either layout
(docs/flash-layout.md, "Slots and selector"):

- two slots `rvne_a`, `rvne_b` and the selector `rvne_sel` (two copies of a
  32-byte record, at offset 0 and at half the partition; the higher valid
  sequence number names the slot that serves), or
- the previous single `rvne` partition: served, never updated over the line.

`rvne flash` writes a blob into slot A and a selector naming it (sequence 1
in copy 0, copy 1 erased), so a board flashed over an updated one boots the
flashed blob. The record and the boot rule here are the firmware's
(firmware/core/src/rvne_update.c); tests hold each to the other.
"""

import struct
import zlib
from dataclasses import dataclass
from typing import List, Optional, Tuple

from ..errors import PartitionError
from . import partition

SLOT_A, SLOT_B, SELECTOR, SINGLE = "rvne_a", "rvne_b", "rvne_sel", "rvne"
SLOT_NAMES = ("a", "b")
SEL_MAGIC = 0x4C455352        # bytes "RSEL"
RECORD = struct.Struct("<IIIII8xI")
RECORD_LEN = RECORD.size      # 32
SEQ_MAX = 0xFFFFFFFE
VALID, ERASED, CORRUPT = "valid", "erased", "corrupt"
ERASED_BYTE = 0xFF


@dataclass(frozen=True)
class Record:
    seq: int
    slot: int                 # 0 = A, 1 = B
    blob_len: int
    blob_crc: int


def encode_record(rec: Record) -> bytes:
    body = RECORD.pack(SEL_MAGIC, rec.seq, rec.slot, rec.blob_len, rec.blob_crc, 0)[:28]
    return body + struct.pack("<I", zlib.crc32(body))


def decode_record(raw: bytes) -> Tuple[str, Optional[Record]]:
    """(VALID, Record), (ERASED, None) or (CORRUPT, None), as the firmware
    judges a copy."""
    raw = bytes(raw[:RECORD_LEN])
    if len(raw) < RECORD_LEN:
        return CORRUPT, None
    if raw == b"\xFF" * RECORD_LEN:
        return ERASED, None
    magic, seq, slot, blob_len, blob_crc, crc = RECORD.unpack(raw)
    if magic != SEL_MAGIC or crc != zlib.crc32(raw[:28]) or raw[20:28] != bytes(8):
        return CORRUPT, None
    if not 1 <= seq <= SEQ_MAX or slot > 1 or blob_len < 28:
        return CORRUPT, None
    return VALID, Record(seq, slot, blob_len, blob_crc)


@dataclass
class Layout:
    """The model partitions of one table."""

    kind: str                                  # "slots" or "single"
    slots: List[partition.Partition]           # [A, B] or [rvne]
    selector: Optional[partition.Partition] = None

    @property
    def first(self) -> partition.Partition:
        """Where `rvne flash` writes the blob."""
        return self.slots[0]

    @property
    def slot_size(self) -> int:
        return min(p.size for p in self.slots)

    def copy_offsets(self) -> Tuple[int, int]:
        """Flash offsets of the two record copies."""
        s = self.selector
        return s.offset, s.offset + s.size // 2

    def describe(self) -> str:
        if self.kind == "single":
            p = self.first
            return f"single partition {p.name!r} at 0x{p.offset:x} ({p.size} bytes; no updates over the line)"
        a, b = self.slots
        return (f"two slots {a.name!r} at 0x{a.offset:x} and {b.name!r} at 0x{b.offset:x} "
                f"({self.slot_size} bytes each), selector {self.selector.name!r} at 0x{self.selector.offset:x}")


def _data(table, label):
    for p in table:
        if p.name == label and p.type == partition.DATA:
            return p
    return None


def layout(table: partition.PartitionTable) -> Layout:
    """The layout `table` holds, as the firmware looks for it: all of
    rvne_a, rvne_b, rvne_sel, else rvne. PartitionError names what is missing."""
    a, b, sel = _data(table, SLOT_A), _data(table, SLOT_B), _data(table, SELECTOR)
    if a and b and sel:
        if sel.size < 2 * RECORD_LEN or sel.size % 2:
            raise PartitionError(f"selector partition {SELECTOR!r} is {sel.size} bytes; it needs two halves of "
                                 "at least one erase block each (docs/flash-layout.md)")
        return Layout("slots", [a, b], sel)
    single = _data(table, SINGLE)
    if single:
        return Layout("single", [single])
    have = ", ".join(p.name for p in table) or "none"
    missing = ", ".join(n for n, p in ((SLOT_A, a), (SLOT_B, b), (SELECTOR, sel)) if p is None)
    raise PartitionError(f"no model partitions in the partition table: neither {SLOT_A}/{SLOT_B}/{SELECTOR} "
                         f"(missing {missing}) nor {SINGLE!r} (has: {have}); build the app or image with "
                         "the project's partitions.csv")


def selector_image(lay: Layout, blob: bytes) -> bytes:
    """The whole selector partition after `rvne flash`: copy 0 names slot A
    with `blob`, everything else erased."""
    # The blob's own length and CRC (a signed model carries more after them).
    n = 28 + struct.unpack_from("<I", blob, 20)[0]
    crc = struct.unpack_from("<I", blob, n - 4)[0]
    img = bytearray([ERASED_BYTE]) * lay.selector.size
    img[:RECORD_LEN] = encode_record(Record(1, 0, n, crc))
    return bytes(img)


def flash_writes(lay: Layout, blob: bytes) -> List[Tuple[partition.Partition, bytes]]:
    """(partition, bytes from its start) pairs that `rvne flash` writes:
    the blob into the first slot, then (two-slot layout) the selector."""
    writes = [(lay.first, bytes(blob))]
    if lay.kind == "slots":
        writes.append((lay.selector, selector_image(lay, blob)))
    return writes

