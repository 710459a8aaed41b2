"""Named weights in and out of .npz and .safetensors files (docs/model.md,
"Named tensors for import and export").

.npz holds the contract's (in x out) arrays under their rvne names;
.safetensors and .pt (torch.save, read by rvne.io.torchfile) hold a PyTorch
state dict (nn.Linear: out x in), so tensors are transposed both ways; which
of a state dict's entries are the head's is rvne.io.state_dict's job. All carry
the dims as `rvne.dims` ("D,HQ,HKV,HD,L,C"): shapes alone cannot tell
n_q_heads and n_kv_heads from head_dim, and guessing would silently change
the model. Weights must be finite: a NaN or inf poisons every logit."""

import io
import os

import numpy as np

from ..errors import BlobError, WeightsFileError
from ..model import contract
from ..model.contract import Dims
from . import blob, files, npyfile, state_dict, torchfile
from .atomic import write_atomic
from .names import DIMS_KEY, rvne_name, state_dict_key  # noqa: F401 (rvne_name: for callers)
from .state_dict import Entry

FORMATS = ("npz", "safetensors", "pt", "pth")      # read; written: WRITE_FORMATS
WRITE_FORMATS = ("npz", "safetensors")


def format_of(path, write=False):
    ext = os.path.splitext(str(path))[1].lower().lstrip(".")
    if ext not in (WRITE_FORMATS if write else FORMATS):
        use = ".npz or .safetensors" if write else ".npz, .safetensors or .pt (torch.save)"
        raise WeightsFileError(f"{path}: unknown weights format {ext or '(no extension)'!r}: use {use}")
    return "pt" if ext == "pth" else ext


def _parse_dims(text, source):
    try:
        return Dims.parse(text)
    except BlobError as exc:
        raise WeightsFileError(f"{source}: metadata {DIMS_KEY}: {exc}") from None


def _as_f32(name, a, source):
    a = np.asarray(a)
    if a.dtype.kind != "f":
        raise WeightsFileError(f"{source}: tensor {name} has dtype {a.dtype}, need float16/32/64")
    with np.errstate(over="ignore"):
        out = a.astype(np.float32, copy=False)
    bad = ~np.isfinite(out)
    if bad.any():
        what = "NaN or inf" if not np.isfinite(a).all() else "beyond float32's range"
        raise WeightsFileError(f"{source}: tensor {name} has {int(bad.sum())} value(s) {what} (first at index "
                               f"{tuple(int(i) for i in np.argwhere(bad)[0])}); they would poison every logit: "
                               "fix the weights")
    return out


def _resolve_dims(arrays, file_dims, dims, source, **naming):
    if dims is not None:
        d = Dims.of(dims)
    elif file_dims is not None:
        d = file_dims
    else:
        raise WeightsFileError(
            f"{source}: no {DIMS_KEY} metadata, and shapes cannot tell n_q_heads/n_kv_heads from head_dim: "
            "pass --dims D,HQ,HKV,HD,L,C"
        )
    try:
        d.check()
    except BlobError as exc:
        raise WeightsFileError(f"{source}: dims {d}: {exc}") from None
    contract.check_arrays(arrays, d, source=source, **naming)
    return d


# -- npz -----------------------------------------------------------------------------
NPZ_ENTRY_OVERHEAD = 4096       # a member's .npy header, generously
DIMS_ENTRY_MAX = 4096


def _npz_members(path, source, budget_of):
    """{name: array} of an .npz, decompressing nothing before its declared
    size is known to fit: the zip's sizes bound what zipfile will inflate,
    and `budget_of(dims_text or None)` (bytes) bounds their sum, so a small
    zip bomb is refused before it is inflated (docs/files.md)."""
    import zipfile

    data = files.read(path)
    if data[:4] != b"PK\x03\x04":  # np.load would try unpickling anything else
        raise WeightsFileError(f"{source}: not an .npz file (no zip header); save weights with numpy.savez")
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
        infos = z.infolist()
        dims_text = None
        for info in infos:
            if info.filename == DIMS_KEY + ".npy":
                if info.file_size > DIMS_ENTRY_MAX:
                    raise WeightsFileError(f"{source}: {DIMS_KEY} is {info.file_size} bytes uncompressed; "
                                           "it is a short string \"D,HQ,HKV,HD,L,C\"")
                dims_text = str(npyfile.load(z.read(info))[()])
        budget = budget_of(dims_text)
        declared = sum(i.file_size for i in infos)
        if budget is not None and declared > budget:
            raise WeightsFileError(f"{source}: its arrays inflate to {declared} bytes, more than the {budget} "
                                   "the dims' weights can take even as float64; a zip bomb or the wrong file?")
        raw = {}
        for info in infos:
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            try:
                raw[name] = npyfile.load(z.read(info))
            except npyfile.NpyError as exc:
                raise WeightsFileError(f"{source}: array {name}: {exc}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, ValueError,
            RuntimeError, npyfile.NpyError) as exc:
        if isinstance(exc, WeightsFileError):
            raise
        raise WeightsFileError(f"{source}: not a readable .npz file ({type(exc).__name__}: {exc})") from None
    except OSError as exc:     # zlib.error is not one; a damaged member says so
        raise WeightsFileError(f"{source}: not a readable .npz file ({exc})") from None
    except Exception as exc:    # zlib.error and friends from a damaged member
        raise WeightsFileError(f"{source}: not a readable .npz file ({type(exc).__name__}: {exc})") from None
    return raw


def load_npz(path, dims=None):
    source = str(path)

    def budget(dims_text):
        d = Dims.of(dims) if dims is not None else (_parse_dims(dims_text, source) if dims_text else None)
        if d is None:
            _resolve_dims({}, None, None, source)       # raises: no dims to size the arrays by
        try:
            d.check()
        except BlobError as exc:
            raise WeightsFileError(f"{source}: dims {d}: {exc}") from None
        n = len(contract.tensor_names(d)) + 1
        return contract.n_params(d) * 8 + n * NPZ_ENTRY_OVERHEAD + DIMS_ENTRY_MAX

    raw = _npz_members(path, source, budget)
    file_dims = None
    if DIMS_KEY in raw:
        file_dims = _parse_dims(str(raw.pop(DIMS_KEY)), source)
    arrays = {k: _as_f32(k, v, source) for k, v in raw.items()}
    return arrays, _resolve_dims(arrays, file_dims, dims, source)


def save_npz(path, arrays, dims):
    d = Dims.of(dims)
    contract.check_arrays(arrays, d)
    payload = {k: np.asarray(arrays[k], dtype=np.float32) for k in contract.tensor_names(d)}
    payload[DIMS_KEY] = np.array(str(d))
    buf = io.BytesIO()  # np.savez to a name would append .npz to other names
    np.savez(buf, **payload)
    write_atomic(path, buf.getvalue())


# -- safetensors -------------------------------------------------------------------------
def _safetensors():
    try:
        from safetensors import safe_open
        from safetensors.numpy import save
    except ImportError:
        raise WeightsFileError("reading .safetensors needs the safetensors package: pip install safetensors") from None
    return safe_open, save


def _state_dict_arrays(source, entries, fetch, file_dims, dims, prefix):
    """(arrays, dims, notes) from a state dict's entries (rvne.io.state_dict
    picks the head's); fetch(key) -> numpy array."""
    known = Dims.of(dims) if dims is not None else file_dims
    sel = state_dict.select(entries, source, prefix=prefix, dims=known)
    arrays = {}
    for name, key in sel.keys.items():
        a = _as_f32(key, fetch(key), source)
        if a.ndim != 2:
            raise WeightsFileError(f"{source}: tensor {key} has shape {a.shape}, need a matrix (out x in)")
        arrays[name] = np.ascontiguousarray(a.T)
    d = _resolve_dims(arrays, file_dims, dims, source, key=state_dict.source_key(sel), transposed=True)
    notes = []
    if sel.prefix:
        notes.append(f"{source}: the head's tensors are under {sel.prefix!r}: prefix stripped")
    if sel.ignored:
        notes.append(f"{source}: ignored {len(sel.ignored)} entries outside the head: {state_dict._listed(sel.ignored)}")
    return arrays, d, notes


def load_safetensors(path, dims=None, prefix=None):
    source = str(path)
    safe_open, _ = _safetensors()
    # safetensors opens the path itself, blocking on a FIFO: it must be a file.
    fd, _ = files.open_input(path, pipes=False)
    os.close(fd)
    try:
        with safe_open(str(path), framework="np") as f:
            meta = f.metadata() or {}
            raw = {k: f.get_tensor(k) for k in f.keys()}
    except (FileNotFoundError, PermissionError):
        raise
    except Exception as exc:  # safetensors raises its own SafetensorError / TypeError for bf16
        raise WeightsFileError(f"{source}: not a readable .safetensors file ({type(exc).__name__}: {exc})") from None
    entries = [Entry(k, tuple(v.shape)) for k, v in raw.items()]
    file_dims = _parse_dims(meta[DIMS_KEY], source) if DIMS_KEY in meta else None
    return _state_dict_arrays(source, entries, raw.__getitem__, file_dims, dims, prefix)


def load_pt(path, dims=None, prefix=None):
    """A torch.save'd state dict (rvne.io.torchfile: no code is unpickled)."""
    source = str(path)
    raw, meta = torchfile.load(path)
    entries = [Entry(k, None if t is None else tuple(t.shape)) for k, t in raw.items()]
    file_dims = _parse_dims(meta[DIMS_KEY], source) if DIMS_KEY in meta else None
    return _state_dict_arrays(source, entries, lambda k: torchfile.to_numpy(raw[k], k, source),
                              file_dims, dims, prefix)


def save_safetensors(path, arrays, dims):
    _, save = _safetensors()
    d = Dims.of(dims)
    contract.check_arrays(arrays, d)
    tensors = {
        state_dict_key(k): np.ascontiguousarray(np.asarray(arrays[k], dtype=np.float32).T)
        for k in contract.tensor_names(d)
    }
    write_atomic(path, save(tensors, metadata={DIMS_KEY: str(d)}))


# -- either ---------------------------------------------------------------------------
def load_named(path, dims=None, prefix=None):
    """(arrays, dims, notes) from a .npz, .safetensors or .pt file; `dims`
    overrides the file's metadata; `prefix` takes a state dict's tensors
    under it and ignores the rest (rvne.io.state_dict); `notes` says what was
    stripped or ignored. Raises WeightsFileError naming the tensor at fault."""
    fmt = format_of(path)
    if fmt == "npz":
        if prefix is not None:
            raise WeightsFileError(f"{path}: --prefix picks from a state dict (.safetensors, .pt); an .npz holds "
                                   "rvne's names: use --map to pick other names")
        return (*load_npz(path, dims), [])
    return (load_safetensors if fmt == "safetensors" else load_pt)(path, dims, prefix)


def load(path, dims=None, prefix=None):
    """(arrays, dims): load_named without the notes."""
    return load_named(path, dims, prefix)[:2]


def save(path, arrays, dims):
    fmt = format_of(path, write=True)
    (save_npz if fmt == "npz" else save_safetensors)(path, arrays, dims)


def load_float_model(path, dims=None):
    """(arrays, dims, what) of a float model as `rvne pack` or `rvne export`
    reads it: a loadable FP32/FP16 blob, .npz, .safetensors or .pt."""
    try:
        format_of(path)
    except WeightsFileError:
        parsed = blob.read_file(path, contract=True)
        if parsed.header.int8:
            raise WeightsFileError(f"{path}: already an int8 blob; quantize the float model it came from") from None
        return parsed.tensors(), parsed.header.dims, f"{parsed.header.dtype} blob"
    arrays, d, _ = load_named(path, dims)
    return arrays, d, f"{format_of(path)} weights"
