"""tools/bench_icount.py's own arithmetic: the phase profile's parsing, the
ESP32-S3 estimate, the runs it makes, the baseline it falls back from, and
the record it writes for rvne plan (the bench itself prints numbers,
asserts nothing about them)."""
import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from rvne import icount
from rvne.errors import RvneError

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
    phases, marker, per_push = bench.parse_phases("semihosting noise\n" + PROFILE)
    # 25 instructions per tick (2e6 / 80000), over 100 pushes.
    assert phases == {"proj": 419521 * 0.25, "attention": (862488 + 986271) * 0.25,
                      "softmax": 97627 * 0.25, "classifier": 3484 * 0.25, "rest": 3519 * 0.25}
    assert marker == pytest.approx(7.0) and per_push == 33.0
    # Without the markers' own instructions: the sum less 33 markers of 7.
    assert bench.unmarked((phases, marker, per_push)) == pytest.approx(sum(phases.values()) - 231)


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


def test_the_runs_are_the_issues(bench):
    # The goals' case first: the default head at W = 100; then W = 32 and 256 and a wider head.
    assert bench.CONFIGS[0] == (bench.DIMS, bench.WINDOW) == ((16, 4, 1, 32, 2, 4), 100)
    assert set(bench.CONFIGS[1:]) == {((16, 4, 1, 32, 2, 4), 32), ((16, 4, 1, 32, 2, 4), 256),
                                      ((128, 8, 2, 16, 2, 8), 100)}
    assert icount.macs(bench.DIMS, bench.WINDOW) == bench.MACS
    assert bench.GOALS == {"fp32": 1.6, "fp16": 1.7}
    assert bench.goal_status("fp32", 1.6).endswith(": met")
    assert bench.goal_status("fp32", 1.61).endswith("NOT MET") and bench.goal_status("fp16", 1.69).endswith("met")


def test_per_unit_divides_each_phase_by_its_own_work(bench):
    dims, w = (128, 8, 2, 16, 2, 8), 32
    units = icount.phase_units(dims, w)
    assert units["attention"] == 2 * 2 * 8 * 32 * 16 and units["softmax"] == 2 * 8 * 32
    assert units["proj"] + units["attention"] + units["classifier"] == icount.macs(dims, w)
    got = bench.per_unit({p: 3.0 * units[p] for p in bench.PHASES}, dims, w)
    assert got == {p: 3.0 for p in bench.PHASES}


def test_no_baseline_outside_git_is_one_line(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "ROOT", str(tmp_path))        # an exported copy: no .git
    with pytest.raises(bench.Unavailable) as exc:
        bench.baseline_tree(bench.BASELINE_REV)
    assert "\n" not in str(exc.value) and bench.BASELINE_REV[:12] in str(exc.value)
    assert not (tmp_path / "build").exists()


def test_a_commit_not_in_the_history_is_no_baseline(bench):
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        pytest.fail("the checkout under test is not a git clone")
    with pytest.raises(bench.Unavailable, match="not in this clone's history"):
        bench.baseline_tree("f" * 40)


def fake_run(push, scale=1.0):
    """A Run whose profile splits `push` like the default head's FP32 push."""
    split = {"proj": 0.17, "attention": 0.63, "softmax": 0.19, "classifier": 0.002, "rest": 0.008}
    return (push, ({p: push * f * scale for p, f in split.items()}, 7.0, 50.0), True, 25.0)


def fake_measurement(bench):
    Run = bench.Run
    runs = {("now", bench.DIMS, bench.WINDOW, dt): Run(*fake_run(p)) for dt, p in (("fp32", 100000),
                                                                                    ("fp16", 140000))}
    lx6_c = {dt: (p, fake_run(p, 1.01)[1]) for dt, p in (("fp32", 700000), ("fp16", 1200000))}
    s3 = {}
    for dt, fast, slow in (("fp32", 90000, 600000), ("fp16", 130000, 1100000)):
        s3[(dt, "gcc asm")], s3[(dt, "gcc C")] = (fast, (fast, fast)), (slow, (slow, slow))
        s3[(dt, "phases", "asm")], s3[(dt, "phases", "C")] = fake_run(fast)[1][0], fake_run(slow)[1][0]
    return runs, lx6_c, s3


def test_the_record_is_what_plan_reads(bench, tmp_path, monkeypatch):
    monkeypatch.setenv("RVNE_QEMU_ESP", "true")
    runs, lx6_c, s3 = fake_measurement(bench)
    sources = {p: "a" * 40 for p in bench.MEASURED_SOURCES}
    decode = {("esp32s3", "asm"): (170000, fake_run(170000)[1][0]), ("lx6", "asm"): (175000, fake_run(175000)[1][0])}
    record = bench.make_record(runs, lx6_c, s3, decode, "b" * 40, "2026-11-26T05:00:00+00:00", sources, 100)
    path = bench.write_record(record, tmp_path / "icount.json")
    got = icount.load(path)
    assert got["counts"]["esp32s3"]["asm"]["fp32"]["push"] == 90000
    assert got["counts"]["lx6"]["c"]["fp16"]["push"] == 1200000
    assert got["counts"]["esp32s3"]["asm"]["fp16_decode"]["push"] == 170000
    assert "fp16_decode" not in got["counts"]["esp32s3"]["c"]         # optional: not measured here
    assert got["dims"] == list(bench.DIMS) and got["window"] == bench.WINDOW and got["macs"] == bench.MACS
    # The measured case is estimated as measured, whatever markers the profile had.
    assert icount.estimate(got, bench.DIMS, bench.WINDOW, "fp32") == 90000
    assert icount.estimate(got, bench.DIMS, bench.WINDOW, "fp16", core="lx6", kernels="c") == 1200000
    # A number edited by hand no longer matches the digest.
    text = path.read_text().replace("90000", "80000")
    assert text != path.read_text()
    path.write_text(text)
    with pytest.raises(RvneError, match="digest"):
        icount.load(path)


def test_s3_weights_line(bench):
    assert bench.s3_weights(S3_RUN + "weights expanded\n") == "expanded"
    assert bench.s3_weights(S3_RUN + "weights decoded\n") == "decoded"
    assert bench.s3_weights(S3_RUN) is None                              # a bench older than the expansion


def test_record_status_says_when_the_firmware_changed(bench, monkeypatch):
    record = icount.load()
    monkeypatch.setattr(bench, "stale_sources", lambda rec: ["firmware/core"])
    assert "STALE: firmware/core changed since" in bench.record_status()
    monkeypatch.setattr(bench, "stale_sources", lambda rec: [])
    assert bench.record_status().endswith(": current") and record["commit"][:12] in bench.record_status()


def test_stale_sources_compares_git_trees(bench):
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        pytest.fail("the checkout under test is not a git clone")
    now = bench.source_trees("HEAD")
    assert set(now) == set(bench.MEASURED_SOURCES)
    assert bench.stale_sources({"sources": now}) == []
    older = dict(now, **{"firmware/core": "0" * 40})
    assert bench.stale_sources({"sources": older}) == ["firmware/core"]


def test_the_s3_bench_takes_the_heads_its_ram_holds(bench):
    assert bench.s3_fits(bench.DIMS, 256, "fp16") and bench.s3_fits(bench.DIMS, 100, "fp32")
    # The 128-wide head's FP32 weights alone are 320 KiB.
    assert not bench.s3_fits((128, 8, 2, 16, 2, 8), 100, "fp32")
    assert bench.goal_status("fp32", 1.7, 1.5) == "<= 1.6: NOT MET, S3 met"


def test_without_the_s3_core_its_counts_are_printed_as_recorded_with_their_commit(bench):
    line = bench.recorded_s3()
    rec = icount.load()
    assert line.lstrip().startswith("RECORDED, not measured in this run")
    assert rec["commit"][:12] in line and f"{rec['counts']['esp32s3']['asm']['fp32']['push']:,}" in line
