"""What every weight-format reader works with and returns (docs/formats.md).

A reader gets a `Source` (the file's bytes, normally an mmap, plus a count of
the bytes it looked at) and returns a `Report`: header fields, one `Tensor`
per tensor or blob, and one `Check` per rule it applied. Readers never raise
on bad content: a broken rule is a failed Check carrying the rule's named
error, so `inspect` can show everything that was readable and `verify` can
refuse with the first failure. Only the OS (a vanished file) raises.
"""

import struct
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ...errors import RvneError
from ..crc import byte_view

U64_MAX = (1 << 64) - 1

OK, FAIL, WARN, SKIPPED = "ok", "fail", "warn", "skipped"


class FormatError(RvneError):
    """A weight file broke one rule of its format; `code` names the rule."""

    code = "E_FORMAT"

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class UnknownFormatError(RvneError):
    code = "E_UNKNOWN_FORMAT"


class Source:
    """Read-only bytes of one file. Every accessor counts what it hands
    out, so `bytes_read` is what the reader looked at (the benchmark's
    evidence that inspection does not scale with the data)."""

    def __init__(self, buf, name="<buffer>"):
        self._buf = buf  # keeps an mmap alive as long as the views
        self.view = byte_view(buf)
        self.name = str(name)
        self.bytes_read = 0

    def __len__(self):
        return len(self.view)

    def has(self, offset, size):
        """[offset, offset+size) lies inside the file (no wrap: Python ints)."""
        return 0 <= offset and 0 <= size and offset + size <= len(self.view)

    def bytes(self, offset, size):
        """Up to `size` bytes at `offset` (fewer at the end of the file)."""
        out = bytes(self.view[offset:offset + size])
        self.bytes_read += len(out)
        return out

    def window(self, offset, size):
        """A zero-copy view of [offset, offset+size), clipped to the file."""
        out = self.view[offset:offset + size]
        self.bytes_read += len(out)
        return out

    def u16(self, offset):
        return struct.unpack_from("<H", self.bytes(offset, 2))[0]

    def u32(self, offset):
        return struct.unpack_from("<I", self.bytes(offset, 4))[0]

    def u64(self, offset):
        return struct.unpack_from("<Q", self.bytes(offset, 8))[0]


# Canonical dtype names (safetensors' spelling) -> numpy little-endian dtype.
# BF16 has no numpy dtype; `decode` widens it to float32 exactly.
NUMPY_DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2",
    "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
    "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1",
    "BOOL": "?",
}
ITEMSIZE = {name: np.dtype(dt).itemsize for name, dt in NUMPY_DTYPES.items()}
ITEMSIZE["BF16"] = 2
FLOAT_DTYPES = ("F64", "F32", "F16", "BF16")


# A file may index a million tensors (issue 16): no __dict__ per Tensor where Python allows.
_SLOTS = {"slots": True} if sys.version_info >= (3, 10) else {}


class Offsets(Mapping):
    """extra = {"data_offsets": [begin, end]} for formats that store a data
    section's relative offsets, at a fifth of a dict's memory."""

    __slots__ = ("begin", "end")

    def __init__(self, begin, end):
        self.begin, self.end = begin, end

    def __getitem__(self, key):
        if key != "data_offsets":
            raise KeyError(key)
        return [self.begin, self.end]

    def __iter__(self):
        yield "data_offsets"

    def __len__(self):
        return 1


@dataclass(**_SLOTS)
class Tensor:
    """One tensor (or nameless blob) as its file's index describes it."""

    index: int                 # position in the file's index
    name: object               # str, or None where the format has no names
    dtype: str                 # canonical name above, or the format's own (e.g. "UINT4")
    shape: object              # tuple of ints, or None where the format stores only a size
    offset: int                # absolute file offset of the first data byte
    size: int                  # bytes
    align: object = None       # alignment the format requires of `offset`, None if none
    extra: dict = field(default_factory=dict)  # format-specific fields, shown as is

    @property
    def end(self):
        return self.offset + self.size

    @property
    def label(self):
        return self.name if self.name is not None else f"#{self.index}"

    @property
    def key(self):
        """Array name in `rvne export`: the name, else the reader's
        extra["key"] (CNN v2: "layer_1"), else "blob_<index>"."""
        if self.name is not None:
            return self.name
        return self.extra.get("key", f"blob_{self.index}")

    def as_dict(self):
        d = {"index": self.index, "name": self.name, "dtype": self.dtype,
             "shape": list(self.shape) if self.shape is not None else None,
             "offset": self.offset, "size": self.size, "align": self.align}
        d.update(self.extra)
        return d


@dataclass
class Check:
    code: str     # the rule's named error (docs/formats.md)
    status: str   # OK, FAIL, WARN or SKIPPED
    detail: str   # what was found; for FAIL, what is wrong and what to do

    def as_dict(self):
        return {"code": self.code, "status": self.status, "detail": self.detail}


@dataclass
class Report:
    format: str                  # short id: "lwt", "burnpack", "milblob", "cnn2", "safetensors"
    title: str                   # human name
    size: int                    # file size in bytes
    version: object = None
    fields: dict = field(default_factory=dict)     # header fields, in file order
    tensors: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    readings: list = field(default_factory=list)   # choices where the seed document is silent
    holes: list = field(default_factory=list)      # (start, end) unexplained byte ranges

    def ok(self, code, detail):
        self.checks.append(Check(code, OK, detail))

    def fail(self, code, detail):
        self.checks.append(Check(code, FAIL, detail))
        return False

    def warn(self, code, detail):
        self.checks.append(Check(code, WARN, detail))

    def skip(self, code, detail):
        self.checks.append(Check(code, SKIPPED, detail))

    @property
    def error(self):
        """The first failed check, or None."""
        return next((c for c in self.checks if c.status == FAIL), None)

    @property
    def valid(self):
        return self.error is None

    def raise_first(self, path=None):
        """Raise FormatError for the first failed check, if any."""
        c = self.error
        if c is not None:
            where = f"{path}: " if path else ""
            raise FormatError(c.code, f"{where}{c.code}: {c.detail}")

    def as_dict(self, tensors=True):
        """JSON-ready; tensors=False leaves out "tensors" (the CLI streams them)."""
        err = self.error
        out = {
            "format": self.format, "title": self.title, "size": self.size,
            "version": self.version, "fields": self.fields,
            "tensors": [t.as_dict() for t in self.tensors] if tensors else None,
            "checks": [c.as_dict() for c in self.checks],
            "readings": self.readings,
            "holes": [list(h) for h in self.holes],
            "valid": err is None,
            "error": err.as_dict() if err else None,
        }
        if not tensors:
            del out["tensors"]
        return out


def align_up(value, align):
    return -(-value // align) * align


def check_layout(report, tensors, *, prefix, region, align=None, holes="warn", owned=(), owned_label="{}"):
    """The rules every indexed format shares, in the order verify reports
    them: each tensor inside `region` = (start, end) of the file with
    64-bit arithmetic that cannot wrap (`{prefix}_BOUNDS`), at its stated
    alignment (`{prefix}_ALIGN`, skipped when `align` is None), no two
    tensors overlapping (`{prefix}_OVERLAP`); then gaps that alignment does
    not explain are recorded in report.holes and reported as
    `{prefix}_HOLE` (a warning, or a failure with holes="fail").
    `owned` = [(start, end)]: index structures inside the region (MILBlob's
    per-blob metadata) that tensors must not overlap and that are not
    holes; `owned_label` formats the i-th one's name, only when needed.
    Returns True when no rule failed."""
    start, end = region
    good = True
    for t in tensors:
        stop = t.offset + t.size
        if t.offset < 0 or t.size < 0:
            good = report.fail(f"{prefix}_BOUNDS", f"{t.label}: negative offset or size")
            break
        if stop > U64_MAX:
            good = report.fail(f"{prefix}_BOUNDS",
                               f"{t.label}: offset {t.offset} + size {t.size} wraps around 2^64 "
                               "(a reader using 64-bit sums would read elsewhere); the index is corrupt")
            break
        if t.offset < start or stop > end:
            good = report.fail(f"{prefix}_BOUNDS",
                               f"{t.label}: bytes [{t.offset}, {stop}) are outside the data region "
                               f"[{start}, {end}); the file is truncated or its index is corrupt")
            break
    if good:
        report.ok(f"{prefix}_BOUNDS", f"{len(tensors)} tensors inside [{start}, {end})")
    if align is None:
        report.skip(f"{prefix}_ALIGN", "the format states no alignment")
    elif good:
        bad = [t for t in tensors if t.offset % align]
        if bad:
            t = bad[0]
            good = report.fail(f"{prefix}_ALIGN",
                               f"{t.label}: offset {t.offset} is not a multiple of {align} "
                               f"({len(bad)} tensors misaligned); re-export with the format's writer")
        else:
            report.ok(f"{prefix}_ALIGN", f"every offset is a multiple of {align}")
    if not good:
        report.skip(f"{prefix}_OVERLAP", "not checked: an earlier layout rule failed")
        return False
    # After the bounds rule every span lies in the file, so int64 holds it;
    # numpy sorts and scans a million spans without a tuple per span.
    sized = [k for k, t in enumerate(tensors) if t.size]
    kept = [i for i, (a, b) in enumerate(owned) if b > a]
    starts = np.array([tensors[k].offset for k in sized] + [owned[i][0] for i in kept], dtype=np.int64)
    ends = np.array([tensors[k].end for k in sized] + [owned[i][1] for i in kept], dtype=np.int64)
    order = np.lexsort((ends, starts))
    starts, ends = starts[order], ends[order]
    clash = np.flatnonzero(starts[1:] < ends[:-1])
    if clash.size:
        def label(j):
            k = int(order[j])
            return tensors[sized[k]].label if k < len(sized) else owned_label.format(kept[k - len(sized)])

        i = int(clash[0])
        report.fail(f"{prefix}_OVERLAP",
                    f"{label(i)} [{starts[i]}, {ends[i]}) and {label(i + 1)} [{starts[i + 1]}, {ends[i + 1]}) "
                    "overlap; the index is corrupt")
        return False
    report.ok(f"{prefix}_OVERLAP", "no two tensors overlap")
    step = align or 1
    # cursor before span i: the furthest end so far (the region's start at first)
    cursor = np.maximum(np.concatenate(([start], np.maximum.accumulate(ends)[:-1])), start) \
        if starts.size else np.zeros(0, np.int64)
    gaps = np.flatnonzero(starts > -(-cursor // step) * step)
    report.holes.extend((int(cursor[i]), int(starts[i])) for i in gaps)
    last = max(start, int(ends.max())) if ends.size else start
    if end > align_up(last, step):
        report.holes.append((last, end))
    if report.holes:
        n = sum(b - a for a, b in report.holes)
        msg = (f"{len(report.holes)} unused byte ranges ({n} bytes) that alignment does not explain, "
               f"first [{report.holes[0][0]}, {report.holes[0][1]})")
        if holes == "fail":
            return report.fail(f"{prefix}_HOLE", msg + "; the file has bytes no tensor owns")
        report.warn(f"{prefix}_HOLE", msg)
    else:
        report.ok(f"{prefix}_HOLE", "no unexplained gaps")
    return True


def decode(src, t):
    """The tensor's values as a numpy array in its stored type, decoded
    exactly (BF16 widened to float32); shape as stored, or 1-D when the
    format stores only a size. Raises FormatError for a type it cannot
    decode."""
    if t.dtype == "BF16":
        raw = np.frombuffer(src.window(t.offset, t.size), dtype="<u2")
        arr = (raw.astype(np.uint32) << 16).view(np.float32)
    elif t.dtype in NUMPY_DTYPES:
        arr = np.frombuffer(src.window(t.offset, t.size), dtype=NUMPY_DTYPES[t.dtype])
    else:
        raise FormatError("E_DTYPE", f"{t.label}: dtype {t.dtype} cannot be decoded to numbers by rvne")
    return arr.reshape(t.shape) if t.shape is not None else arr


def stats(arr):
    """Summary numbers of one tensor (inspect --stats)."""
    a = np.asarray(arr)
    out = {"count": int(a.size)}
    if a.size == 0 or a.dtype.kind not in "fiub":
        return out
    f = a.astype(np.float64, copy=False)
    finite = np.isfinite(f)
    out["nan"] = int(np.isnan(f).sum())
    out["inf"] = int(np.isinf(f).sum())
    if finite.any():
        v = f[finite]
        out.update(min=float(v.min()), max=float(v.max()), mean=float(v.mean()), std=float(v.std()))
    return out
