"""Streaming logits agree with rvne.model.reference for FP32 and FP16 blobs at
several windows, over sequences just longer than W so the window slides."""

import numpy as np
import pytest

from rvne import check
from rvne.io import blob as blobmod
from rvne.model import verdict

DEFAULT_W = 100


@pytest.fixture
def restore_window(device):
    yield
    device.window(DEFAULT_W)        # the target is shared with later tests


# One test per blob, the windows in a loop: each test item costs a
# pytest-embedded dut set-up, which dominates on the sim target.
@pytest.mark.parametrize("partition_kind", ["fp32", "fp16"])
def test_stream_matches_reference(device, restore_window, partition_kind, partition_bytes, trace_mode):
    for window in (1, 7, 100):
        vectors = 2 if window < 100 else 1    # W=100 costs the most on an emulated core
        r = check.run_check(device, partition_bytes(partition_kind), vectors=vectors, seed=window,
                            window=window, trace=trace_mode)
        assert r.window == window and r.length > window
        assert r.logits == sum(r.lengths) * r.blob_dims[5] and len(r.lengths) == vectors
        assert r.passed, f"W={window}\n" + check.render(r)


@pytest.mark.parametrize("partition_kind", ["fp32", "fp16"])
def test_one_frame_per_push_equals_one_run(device, restore_window, partition_kind, partition_bytes):
    """Request boundaries carry no state: N single-frame PUSHes give the same
    bits as one RUN of N frames, and LOGITS repeats the last row."""
    parsed = blobmod.parse_loadable(partition_bytes(partition_kind))
    device.window(3)
    frames = np.random.default_rng(11).standard_normal((6, parsed.header.input_dim)).astype(np.float32)
    together = device.run(frames)
    device.reset()
    one_by_one = np.vstack([device.push(f) for f in frames])
    assert np.array_equal(together.view(np.uint32), one_by_one.view(np.uint32))
    assert np.array_equal(device.logits(), one_by_one[-1])
    v = verdict.against_blob(one_by_one, parsed, frames, 3)
    assert v["ok"], v


def test_window_too_large_changes_nothing(device):
    from rvne.errors import ProtocolError

    before = device.info()
    with pytest.raises(ProtocolError) as exc:
        device.window(4_000_000_000)
    assert exc.value.code == "E_TOO_LARGE"
    after = device.info()
    assert (after.window, after.arena) == (before.window, before.arena)
    device.ping()
