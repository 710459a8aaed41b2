"""`rvne pack FILE OUT --map MAP`: the temporal head's tensors picked out of
any weights file with names (or, for MILBlob, blob indexes and offsets),
checked against the dims, converted to the blob's dtype with every
conversion reported (docs/formats.md, "Import map")."""

import difflib
import io
from dataclasses import dataclass

import numpy as np

from ...errors import BlobError, RvneError
from ...model import contract
from ...model.contract import Dims
from ...numbers import c_integer, decimal
from .. import blob, files, npyfile, weights as weights_io
from . import jsonsafe, open_path
from .base import UnknownFormatError

MAP_MAX_BYTES = 1 << 20
_FLOATS = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16"}
_NUMPY_NAMES = {"float64": "F64", "float32": "F32", "float16": "F16", "int64": "I64", "int32": "I32",
                "int16": "I16", "int8": "I8", "uint64": "U64", "uint32": "U32", "uint16": "U16",
                "uint8": "U8", "bool": "BOOL"}


class MapError(RvneError):
    code = "E_MAP"


@dataclass
class Entry:
    index: int
    name: object        # None for nameless blobs
    dtype: str
    shape: object       # None when the format stores only a size
    offsets: tuple      # offsets a map may name with "@N"
    fetch: object       # () -> numpy array, decoded exactly
    inflated: object = None   # bytes a compressed entry declares it inflates to (.npz), else None

    @property
    def label(self):
        return self.name if self.name is not None else f"#{self.index}"


@dataclass
class Mapping:
    dims: object        # Dims or None
    dtype: object       # "fp32", "fp16" or None
    targets: dict       # rvne name -> (source ref: str or int, transpose: bool)


# -- the map file ----------------------------------------------------------------
def load_map(path):
    data = bytes(files.load(path)[:MAP_MAX_BYTES + 1])
    try:
        doc = jsonsafe.loads(data, max_bytes=MAP_MAX_BYTES, max_depth=8)
    except jsonsafe.JsonError as exc:
        raise MapError(f"{path}: not a valid map file: {exc}") from None
    if not isinstance(doc, dict):
        raise MapError(f"{path}: a map file is a JSON object with \"tensors\" (docs/formats.md)")
    unknown = sorted(set(doc) - {"tensors", "dims", "dtype"})
    if unknown:
        raise MapError(f"{path}: unknown key {unknown[0]!r}; a map has \"tensors\", \"dims\", \"dtype\"")
    dims = None
    if "dims" in doc:
        if not isinstance(doc["dims"], str):
            raise MapError(f"{path}: \"dims\" must be a string \"D,HQ,HKV,HD,L,C\"")
        try:
            dims = Dims.parse(doc["dims"]).check()
        except BlobError as exc:
            raise MapError(f"{path}: \"dims\": {exc}") from None
    dtype = doc.get("dtype")
    if dtype not in (None, "fp32", "fp16"):
        raise MapError(f"{path}: \"dtype\" is {dtype!r}; use \"fp32\" or \"fp16\"")
    tensors = doc.get("tensors")
    if not isinstance(tensors, dict) or not tensors:
        raise MapError(f"{path}: \"tensors\" must be a non-empty object {{rvne name: source}}")
    targets = {}
    for name, spec in tensors.items():
        targets[name] = _target(path, name, spec)
    return Mapping(dims, dtype, targets)


def _target(path, name, spec):
    transpose = False
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - {"source", "transpose"})
        if unknown:
            raise MapError(f"{path}: {name}: unknown key {unknown[0]!r}; use \"source\" and \"transpose\"")
        if "source" not in spec:
            raise MapError(f"{path}: {name}: no \"source\"")
        transpose = spec.get("transpose", False)
        if not isinstance(transpose, bool):
            raise MapError(f"{path}: {name}: \"transpose\" must be true or false")
        spec = spec["source"]
    if isinstance(spec, bool) or not isinstance(spec, (str, int)) or spec == "":
        raise MapError(f"{path}: {name}: the source must be a tensor name, \"#INDEX\", \"@OFFSET\" or an index")
    if isinstance(spec, int) and spec < 0:
        raise MapError(f"{path}: {name}: index {spec} is negative")
    return spec, transpose


# -- the source file --------------------------------------------------------------
def open_source(path):
    """(entries, format title, file dims or None) of a weights file; the file
    must pass its format's verification first: importing from a file that
    breaks its own rules would carry the damage into the blob."""
    from .. import torchfile      # imports no torch until a .pt is read

    buf = blob.map_file(path)       # a FIFO refused, a pipe read once (docs/files.md)
    head = bytes(buf[:4])
    if head == b"PK\x03\x04" and not torchfile.is_archive(buf):
        return _npz_source(path)
    if head == b"PK\x03\x04":
        return _pt_source(path)
    try:
        src, mod = open_path(path, buf)
    except UnknownFormatError:
        if head[:1] == b"\x80":        # a bare pickle: torchfile says what to do with it
            _pt_source(path)
        raise
    if mod == "rvne":
        raise MapError(f"{path}: already an RVNE blob; it needs no import (rvne export turns it into .npz)")
    report = mod.read(src, data=True)
    report.raise_first(path)
    entries = [Entry(t.index, t.name, t.dtype, t.shape,
                     tuple(o for o in (t.offset, t.extra.get("metadata_offset")) if o is not None),
                     (lambda t=t: mod.tensor_array(src, t))) for t in report.tensors]
    meta = report.fields.get("metadata")
    dims = meta.get("rvne.dims") if isinstance(meta, dict) else None
    return entries, report.title, dims


def _npz_source(path):
    try:
        z = np.load(io.BytesIO(bytes(blob.map_file(path))), allow_pickle=False)   # a pipe is read once
        files = list(z.files)
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise
    except Exception as exc:  # zipfile.BadZipFile, ValueError and friends
        raise MapError(f"{path}: not a readable .npz file ({type(exc).__name__}: {exc})") from None
    dims = None
    entries = []
    for i, key in enumerate(files):
        if key == "rvne.dims":
            dims = str(z[key])
            continue
        size = z.zip.getinfo(f"{key}.npy").file_size if f"{key}.npy" in z.zip.namelist() else None
        entries.append(Entry(i, key, "?", None, (), (lambda key=key: _npz_array(path, z, key)), size))
    return entries, ".npz", dims


def _pt_source(path):
    """A torch.save'd state dict's tensors (rvne.io.torchfile: no code runs);
    values that are not tensors are not sources."""
    from .. import torchfile

    raw, meta = torchfile.load(path)
    entries = []
    for i, (key, t) in enumerate((k, t) for k, t in raw.items() if t is not None):
        entries.append(Entry(i, key, torchfile.dtype_name(t), tuple(t.shape), (),
                             (lambda key=key, t=t: torchfile.to_numpy(t, key, str(path)))))
    return entries, "torch.save state dict", meta.get(weights_io.DIMS_KEY)


def _npz_array(path, z, key):
    try:
        # npyfile, not z[key]: numpy allocates what a member's header claims.
        return npyfile.load(z.zip.read(f"{key}.npy"))
    except Exception as exc:
        raise MapError(f"{path}: array {key} is not readable ({type(exc).__name__}: {exc})") from None


def _resolve(path, entries, ref):
    by_name = {e.name: e for e in entries if e.name is not None}
    if isinstance(ref, str) and ref in by_name:
        return by_name[ref]
    if isinstance(ref, int) or (isinstance(ref, str) and ref[:1] == "#" and decimal(ref[1:]) is not None):
        index = ref if isinstance(ref, int) else decimal(ref[1:])
        for e in entries:
            if e.index == index:
                return e
        raise MapError(f"{path}: no tensor with index {index} (the file has {len(entries)}; rvne inspect lists them)")
    if isinstance(ref, str) and ref[:1] == "@":
        offset = c_integer(ref[1:])
        if offset is None:
            raise MapError(f"{path}: {ref!r} is not an offset; write \"@448\" or \"@0x1c0\"")
        for e in entries:
            if offset in e.offsets:
                return e
        raise MapError(f"{path}: no blob at offset {offset} (rvne inspect lists metadata and data offsets)")
    close = difflib.get_close_matches(ref, list(by_name), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else "; rvne inspect lists the names"
    raise MapError(f"{path}: no tensor named {ref!r}{hint}")


# -- conversion -------------------------------------------------------------------
def _shaped(path, target, want, entry, arr, transpose):
    """`arr` as the contract's (in x out) matrix `want`."""
    stored = want[::-1] if transpose else want
    if entry.shape is None or arr.ndim == 1:
        if arr.size != want[0] * want[1]:
            raise MapError(f"{path}: {entry.label} holds {arr.size} values; {target} needs "
                           f"{want[0]}x{want[1]} = {want[0] * want[1]}")
        arr = arr.reshape(stored)
    elif arr.shape != stored:
        alt = "" if arr.shape != want[::-1] else " (it is stored out x in: add \"transpose\": true)"
        if transpose and arr.shape == want:
            alt = " (it is already in x out: drop \"transpose\")"
        raise MapError(f"{path}: {entry.label} has shape {arr.shape}; {target} needs {stored}"
                       f"{' before transposing' if transpose else ' (in x out)'}{alt}")
    return arr.T if transpose else arr


def _convert(path, target, entry, arr, fp16):
    """(float32 array holding exactly the blob's values, report words)."""
    dtype = entry.dtype if entry.dtype in _FLOATS else _NUMPY_NAMES.get(arr.dtype.name, str(arr.dtype))
    if arr.dtype.kind != "f":
        raise MapError(f"{path}: {entry.label} ({target}) is {dtype}, not floating point; dequantize it before "
                       "importing (rvne does not guess scales)")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise MapError(f"{path}: {entry.label} ({target}) has {int(bad.sum())} NaN/inf values; fix the source "
                       "weights (they would poison every logit)")
    src64 = arr.astype(np.float64)
    with np.errstate(over="ignore"):
        out = arr.astype(np.float16 if fp16 else np.float32)
    if not np.isfinite(out).all():
        worst = float(np.abs(src64[~np.isfinite(out)]).max())
        raise MapError(f"{path}: {entry.label} ({target}) has values up to {worst:g}, beyond "
                       f"{'FP16' if fp16 else 'FP32'} range; {'pack as FP32' if fp16 else 'rescale them'}")
    err = float(np.abs(out.astype(np.float64) - src64).max()) if arr.size else 0.0
    to = "FP16" if fp16 else "FP32"
    words = f"{dtype} -> {to} exact" if err == 0 else f"{dtype} -> {to} rounded (max abs change {err:.3g})"
    return out.astype(np.float32), words


def pack(source_path, map_path, *, dims=None, fp16=None):
    """(blob bytes, report lines). `dims`/`fp16` override the map's."""
    mapping = load_map(map_path)
    entries, title, file_dims = open_source(source_path)
    d = dims or mapping.dims
    if d is None and file_dims is not None:
        try:
            d = Dims.parse(file_dims).check()
        except BlobError as exc:
            raise MapError(f"{source_path}: metadata rvne.dims: {exc}") from None
    if d is None:
        raise MapError(f"{map_path}: no dims: add \"dims\": \"D,HQ,HKV,HD,L,C\" to the map or pass --dims")
    d = Dims.of(d)
    fp16 = (mapping.dtype == "fp16") if fp16 is None else fp16
    contract.check_writable(d, fp16)
    specs = contract.tensor_specs(d)
    wanted = {s.name for s in specs}
    extra = sorted(set(mapping.targets) - wanted)
    if extra:
        raise MapError(f"{map_path}: {extra[0]!r} is not a tensor of dims {d} (docs/model.md names "
                       f"layers.0..{d.n_layers - 1}.wq|wk|wv|wo and wc)")
    missing = [s.name for s in specs if s.name not in mapping.targets]
    if missing:
        raise MapError(f"{map_path}: no entry for {missing[0]} ({len(missing)} of the {len(specs)} tensors of "
                       f"dims {d} are missing)")
    arrays, lines, used = {}, [f"{source_path}: {title}, {len(entries)} tensors"], set()
    for s in specs:
        ref, transpose = mapping.targets[s.name]
        entry = _resolve(source_path, entries, ref)
        used.add(entry.index)
        bound = 8 * int(np.prod(s.shape)) + weights_io.NPZ_ENTRY_OVERHEAD      # float64 and its header
        if entry.inflated is not None and entry.inflated > bound:
            raise MapError(f"{source_path}: {entry.label} inflates to {entry.inflated} bytes, more than the {bound} "
                           f"{s.name} {s.shape} can take even as float64; a zip bomb or the wrong tensor? "
                           "(docs/files.md)")
        raw = np.asarray(entry.fetch())
        shaped = _shaped(source_path, s.name, s.shape, entry, raw, transpose)
        arrays[s.name], words = _convert(source_path, s.name, entry, shaped, fp16)
        shape = "x".join(map(str, raw.shape))
        lines.append(f"  {s.name} <- {entry.label} [{shape}]{' transposed' if transpose else ''}: {words}")
    if len(used) < len(entries):
        lines.append(f"  {len(entries) - len(used)} source tensors not used")
    return blob.from_arrays(arrays, d, fp16), lines

