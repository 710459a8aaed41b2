"""rvne.icount and the icount.json it reads (rvne plan's numbers, written by
tools/bench_icount.py --record): the shipped record is whole and
self-consistent, a record broken in any one way is refused with the reason,
and the phase-by-phase scaling does what plan says it does."""
import copy
import json
from pathlib import Path

import pytest

from rvne import icount
from rvne.errors import RvneError
from rvne.model.contract import Dims


@pytest.fixture(scope="module")
def shipped():
    return icount.load()


def test_the_shipped_record_is_a_measurement(shipped):
    assert shipped["written_by"] == "tools/bench_icount.py --record"
    assert shipped["macs"] == icount.macs(shipped["dims"], shipped["window"])
    s3 = shipped["counts"]["esp32s3"]
    for dtype in icount.REQUIRED:
        # The S3 app's default kernels are the assembly ones; the C twins cost several times more.
        assert s3["c"][dtype]["push"] > 2 * s3["asm"][dtype]["push"]
    # Where the numbers come from, for plan to say.
    assert "xtensa-esp32s3-elf-gcc" in shipped["toolchain"]["esp32s3"]
    assert set(shipped["sources"]) >= {"firmware/core", "firmware/ports/lx6"}


def test_the_measured_case_is_estimated_as_measured(shipped):
    for core in shipped["counts"]:
        for kernels in icount.KERNELS:
            for dtype in shipped["counts"][core][kernels]:
                want = shipped["counts"][core][kernels][dtype]["push"]
                got = icount.estimate(shipped, shipped["dims"], shipped["window"], dtype, core, kernels)
                assert got == want, (core, kernels, dtype)


def test_the_estimate_scales_each_phase_by_its_work(shipped):
    d, w = Dims.of(shipped["dims"]), shipped["window"]
    c = shipped["counts"]["esp32s3"]["asm"]["fp32"]
    scale = c["push"] / sum(c["phases"].values())
    # Twice the window: twice the attention and the softmax, the same projections.
    grown = icount.estimate(shipped, d, 2 * w, "fp32")
    assert grown - c["push"] == pytest.approx(scale * (c["phases"]["attention"] + c["phases"]["softmax"]), abs=1)
    # Twice the layers: every phase but the classifier doubles.
    deeper = Dims(d.input_dim, d.n_q_heads, d.n_kv_heads, d.head_dim, 2 * d.n_layers, d.n_classes)
    assert icount.estimate(shipped, deeper, w, "fp32") == pytest.approx(
        2 * c["push"] - scale * c["phases"]["classifier"], abs=1)
    assert icount.estimate(shipped, d, w, "bf16") is None


def broken(record, change):
    out = copy.deepcopy(record)
    change(out)
    out["sha256"] = icount.digest(out)       # consistent digest: the other rules must catch it
    return out


def set_push(core, kernels, dtype, value):
    def change(r):
        r["counts"][core][kernels][dtype]["push"] = value
    return change


@pytest.mark.parametrize("change,why", [
    (lambda r: r.update(schema=2), "schema"),
    (lambda r: r.pop("commit"), "commit"),
    (lambda r: r.update(commit="HEAD"), "commit"),
    (lambda r: r.update(sources={"firmware/core": "main"}), "sources"),
    (lambda r: r.update(dims=[16, 4, 1, 32, 2]), "dims"),
    (lambda r: r.update(window=0), "window"),
    (lambda r: r.update(window=r["window"] + 1), "macs"),           # stale: numbers of another window
    (lambda r: r["counts"].pop("esp32s3"), "esp32s3"),
    (lambda r: r["counts"]["esp32s3"]["asm"].pop("fp16"), "esp32s3 asm fp16"),
    (set_push("esp32s3", "asm", "fp32", 10), "per MAC"),
    (lambda r: r["counts"]["esp32s3"]["c"].update(fp32=r["counts"]["esp32s3"]["asm"]["fp32"]), "C kernels"),
    (lambda r: r["counts"]["esp32s3"]["asm"]["fp32"]["phases"].pop("softmax"), "phases"),
    (lambda r: r["counts"]["esp32s3"]["asm"]["fp32"]["phases"].update(proj=10 ** 7), "add up"),
])
def test_a_broken_record_is_refused_with_its_reason(shipped, change, why):
    with pytest.raises(RvneError, match=why):
        icount.check(broken(shipped, change))


def test_a_hand_edited_or_unreadable_record_is_refused(shipped, tmp_path):
    edited = copy.deepcopy(shipped)
    edited["counts"]["esp32s3"]["asm"]["fp32"]["push"] -= 1000
    path = tmp_path / "icount.json"
    path.write_text(json.dumps(edited))
    with pytest.raises(RvneError, match="digest"):
        icount.load(path)
    path.write_text("{")
    with pytest.raises(RvneError, match="not JSON"):
        icount.load(path)
    with pytest.raises(RvneError, match="cannot read"):
        icount.load(tmp_path / "missing.json")


def test_readme_quotes_the_recorded_counts(shipped):
    """README's Benchmarks paragraph takes its instruction counts from the
    record, so a re-measurement that is not carried into README fails here."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    bench = readme[readme.index("## Benchmarks"):readme.index("## What was verified where")]
    bench = " ".join(bench.split())
    # The S3 counts are recorded, not measured by CI: README says when.
    assert f"recorded at commit {shipped['commit'][:8]}" in bench
    for core in ("esp32s3", "lx6"):
        for kernels in icount.KERNELS:
            for dtype in shipped["counts"][core][kernels]:
                push = shipped["counts"][core][kernels][dtype]["push"]
                assert f"{push:,}" in bench, (core, kernels, dtype, push)
