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


S3_RUN = ("Adding SPI flash device\n"
          "icount loop_a=1000 insns_a=2001 loop_b=3000 insns_b=6001 read=1\n"
          + "logits 3f800000 c0000000\n" * 3
          + "push fill=1 steps=2 insns=300 min=140 max=160\n")


def test_s3_counts_per_push(bench):
    per_push, spread, extra, logits = bench.parse_s3(S3_RUN)
    assert per_push == 150.0 and spread == (140, 160) and extra == 1
    assert logits.shape == (3, 2) and logits.tolist() == [[1.0, -2.0]] * 3


def test_s3_kernel_counts(bench):
    text = ("Adding SPI flash device\nkernel name=matvec_16x128 macs=2048 insns=2831\n"
            "kernel name=softmax_exp macs=0 insns=3022\n")
    assert bench.parse_s3_kernels(text) == {"matvec_16x128": (2048, 2831), "softmax_exp": (0, 3022)}
    with pytest.raises(bench.BenchError):
        bench.parse_s3_kernels("Adding SPI flash device\n")        # the image never reached main


@pytest.mark.parametrize("text", [
    "",
    S3_RUN.replace("insns_b=6001", "insns_b=6002"),             # ICOUNT missed or doubled an instruction
    S3_RUN.replace("insns_b=6001", "insns_b=4001"),
    S3_RUN.replace("push fill=1 steps=2 insns=300 min=140 max=160\n", ""),
    S3_RUN.replace("steps=2", "steps=0"),
    S3_RUN.replace("logits 3f800000 c0000000\n", "", 1),        # a push's logits missing
])
def test_a_broken_s3_run_is_an_error(bench, text):
    with pytest.raises(bench.BenchError):
        bench.parse_s3(text)


def test_phase_macs_add_up(bench):
    assert sum(bench.phase_macs().values()) == bench.MACS


def test_s3_phases_per_push(bench):
    text = S3_RUN + "phase rest=20 proj=400 scores=100 softmax=60 wsum=140 classifier=8 markers=66\n"
    assert bench.parse_s3_phases(text) == {"proj": 200.0, "attention": 120.0, "softmax": 30.0,
                                           "classifier": 4.0, "rest": 10.0}
    with pytest.raises(bench.BenchError):
        bench.parse_s3_phases(S3_RUN)                                   # not a profiling build
    with pytest.raises(bench.BenchError):
        bench.parse_s3_phases(text.replace(" wsum=140", ""))
