"""Step by step on the device (docs/model.md "Step by step", docs/protocol.md
TRACE): the device's trace points are judged from its own inputs, every push
where the link is fast and a sample on a board; the trace holds the logits
the push replied, and tracing changes no result."""

import numpy as np
import pytest

from rvne import check
from rvne.errors import ProtocolError
from rvne.io import blob as blobmod
from rvne.link import protocol
from rvne.model import steps


@pytest.fixture
def trace_off_after(device):
    yield
    device.trace_off()


@pytest.mark.parametrize("partition_kind", ["fp32", "fp16", "int8", "int8_gqa"])
def test_every_traced_step_is_within_its_allowance(device, partition_kind, partition_bytes, trace_mode):
    """An int8 blob's steps and logits must equal the integer reference
    (docs/model.md): no difference at all."""
    info = device.info()
    assert info.proto == protocol.VERSION
    r = check.run_check(device, partition_bytes(partition_kind), vectors=2, seed=5, length=info.window + 3,
                        trace=trace_mode)
    if r.trace_note:
        # A board whose arena has no room for the trace says so in one line,
        # and the end-to-end verdict decides alone.
        assert "no room" in r.trace_note and "\n" not in r.trace_note, r.trace_note
        assert r.passed, check.render(r)
        return
    assert r.passed and r.step_passed, check.render(r)
    if partition_kind.startswith("int8"):
        assert r.rule == check.RULE_EXACT and r.max_abs == 0 and r.step_bad == 0, check.render(r)
    window = None if partition_kind.startswith("int8") else info.window      # a float trace holds the scores
    plan = check.sample_plan(blobmod.parse_loadable(partition_bytes(partition_kind)).header.dims, info.line_max,
                             r.lengths, window=window)
    assert r.traced == (r.frames if trace_mode == "all" else sum(len(p) for p in plan))
    assert r.trace_scores is (window is not None)
    if trace_mode == "all":
        # Every value judged (or out of range), the scores of the positions attended.
        attended = sum(min(t + 1, info.window) for n in r.lengths for t in range(n)) * info.dims[1] * info.dims[4]
        assert r.step_values == r.traced * steps.trace_floats(info.dims) + (attended if window else 0) \
            - r.step_unjudged


def test_a_traced_push_computes_what_an_untraced_one_does(device, partition_bytes, trace_off_after):
    info = device.info()
    frames = np.random.default_rng(3).standard_normal((5, info.dims[0])).astype(np.float32)
    plain = device.run(frames)
    try:
        floats = device.trace_on()
    except ProtocolError as exc:
        # A board's arena sized for its window alone: it says so, and stays usable.
        assert exc.code == "E_TOO_LARGE", exc
        assert np.array_equal(device.run(frames).view(np.uint32), plain.view(np.uint32))
        return
    window = None if info.dtype == "int8" else info.window
    assert floats == steps.trace_floats(info.dims, window)
    traced, traces = device.stream_traced(frames, len(frames), floats)
    assert np.array_equal(plain.view(np.uint32), traced.view(np.uint32))
    _, logits = steps.split(traces, info.dims, window)
    assert np.array_equal(logits.view(np.uint32), traced.view(np.uint32))
    device.reset()
    with pytest.raises(ProtocolError) as exc:
        device.trace(floats)
    assert exc.value.code == "E_NO_FRAME"
