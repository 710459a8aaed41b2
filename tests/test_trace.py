"""Step-by-step checking (docs/model.md "Step by step", docs/protocol.md
TRACE): correct traces pass, a broken step fails naming its sequence,
frame, layer, quantity and index, on the host's stand-in device and on the
virtual device's defect builds; firmware without TRACE is one line and the
end-to-end verdict still decides."""

import json

import numpy as np
import pytest

from rvne import check
from rvne.io import blob
from rvne.link import protocol
from rvne.link.device import Device
from rvne.model import steps
from rvne.model.contract import Dims
from rvne.targets import sim

import defect_devices as dd
import trace_emulator as emu
from fake_device import FakeDevice, ReferenceModel

SMALL = Dims(16, 4, 1, 32, 2, 4)
GQA = Dims(64, 8, 2, 16, 3, 6)


def _judge(dims, window, length, seed=1, scores=True, gain=1.0, **kw):
    w = emu.weights(dims, gain=gain)
    f = np.random.default_rng(seed).standard_normal((length, dims.input_dim)).astype(np.float32)
    return steps.StepJudge(w, dims, window, scores=scores).sequence(
        f, emu.traces(w, dims, f, window, scores=scores, **kw), seq_index=2)


def _attended(dims, window, length):
    """Scores a trace of `length` pushes holds (the rest of each head's W is padding)."""
    return dims.n_layers * dims.n_q_heads * sum(min(t + 1, window) for t in range(length))


@pytest.mark.parametrize("dims", [SMALL, GQA])
@pytest.mark.parametrize("online", [False, True])
@pytest.mark.parametrize("scores", [True, False])
def test_a_correct_trace_passes(dims, online, scores):
    r = _judge(dims, 8, 13, online=online, scores=scores)
    assert r.bad == 0 and r.first is None and r.unjudged == 0
    assert r.values == 13 * steps.trace_floats(dims) + (_attended(dims, 8, 13) if scores else 0)
    assert 0 < r.max_ratio < 0.5          # SAFETY 2 on a rigorous bound
    summary = r.precision.summary()
    assert set(summary) == set(steps.POINTS if scores else steps.LAYER_POINTS + ("logits",))
    assert all(0 < s["rms"] <= s["max"] < 20 for s in summary.values()), summary


@pytest.mark.parametrize("layer,point", [(0, "q"), (1, "k"), (2, "v"), (1, "scores"), (1, "attention"), (0, "x"),
                                         (None, "logits")])
def test_a_broken_step_is_named(layer, point):
    r = _judge(GQA, 8, 13, break_at=(9, layer, point, 3, 1 + 1e-3))
    f = r.first
    assert (f.sequence, f.frame, f.layer, f.quantity, f.index) == (2, 9, layer, point, 3), f
    assert f.ratio > 1 and abs(f.device - f.reference) > f.allowance
    assert f.kernel == steps.KERNEL[point]
    assert "sequence 2 frame 9" in steps.first_wrong_text(f)


@pytest.mark.parametrize("scores,point", [(True, "scores"), (False, "attention")])
def test_a_wrong_attention_scale_fails_at_its_step(scores, point):
    r = _judge(SMALL, 8, 13, scale_err=1e-3, scores=scores)
    assert (r.first.layer, r.first.quantity) == (0, point) and r.max_ratio > 10, r


@pytest.mark.parametrize("gain", [1.0, 4.0])
def test_an_inexact_exponential_fails_at_the_attention_from_the_devices_scores(gain):
    """Judged from the device's own scores, the softmax step is left only
    expf's 4 ulp: an exponential off by 1e-4 is far out even where the
    scores are so large that their own rounding hid it (4x weights)."""
    r = _judge(SMALL, 8, 13, exp_err=1e-4, gain=gain)
    assert r.first.quantity == "attention" and r.by_point["attention"] > 10, r
    assert r.by_point["scores"] < 0.5


def test_a_check_too_short_for_the_share_still_samples_a_first_and_a_last_push():
    # Two sequences of 12 frames at W 8: the share holds no traced push, yet
    # a device that traces must be judged step by step, not called untraced.
    for lengths in ([12, 11], [12], [1]):
        plan = check.sample_plan(SMALL, 1024, lengths, window=8)
        starts = [p for p in plan if len(p) and p[0] == 0]
        ends = [p for p, n in zip(plan, lengths) if len(p) and p[-1] == n - 1]
        assert starts and ends, (lengths, plan)
        assert sum(len(p) for p in plan) <= 2, (lengths, plan)


def test_the_sample_doubles_the_link_traffic_at_most():
    lengths = [110, 107, 53, 101]
    for dims, line_max in ((SMALL, 1024), (SMALL, 16384), (GQA, 1024), (GQA, 16384),
                           (Dims(512, 16, 4, 32, 8, 16), 16384)):
        for window in (None, 100):
            plan = check.sample_plan(dims, line_max, lengths, window=window)
            sizes = [len(p) for p in plan]
            assert all(0 <= k <= n for k, n in zip(sizes, lengths)) and sum(sizes) >= 1, (dims, line_max, sizes)
            assert all((np.diff(p) > 0).all() and p[-1] < n for p, n in zip(plan, lengths) if len(p))
            per = protocol.frames_per_push(line_max, dims.input_dim, dims.n_classes)
            untraced = sum(protocol.push_request_len(len(c), dims.input_dim) + protocol.push_reply_len(
                len(c), dims.n_classes) for n in lengths for c in protocol.chunks(n, per))
            trace = protocol.b64_len(4 * steps.trace_floats(dims, window))
            assert sum(sizes) * trace <= untraced, (dims, line_max, sizes)
            assert max(sizes) - min(sizes) <= 1, sizes          # one a sequence before any gets more
            # Two traced pushes already cover a first push and a last one, after the ring has wrapped.
            ends = [p for p, n in zip(plan, lengths) if len(p) and p[-1] == n - 1]
            starts = [p for p in plan if len(p) and p[0] == 0]
            assert (len(ends) >= 1 and len(starts) >= 1) or sum(sizes) == 1, plan


def test_pushes_after_the_ring_wraps_are_judged_from_a_sample():
    """A sample of the first and the last pushes: the last ones' projections,
    residual and logits are judged from their own trace; their scores and
    attention output, whose window holds untraced pushes, are not (and are
    not counted as unjudged). A v stored wrong only once the ring is full
    fails there."""
    w, W, T = emu.weights(SMALL), 8, 20
    f = np.random.default_rng(4).standard_normal((T, SMALL.input_dim)).astype(np.float32)
    pushes = np.array([0, 1, 2, 17, 18, 19])
    judge = steps.StepJudge(w, SMALL, W, scores=True)
    good = emu.traces(w, SMALL, f, W)
    r = judge.sequence(f, good[pushes], pushes=pushes)
    assert r.bad == 0 and r.unjudged == 0 and r.pushes == 6
    # Every value of pushes 0-2 (their scores: 1, 2, 3 positions a head); of 17-19 all but the
    # attention output.
    L, HQ = SMALL.n_layers, SMALL.n_q_heads
    assert r.values == 6 * steps.trace_floats(SMALL) + L * HQ * (1 + 2 + 3) - 3 * L * SMALL.q_dim, r.values
    late = emu.traces(w, SMALL, f, W, break_at=(18, 1, "v", 5, 1 + 1e-3))
    r = judge.sequence(f, late[pushes], pushes=pushes)
    assert (r.first.frame, r.first.layer, r.first.quantity, r.first.index) == (18, 1, "v", 5), r.first


# -- devices that cannot trace --------------------------------------------------------
def _fake(skew=0.0, proto=None):
    data = blob.from_arrays(emu.weights(SMALL), SMALL, False)
    model = ReferenceModel(data, window=8, skew=skew)
    if proto:
        model.info["proto"] = proto
    return data, FakeDevice(model, line_max=4096, window=8)


@pytest.mark.parametrize("proto,says", [(None, "protocol 1"), ("2", "does not know TRACE")])
def test_old_firmware_is_one_line_and_the_end_to_end_verdict_decides(proto, says):
    data, fake = _fake(proto=proto)
    with fake, Device(fake.url, timeout=5) as dev:
        r = check.run_check(dev, data, vectors=1, length=12)
    assert r.trace_note.startswith("tracing unsupported") and says in r.trace_note
    assert r.passed and r.traced == 0 and r.step_passed is None
    text = check.render(r)
    assert sum("tracing unsupported" in line for line in text.splitlines()) == 1
    assert "\n" not in r.trace_note
    data, fake = _fake(skew=1e-3, proto=proto)
    with fake, Device(fake.url, timeout=5) as dev:
        r = check.run_check(dev, data, vectors=1, length=12)
    assert not r.passed and r.bad > 0 and r.trace_note


# -- the virtual device ---------------------------------------------------------------
def _sim_check(data, window=8, length=13, line_max=None, exe=None, **kw):
    with sim.start(data, window=window, line_max=line_max, exe=exe) as t, Device(t.url, timeout=30) as dev:
        return check.run_check(dev, data, vectors=2, length=length, **kw)


def test_the_virtual_device_is_traced_push_by_push_and_passes():
    data = blob.from_arrays(emu.weights(SMALL), SMALL, True)
    r = _sim_check(data)
    assert r.passed and r.step_passed and r.traced == sum(r.lengths) == r.frames and r.trace_scores
    assert r.step_values == r.traced * steps.trace_floats(SMALL) + sum(_attended(SMALL, 8, n) for n in r.lengths)
    assert set(r.step_by_quantity) == set(r.precision) == set(steps.POINTS) and not r.precision_warning
    d = json.loads(json.dumps(r.to_dict()))
    assert d["step_passed"] is True and d["end_to_end_passed"] is True and d["first_wrong"] is None
    assert "verdicts   end to end PASS, step by step PASS" in check.render(r)


def test_a_trace_longer_than_a_line_comes_in_pieces():
    data = blob.from_arrays(emu.weights(GQA), GQA, False)
    assert steps.trace_floats(GQA) * 4 * 4 // 3 > 3 * 1024
    r = _sim_check(data, line_max=1024)
    assert r.passed and r.traced == r.frames and r.step_bad == 0


def test_off_and_sample():
    data = blob.from_arrays(emu.weights(SMALL), SMALL, False)
    r = _sim_check(data, trace="off")
    assert r.passed and r.traced == 0 and r.step_passed is None
    r = _sim_check(data, length=40, trace="sample")
    assert r.passed and 0 < r.traced < r.frames


@pytest.fixture(scope="module")
def defects_built():
    dd.build_defects()


# defect -> (dims, first wrong layer, quantity, frame or None)
NAMED = {
    "window_short": (SMALL, 0, "scores", 7),           # W = 8: the first push whose window is full
    "kv_map": (GQA, 0, "scores", 0),                   # a query head's scores from another's q
    "no_residual": (SMALL, 0, "x", 0),
    "stale_slot": (SMALL, 0, "scores", 8),             # the first push after the ring wraps
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_a_defect_build_fails_at_its_step(defects_built, name):
    dims, layer, quantity, frame = NAMED[name]
    data = blob.from_arrays(emu.weights(dims), dims, False)
    r = _sim_check(data, exe=dd.defect_exe(name))
    assert not r.passed and not r.step_passed
    f = r.first_wrong
    assert (f.sequence, f.layer, f.quantity, f.frame) == (0, layer, quantity, frame), check.render(r)
    text = check.render(r)
    assert f"FIRST WRONG sequence 0 frame {frame} layer {layer} {quantity}[" in text
    d = json.loads(json.dumps(r.to_dict()))
    assert d["first_wrong"]["quantity"] == quantity and d["first_wrong"]["layer"] == layer
    assert d["step_passed"] is False


def test_save_and_plot_carry_the_first_wrong_value(defects_built, tmp_path):
    from rvne import results

    data = blob.from_arrays(emu.weights(SMALL), SMALL, False)
    r = _sim_check(data, exe=dd.defect_exe("no_residual"))
    results.save_npz(r, tmp_path / "run.npz")
    with np.load(tmp_path / "run.npz") as z:
        s = json.loads(str(z["steps"]))
        assert s["passed"] is False and s["first_wrong"]["quantity"] == "x" and s["first_wrong"]["layer"] == 0
        assert list(z["traced"]) == r.lengths == list(z["lengths"])      # every push, sequences of two lengths
        assert z["traces"].shape == (2, 13, steps.trace_floats(SMALL, 8))
        assert (z["trace_pushes"][0] == np.arange(13)).all() and s["scores"] is True and "q" in s["precision"]
        # What was saved judges the same again.
        again = steps.StepJudge(emu.weights(SMALL), SMALL, 8, scores=True).sequence(z["frames"][0], z["traces"][0])
        assert (again.first.frame, again.first.layer, again.first.quantity) == (0, 0, "x")
    results.plot_png(r, tmp_path / "run.png")
    assert (tmp_path / "run.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_defect_that_begins_once_the_ring_is_full_fails_a_sample(defects_built):
    """v stored in FP16 only once the ring is full: `--trace sample` (a
    board's default) traces pushes after the wrap too, and judges their v
    step by step: FAIL at a traced push past W, no `--trace all` needed."""
    data = blob.from_arrays(emu.weights(SMALL), SMALL, False)
    with sim.start(data, window=8, exe=dd.defect_exe("v_fp16_full")) as t, Device(t.url, timeout=30) as dev:
        r = check.run_check(dev, data, vectors=4, length=40, trace="sample")
    assert 0 < r.traced < r.frames and not r.passed and not r.step_passed, check.render(r)
    f = r.first_wrong
    assert f.quantity == "v" and f.frame >= 8, check.render(r)
    assert "FIRST WRONG" in check.render(r)
