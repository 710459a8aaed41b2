"""safetensors files byte by byte, for the cases the real writer
(safetensors.numpy.save) cannot make: malformed headers, dtypes numpy lacks
(BF16, FP8), gaps, and a sparse 1 GiB file. Written from the format's
description (u64 LE header length, JSON header padded with spaces to a
multiple of 8, data section covered by the tensors' data_offsets), not from
the reader."""

import json
import struct

import numpy as np

ALIGN = 8
NUMPY_NAMES = {"float64": "F64", "float32": "F32", "float16": "F16", "int64": "I64", "int32": "I32",
               "int16": "I16", "int8": "I8", "uint64": "U64", "uint32": "U32", "uint16": "U16",
               "uint8": "U8", "bool": "BOOL", "complex64": "C64"}


def bf16_bits(values):
    """float32 values that are exact in bfloat16 -> their u16 bit patterns (truncation is exact then)."""
    return (np.asarray(values, dtype="<f4").view("<u4") >> 16).astype("<u2")


def header_bytes(doc, *, pad=True, pad_char=b" "):
    text = doc if isinstance(doc, bytes) else json.dumps(doc, separators=(",", ":")).encode()
    if pad:
        text += pad_char * (-len(text) % ALIGN)
    return text


def assemble(header, data=b"", *, length=None):
    """Prefix + header + data; `length` overrides the u64 header length."""
    return struct.pack("<Q", len(header) if length is None else length) + header + data


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": [begin, end]}


def build(tensors, *, metadata=None, pad=True):
    """(file bytes, header dict). `tensors`: [(name, array)] or [(name,
    dtype, shape, raw bytes)], stored in that order back to back."""
    doc, data = {}, bytearray()
    if metadata is not None:
        doc["__metadata__"] = metadata
    for item in tensors:
        if len(item) == 2:
            name, arr = item
            arr = np.ascontiguousarray(arr)
            raw = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
            dtype, shape = NUMPY_NAMES[arr.dtype.name], arr.shape
        else:
            name, dtype, shape, raw = item
        doc[name] = entry(dtype, shape, len(data), len(data) + len(raw))
        data += raw
    return assemble(header_bytes(doc, pad=pad), bytes(data)), doc


def sparse_shapes(total=1 << 30, count=4):
    n = max(1, total // count // 4)
    return [(f"layer.{i}.weight", (n,)) for i in range(count)]


def write_sparse(path, shapes):
    """F32 tensors [(name, shape)], all zero: header written, then truncate()
    extends the file; the disk stays empty. Returns the file size."""
    doc, cursor = {}, 0
    for name, shape in shapes:
        size = 4 * int(np.prod(shape, dtype=object))
        doc[name] = entry("F32", shape, cursor, cursor + size)
        cursor += size
    head = assemble(header_bytes(doc))
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(len(head) + cursor)
    return len(head) + cursor
