"""safetensors (docs/format-safetensors.md): u64 header length N, N bytes
of JSON {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}},
then the data section, which the tensors must cover exactly: the reference
reader (huggingface/safetensors, tensor.rs) refuses gaps and a tail."""

import numpy as np

from . import jsonsafe
from .base import (ITEMSIZE, NUMPY_DTYPES, U64_MAX, FormatError, Offsets, Report, Tensor, check_layout,
                   decode)

NAME = "safetensors"
TITLE = "safetensors"

PREFIX_SIZE = 8
HEADER_CAP = 100_000_000   # tensor.rs MAX_HEADER_SIZE: decimal, not 100 MiB
JSON_MAX_DEPTH = 64
PAD_ALIGN = 8              # the reference writer pads the JSON with spaces to this
METADATA_KEY = "__metadata__"
ENTRY_KEYS = ("dtype", "shape", "data_offsets")
JSON_SPACE = b" \t\n\r"      # what serde_json skips before a value (RFC 8259)
# Bits per element of every dtype the reference reader knows. Those without
# a numpy type (FP8, FP6, FP4) are checked but not decoded.
DTYPE_BITS = {name: 8 * size for name, size in ITEMSIZE.items()}
DTYPE_BITS.update({"F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8,
                   "F6_E2M3": 6, "F6_E3M2": 6, "F4": 4, "C64": 64})
_LOCAL_DTYPES = {"C64": "<c8"}   # decodable with numpy, unknown to base.decode
_JSON_CODES = {"size": "E_ST_HEADER_CAP", "utf8": "E_ST_JSON_UTF8", "depth": "E_ST_JSON_DEPTH",
               "syntax": "E_ST_JSON_SYNTAX", "duplicate": "E_ST_JSON_DUPKEY"}
_NEEDS_DATA = "reads the data section: run rvne verify or inspect --data"

READINGS = (
    f"the header is capped at {HEADER_CAP} bytes, the reference reader's limit; JSON nesting at "
    f"depth {JSON_MAX_DEPTH}",
    "JSON whitespace (space, tab, LF, CR) before the header's '{' is a warning: the reference reader "
    "accepts it, its writer never writes it",
    "a duplicate JSON key is refused (the reference reader keeps the last one)",
    "a header length that is not a multiple of 8, or padding after the JSON other than spaces, "
    "is a warning: the reference writer pads with spaces so that tensor data starts 8-aligned",
    "__metadata__, when present, must be an object of string values; null (MLX's save_safetensors "
    "writes it for no metadata; the reference reader accepts it) is read as no metadata, with a warning",
    "a tensor entry has exactly dtype, shape and data_offsets (the reference reader ignores "
    "other keys; rvne refuses them) and a non-empty name",
    "FP8, FP6, FP4 tensors are checked for size (sub-byte ones must end on a byte boundary) but not "
    "decoded: numpy has no such types, so rvne export refuses the file (exit 1) unless --raw, which "
    "writes their stored bytes as uint8",
    "BOOL tensors must hold only bytes 0 and 1 (data check)",
)


def _short(value, limit=60):
    """repr() cut to one readable line: names and lists come from untrusted JSON."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _is_int(v):
    # JSON true/false arrive as bool, a subclass of int: never a count.
    return isinstance(v, int) and not isinstance(v, bool)


def sniff(src):
    try:
        size = len(src)
        n = src.u64(0) if size > PREFIX_SIZE else 0
        # Not "8 + N <= size": a file truncated inside its header is still
        # safetensors, and E_ST_HEADER_LENGTH says more than "unknown format".
        return 2 <= n < 1 << 48 and _first_token(src, n)[0] == b"{"
    except Exception:  # sniff never raises, whatever the buffer
        return False


def _first_token(src, n):
    """(the first header byte after JSON whitespace, how many whitespace
    bytes precede it). Reads whitespace in growing chunks: a header of
    spaces is read once, a normal one costs one byte."""
    at, chunk = PREFIX_SIZE, 1
    stop = min(len(src), PREFIX_SIZE + n)
    while at < stop:
        part = src.bytes(at, min(chunk, stop - at))
        rest = part.lstrip(JSON_SPACE)
        if rest:
            return rest[:1], at + len(part) - len(rest) - PREFIX_SIZE
        at += len(part)
        chunk = min(chunk * 16, 1 << 20)
    return b"", at - PREFIX_SIZE


def read(src, *, data=True):
    rep = Report(NAME, TITLE, len(src), readings=list(READINGS))
    _read(src, rep, data)
    return rep


def _read(src, rep, data):
    n = _prefix(src, rep)
    if n is None:
        return
    raw = src.bytes(PREFIX_SIZE, n)
    header = _json(rep, raw)
    if header is None:
        return
    meta, entries, count, failure = header
    _padding(rep, raw, n)
    del raw
    if not _metadata(rep, meta):
        return
    data_start = PREFIX_SIZE + n
    rep.fields["tensor_count"] = count
    rep.fields["data_offset"] = data_start
    rep.fields["data_bytes"] = len(src) - data_start
    if not _entries(rep, entries, failure, data_start):
        rep.skip("E_ST_BOUNDS", "not checked: a tensor entry is invalid")
        return
    if not check_layout(rep, rep.tensors, prefix="E_ST", region=(data_start, len(src)), align=None,
                        holes="fail"):
        return
    if data:
        _bools(src, rep)
    else:
        rep.skip("E_ST_BOOL", _NEEDS_DATA)


def _prefix(src, rep):
    """The header length N, or None after a failed rule."""
    size = len(src)
    if size < PREFIX_SIZE:
        return rep.fail("E_ST_PREFIX", f"the file has {size} bytes, fewer than the 8-byte header length; "
                        "it is truncated") or None
    rep.ok("E_ST_PREFIX", "8-byte header length")
    n = src.u64(0)
    rep.fields["header_length"] = n
    if n > HEADER_CAP:
        return rep.fail("E_ST_HEADER_CAP", f"header length {n} exceeds the cap of {HEADER_CAP} bytes "
                        "(the reference reader refuses it too); the file is corrupt") or None
    rep.ok("E_ST_HEADER_CAP", f"{n} <= {HEADER_CAP}")
    if PREFIX_SIZE + n > size:
        return rep.fail("E_ST_HEADER_LENGTH", f"the header [8, {8 + n}) runs past the end of the file "
                        f"({size} bytes); the file is truncated") or None
    rep.ok("E_ST_HEADER_LENGTH", f"header [8, {8 + n})")
    first, spaces = _first_token(src, n)
    if first != b"{":
        return rep.fail("E_ST_HEADER_START", f"the header starts with {first!r}"
                        + (f" after {spaces} whitespace bytes" if spaces else "")
                        + ", not '{'; re-export the file with a safetensors writer") or None
    if spaces:
        rep.warn("E_ST_HEADER_START", f"{spaces} whitespace bytes before the header's '{{': the reference reader "
                 "accepts them, its writer never writes them")
    else:
        rep.ok("E_ST_HEADER_START", "'{'")
    return n


_NO_METADATA = object()
_DTYPE_NAMES = {name: name for name in DTYPE_BITS}   # one str per dtype, not one per tensor


def _json(rep, raw):
    """(metadata or _NO_METADATA, [(name, dtype, shape, begin, end)] up to the
    first broken entry, entry count, (code, detail) of that entry or None);
    None after a failed JSON rule. Entries are checked and kept compact as
    the parser reaches them, so a header of a million tensors never exists
    as a million dicts at once (issue 16)."""
    meta, entries, count, failure = _NO_METADATA, [], 0, None
    try:
        for name, value in jsonsafe.object_items(raw, max_bytes=HEADER_CAP, max_depth=JSON_MAX_DEPTH):
            if name == METADATA_KEY:
                meta = value
                continue
            count += 1
            if failure is None:
                failure = _entry_failure(name, value)
                if failure is None:
                    begin, end = value["data_offsets"]
                    entries.append((name, _DTYPE_NAMES[value["dtype"]], tuple(value["shape"]), begin, end))
    except jsonsafe.JsonError as exc:
        return rep.fail(_JSON_CODES[exc.kind], f"header JSON: {exc}; re-export the file") or None
    for code in ("E_ST_JSON_UTF8", "E_ST_JSON_DEPTH", "E_ST_JSON_SYNTAX", "E_ST_JSON_DUPKEY"):
        rep.ok(code, "header JSON")
    return meta, entries, count, failure


def _padding(rep, raw, n):
    body = raw.rstrip(b" \t\r\n")
    odd = sorted(set(raw[len(body):]) - {0x20})
    if n % PAD_ALIGN:
        rep.warn("E_ST_PAD", f"header length {n} is not a multiple of {PAD_ALIGN}: tensor data starts at "
                 f"byte {8 + n}, not 8-aligned (the reference writer pads with spaces)")
    elif odd:
        rep.warn("E_ST_PAD", f"the padding after the JSON holds {bytes(odd)!r}, not only spaces")
    else:
        rep.ok("E_ST_PAD", f"{len(raw) - len(body)} bytes of space padding; data 8-aligned")


def _metadata(rep, meta):
    if meta is _NO_METADATA:
        rep.ok("E_ST_METADATA", "no __metadata__")
        return True
    if meta is None:
        rep.warn("E_ST_METADATA", "__metadata__ is null, read as no metadata (MLX's save_safetensors writes "
                 "null; the reference reader accepts it; its writer omits the key)")
        return True
    if not isinstance(meta, dict):
        return rep.fail("E_ST_METADATA", f"__metadata__ is a {type(meta).__name__}, not an object of "
                        "strings; the header is corrupt")
    wrong = [k for k, v in meta.items() if not isinstance(v, str)]
    if wrong:
        return rep.fail("E_ST_METADATA", f"__metadata__[{_short(wrong[0])}] is {_short(meta[wrong[0]])}, not a "
                        "string; safetensors readers refuse it")
    rep.fields["metadata"] = meta
    rep.ok("E_ST_METADATA", f"{len(meta)} string entries")
    return True


def _entries(rep, entries, failure, data_start):
    """Appends one Tensor per entry in header order; False when an entry broke a rule."""
    for i, (name, dtype, shape, begin, end) in enumerate(entries):
        rep.tensors.append(Tensor(i, name, dtype, shape, data_start + begin, end - begin, None,
                                  Offsets(begin, end)))
    entries.clear()
    if failure:
        return rep.fail(*failure)
    for code, what in (("E_ST_NAME", "non-empty names"), ("E_ST_ENTRY", "dtype, shape, data_offsets"),
                       ("E_ST_DTYPE", "known dtypes"), ("E_ST_SHAPE", "non-negative integer dims"),
                       ("E_ST_OFFSETS", "[begin, end], begin <= end"),
                       ("E_ST_SIZE", "end - begin = product(shape) * element size")):
        rep.ok(code, f"{len(rep.tensors)} tensors: {what}")
    return True


def _entry_failure(name, entry):
    """(code, detail) of the first rule one header entry breaks, or None."""
    at = f"tensor {_short(name)}"
    if not name:
        return "E_ST_NAME", "a tensor has the empty name; every tensor needs one"
    if not isinstance(entry, dict) or sorted(entry) != sorted(ENTRY_KEYS):
        got = _short(sorted(entry)) if isinstance(entry, dict) else f"a {type(entry).__name__}"
        return "E_ST_ENTRY", f"{at}: entry is {got}, not an object with exactly " \
                            f"{', '.join(ENTRY_KEYS)}"
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        return "E_ST_DTYPE", f"{at}: unknown dtype {_short(dtype)}; known: {', '.join(DTYPE_BITS)}"
    if not isinstance(shape, list) or not all(_is_int(d) and 0 <= d <= U64_MAX for d in shape):
        return "E_ST_SHAPE", f"{at}: shape {_short(shape)} is not a list of integers 0..2^64-1"
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(_is_int(o) and 0 <= o <= U64_MAX for o in offsets)):
        return "E_ST_OFFSETS", f"{at}: data_offsets {_short(offsets)} is not [begin, end] of integers 0..2^64-1"
    if offsets[0] > offsets[1]:
        return "E_ST_OFFSETS", f"{at}: data_offsets {offsets} end before they begin"
    return _size_failure(at, dtype, shape, offsets[1] - offsets[0])


def _element_count(shape):
    """product(shape), stopped once past 2^64 (a crafted header of many huge
    dims would otherwise make a number millions of digits long)."""
    if 0 in shape:
        return 0
    count = 1
    for d in shape:
        count *= d
        if count > U64_MAX:
            break
    return count


def _size_failure(at, dtype, shape, nbytes):
    count = _element_count(shape)
    bits = count * DTYPE_BITS[dtype]
    if count > U64_MAX or bits // 8 > U64_MAX:
        return "E_ST_SIZE", f"{at}: shape {_short(shape)} of {dtype} needs more than 2^64 bytes (64-bit " \
                            "arithmetic overflows; the reference reader refuses it too); the header is corrupt"
    if bits % 8:
        return "E_ST_SIZE", f"{at}: {count} {dtype} elements are {bits} bits, not a whole number of bytes"
    if nbytes != bits // 8:
        return "E_ST_SIZE", f"{at}: data_offsets span {nbytes} bytes but shape {_short(shape)} of {dtype} " \
                            f"needs {bits // 8}; the header is corrupt"
    return None


def _bools(src, rep):
    for t in rep.tensors:
        if t.dtype == "BOOL" and t.size:
            raw = np.frombuffer(src.window(t.offset, t.size), dtype=np.uint8)
            bad = np.flatnonzero(raw > 1)
            if bad.size:
                rep.fail("E_ST_BOOL", f"tensor {_short(t.name)}: byte {t.offset + int(bad[0])} is "
                         f"{int(raw[bad[0]])}, not 0 or 1 ({bad.size} such bytes); the data is corrupt")
                return
    rep.ok("E_ST_BOOL", "every BOOL byte is 0 or 1")


def tensor_array(src, tensor):
    """The tensor in its stored type (BF16 widened to float32), exactly."""
    bits = DTYPE_BITS.get(tensor.dtype)
    count = _element_count(tensor.shape)
    if bits is None or count * bits != 8 * tensor.size or not src.has(tensor.offset, tensor.size):
        raise FormatError("E_ST_BOUNDS", f"{tensor.label}: [{tensor.offset}, {tensor.end}) does not hold "
                          f"{tensor.dtype}{list(tensor.shape)} inside the file; run rvne verify")
    if tensor.dtype in _LOCAL_DTYPES:
        arr = np.frombuffer(src.window(tensor.offset, tensor.size), dtype=_LOCAL_DTYPES[tensor.dtype])
        return arr.reshape(tensor.shape)
    if tensor.dtype not in NUMPY_DTYPES and tensor.dtype != "BF16":
        raise FormatError("E_ST_DTYPE", f"{tensor.label}: dtype {tensor.dtype} has no numpy type; rvne "
                          "checks it but cannot export its values")
    return decode(src, tensor)
