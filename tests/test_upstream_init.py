"""Upstream's example blob, reproduced byte for byte, and the generator
checked step by step against a scalar transcription of the issue's text."""

import struct

import crcmod.predefined
import numpy as np
import pytest

from rvne.io import blob, upstream_init
from rvne.model import contract

ORACLE = crcmod.predefined.mkCrcFun("crc-32")
MASK = (1 << 64) - 1


def scalar_values(n, seed):
    """The issue's description, one value at a time, with numpy f32 scalars."""
    x, out = seed, []
    for _ in range(n):
        x ^= (x << 13) & MASK
        x ^= x >> 7
        x ^= (x << 17) & MASK
        r = (x * 2685821657736338717) & MASK
        f = np.float32(r >> 32) / np.float32(0xFFFFFFFF)
        out.append((f - np.float32(0.5)) * np.float32(0.2))
    return np.array(out, dtype=np.float32)


def test_example_blob_bytes():
    data = upstream_init.init_blob()
    assert len(data) == 41244 == upstream_init.EXAMPLE_LEN
    assert struct.unpack("<I", data[-4:])[0] == 0xDC807956 == ORACLE(data[:-4])
    assert data[:24] == bytes.fromhex("45 4e 56 52 01 00 00 00 10 00 04 00 01 00 20 00 02 00 04 00 00 a1 00 00")
    b = blob.parse(data)
    assert b.header.dims == (16, 4, 1, 32, 2, 4) and not b.header.fp16


def test_generator_matches_scalar_transcription():
    for seed in (upstream_init.SEED, 1, 0xFFFFFFFFFFFFFFFF):
        np.testing.assert_array_equal(upstream_init.values(500, seed), scalar_values(500, seed))


def test_values_are_stored_in_weight_order():
    data = upstream_init.init_blob()
    stored = np.frombuffer(data[24:-4], "<f4")
    np.testing.assert_array_equal(stored, upstream_init.values(contract.n_params(upstream_init.DIMS)))
    assert np.abs(stored).max() <= 0.1


def test_seed_dims_fp16_options():
    base = upstream_init.init_blob()
    other = upstream_init.init_blob(seed=42)
    assert len(other) == len(base) and other != base
    fp16 = blob.parse(upstream_init.init_blob(fp16=True))
    assert fp16.header.fp16 and fp16.header.weights_len == 41216 // 2
    np.testing.assert_array_equal(
        fp16.tensors()["wc"], upstream_init.init_arrays()["wc"].astype(np.float16).astype(np.float32)
    )
    d = contract.Dims(8, 6, 3, 4, 3, 5)
    b = blob.parse(upstream_init.init_blob(d))
    assert b.header.dims == d and b.loadable


def test_seed_zero_refused():
    with pytest.raises(ValueError, match="seed"):
        upstream_init.values(3, 0)
