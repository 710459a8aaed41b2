"""Burnpack, Burn's native weights file (docs/format-burnpack.md): a 10-byte
header (magic, version, metadata size), CBOR metadata (serde's encoding of
Burn's `Metadata`: tensor descriptors by name), zero padding to the next
multiple of 256, then the data section with every tensor 256-byte aligned."""

import numpy as np

from . import cbor
from .base import ITEMSIZE, U64_MAX, FormatError, Report, Tensor, align_up, check_layout, decode

NAME = "burnpack"
TITLE = "Burnpack"

MAGIC = b"NRUB"            # Burn's MAGIC_NUMBER 0x4255524E written little-endian
SWAPPED = b"BURN"          # the same u32 written big-endian
VERSION = 1
HEADER_SIZE = 10
ALIGN = 256
# Burn's own limits (burn-store base.rs): MAX_METADATA_SIZE, MAX_CBOR_RECURSION_DEPTH, MAX_TENSOR_COUNT
META_MAX_BYTES = 100 << 20
CBOR_MAX_DEPTH = 128
CBOR_MAX_ITEMS = 1 << 22
MAX_TENSORS = 100_000
MAX_TENSOR_BYTES = 10 << 30    # MAX_TENSOR_SIZE on 64-bit hosts (2 GiB on 32-bit ones)
MAX_FILE_BYTES = 100 << 30     # MAX_FILE_SIZE, for files read from disk
_NEEDS_DATA = "reads the data section: run rvne verify or inspect --data"
_PRODUCT_CAP = 1 << 130    # past this the size is wrong whatever the rest; stop multiplying

# serde's externally tagged burn_std::DType: unit variants are text, data variants one-entry maps.
_DTYPES = {"F64": ("F64", 8), "F32": ("F32", 4), "Flex32": ("F32", 4), "F16": ("F16", 2),
           "BF16": ("BF16", 2), "I64": ("I64", 8), "I32": ("I32", 4), "I16": ("I16", 2),
           "I8": ("I8", 1), "U64": ("U64", 8), "U32": ("U32", 4), "U16": ("U16", 2),
           "U8": ("U8", 1), "Bool": ("BOOL", 1)}
_BOOL_STORES = {"Native": ("BOOL", 1), "U8": ("BOOL", 1), "U32": ("U32", 4)}
_SCALARS = {"Int": (-(1 << 63), (1 << 63) - 1), "UInt": (0, U64_MAX), "Float": None, "Bool": None}
_CBOR_CODES = {"duplicate": "E_BP_DUP_NAME"}

READINGS = (
    "layout: magic 4E 52 55 42 (\"NRUB\": Burn's u32 0x4255524E little-endian), u16 version, u32 metadata "
    "size N, N bytes of CBOR, zero padding to D = align_up(10 + N, 256), the data section [D, end of file)",
    "data_offsets (start, end) are relative to D, as Burn's aligned_data_section_start reads them; every "
    "start is a multiple of 256",
    "Burn's writer ends the file at the last tensor's end; a file that ends before D is truncated inside "
    "the padding even with no tensors; bytes after the last tensor must be zero and are a hole past the "
    "next multiple of 256",
    "only version 1 exists; Burn's reader also accepts 0, rvne does not",
    f"caps (Burn's own): metadata <= {META_MAX_BYTES} bytes, CBOR depth <= {CBOR_MAX_DEPTH}, at most "
    f"{MAX_TENSORS} tensors, a tensor <= {MAX_TENSOR_BYTES} bytes (10 GiB, 64-bit Burn), a file <= "
    f"{MAX_FILE_BYTES} bytes (100 GiB); rvne adds at most {CBOR_MAX_ITEMS} CBOR items",
    "dtype is serde's DType: text (F32, Flex32, Bool, ...) or a one-entry map ({\"Bool\": \"Native\"|\"U8\"|"
    "\"U32\"}, {\"QFloat\": scheme}); Flex32 is stored as F32, Bool(U32) is shown as U32; QFloat is shown "
    "but neither size-checked nor decoded",
    "keys serde ignores (unknown top-level or descriptor keys) are allowed and shown; param_id is an "
    "optional u64 (null = absent); tensors are listed in the CBOR map's order (Burn writes them sorted)",
)


def sniff(src):
    return src.bytes(0, 4) in (MAGIC, SWAPPED)  # short files give fewer bytes, never raise


def read(src, *, data=True):
    rep = Report(NAME, TITLE, len(src), readings=list(READINGS))
    good = _read(src, rep)
    if not data:
        rep.skip("E_BP_PAD", _NEEDS_DATA)
    elif good:
        _padding(src, rep, good)
    else:
        rep.skip("E_BP_PAD", "not checked: an earlier rule failed")
    return rep


def _read(src, rep):
    """The metadata end when every structural rule passed, else None."""
    frame = _header(src, rep)
    if not frame:
        return None
    meta_size, data_start = frame
    doc = _metadata(src, rep, meta_size)
    if doc is None or not _top(rep, doc):
        return None
    if not _tensors(rep, doc["tensors"], data_start):
        return None
    if not check_layout(rep, rep.tensors, prefix="E_BP", region=(data_start, len(src)), align=ALIGN):
        return None
    return HEADER_SIZE + meta_size


def _header(src, rep):
    size = len(src)
    first = src.bytes(0, 4)
    if first == SWAPPED:
        return rep.fail("E_BP_SWAPPED", "the file starts with \"BURN\": the magic u32 0x4255524E was written "
                        "big-endian (byte-swapped); Burn writes 4E 52 55 42 (\"NRUB\"); re-export with Burn")
    rep.ok("E_BP_SWAPPED", "not byte-swapped")
    if first != MAGIC:
        return rep.fail("E_BP_MAGIC", f"first bytes are {first!r}, not {MAGIC!r}; not a Burnpack file")
    rep.ok("E_BP_MAGIC", "NRUB (0x4255524E)")
    rep.fields["magic"] = 0x4255524E
    if size < HEADER_SIZE:
        return rep.fail("E_BP_HEADER", f"the file has {size} bytes, fewer than the {HEADER_SIZE}-byte header; "
                        "it is truncated")
    rep.ok("E_BP_HEADER", f"{HEADER_SIZE} bytes")
    version, meta_size = src.u16(4), src.u32(6)
    rep.version = version
    rep.fields.update(version=version, metadata_offset=HEADER_SIZE, metadata_size=meta_size)
    if version != VERSION:
        return rep.fail("E_BP_VERSION", f"version is {version}; rvne reads only Burnpack version {VERSION}")
    rep.ok("E_BP_VERSION", f"{VERSION}")
    if size > MAX_FILE_BYTES:
        return rep.fail("E_BP_FILE_SIZE", f"the file has {size} bytes, more than Burn's cap of {MAX_FILE_BYTES} "
                        "(100 GiB): Burn's reader refuses it; split the model")
    rep.ok("E_BP_FILE_SIZE", f"{size} <= {MAX_FILE_BYTES}")
    end = HEADER_SIZE + meta_size
    if meta_size > META_MAX_BYTES:
        return rep.fail("E_BP_META_SIZE", f"metadata size {meta_size} exceeds the cap of {META_MAX_BYTES} "
                        "bytes (Burn's own); the header is corrupt")
    if end > size:
        return rep.fail("E_BP_META_SIZE", f"metadata [{HEADER_SIZE}, {end}) runs past the end of the file "
                        f"({size} bytes); the file is truncated or its header is corrupt")
    rep.ok("E_BP_META_SIZE", f"{meta_size} bytes")
    data_start = align_up(end, ALIGN)
    rep.fields.update(data_offset=data_start, data_bytes=max(0, size - data_start))
    if data_start > size:
        return rep.fail("E_BP_TRUNCATED", f"the file ends at {size}, inside the zero padding before the data "
                        f"section at {data_start}; it is truncated")
    rep.ok("E_BP_TRUNCATED", f"data section [{data_start}, {size})")
    return meta_size, data_start


def _metadata(src, rep, meta_size):
    try:
        doc = cbor.loads(src.bytes(HEADER_SIZE, meta_size), max_bytes=META_MAX_BYTES,
                         max_depth=CBOR_MAX_DEPTH, max_items=CBOR_MAX_ITEMS)
    except cbor.CborError as exc:
        code = _CBOR_CODES.get(exc.kind, "E_BP_CBOR")
        if code == "E_BP_DUP_NAME":
            where = "tensor name" if exc.path[:1] == ("tensors",) and len(exc.path) == 2 else \
                "key in " + (".".join(map(str, exc.path[:-1])) or "the top-level map")
            return rep.fail(code, f"{where} {exc.path[-1]!r} appears twice in the metadata (Burn's reader "
                            "would keep the last silently); the file is corrupt")
        return rep.fail(code, f"metadata CBOR: {exc}; re-export the file")
    rep.ok("E_BP_CBOR", "one well-formed CBOR item within the caps")
    rep.ok("E_BP_DUP_NAME", "no map has a key twice")
    return doc


def _is_int(v, lo=0, hi=U64_MAX):
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def _top(rep, doc):
    """Schema of the top-level map; records metadata and scalars."""
    if not isinstance(doc, dict) or not all(isinstance(k, str) for k in doc):
        return rep.fail("E_BP_SCHEMA", "the metadata is not a CBOR map with text keys; the file is corrupt")
    for k, v in doc.items():
        if k != "tensors":
            rep.fields[k if k in ("metadata", "scalars") else f"cbor.{k}"] = _plain(v)
    tensors = doc.get("tensors")
    if not isinstance(tensors, dict):
        return rep.fail("E_BP_SCHEMA", "the metadata has no \"tensors\" map (name -> descriptor)")
    rep.fields["tensor_count"] = len(tensors)
    meta = doc.get("metadata", {})
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        return rep.fail("E_BP_SCHEMA", "\"metadata\" is not a map of text to text")
    bad = _bad_scalar(doc.get("scalars", {}))
    if bad:
        return rep.fail("E_BP_SCHEMA", bad)
    if len(tensors) > MAX_TENSORS:
        return rep.fail("E_BP_SCHEMA", f"{len(tensors)} tensors exceed the cap of {MAX_TENSORS} (Burn's own)")
    return True


def _bad_scalar(scalars):
    if not isinstance(scalars, dict):
        return "\"scalars\" is not a map"
    for name, v in scalars.items():
        kind, value = next(iter(v.items())) if isinstance(v, dict) and len(v) == 1 else (None, None)
        if not isinstance(name, str) or kind not in _SCALARS:
            return f"scalar {name!r} is not a one-entry map Int|UInt|Float|Bool -> value"
        rng = _SCALARS[kind]
        ok = _is_int(value, *rng) if rng else isinstance(value, float if kind == "Float" else bool)
        if not ok:
            return f"scalar {name!r}: {kind} value {value!r} is not of its type"
    return None


def _plain(v, depth=0):
    """A JSON-friendly copy for inspect; CBOR-only values shown as text."""
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if depth < 16 and isinstance(v, list):
        return [_plain(x, depth + 1) for x in v]
    if depth < 16 and isinstance(v, dict):
        return {str(k): _plain(x, depth + 1) for k, x in v.items()}
    return repr(v)[:200]


def _tensors(rep, tensors, data_start):
    """Appends one Tensor per descriptor; False after the first broken rule."""
    unchecked = 0
    for i, (name, desc) in enumerate(tensors.items()):
        failure = _descriptor(name, desc)
        if failure:
            return rep.fail(*failure)
        canon, itemsize, burn = _dtype(desc["dtype"])
        start, end = desc["data_offsets"]
        extra = {"burn_dtype": burn, "data_offsets": [start, end]}
        if desc.get("param_id") is not None:
            extra["param_id"] = desc["param_id"]
        extra.update((f"cbor.{k}", _plain(v)) for k, v in desc.items()
                     if k not in ("dtype", "shape", "data_offsets", "param_id"))
        unchecked += itemsize is None
        rep.tensors.append(Tensor(i, name, canon, tuple(desc["shape"]), data_start + start, end - start,
                                  ALIGN, extra))
    rep.ok("E_BP_SCHEMA", f"{len(tensors)} descriptors with dtype, shape, data_offsets")
    rep.ok("E_BP_DTYPE", "every dtype known")
    rep.ok("E_BP_OFFSETS", "start <= end for every tensor")
    note = f" ({unchecked} QFloat tensors not checked)" if unchecked else ""
    rep.ok("E_BP_SIZE", "end - start = product(shape) * element size" + note)
    big = next((t for t in rep.tensors if t.size > MAX_TENSOR_BYTES), None)
    if big:
        return rep.fail("E_BP_TENSOR_SIZE", f"tensor {big.name!r} has {big.size} bytes, more than Burn's cap of "
                        f"{MAX_TENSOR_BYTES} (10 GiB on 64-bit hosts, 2 GiB on 32-bit): Burn's reader refuses it; "
                        "split the tensor")
    rep.ok("E_BP_TENSOR_SIZE", f"every tensor <= {MAX_TENSOR_BYTES} bytes")
    return True


def _descriptor(name, desc):
    """(code, detail) of the first rule one descriptor breaks, or None."""
    at = f"tensor {name!r}"
    if not isinstance(name, str):
        return "E_BP_SCHEMA", f"tensor name {name!r} is not text"
    if not isinstance(desc, dict):
        return "E_BP_SCHEMA", f"{at}: the descriptor is not a map"
    missing = [k for k in ("dtype", "shape", "data_offsets") if k not in desc]
    if missing:
        return "E_BP_SCHEMA", f"{at}: the descriptor lacks {', '.join(missing)}"
    shape, offs, pid = desc["shape"], desc["data_offsets"], desc.get("param_id")
    if not isinstance(desc["dtype"], (str, dict)):
        return "E_BP_SCHEMA", f"{at}: dtype {desc['dtype']!r} is neither text nor a map"
    if not isinstance(shape, list) or not all(_is_int(d) for d in shape):
        return "E_BP_SCHEMA", f"{at}: shape {_plain(shape)!r} is not a list of u64"
    if not isinstance(offs, list) or len(offs) != 2 or not all(_is_int(o) for o in offs):
        return "E_BP_SCHEMA", f"{at}: data_offsets {_plain(offs)!r} is not a pair of u64"
    if pid is not None and not _is_int(pid):
        return "E_BP_SCHEMA", f"{at}: param_id {pid!r} is not a u64"
    canon, itemsize, burn = _dtype(desc["dtype"])
    if canon is None:
        return "E_BP_DTYPE", f"{at}: dtype {_plain(desc['dtype'])!r} is not a Burn DType rvne knows"
    start, end = offs
    if start > end:
        return "E_BP_OFFSETS", f"{at}: data_offsets ({start}, {end}) end before they start; the index is corrupt"
    if itemsize is not None:
        want = _nbytes(shape, itemsize)
        if want != end - start:
            wrap = " (past 2^64: a reader multiplying in 64 bits would wrap)" if want > U64_MAX else ""
            shown = want if want <= _PRODUCT_CAP else "more than 2^130"
            return "E_BP_SIZE", f"{at}: {burn} {list(shape)[:8]} needs {shown} bytes{wrap} but data_offsets " \
                                f"({start}, {end}) hold {end - start}; the index is corrupt"
    return None


def _nbytes(shape, itemsize):
    if 0 in shape:
        return 0
    n = itemsize
    for d in shape:
        n *= d
        if n > _PRODUCT_CAP:
            break
    return n


def _dtype(raw):
    """(canonical name, element size or None, Burn's name), or (None, None, None)."""
    if isinstance(raw, str):
        canon, size = _DTYPES.get(raw, (None, None))
        return canon, size, raw if canon else None
    if isinstance(raw, dict) and len(raw) == 1:
        (kind, value), = raw.items()
        if kind == "Bool" and isinstance(value, str) and value in _BOOL_STORES:
            return (*_BOOL_STORES[value], f"Bool({value})")
        if kind == "QFloat" and isinstance(value, dict):
            return "QFLOAT", None, "QFloat"
    return None, None, None


def _padding(src, rep, meta_end):
    """Every byte after the metadata that no tensor owns is zero (Burn's writer fills padding with zeros)."""
    spans = sorted((t.offset, t.end) for t in rep.tensors if t.size)
    cursor = meta_end
    for a, b in spans + [(len(src), len(src))]:
        if a > cursor:
            raw = np.frombuffer(src.window(cursor, a - cursor), dtype=np.uint8)
            hits = np.flatnonzero(raw)
            if hits.size:
                return rep.fail("E_BP_PAD", f"padding byte {cursor + int(hits[0])} (between the metadata and "
                                "the tensors, between tensors or after the last one) is non-zero; the file is "
                                "corrupt or has bytes no tensor owns")
        cursor = max(cursor, b)
    rep.ok("E_BP_PAD", "every byte outside the tensors after the metadata is zero")
    return True


def tensor_array(src, tensor):
    """The tensor's values as stored (BF16 widened to float32 exactly)."""
    if tensor.dtype == "QFLOAT":
        raise FormatError("E_BP_DTYPE", f"{tensor.label}: quantized QFloat tensors are not decoded by rvne")
    want = _nbytes(tensor.shape, ITEMSIZE[tensor.dtype]) if tensor.dtype in ITEMSIZE else None
    if want != tensor.size or not src.has(tensor.offset, tensor.size):
        raise FormatError("E_BP_BOUNDS", f"{tensor.label}: [{tensor.offset}, {tensor.end}) does not hold "
                          f"{tensor.dtype} {list(tensor.shape)} inside the file; run rvne verify")
    arr = decode(src, tensor)
    if tensor.dtype == "BOOL" and arr.size and np.frombuffer(arr.tobytes(), np.uint8).max() > 1:
        raise FormatError("E_BP_DTYPE", f"{tensor.label}: a Bool byte is neither 0 nor 1")
    return arr
