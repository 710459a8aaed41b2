"""tools/bench_icount.py's own arithmetic: the phase profile's parsing and
the ESP32-S3 estimate (the bench itself prints numbers, asserts nothing)."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_icount", ROOT / "tools" / "bench_icount.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


PROFILE = ("phases loop_insns=2000000 loop_ticks=80000 marker_ticks=280 markers=3300 steps=100\n"
           "phase rest=3519 proj=419521 scores=862488 softmax=97627 wsum=986271 classifier=3484\n")


def test_phases_in_instructions_per_push(bench):
    phases, marker = bench.parse_phases("semihosting noise\n" + PROFILE)
    # 25 instructions per tick (2e6 / 80000), over 100 pushes.
    assert phases == {"proj": 419521 * 0.25, "attention": (862488 + 986271) * 0.25,
                      "softmax": 97627 * 0.25, "classifier": 3484 * 0.25, "rest": 3519 * 0.25}
    assert marker == pytest.approx(7.0)


@pytest.mark.parametrize("text", [
    "",
    PROFILE.splitlines()[0],                                    # no counts
    PROFILE.replace(" softmax=97627", ""),                      # a phase missing
    PROFILE.replace("loop_ticks=80000", "loop_ticks=0"),        # unusable calibration
    PROFILE.replace("steps=100", "steps=0"),
])
def test_a_broken_profile_is_an_error(bench, text):
    with pytest.raises(bench.BenchError):
        bench.parse_phases(text)


def test_s3_estimate(bench):
    # 4.8 M instructions per push at 50 pushes/s fill a 240 MHz core.
    assert bench.s3_percent(4.8e6) == pytest.approx(100.0)
    assert bench.s3_percent(48_000) == pytest.approx(1.0)
    assert bench.s3_percent(48_000, fps=100) == pytest.approx(2.0)
