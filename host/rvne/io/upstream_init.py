"""Deterministic random init reproducing upstream's example blob
(`init_random_blob` of wifi-densepose-temporal) byte for byte: xorshift64*
values, scaled in f32 arithmetic, stored in the weight order of
docs/model.md."""

import numpy as np

from ..model.contract import Dims
from . import blob

SEED = 0xC5110007DEADBEEF
MULTIPLIER = 2685821657736338717
DIMS = Dims(16, 4, 1, 32, 2, 4)
EXAMPLE_LEN = 41244
EXAMPLE_CRC = 0xDC807956
_MASK = (1 << 64) - 1


def xorshift_u32(n, seed=SEED):
    """The high 32 bits of n successive xorshift64* outputs."""
    x = int(seed) & _MASK
    if x == 0:
        # xorshift's only fixed point: every value would be the same.
        raise ValueError("seed 0 makes xorshift emit only zeros; choose a non-zero seed")
    out = np.empty(n, dtype=np.uint32)
    m = MULTIPLIER
    for i in range(n):
        x ^= (x << 13) & _MASK
        x ^= x >> 7
        x ^= (x << 17) & _MASK
        out[i] = ((x * m) & _MASK) >> 32
    return out


def values(n, seed=SEED):
    """n weights, each (f32(r>>32) / f32(0xFFFFFFFF) - 0.5) * 0.2 in f32."""
    r = xorshift_u32(n, seed).astype(np.float32)  # round to nearest, like Rust's `as f32`
    return ((r / np.float32(0xFFFFFFFF)) - np.float32(0.5)) * np.float32(0.2)


def init_arrays(dims=DIMS, seed=SEED):
    from ..model import contract

    d = Dims.of(dims).check()
    flat = values(contract.n_params(d), seed)
    return {s.name: flat[s.offset:s.offset + s.size].reshape(s.shape) for s in contract.tensor_specs(d)}


def init_blob(dims=DIMS, seed=SEED, fp16=False):
    """The bytes of an initialised blob; with the defaults, upstream's
    example (41244 bytes, CRC 0xDC807956)."""
    from ..model import contract

    contract.check_writable(Dims.of(dims).check(), fp16)   # before making billions of values
    return blob.from_arrays(init_arrays(dims, seed), dims, fp16)
