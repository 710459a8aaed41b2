"""Writes CNN v2 `.bin` files as the CNN v2 seed document describes them
(no public writer exists): 16-byte header (magic, version, num_layers,
total_weights), 20-byte layer records, then the f16 weights of every layer
packed in pairs as u32 = (hi << 16) | lo. Written from the document, not
from the reader: the packing goes through u32 words, as the seed's loader
unpacks them, so the tests catch a reader that disagrees."""

import struct
from dataclasses import dataclass, field

import numpy as np

MAGIC = 0x324E4E43
HEADER_SIZE = 16
RECORD_SIZE = 20

# The seed's example network: (in, out, kernel) per layer.
EXAMPLE = ((15, 8, 3), (8, 4, 3), (4, 3, 3))
EXAMPLE_TOTAL_WEIGHTS = 1476
EXAMPLE_SIZE = HEADER_SIZE + 3 * RECORD_SIZE + 2 * EXAMPLE_TOTAL_WEIGHTS   # 3028
EXAMPLE_TABLE_TOTAL = 1528   # the seed's example table's "Total", which its own formula contradicts


@dataclass
class Layout:
    data_offset: int
    records: list = field(default_factory=list)   # per layer: [k, in, out, offset, count]

    @staticmethod
    def record_at(i):
        """Absolute offset of layer i's record (0-based)."""
        return HEADER_SIZE + i * RECORD_SIZE


def pack_f16(values):
    """The seed's packing: u32 words, element i in word i//2, low half when
    i is even; an odd count leaves the last word's high half out of the file
    (the seed's size formula counts 2 bytes per weight)."""
    bits = [int(b) for b in np.asarray(values, dtype=np.float16).ravel().view(np.uint16)]
    out = bytearray()
    for j in range(0, len(bits), 2):
        lo = bits[j]
        hi = bits[j + 1] if j + 1 < len(bits) else 0
        out += struct.pack("<I", (hi << 16) | lo)
    if len(bits) % 2:
        del out[-2:]
    return bytes(out)


def unpack_f16(data, index):
    """Weight `index` of a data section, exactly as the seed's C loader reads it."""
    word = data[4 * (index // 2):4 * (index // 2) + 4].ljust(4, b"\0")
    packed = struct.unpack("<I", word)[0]
    bits = packed & 0xFFFF if index % 2 == 0 else packed >> 16
    return np.array([bits], dtype=np.uint16).view(np.float16)[0]


def example_layers(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((o, i, k, k)).astype(np.float16) for i, o, k in EXAMPLE]


def build(layers, *, magic=MAGIC, version=1, num_layers=None, total_weights=None, records=None, tail=b""):
    """(file bytes, Layout) for `layers`, arrays shaped (out, in, k, k).
    Overrides make malformed files: header fields, `records` replacing the
    computed [k, in, out, offset, count] lists, `tail` appended."""
    arrays = [np.asarray(a, dtype=np.float16) for a in layers]
    computed, cursor = [], 0
    for a in arrays:
        out, cin, k, _ = a.shape
        computed.append([k, cin, out, cursor, a.size])
        cursor += a.size
    recs = records if records is not None else computed
    n = len(recs) if num_layers is None else num_layers
    total = cursor if total_weights is None else total_weights
    head = struct.pack("<4I", magic, version, n, total)
    body = b"".join(struct.pack("<5I", *r) for r in recs)
    weights = pack_f16(np.concatenate([a.ravel() for a in arrays]) if arrays else [])
    raw = head + body + weights + tail
    return raw, Layout(HEADER_SIZE + len(recs) * RECORD_SIZE, [list(r) for r in recs])


def write(path, layers, **kw):
    raw, layout = build(layers, **kw)
    with open(path, "wb") as f:
        f.write(raw)
    return layout


def sparse_records(total_bytes=1 << 30):
    """8 -> 8 with kernel 3, then 8 -> 8 with the largest odd kernel that
    keeps the file within `total_bytes` (a 1 GiB request gives k = 2895,
    1.07e9 bytes); chained as the seed's example, so the file has no warning."""
    k = int(((total_bytes // 2 - 576) // 64) ** 0.5)
    k -= 1 - k % 2
    return [[3, 8, 8, 0, 576], [k, 8, 8, 576, 64 * k * k]]


def write_sparse(path, total_bytes=1 << 30):
    """Header and records, then truncate() to extend: zero weights, empty disk.
    Returns the file size."""
    recs = sparse_records(total_bytes)
    total = sum(r[4] for r in recs)
    head = struct.pack("<4I", MAGIC, 1, len(recs), total) + b"".join(struct.pack("<5I", *r) for r in recs)
    size = len(head) + 2 * total
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    return size
