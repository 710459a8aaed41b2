"""`rvne export FILE OUT.npz` for the formats of this package: every tensor
as a numpy array under its name (or the nameless formats' keys), decoded
exactly (docs/formats.md, "Export")."""

import io

import numpy as np

from ..atomic import write_atomic
from .base import FormatError


def export_npz(path, out, src, mod, raw_bytes=False):
    """Write OUT.npz from a verified file; returns (report, {key: array},
    [keys written as raw bytes]). A tensor of a type numpy lacks and rvne
    does not decode (safetensors' FP8/FP6/FP4) refuses the export, unless
    `raw_bytes`: then its stored bytes go out as uint8, and the caller says so."""
    report = mod.read(src, data=True)
    report.raise_first(path)
    arrays, raw = {}, []
    for t in report.tensors:
        key = t.key
        if key in arrays:  # only nameless keys can collide; names are unique by rule
            raise FormatError("E_EXPORT", f"{path}: two tensors would be exported as {key!r}")
        try:
            arrays[key] = mod.tensor_array(src, t)
        except FormatError:
            if not raw_bytes:
                raise FormatError("E_EXPORT_DTYPE", f"{path}: E_EXPORT_DTYPE: tensor {key!r} is {t.dtype}, which "
                                  "numpy has no type for and rvne does not decode; nothing written; pass --raw "
                                  "to export such tensors' stored bytes as uint8") from None
            arrays[key] = np.frombuffer(src.window(t.offset, t.size), dtype=np.uint8)
            raw.append(f"{key} ({t.dtype})")
    buf = io.BytesIO()  # np.savez to a name would append .npz to other names
    np.savez(buf, **arrays)
    write_atomic(out, buf.getvalue())
    return report, arrays, raw
