"""Writes Burnpack files the way Burn's writer (burn-store burnpack/writer.rs)
lays them out: header "NRUB" + u16 version 1 + u32 metadata size, CBOR
metadata {"tensors": {name: {dtype, shape, data_offsets[, param_id]}},
"metadata": {...}} with the tensors map sorted by name (a BTreeMap), zero
padding to the next multiple of 256, then each tensor at the next multiple
of 256 of the data section in write order; the file ends at the last
tensor's end. Metadata is encoded with cbor2 (test-only dependency), the
tensors map by hand so tests can repeat a name. Written from Burn's writer,
not from rvne's reader."""

import struct
from dataclasses import dataclass, field

import cbor2
import numpy as np

MAGIC = b"NRUB"
HEADER_SIZE = 10
ALIGN = 256

BURN_DTYPES = {"<f8": "F64", "<f4": "F32", "<f2": "F16", "<i8": "I64", "<i4": "I32", "<i2": "I16",
               "|i1": "I8", "<u8": "U64", "<u4": "U32", "<u2": "U16", "|u1": "U8", "|b1": "Bool"}


def _up(n, a=ALIGN):
    return (n + a - 1) // a * a


def map_header(n):
    """CBOR head of a definite map of n pairs (major type 5)."""
    if n < 24:
        return bytes([0xA0 | n])
    for ai, fmt in ((24, ">B"), (25, ">H"), (26, ">I"), (27, ">Q")):
        if n < 1 << (8 * struct.calcsize(fmt)):
            return bytes([0xA0 | ai]) + struct.pack(fmt, n)
    raise ValueError(n)


def cbor_map(pairs):
    """A CBOR map from (key, value) pairs, in this order, repeats allowed."""
    return map_header(len(pairs)) + b"".join(cbor2.dumps(k) + cbor2.dumps(v) for k, v in pairs)


@dataclass
class Layout:
    metadata_size: int
    data_offset: int
    file_size: int
    offsets: dict = field(default_factory=dict)    # name -> (absolute start, absolute end)


def burn_dtype(arr, bool_style="text"):
    name = BURN_DTYPES[arr.dtype.str]
    if name == "Bool" and bool_style == "store":
        return {"Bool": "Native"}
    return name


def _entries(tensors):
    """[(name, array, burn dtype or None, param_id or None)] from {name: array} or tuples."""
    items = tensors.items() if isinstance(tensors, dict) else tensors
    out = []
    for item in items:
        name, arr, *rest = item
        arr = np.array(arr, order="C")
        out.append((name, arr, rest[0] if rest else None, rest[1] if len(rest) > 1 else None))
    return out


def metadata_bytes(entries, rel, *, metadata=None, scalars=None, desc_over=None, top_over=None,
                   bool_style="text", sort=True):
    descs = []
    for (name, arr, dtype, pid), start in zip(entries, rel):
        d = {"dtype": dtype if dtype is not None else burn_dtype(arr, bool_style),
             "shape": [int(n) for n in arr.shape], "data_offsets": [start, start + arr.nbytes]}
        if pid is not None:
            d["param_id"] = pid
        d.update((desc_over or {}).get(name, {}))
        descs.append((name, {k: v for k, v in d.items() if v is not None}))
    if sort:
        descs.sort(key=lambda p: p[0].encode() if isinstance(p[0], str) else b"")
    top = [("tensors", None)]
    if metadata:
        top.append(("metadata", metadata))
    if scalars:
        top.append(("scalars", scalars))
    top_d = dict(top)
    top_d.update(top_over or {})
    out = map_header(len([k for k, v in top_d.items() if v is not None or k == "tensors"]))
    for k, v in top_d.items():
        if k == "tensors":
            out += cbor2.dumps("tensors") + (v if isinstance(v, bytes) else cbor_map(descs))
        elif v is not None:
            out += cbor2.dumps(k) + cbor2.dumps(v)
    return out


def build(tensors, *, metadata=None, scalars=None, desc_over=None, top_over=None, raw_metadata=None,
          offsets=None, version=1, magic=MAGIC, tail=b"", bool_style="text", sort=True):
    """(file bytes, Layout). `tensors`: {name: array} or [(name, array[, burn dtype[, param_id]])]
    in write order (a list may repeat a name). `desc_over` = {name: {field: value}} changes
    descriptor fields (None drops one); `top_over` changes top-level keys; `raw_metadata`
    replaces the CBOR; `offsets` places tensors at these relative starts; `tail` is appended."""
    entries = _entries(tensors)
    rel, cursor = [], 0
    for i, (_, arr, _, _) in enumerate(entries):
        start = offsets[i] if offsets is not None else _up(cursor)
        rel.append(start)
        cursor = start + arr.nbytes
    meta = raw_metadata if raw_metadata is not None else metadata_bytes(
        entries, rel, metadata=metadata, scalars=scalars, desc_over=desc_over, top_over=top_over,
        bool_style=bool_style, sort=sort)
    data_off = _up(HEADER_SIZE + len(meta))
    data_len = max((s + a.nbytes for s, (_, a, _, _) in zip(rel, entries)), default=0)
    data = bytearray(data_len)
    for s, (_, arr, _, _) in zip(rel, entries):
        data[s:s + arr.nbytes] = arr.tobytes()
    head = magic + struct.pack("<HI", version, len(meta)) + meta
    raw = head + bytes(data_off - len(head)) + bytes(data) + tail
    layout = Layout(len(meta), data_off, len(raw),
                    {n: (data_off + s, data_off + s + a.nbytes) for s, (n, a, _, _) in zip(rel, entries)})
    return raw, layout


def write(path, tensors, **kw):
    raw, layout = build(tensors, **kw)
    with open(path, "wb") as f:
        f.write(raw)
    return layout


def sparse_shapes(total=1 << 30, count=4):
    """`count` 1-D f32 tensors of about total/count bytes each."""
    n = max(1, (total // count) // ALIGN * ALIGN // 4)
    return [(f"layer.{i}.weight", (n,)) for i in range(count)]


def write_sparse(path, shapes, *, dtype="F32", itemsize=4, metadata=None):
    """A file whose tensors [(name, shape)] are all zero: header + metadata
    written, then truncate() extends it, so the disk stays empty. Returns
    the file size."""
    rel, cursor, descs = [], 0, []
    for name, shape in shapes:
        nbytes = itemsize * int(np.prod(shape, dtype=object))
        start = _up(cursor)
        descs.append((name, {"dtype": dtype, "shape": list(shape), "data_offsets": [start, start + nbytes]}))
        cursor = start + nbytes
    descs.sort(key=lambda p: p[0].encode())
    top = [("tensors", None)] + ([("metadata", metadata)] if metadata else [])
    meta = map_header(len(top)) + cbor2.dumps("tensors") + cbor_map(descs)
    if metadata:
        meta += cbor2.dumps("metadata") + cbor2.dumps(metadata)
    data_off = _up(HEADER_SIZE + len(meta))
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack("<HI", 1, len(meta)) + meta)
        f.truncate(data_off + cursor)
    return data_off + cursor
