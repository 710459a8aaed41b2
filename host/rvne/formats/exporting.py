"""`rvne export FILE OUT.npz` for the formats of this package: every tensor
as a numpy array under its name (or the nameless formats' keys), decoded
exactly (docs/formats.md, "Export")."""

import io

import numpy as np

from ..atomic import write_atomic
from .base import FormatError


def export_npz(path, out, src, mod):
    """Write OUT.npz from a verified file; returns (report, {key: array},
    [keys written as raw bytes])."""
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
            # numpy has no FP8/FP6/FP4: keep the stored bytes, say so, lose nothing.
            arrays[key] = np.frombuffer(src.window(t.offset, t.size), dtype=np.uint8)
            raw.append(f"{key} ({t.dtype})")
    buf = io.BytesIO()  # np.savez to a name would append .npz to other names
    np.savez(buf, **arrays)
    write_atomic(out, buf.getvalue())
    return report, arrays, raw
