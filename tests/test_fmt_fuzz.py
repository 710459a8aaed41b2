"""Seeded mutants of every foreign format through the whole path the CLI
takes: detection, read with data checks, and - for every mutant that still
passes its rules - decoding every tensor. Nothing may raise but FormatError
(an undecodable dtype), and whatever passes must decode to exactly the
stored bytes' element count."""

import random

import numpy as np
import pytest

from rvne.io import formats
from rvne.io.formats import base

from test_fmt_cli import MAKERS

MUTANTS = 300


def mutate(rng, raw):
    b = bytearray(raw)
    kind = rng.randrange(5)
    if kind == 0 and b:                      # flip bits
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif kind == 1 and b:                    # an interesting little-endian integer
        i = rng.randrange(len(b))
        v = rng.choice([0, 1, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, (1 << 64) - 1, 1 << 63, len(b), 64, 256])
        w = rng.choice([2, 4, 8])
        b[i:i + w] = (v & ((1 << (8 * w)) - 1)).to_bytes(w, "little")
    elif kind == 2:                          # cut
        del b[rng.randrange(len(b) + 1):]
    elif kind == 3:                          # insert
        i = rng.randrange(len(b) + 1)
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 70)))
    else:                                    # splice a chunk elsewhere
        if len(b) > 8:
            i, j = sorted(rng.sample(range(len(b)), 2))
            k = rng.randrange(len(b))
            b[k:k] = b[i:j][:128]
    return bytes(b)


@pytest.mark.parametrize("fmt", MAKERS)
def test_mutants_never_crash_the_cli_path(fmt):
    raw, _, _ = MAKERS[fmt]()
    rng = random.Random(f"fmt-fuzz-{fmt}")
    passed = 0
    for _ in range(MUTANTS):
        data = mutate(rng, raw)
        src = base.Source(data, "mutant")
        mod = formats.detect(src)
        if mod is None or mod == "rvne":
            continue
        report = mod.read(src, data=True)
        report.as_dict()                     # what --json prints must be buildable
        if not report.valid:
            assert report.error.code.startswith("E_")
            continue
        passed += 1
        for t in report.tensors:
            try:
                arr = mod.tensor_array(src, t)
            except base.FormatError:
                continue
            assert isinstance(arr, np.ndarray)
            assert t.offset + t.size <= len(data)
    # Most mutants must be refused; a sweep where all pass tests nothing.
    assert passed < MUTANTS // 2
