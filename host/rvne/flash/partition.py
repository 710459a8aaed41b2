"""ESP-IDF partition tables: the CSV the project keeps (partitions.csv) and the
binary table the chip reads at flash 0x8000.

The semantics follow ESP-IDF's gen_esp32part.py so that a table written here
is byte-identical to the one the ESP-IDF build would flash, and one read back
from a board (esptool read_flash 0x8000 0xC00) parses the same way:

- CSV rows `name, type, subtype, offset, size, flags`; `#` comments; sizes and
  offsets as C integers with an optional K/M suffix; an empty offset is
  placed after the previous partition (app aligned to 64 KiB, data to 4 KiB),
  the first one after the table (0x8000 + 0x1000).
- Binary: 32-byte entries `<2sBBII16sI` with magic AA 50, then the MD5 row
  (EB EB, 14 x FF, MD5 of the entries before it), then 0xFF up to 0xC00.
"""

import hashlib
import re
import struct
from dataclasses import dataclass, field
from typing import List, Optional

from ..errors import PartitionError

TABLE_OFFSET = 0x8000
TABLE_SECTOR = 0x1000        # the table owns this much flash
TABLE_MAX = 0xC00            # binary table length (the rest of the sector is for a signature)
ENTRY_LEN = 32
ENTRY_MAGIC = b"\xAA\x50"
MD5_MAGIC = b"\xEB\xEB"
MD5_ROW_HEAD = MD5_MAGIC + b"\xFF" * 14
END_ROW = b"\xFF" * ENTRY_LEN
ENTRY_STRUCT = struct.Struct("<2sBBII16sI")
MAX_ENTRIES = TABLE_MAX // ENTRY_LEN - 1   # one row is the MD5 row

APP, DATA = 0x00, 0x01
TYPES = {"app": APP, "data": DATA}
SUBTYPES = {
    APP: {"factory": 0x00, "test": 0x20, **{f"ota_{i}": 0x10 + i for i in range(16)}},
    DATA: {
        "ota": 0x00, "phy": 0x01, "nvs": 0x02, "coredump": 0x03, "nvs_keys": 0x04,
        "efuse": 0x05, "undefined": 0x06, "esphttpd": 0x80, "fat": 0x81,
        "spiffs": 0x82, "littlefs": 0x83,
    },
}
ALIGN = {APP: 0x10000, DATA: 0x1000}
FLAGS = {"encrypted": 0, "readonly": 1}
NAME_MAX = 16


def _align_for(ptype):
    return ALIGN.get(ptype, ALIGN[DATA])


@dataclass
class Partition:
    name: str
    type: int
    subtype: int
    offset: int
    size: int
    flags: int = 0

    @property
    def end(self):
        return self.offset + self.size

    def to_binary(self):
        return ENTRY_STRUCT.pack(ENTRY_MAGIC, self.type, self.subtype, self.offset,
                                 self.size, self.name.encode("ascii"), self.flags)


@dataclass
class PartitionTable:
    partitions: List[Partition] = field(default_factory=list)

    def __iter__(self):
        return iter(self.partitions)

    def __len__(self):
        return len(self.partitions)

    def find(self, label="rvne", ptype=DATA) -> Partition:
        """The first partition of type `ptype` (None: any) called `label`, as
        esp_partition_find_first(type, ANY, label) returns it."""
        for p in self.partitions:
            if p.name == label and (ptype is None or p.type == ptype):
                return p
        kind = "" if ptype is None else f" {_type_name(ptype)}"
        raise PartitionError(f"no{kind} partition labelled {label!r} in the partition table "
                             f"(has: {', '.join(p.name for p in self.partitions) or 'none'}); "
                             "add it to partitions.csv and rebuild the app (`pio run -e esp32s3 -t upload`) "
                             "or the emulated board's image (`make -C firmware lx6`)")

    def flash_size(self):
        return max((p.end for p in self.partitions), default=0)

    def verify(self, flash_size=None):
        """gen_esp32part.py's checks: unique names, aligned offsets, no overlap
        with the table or each other; optionally that everything fits flash."""
        if len(self.partitions) > MAX_ENTRIES:
            raise PartitionError(f"{len(self.partitions)} partitions exceed the table's {MAX_ENTRIES} entries")
        seen = set()
        for p in self.partitions:
            if p.name in seen:
                raise PartitionError(f"partition name {p.name!r} appears twice; names must be unique")
            seen.add(p.name)
            if not p.name.isascii() or not p.name.isprintable():
                raise PartitionError(f"partition name {p.name!r} is not printable ASCII; the table "
                                     "stores names as ASCII: rename it")
            if len(p.name.encode("ascii")) > NAME_MAX:
                raise PartitionError(f"partition name {p.name!r} is longer than {NAME_MAX} bytes")
            align = _align_for(p.type)
            if p.offset % align:
                raise PartitionError(f"partition {p.name!r}: offset 0x{p.offset:x} is not aligned to 0x{align:x}")
            if p.size <= 0:
                raise PartitionError(f"partition {p.name!r}: size 0x{p.size:x} must be positive")
            if p.end > 0xFFFFFFFF:
                raise PartitionError(f"partition {p.name!r} ends past 4 GiB (0x{p.end:x})")
        last = None
        for p in sorted(self.partitions, key=lambda q: q.offset):
            if p.offset < TABLE_OFFSET + TABLE_SECTOR:
                raise PartitionError(f"partition {p.name!r}: offset 0x{p.offset:x} is below the end of the "
                                     f"partition table (0x{TABLE_OFFSET + TABLE_SECTOR:x})")
            if last is not None and p.offset < last.end:
                raise PartitionError(f"partition {p.name!r} at 0x{p.offset:x} overlaps {last.name!r} "
                                     f"(0x{last.offset:x}-0x{last.end - 1:x})")
            last = p
        if flash_size is not None and self.flash_size() > flash_size:
            raise PartitionError(f"partitions end at 0x{self.flash_size():x}, past the "
                                 f"0x{flash_size:x}-byte flash; shrink them in partitions.csv")
        return self

    def to_binary(self) -> bytes:
        self.verify()
        rows = b"".join(p.to_binary() for p in self.partitions)
        out = rows + MD5_ROW_HEAD + hashlib.md5(rows).digest()
        return out + b"\xFF" * (TABLE_MAX - len(out))

    @classmethod
    def from_binary(cls, data: bytes, require_md5=False) -> "PartitionTable":
        """Parse a binary table (at least up to its end marker). An MD5 row
        must match the entries before it, as the bootloader requires;
        `require_md5`: and there must be one (gen_esp32part writes it)."""
        data = bytes(data)
        md5 = hashlib.md5()
        parts = []
        checked = False
        for off in range(0, min(len(data), TABLE_MAX), ENTRY_LEN):
            row = data[off:off + ENTRY_LEN]
            if len(row) < ENTRY_LEN:
                break
            if row == END_ROW:
                if not parts:
                    raise PartitionError(f"partition table at 0x{TABLE_OFFSET:x} is empty (erased flash?); "
                                         "flash the app built with partitions.csv, or rebuild the emulated "
                                         "board's image (`make -C firmware lx6`)")
                if require_md5 and not checked:
                    raise PartitionError("partition table has no MD5 row, so its integrity cannot be "
                                         "checked; rewrite it with gen_esp32part or `make -C firmware lx6`")
                return cls(parts)
            if row[:2] == MD5_MAGIC:
                if row[16:] != md5.digest():
                    raise PartitionError(f"partition table MD5 mismatch: stored {row[16:].hex()}, "
                                         f"computed {md5.hexdigest()}; the table is corrupt, rewrite it")
                checked = True
                continue
            if row[:2] != ENTRY_MAGIC:
                raise PartitionError(f"partition table entry {off // ENTRY_LEN} has magic {row[:2].hex()}, "
                                     "expected aa50; this is not an ESP-IDF partition table")
            md5.update(row)
            _, ptype, sub, offset, size, label, flags = ENTRY_STRUCT.unpack(row)
            label = label.split(b"\0", 1)[0]
            try:
                name = label.decode("ascii")
            except UnicodeDecodeError:
                raise PartitionError(f"partition table entry {off // ENTRY_LEN} has a non-ASCII label "
                                     f"{label!r}") from None
            parts.append(Partition(name, ptype, sub, offset, size, flags))
        raise PartitionError(f"partition table has no end marker within 0x{TABLE_MAX:x} bytes; "
                             "it is truncated or corrupt")


def _type_name(ptype):
    for k, v in TYPES.items():
        if v == ptype:
            return k
    return f"0x{ptype:02x}"


def parse_int(text, keywords=None, what="value"):
    """A C integer (0x.., decimal; ASCII) with an optional K/M suffix, or a keyword."""
    t = text.strip()
    m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|[0-9]+)([kKmM]?)", t, re.ASCII)
    if m:
        return int(m.group(1), 0 if m.group(1)[:2].lower() == "0x" else 10) \
            * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]
    if keywords and t.lower() in keywords:
        return keywords[t.lower()]
    known = f" (known: {', '.join(keywords)})" if keywords else ""
    raise PartitionError(f"invalid {what} {text.strip()!r}{known}")


def parse_csv(text: str) -> PartitionTable:
    """partitions.csv -> PartitionTable with every offset placed and verified."""
    parts: List[Partition] = []
    offsets: List[Optional[int]] = []
    lines = []
    for line_no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = [f.strip() for f in (line + ",,,,").split(",")]
        try:
            name = fields[0]
            if not name:
                raise PartitionError("the name is empty")
            if fields[1] == "":
                raise PartitionError("the type is empty")
            ptype = parse_int(fields[1], TYPES, "type")
            if fields[2] == "":
                if ptype == APP:
                    raise PartitionError("an app partition needs a subtype")
                sub = SUBTYPES[DATA]["undefined"]
            else:
                sub = parse_int(fields[2], SUBTYPES.get(ptype, {}), "subtype")
            offset = parse_int(fields[3], None, "offset") if fields[3] else None
            if not fields[4]:
                raise PartitionError("the size is empty")
            size = parse_int(fields[4], None, "size")
            flags = 0
            for flag in filter(None, fields[5].split(":")):
                if flag not in FLAGS:
                    raise PartitionError(f"unknown flag {flag!r} (known: {', '.join(FLAGS)})")
                flags |= 1 << FLAGS[flag]
            if ptype > 0xFF or sub > 0xFF:
                raise PartitionError("type and subtype must fit one byte")
        except PartitionError as exc:
            raise PartitionError(f"partitions.csv line {line_no}: {exc}") from None
        parts.append(Partition(name, ptype, sub, 0, size, flags))
        offsets.append(offset)
        lines.append(line_no)

    last_end = TABLE_OFFSET + TABLE_SECTOR
    for p, offset, line_no in zip(parts, offsets, lines):
        if offset is not None and offset < last_end:
            what = "the partition table" if p is parts[0] else "the previous partition"
            raise PartitionError(f"partitions.csv line {line_no}: offset 0x{offset:x} overlaps {what} "
                                 f"(ends 0x{last_end:x})")
        if offset is None:
            align = _align_for(p.type)
            offset = -(-last_end // align) * align
        p.offset = offset
        last_end = p.end
    return PartitionTable(parts).verify()


CSV_MAX = 1 << 20


def read_csv(path) -> PartitionTable:
    from ..io import files

    data = files.read(path, CSV_MAX)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PartitionError(f"{path}: not a partitions.csv (byte 0x{exc.object[exc.start]:02x} at offset "
                             f"{exc.start} is not UTF-8 text); pass the CSV the app was built with") from None
    try:
        return parse_csv(text)
    except PartitionError as exc:
        raise PartitionError(f"{path}: {exc}") from None


def find_partition(table: PartitionTable, label="rvne") -> Partition:
    return table.find(label)
