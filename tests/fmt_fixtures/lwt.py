"""Writes LightwatchAI2 `.lwt` files as docs/format-lwt.md reads the seed
document (no public writer exists): magic, u32 (or u64) JSON length, JSON,
216-byte index entries, zero padding to 64, fp32 data at 64-aligned
offsets, CRC-32 of the data section last. Written from the document, not
from the reader, so the tests can catch the reader disagreeing with it."""

import json
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

MAGIC = b"LWATCHV1"
ENTRY_SIZE = 216
ALIGN = 64
ZERO_CHUNK = 1 << 22


def _up(n, a=ALIGN):
    return (n + a - 1) // a * a


def entry(name, shape, offset, size, *, ndim=None, pad=b"\0" * 4):
    """One index entry: char name[128]; u32 ndim; (4 padding bytes);
    u64 shape[8]; u64 offset; u64 size_bytes."""
    raw = name.encode() if isinstance(name, str) else name
    dims = list(shape) + [0] * (8 - len(shape))
    return (raw.ljust(128, b"\0")[:128] + struct.pack("<I", len(shape) if ndim is None else ndim) + pad
            + struct.pack("<8Q", *dims) + struct.pack("<QQ", offset, size))


@dataclass
class Layout:
    """Where the writer put things (absolute offsets), for tests that patch bytes."""

    json_offset: int
    json_length: int
    index_offset: int
    data_offset: int
    data_end: int
    entries: list = field(default_factory=list)   # per tensor: name, entry_offset, rel_offset, size

    def entry_at(self, i):
        return self.index_offset + i * ENTRY_SIZE


def header(tensor_count, total_bytes, *, config=None, model_type="gpt2", **extra):
    doc = {"version": 1, "model_type": model_type}
    if config is not None:
        doc["config"] = config
    doc.update({"dtype": "float32", "byte_order": "little", "tensor_count": tensor_count,
                "total_bytes": total_bytes})
    doc.update(extra)
    return {k: v for k, v in doc.items() if v is not None}


def _as_list(tensors):
    items = tensors.items() if isinstance(tensors, dict) else tensors
    # np.array, not ascontiguousarray: that one turns a 0-d scalar into shape (1,)
    return [(n, np.array(a, dtype="<f4", order="C")) for n, a in items]


def _place(arrays, offsets):
    """Relative offsets: packed at 64-byte steps, or the caller's."""
    if offsets is not None:
        return list(offsets)
    out, cursor = [], 0
    for _, a in arrays:
        out.append(cursor)
        cursor = _up(cursor + a.nbytes)
    return out


def build(tensors, *, prefix="u32", config=None, model_type="gpt2", header_over=None, raw_json=None,
          offsets=None):
    """(file bytes, Layout). `tensors`: {name: array} or [(name, array)]
    (a list may repeat a name). `header_over` changes JSON keys (None drops
    one); `raw_json` replaces the JSON text; `offsets` places the tensors
    at these relative offsets instead of packing them."""
    arrays = _as_list(tensors)
    rel = _place(arrays, offsets)
    data_len = max((o + a.nbytes for o, (_, a) in zip(rel, arrays)), default=0)
    doc = header(len(arrays), data_len, config=config, model_type=model_type)
    doc.update(header_over or {})
    doc = {k: v for k, v in doc.items() if v is not None}
    text = raw_json if raw_json is not None else json.dumps(doc).encode()
    length = struct.pack("<Q" if prefix == "u64" else "<I", len(text))
    json_off = len(MAGIC) + len(length)
    index_off = json_off + len(text)
    index = b"".join(entry(n, a.shape, o, a.nbytes) for o, (n, a) in zip(rel, arrays))
    data_off = _up(index_off + len(index))
    data = bytearray(data_len)
    for o, (_, a) in zip(rel, arrays):
        data[o:o + a.nbytes] = a.tobytes()
    out = bytearray(MAGIC + length + text + index)
    out += bytes(data_off - len(out)) + data + struct.pack("<I", zlib.crc32(data) & 0xFFFFFFFF)
    layout = Layout(json_off, len(text), index_off, data_off, data_off + data_len,
                    [{"name": n, "entry_offset": index_off + i * ENTRY_SIZE, "rel_offset": o,
                      "size": a.nbytes} for i, (o, (n, a)) in enumerate(zip(rel, arrays))])
    return bytes(out), layout


def write(path, tensors, **kw):
    raw, layout = build(tensors, **kw)
    with open(path, "wb") as f:
        f.write(raw)
    return layout


def sparse_shapes(total=1 << 30, count=4):
    """`count` 1-D tensors of about total/count bytes each, 64-byte multiples."""
    n = max(1, (total // count) // ALIGN * ALIGN // 4)
    return [(f"layer.{i}.weight", (n,)) for i in range(count)]


def write_sparse(path, shapes, *, crc=True, config=None, header_over=None):
    """A file whose tensors [(name, shape)] are all zero, written as headers
    + index, then truncate() to extend: the disk stays empty. With crc=False
    the trailing CRC is left zero (wrong unless the data section is empty),
    to save hashing a GiB of zeros. Returns the file size."""
    rel, cursor = [], 0
    for _, shape in shapes:
        rel.append(cursor)
        cursor = _up(cursor + 4 * int(np.prod(shape, dtype=object)))
    data_len = max((o + 4 * int(np.prod(s, dtype=object)) for o, (_, s) in zip(rel, shapes)), default=0)
    doc = header(len(shapes), data_len, config=config)
    doc.update(header_over or {})
    text = json.dumps(doc).encode()
    index = b"".join(entry(n, s, o, 4 * int(np.prod(s, dtype=object))) for o, (n, s) in zip(rel, shapes))
    head = MAGIC + struct.pack("<I", len(text)) + text + index
    data_off = _up(len(head))
    value = 0
    if crc:
        zeros = bytes(ZERO_CHUNK)
        for start in range(0, data_len, ZERO_CHUNK):
            value = zlib.crc32(zeros[:min(ZERO_CHUNK, data_len - start)], value)
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(data_off + data_len)
        f.seek(data_off + data_len)
        f.write(struct.pack("<I", value & 0xFFFFFFFF))
    return data_off + data_len + 4


def gpt2_shapes(n_layer=2, n_embd=8, vocab_size=16, block_size=8):
    """The seed document's GPT-2 names and shapes: Conv1D weights stored
    in x out ([n_embd, 3*n_embd] for c_attn), as its mapping table lists them."""
    e = n_embd
    shapes = [("transformer.wte.weight", (vocab_size, e)), ("transformer.wpe.weight", (block_size, e))]
    for i in range(n_layer):
        p = f"transformer.h.{i}."
        shapes += [(p + "ln_1.weight", (e,)), (p + "ln_1.bias", (e,)),
                   (p + "attn.c_attn.weight", (e, 3 * e)), (p + "attn.c_attn.bias", (3 * e,)),
                   (p + "attn.c_proj.weight", (e, e)), (p + "attn.c_proj.bias", (e,)),
                   (p + "ln_2.weight", (e,)), (p + "ln_2.bias", (e,)),
                   (p + "mlp.c_fc.weight", (e, 4 * e)), (p + "mlp.c_fc.bias", (4 * e,)),
                   (p + "mlp.c_proj.weight", (4 * e, e)), (p + "mlp.c_proj.bias", (e,))]
    return shapes + [("transformer.ln_f.weight", (e,)), ("transformer.ln_f.bias", (e,))]


def gpt2_tensors(n_layer=2, n_embd=8, vocab_size=16, block_size=8, seed=0):
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(s).astype(np.float32)
            for n, s in gpt2_shapes(n_layer, n_embd, vocab_size, block_size)}


def gpt2_config(n_layer=2, n_embd=8, vocab_size=16, block_size=8, n_head=2):
    return {"n_layer": n_layer, "n_head": n_head, "n_embd": n_embd, "vocab_size": vocab_size,
            "block_size": block_size}
