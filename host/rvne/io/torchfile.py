"""Reading a torch.save'd state dict (`rvne pack model.pt`) without running
any of its code: torch.load(..., weights_only=True), which unpickles
tensors, containers and plain values only and refuses every other global
(docs/model.md, "Named tensors for import and export").

Before torch sees the file it must be torch.save's zip archive (one
`<archive>/data.pkl`) whose records are all stored uncompressed, as
torch.save writes them: then nothing it holds can grow beyond the file's
own size in memory. The pre-1.6 format (a bare pickle) has no such frame
and is refused with the re-save that fixes it.

    entries, meta = load(path)       # {dotted key: torch.Tensor or None}, {"rvne.dims": "..."}

PyTorch is imported here, on first use: the rest of rvne never needs it."""

import io
import os
import pickle
import re
import struct
import warnings
import zipfile

import numpy as np

from ..errors import WeightsFileError
from . import files
from .names import DIMS_KEY

MAX_DEPTH = 16              # nested dicts (a checkpoint holding a state dict holds a few)
_GLOBAL = re.compile(r"GLOBAL ([\w.]+)")
_RESAVE = "save model.state_dict() with torch.save (tensors only)"


def _torch(source):
    try:
        import torch
    except ImportError:
        raise WeightsFileError(f"{source}: reading a .pt file needs PyTorch: pip install 'rvne[torch]' "
                               "(or save the state dict with safetensors.torch.save_file)") from None
    return torch


# What zipfile raises on a damaged archive: its own errors, and NotImplementedError
# for an unknown version, struct.error and UnicodeDecodeError (a ValueError) on
# garbage fields, EOFError/OSError on a short one (found by tools/fuzz_host.py pt).
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, struct.error, ValueError,
               EOFError, OSError)


def _members(buf):
    """The zip's member infos; `buf` is bytes or an mmap (read in place)."""
    with zipfile.ZipFile(io.BytesIO(buf) if isinstance(buf, bytes) else buf) as z:
        return z.infolist()


def _is_data_pkl(name):
    return name.endswith("/data.pkl") and name.count("/") == 1


def is_archive(buf):
    """A zip that is torch.save's (one `<archive>/data.pkl`), not numpy's."""
    if bytes(buf[:4]) != b"PK\x03\x04":
        return False
    try:
        return any(_is_data_pkl(i.filename) for i in _members(buf))
    except _ZIP_ERRORS:
        return False


def _check_archive(buf, source):
    """torch.save's zip, every record stored: refuse anything else before
    torch reads it."""
    head = bytes(buf[:4])
    if head[:1] == b"\x80":
        raise WeightsFileError(f"{source}: a bare pickle (torch.save's pre-1.6 format, or pickle.dump), not a "
                               "zip archive; re-save it with a current torch.save (the default format)")
    if head != b"PK\x03\x04":
        raise WeightsFileError(f"{source}: not a torch.save file (no zip header); {_RESAVE}")
    try:
        infos = _members(buf)
    except _ZIP_ERRORS as exc:
        raise WeightsFileError(f"{source}: not a readable torch.save file ({exc}): truncated or damaged? "
                               "save it again") from None
    pickles = [i.filename for i in infos if _is_data_pkl(i.filename)]
    if len(pickles) != 1:
        if any(i.filename.endswith(".npy") for i in infos):
            raise WeightsFileError(f"{source}: an .npz archive (numpy.savez), not torch.save's: name it .npz")
        raise WeightsFileError(f"{source}: a zip archive but not torch.save's ({len(pickles)} data.pkl records, "
                               f"need 1); {_RESAVE}")
    packed = [i.filename for i in infos if i.compress_type != zipfile.ZIP_STORED]
    if packed:
        raise WeightsFileError(f"{source}: record {packed[0]} is compressed; torch.save stores every record as "
                               "it is, so this file was rewritten by another tool: save it again with torch.save")


def _first_line(exc):
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def load(path):
    """({dotted key: tensor, or None for a value that is not a tensor},
    metadata) of a torch.save'd state dict. Nested dicts (a checkpoint)
    are flattened with dots; a top-level string "rvne.dims" is metadata."""
    source = os.fspath(path)
    torch = _torch(source)
    buf = files.load(path)          # refuses FIFOs' and devices' tricks; a pipe is read once
    _check_archive(buf, source)
    regular = not isinstance(buf, bytes)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # torch's deprecation chatter is not the user's problem
            obj = torch.load(source if regular else io.BytesIO(buf), map_location="cpu",
                             weights_only=True, mmap=regular)
    except pickle.UnpicklingError as exc:
        what = _GLOBAL.search(str(exc))
        what = f"it pickles {what.group(1)}" if what else _first_line(exc)
        raise WeightsFileError(f"{source}: needs more than tensors to load ({what}); rvne never unpickles code "
                               f"from a weights file: {_RESAVE}") from None
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise
    except Exception as exc:   # RuntimeError from the zip reader, ValueError, EOFError...
        raise WeightsFileError(f"{source}: not a readable torch.save file ({_first_line(exc)}); "
                               "save it again") from None
    if not isinstance(obj, dict):
        raise WeightsFileError(f"{source}: holds a {type(obj).__name__}, not a state dict (a dict of "
                               f"tensors); {_RESAVE}")
    meta = {}
    if isinstance(obj.get(DIMS_KEY), str):
        meta[DIMS_KEY] = obj.pop(DIMS_KEY)
    entries = {}
    _flatten(obj, "", 0, entries, source, torch)
    return entries, meta


def _flatten(obj, prefix, depth, out, source, torch):
    if depth > MAX_DEPTH:
        raise WeightsFileError(f"{source}: dicts nested more than {MAX_DEPTH} deep at {prefix[:-1]!r}; "
                               "a state dict is flat")
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            _flatten(v, key + ".", depth + 1, out, source, torch)
        else:
            out[key] = v if isinstance(v, torch.Tensor) else None


DTYPE_NAMES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16"}


def dtype_name(t):
    name = str(t.dtype).replace("torch.", "")
    return DTYPE_NAMES.get(name, name)


def to_numpy(t, key, source):
    """A tensor's values as a numpy float array, exactly (bfloat16 widened to
    float32; float16/32/64 kept); refuses what holds no plain float values."""
    torch = _torch(source)
    if not isinstance(t, torch.Tensor):
        raise WeightsFileError(f"{source}: {key} is not a tensor; {_RESAVE}")
    if t.layout != torch.strided:
        raise WeightsFileError(f"{source}: tensor {key} is {str(t.layout).replace('torch.', '')}; save dense "
                               "tensors (tensor.to_dense())")
    if t.is_quantized:
        raise WeightsFileError(f"{source}: tensor {key} is quantized ({t.dtype}); rvne does not guess scales: "
                               "dequantize it first (tensor.dequantize())")
    if t.device.type == "meta":
        raise WeightsFileError(f"{source}: tensor {key} is on the meta device and holds no values; save the "
                               "model after loading its weights")
    if not t.dtype.is_floating_point:
        raise WeightsFileError(f"{source}: tensor {key} has dtype {dtype_name(t)}, need float16/bfloat16/32/64")
    t = t.detach()
    if t.dtype == torch.bfloat16:
        t = t.float()           # exact: bfloat16 is float32's top half
    return np.array(t.numpy())  # a copy: the map closes with the file
