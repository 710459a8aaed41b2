"""The frames `rvne infer` and `rvne check --frames` stream: one .npy array of
finite float32 frames (never unpickled), its shape checked against the
blob's input dim before anything runs."""

import numpy as np

from ..errors import RvneError
from . import files, npyfile


def load_frames(path, input_dim, sequences=False, with_ndim=False):
    """Finite float32 frames from an .npy file: [N, D], or with `sequences`
    [T, D] (one sequence) or [N, T, D], returned as [N, T, D]; `with_ndim`:
    (frames, the file's number of dimensions)."""
    want = f"[T, {input_dim}] or [N, T, {input_dim}]" if sequences else f"[N, {input_dim}]"
    data = files.load(path)
    if bytes(data[:6]) != b"\x93NUMPY":  # not unpickled, not parsed as anything else
        raise RvneError(f"{path}: not an .npy file; save frames with numpy.save as float32 {want}")
    try:
        frames = npyfile.load(data)
    except npyfile.NpyError as exc:
        raise RvneError(f"{path}: not a readable .npy array ({exc})") from None
    if not isinstance(frames, np.ndarray):
        raise RvneError(f"{path}: holds several arrays (an .npz?); need one float32 {want} .npy")
    if frames.dtype.kind != "f":
        raise RvneError(f"{path}: frames have dtype {frames.dtype}, need float32 {want}")
    shape = frames.shape
    if sequences and frames.ndim == 2:
        frames = frames[None]
    ndim = 3 if sequences else 2
    if frames.ndim != ndim or frames.shape[-1] != input_dim or (sequences and 0 in frames.shape):
        raise RvneError(f"{path}: frames have shape {shape}, the blob needs {want}"
                        + (" with N, T >= 1" if sequences else ""))
    with np.errstate(over="ignore"):    # a float64 beyond float32's range becomes inf, refused below
        frames = frames.astype(np.float32, copy=False)
    bad = ~np.isfinite(frames)
    if bad.any():
        # One NaN poisons every logit of the next W frames through attention.
        *where, c = (int(i) for i in np.argwhere(bad)[0])
        at = f"sequence {where[0]} frame {where[1]}" if sequences else f"frame {where[0]}"
        raise RvneError(f"{path}: {at} value {c} is {frames[tuple(where) + (c,)]} as float32 ({int(bad.sum())} "
                        "non-finite values in all); the reference needs finite frames: clean or drop them")
    return (frames, len(shape)) if with_ndim else frames
