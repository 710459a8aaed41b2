"""LightwatchAI2 `.lwt` weights (docs/format-lwt.md): magic, length-prefixed
JSON header, fixed 216-byte index entries, a 64-byte-aligned fp32 data
section and a CRC-32 of that section in the last four bytes."""

import struct

from ..crc import crc32
from . import jsonsafe
from .base import U64_MAX, FormatError, Report, Tensor, align_up, check_layout, decode

NAME = "lwt"
TITLE = "LightwatchAI2 .lwt"

MAGIC = b"LWATCHV1"
JSON_MAX_BYTES = 16 << 20
JSON_MAX_DEPTH = 64
ENTRY_SIZE = 216
NAME_BYTES = 128
MAX_NDIM = 8
ALIGN = 64
CRC_BYTES = 4
# name[128] @0, ndim u32 @128, 4 bytes of struct padding @132, shape u64[8] @136,
# offset u64 @200, size_bytes u64 @208: the seed's struct under x86-64 alignment.
_ENTRY = struct.Struct("<128sI4s8QQQ")
_REQUIRED = ("version", "dtype", "byte_order", "tensor_count", "total_bytes")
_TYPES = {"version": int, "dtype": str, "byte_order": str, "tensor_count": int, "total_bytes": int,
          "model_type": str, "config": dict}
_JSON_CODES = {"size": "E_LWT_JSON_LENGTH", "utf8": "E_LWT_JSON_UTF8", "depth": "E_LWT_JSON_DEPTH",
               "syntax": "E_LWT_JSON_SYNTAX", "duplicate": "E_LWT_JSON_DUPKEY"}
_STRUCTURAL = ("magic", "json_length_prefix", "json_length", "index_offset", "index_bytes",
               "data_offset", "data_bytes", "crc_stored")
_NEEDS_DATA = "reads the data section: run rvne verify or inspect --data"

READINGS = (
    "layout: magic, JSON length, JSON, tensor_count index entries, zero padding to the next multiple "
    "of 64 (absolute offset), data section, then the CRC-32 (zlib) of the data section as the last 4 bytes",
    "index entry: the seed's C struct with natural x86-64 alignment, 216 bytes, whose 4 padding "
    "bytes after ndim must be zero",
    "tensor offsets are relative to the data section start and multiples of 64; the data section "
    "ends 4 bytes before the end of the file",
    "total_bytes is the data section's length in bytes, alignment gaps included",
    "ndim 0 is a scalar of 4 bytes; a used dimension may be 0 (an empty tensor)",
    "config and model_type are optional, other JSON keys are allowed and shown; the JSON is capped at "
    f"{JSON_MAX_BYTES} bytes and nesting depth {JSON_MAX_DEPTH}",
    "names are UTF-8, 1..127 bytes, NUL-terminated, zero after the NUL",
    "shapes are reported as stored (GPT-2 Conv1D weights in x out); rvne never transposes, a map may",
)


def _is(value, kind):
    # JSON true/false arrive as bool, a subclass of int: never a count.
    return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


def sniff(src):
    return src.bytes(0, len(MAGIC)) == MAGIC  # short files give fewer bytes, never raise


def read(src, *, data=True):
    rep = Report(NAME, TITLE, len(src), readings=list(READINGS))
    _read(src, rep, data)
    return rep


def _read(src, rep, data):
    if not _magic(src, rep):
        return
    head = _json(src, rep)
    if not head:
        return
    json_end, doc = head
    if not _header(rep, doc):
        return
    layout = _frame(src, rep, json_end, doc["tensor_count"])
    if not layout:
        return
    index_off, data_start, data_end = layout
    if _index(src, rep, index_off, doc["tensor_count"], data_start):
        check_layout(rep, rep.tensors, prefix="E_LWT", region=(data_start, data_end), align=ALIGN)
    else:
        rep.skip("E_LWT_BOUNDS", "not checked: an index entry is invalid")
    _total(rep, doc["total_bytes"], data_end - data_start)
    if not data:
        rep.skip("E_LWT_PAD", _NEEDS_DATA)
        rep.skip("E_LWT_CRC", _NEEDS_DATA)
        return
    _padding(src, rep, index_off + doc["tensor_count"] * ENTRY_SIZE, data_start)
    _crc(src, rep, data_start, data_end)


def _magic(src, rep):
    got = src.bytes(0, len(MAGIC))
    if got != MAGIC:
        return rep.fail("E_LWT_MAGIC", f"first bytes are {got!r}, not {MAGIC!r}; not a .lwt file")
    rep.ok("E_LWT_MAGIC", "LWATCHV1")
    rep.fields["magic"] = MAGIC.decode()
    return True


def _json(src, rep):
    """(end offset, parsed JSON), or False after a failed rule. The prefix
    width follows from bytes 12..15: all zero can only be the high half of
    a u64 length, since a u32-prefixed JSON text cannot start with NULs."""
    size = len(src)
    wide = size >= 16 and src.bytes(12, 4) == b"\0\0\0\0"
    off = 16 if wide else 12
    width = "u64" if wide else "u32"
    if size < off:
        return rep.fail("E_LWT_JSON_LENGTH", f"the file ends at byte {size}, inside the JSON length "
                        "prefix; it is truncated")
    n = src.u64(8) if wide else src.u32(8)
    rep.fields["json_length_prefix"] = width
    rep.fields["json_length"] = n
    rep.readings.append(f"json_length_prefix: {width} (JSON text at byte {off})")
    if n > JSON_MAX_BYTES:
        return rep.fail("E_LWT_JSON_LENGTH", f"JSON length {n} exceeds the cap of {JSON_MAX_BYTES} bytes; "
                        "the header is corrupt")
    if off + n > size:
        return rep.fail("E_LWT_JSON_LENGTH", f"JSON [{off}, {off + n}) runs past the end of the file "
                        f"({size} bytes); the file is truncated")
    rep.ok("E_LWT_JSON_LENGTH", f"{n} bytes after a {width} prefix")
    try:
        doc = jsonsafe.loads(src.bytes(off, n), max_bytes=JSON_MAX_BYTES, max_depth=JSON_MAX_DEPTH)
    except jsonsafe.JsonError as exc:
        return rep.fail(_JSON_CODES[exc.kind], f"header JSON: {exc}; re-export the file")
    for code in ("E_LWT_JSON_UTF8", "E_LWT_JSON_DEPTH", "E_LWT_JSON_SYNTAX", "E_LWT_JSON_DUPKEY"):
        rep.ok(code, "header JSON")
    return off + n, doc


def _header(rep, doc):
    if not isinstance(doc, dict):
        return rep.fail("E_LWT_HEADER", f"the header JSON is a {type(doc).__name__}, not an object")
    for k, v in doc.items():
        rep.fields[f"json.{k}" if k in _STRUCTURAL else k] = v
    missing = [k for k in _REQUIRED if k not in doc]
    if missing:
        return rep.fail("E_LWT_HEADER", f"the header JSON lacks {', '.join(missing)}")
    wrong = [k for k, kind in _TYPES.items() if k in doc and not _is(doc[k], kind)]
    if wrong:
        k = wrong[0]
        return rep.fail("E_LWT_HEADER", f"header key {k!r} is {doc[k]!r}, not a JSON "
                        f"{'integer' if _TYPES[k] is int else 'string' if _TYPES[k] is str else 'object'}")
    rep.ok("E_LWT_HEADER", "required keys present with their types")
    rep.version = doc["version"]
    for code, key, want in (("E_LWT_VERSION", "version", 1), ("E_LWT_DTYPE", "dtype", "float32"),
                            ("E_LWT_BYTE_ORDER", "byte_order", "little")):
        if doc[key] != want:
            return rep.fail(code, f"{key} is {doc[key]!r}; rvne reads only {key} {want!r}")
        rep.ok(code, f"{key} {want!r}")
    if doc["tensor_count"] < 0:
        return rep.fail("E_LWT_TENSOR_COUNT", f"tensor_count is {doc['tensor_count']}; it must be >= 0")
    rep.ok("E_LWT_TENSOR_COUNT", f"{doc['tensor_count']} tensors")
    return True


def _frame(src, rep, index_off, count):
    """(index offset, data start, data end), or False when the index or the
    padding after it runs past the end of the file."""
    size = len(src)
    index_end = index_off + count * ENTRY_SIZE
    rep.fields["index_offset"] = index_off
    rep.fields["index_bytes"] = count * ENTRY_SIZE
    if index_end > size:
        return rep.fail("E_LWT_INDEX_BOUNDS", f"{count} index entries need [{index_off}, {index_end}) but the "
                        f"file has {size} bytes; tensor_count is wrong or the file is truncated")
    rep.ok("E_LWT_INDEX_BOUNDS", f"index [{index_off}, {index_end})")
    data_start = align_up(index_end, ALIGN)
    if data_start + CRC_BYTES > size:
        return rep.fail("E_LWT_TRUNCATED", f"the file ends at {size}, before the data section at {data_start} "
                        f"and its {CRC_BYTES}-byte CRC; it is truncated")
    rep.ok("E_LWT_TRUNCATED", f"data section [{data_start}, {size - CRC_BYTES}) and CRC present")
    rep.fields["data_offset"] = data_start
    rep.fields["data_bytes"] = size - CRC_BYTES - data_start
    rep.fields["crc_stored"] = src.u32(size - CRC_BYTES)
    return index_off, data_start, size - CRC_BYTES


def _index(src, rep, index_off, count, data_start):
    """Appends the index's tensors to rep.tensors; False after recording
    the first broken entry rule (the tensors read before it stay)."""
    raw = src.bytes(index_off, count * ENTRY_SIZE)
    seen = set()
    for i in range(count):
        name_raw, ndim, pad, *rest = _ENTRY.unpack_from(raw, i * ENTRY_SIZE)
        shape_all, rel, size = rest[:MAX_NDIM], rest[MAX_NDIM], rest[MAX_NDIM + 1]
        at = f"index entry {i} (byte {index_off + i * ENTRY_SIZE})"
        failure = _entry_failure(at, name_raw, ndim, pad, shape_all, size, seen)
        if failure:
            return rep.fail(*failure)
        name = name_raw.split(b"\0", 1)[0].decode()
        seen.add(name)
        rep.tensors.append(Tensor(i, name, "F32", tuple(shape_all[:ndim]), data_start + rel, size, ALIGN,
                                  {"rel_offset": rel}))
    for code, what in (("E_LWT_NAME_NUL", "NUL-terminated"), ("E_LWT_NAME_EMPTY", "non-empty"),
                       ("E_LWT_NAME_UTF8", "UTF-8"), ("E_LWT_NAME_TAIL", "zero after the NUL"),
                       ("E_LWT_DUP_NAME", "unique"), ("E_LWT_NDIM", "ndim in 0..8"),
                       ("E_LWT_STRUCT_PAD", "struct padding zero"), ("E_LWT_SHAPE_TAIL", "unused dims zero"),
                       ("E_LWT_SIZE", "size_bytes = 4 * product(shape)")):
        rep.ok(code, f"{count} entries: {what}")
    return True


def _entry_failure(at, name_raw, ndim, pad, shape_all, size, seen):
    """(code, detail) of the first rule one index entry breaks, or None."""
    nul = name_raw.find(b"\0")
    if nul < 0:
        return "E_LWT_NAME_NUL", f"{at}: name has no NUL within {NAME_BYTES} bytes; the index is corrupt"
    if nul == 0:
        return "E_LWT_NAME_EMPTY", f"{at}: empty name; every tensor needs one"
    try:
        name = name_raw[:nul].decode("utf-8")
    except UnicodeDecodeError as exc:
        return "E_LWT_NAME_UTF8", f"{at}: name {name_raw[:nul]!r} is not UTF-8 at byte {exc.start}"
    if name_raw[nul:].strip(b"\0"):
        return "E_LWT_NAME_TAIL", f"{at}: name {name!r} has non-zero bytes after its NUL; the index is corrupt"
    if name in seen:
        return "E_LWT_DUP_NAME", f"{at}: name {name!r} appears twice; readers would disagree on which one"
    if ndim > MAX_NDIM:
        return "E_LWT_NDIM", f"{at} {name!r}: ndim {ndim} exceeds {MAX_NDIM}"
    if pad != b"\0\0\0\0":
        return "E_LWT_STRUCT_PAD", f"{at} {name!r}: struct padding after ndim is {pad.hex()}, not zero"
    if any(shape_all[ndim:]):
        return "E_LWT_SHAPE_TAIL", f"{at} {name!r}: shape entries past ndim {ndim} are " \
                                   f"{list(shape_all[ndim:])}, not zero"
    want = 4
    for d in shape_all[:ndim]:
        want *= d
    if size != want:
        wrap = f" (4 * product = {want} wraps 64 bits: a C reader would compute {want & U64_MAX})" \
            if want > U64_MAX else ""
        return "E_LWT_SIZE", f"{at} {name!r}: size_bytes {size} != 4 * product{list(shape_all[:ndim])} = " \
                             f"{want}{wrap}; the index is corrupt"
    return None


def _total(rep, total, actual):
    if total != actual:
        rep.fail("E_LWT_TOTAL_BYTES", f"total_bytes is {total} but the data section holds {actual} bytes; "
                 "the file is truncated, extended or its header is wrong")
    else:
        rep.ok("E_LWT_TOTAL_BYTES", f"{actual} bytes")


def _padding(src, rep, index_end, data_start):
    pad = src.bytes(index_end, data_start - index_end)
    if pad.strip(b"\0"):
        at = index_end + next(i for i, b in enumerate(pad) if b)
        rep.fail("E_LWT_PAD", f"padding byte {at} before the data section is non-zero; the file is corrupt")
    else:
        rep.ok("E_LWT_PAD", f"{len(pad)} padding bytes zero")


def _crc(src, rep, start, end):
    stored = src.u32(end)
    got = crc32(src.window(start, end - start))
    if stored != got:
        rep.fail("E_LWT_CRC", f"stored CRC 0x{stored:08X}, computed 0x{got:08X} over the data section "
                 f"[{start}, {end}); the data is corrupt")
    else:
        rep.ok("E_LWT_CRC", f"0x{got:08X}")


def tensor_array(src, tensor):
    """float32 array of the tensor's shape, exactly as stored."""
    want = 4
    for d in tensor.shape:
        want *= d
    if tensor.size != want or not src.has(tensor.offset, tensor.size):
        raise FormatError("E_LWT_BOUNDS", f"{tensor.label}: [{tensor.offset}, {tensor.end}) of {want} "
                          "bytes is not inside the file; run rvne verify")
    return decode(src, tensor)
