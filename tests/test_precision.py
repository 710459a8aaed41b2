"""The precision figure beside the step verdict (docs/model.md, "Precision
below FP32"): its unit follows real rounding, it separates a step computed
in FP16 from correct FP32 where the sound allowance cannot, and above its
level the report warns (exit 0) unless --strict makes it a failure."""

import numpy as np
import pytest

import trace_emulator as emu
from rvne import check
from rvne.model import precision, steps
from rvne.model.contract import Dims

WIDE = Dims(256, 8, 2, 32, 2, 4)


def _f16(x):
    return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)


@pytest.mark.parametrize("n", [64, 1024])
def test_the_unit_is_the_size_of_sequential_rounding(n):
    """The rms of a left-to-right FP32 sum's error, over the unit, is of order 1 whatever n."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2000, n)).astype(np.float32)
    w = (rng.standard_normal((n, 1)) / np.sqrt(n)).astype(np.float32)
    got = np.cumsum(x * w[:, 0], axis=1, dtype=np.float32)[:, -1]
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    exact = x64 @ w64[:, 0]
    ratio = np.abs(got - exact) / precision.dot_size(np.square(x64) @ np.square(w64), n)[:, 0]
    assert 0.15 < np.sqrt(np.mean(ratio ** 2)) < 0.6


def test_fp16_logits_are_flagged_where_the_allowance_cannot_catch_them():
    """At 256 wide, logits rounded to FP16 stay within a few allowances, but
    their rms in the figure's unit is far above the level; the correct
    trace's is far below it."""
    w = emu.weights(WIDE, seed=2)
    f = np.random.default_rng(2).standard_normal((24, WIDE.input_dim)).astype(np.float32)
    judge = steps.StepJudge(w, WIDE, 8, scores=True)
    good = emu.traces(w, WIDE, f, 8)
    ok = judge.sequence(f, good).precision.summary()
    assert not precision.warned(ok) and max(s["rms"] for s in ok.values()) < 1, ok
    bad = good.copy()
    bad[:, -WIDE.n_classes:] = _f16(bad[:, -WIDE.n_classes:])
    res = judge.sequence(f, bad)
    summary = res.precision.summary()
    assert precision.warned(summary) == ["logits"], summary
    assert summary["logits"]["rms"] > 5 * precision.LEVEL


def _report(**kw):
    r = check.CheckReport(url="u", blob_crc=0, blob_dims=(1,) * 6, blob_dtype="fp32", logits=4, frames=1,
                          traced=1, trace_mode="all", step_values=13, step_max_ratio=0.1, **kw)
    r.precision = {"q": {"values": 9, "rms": 0.3, "max": 1.1}, "logits": {"values": 4, "rms": 40.0, "max": 90.0}}
    r.precision_warning = precision.warned(r.precision)
    return r


def test_the_warning_is_exit_0_and_strict_fails_it():
    r = _report()
    assert r.precision_warning == ["logits"] and r.outcome == "PASS" and r.exit_code == 0
    text = check.render(r)
    assert "precision  " in text and "logits 40/90" in text
    assert "WARNING    precision below FP32 at logits" in text and "may be correlated" not in text
    assert text.splitlines()[-1] == "PASS (precision below FP32 at logits: a warning)"
    strict = _report(strict=True)
    assert strict.outcome == "FAIL" and strict.exit_code == 1
    assert check.render(strict).splitlines()[-1] == "FAIL (precision below FP32 at logits, and --strict fails that)"
    d = strict.to_dict()
    assert d["precision"]["logits"]["rms"] == 40.0 and d["precision_warning"] == ["logits"] and d["strict"]


def test_the_users_frames_make_the_warning_less_reliable():
    r = _report(frames_source="file")
    assert "your --frames may be correlated" in check.render(r)
