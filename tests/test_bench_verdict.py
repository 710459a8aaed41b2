"""tools/bench_verdict.py's oracle separation (issue 20; docs/model.md, "What the verdict can and
cannot catch"): its ratio on numpy stand-ins (no device, no build; the statistical error size
itself: tests/test_precision.py). The benchmark itself prints the measured table and asserts nothing about it."""
import importlib.util
from pathlib import Path

import pytest

import trace_emulator as emu
from rvne import check
from rvne.model import steps
from rvne.model.contract import Dims

ROOT = Path(__file__).resolve().parents[1]
DIMS = Dims(16, 4, 1, 32, 2, 4)
WINDOW = 8


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_verdict", ROOT / "tools" / "bench_verdict.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def case():
    w = emu.weights(DIMS, seed=3)
    frames = check.generated_frames(2, 14, WINDOW, DIMS.input_dim)
    judge = steps.StepJudge(w, DIMS, WINDOW, scores=True)

    def stats(**knobs):
        return lambda b: b.step_stats(judge, frames, [emu.traces(w, DIMS, f, WINDOW, **knobs) for f in frames])
    return stats


def test_correct_devices_do_not_separate(bench, case):
    """Two correct FP32 implementations (a plain and an online softmax) are within a few times
    each other's deviations at every step, under all three statistics."""
    plain, online = case()(bench), case(online=True)(bench)
    for p in steps.POINTS:
        for name, sep in zip("ASR", bench.separate(online, [plain], p)[0]):
            assert sep < 10, (p, name, sep)
    assert bench.separate(plain, [plain], "attention")[0] == (1.0, 1.0, 1.0)


def test_a_defect_separates_where_it_acts(bench, case):
    """1/sqrt(head_dim) off by 1e-2 moves the scores by far more than rounding (>= 100x the
    correct devices' largest deviation under each statistic) and leaves the other steps, judged
    from the device's own inputs (the attention output from its own scores), among the correct
    ones."""
    correct = [case()(bench), case(online=True)(bench)]
    off = case(scale_err=1e-2)(bench)
    for name, sep in zip("ASR", bench.separate(off, correct, "scores")[0]):
        assert sep >= 100, (name, sep)
    for p in ("q", "k", "v", "attention", "x", "logits"):
        assert bench.separate(off, correct, p)[0][0] < 10, p
