"""Writes Core ML MILBlob `weight.bin` files as the MILBlob seed document
lays them out (storage header, then per blob a 64-byte metadata record and
its data, 64-byte aligned), with what coremltools' own writer was seen to
do where the document is silent: the last blob's data is not padded, the
sub-byte types (codes 8..13) are packed least significant bit first with
`padding_size_in_bits` counting the unused high bits of the last byte.
Written from those descriptions, not from the reader (the bit packing is a
plain loop over integers), so the tests catch a reader that disagrees.

Arbitrary layouts (misplaced data, wrong counts, bad fields) come from
`build(..., overrides)` and byte patches at `Layout.meta[i]`."""

import struct
from dataclasses import dataclass, field

import numpy as np

ALIGN = 64
SENTINEL = 0xDEADBEEF
VERSION = 2
# name: (Core ML code, numpy dtype of the stored units or None for sub-byte, bits per element)
DTYPES = {
    "F16": (1, "<f2", 16), "F32": (2, "<f4", 32), "U8": (3, "u1", 8), "I8": (4, "i1", 8),
    "BF16": (5, "<u2", 16), "I16": (6, "<i2", 16), "U16": (7, "<u2", 16),
    "INT4": (8, None, 4), "UINT1": (9, None, 1), "UINT2": (10, None, 2), "UINT4": (11, None, 4),
    "UINT3": (12, None, 3), "UINT6": (13, None, 6), "I32": (14, "<i4", 32), "U32": (15, "<u4", 32),
    "F8_E4M3": (16, "u1", 8), "F8_E5M2": (17, "u1", 8),
}
SUB_BYTE = {name for name, (_, np_dt, _) in DTYPES.items() if np_dt is None}


def up(n, a=ALIGN):
    return (n + a - 1) // a * a


def pack_bits(values, bits):
    """(bytes, padding bits): element i occupies bits [i*bits, (i+1)*bits)
    of the blob, counted from the least significant bit of byte 0."""
    acc = 0
    for i, v in enumerate(int(x) for x in values):
        acc |= (v & ((1 << bits) - 1)) << (i * bits)
    nbits = len(values) * bits
    nbytes = (nbits + 7) // 8
    return acc.to_bytes(nbytes, "little"), nbytes * 8 - nbits


def encode(dtype, values):
    """(raw bytes, padding_size_in_bits) of `values` stored as `dtype`.
    BF16 and the FP8 types take their raw bit patterns (uint16 / uint8)."""
    _, np_dt, bits = DTYPES[dtype]
    if np_dt is None:
        return pack_bits(np.asarray(values).ravel(), bits)
    return np.ascontiguousarray(np.asarray(values).ravel(), dtype=np_dt).tobytes(), 0


def metadata(code, size, offset, padding=0, *, sentinel=SENTINEL, reserved=b""):
    return (struct.pack("<IIQQQ", sentinel, code, size, offset, padding)
            + reserved.ljust(32, b"\0")[:32])


def header(count, version=VERSION, reserved=b""):
    return struct.pack("<II", count, version) + reserved.ljust(56, b"\0")[:56]


@dataclass
class Layout:
    """Absolute offsets the writer used, for tests that patch bytes."""

    meta: list = field(default_factory=list)      # metadata record offsets
    data: list = field(default_factory=list)      # data offsets
    sizes: list = field(default_factory=list)
    padding: list = field(default_factory=list)   # padding_size_in_bits per blob


def build(blobs, *, count=None, version=VERSION, pad_last=False, overrides=None):
    """(file bytes, Layout). `blobs`: [(dtype name, values)] or
    [(dtype name, raw bytes, padding bits)]. Each record sits at the next
    multiple of 64 after the previous data, its data right after it.
    `overrides` = {i: {field: value}} replaces metadata fields of blob i
    after layout (code, size, offset, padding, sentinel, reserved).
    `pad_last` pads the file to 64 as the seed document draws it."""
    out = bytearray(header(len(blobs) if count is None else count, version))
    lay = Layout()
    for i, blob in enumerate(blobs):
        dtype = blob[0]
        raw, pad = (blob[1], blob[2]) if len(blob) == 3 else encode(dtype, blob[1])
        meta_off = up(len(out))
        out += bytes(meta_off - len(out))
        f = {"code": DTYPES[dtype][0], "size": len(raw), "offset": meta_off + ALIGN, "padding": pad,
             "sentinel": SENTINEL, "reserved": b""}
        f.update((overrides or {}).get(i, {}))
        out += metadata(f["code"], f["size"], f["offset"], f["padding"], sentinel=f["sentinel"],
                        reserved=f["reserved"])
        out += raw
        lay.meta.append(meta_off)
        lay.data.append(meta_off + ALIGN)
        lay.sizes.append(len(raw))
        lay.padding.append(pad)
    if pad_last:
        out += bytes(up(len(out)) - len(out))
    return bytes(out), lay


def write(path, blobs, **kw):
    raw, layout = build(blobs, **kw)
    with open(path, "wb") as f:
        f.write(raw)
    return layout


def write_sparse(path, total=1 << 30, count=4):
    """About `total` bytes in `count` zero F32 blobs: every metadata record
    is written, the data is left to truncate() (the disk stays empty)."""
    size = max(4, (total // count) // ALIGN * ALIGN - ALIGN)
    with open(path, "wb") as f:
        f.write(header(count))
        meta_off = ALIGN
        for _ in range(count):
            f.seek(meta_off)
            f.write(metadata(2, size, meta_off + ALIGN))
            end = meta_off + ALIGN + size
            meta_off = up(end)
        f.truncate(end)
    return end
