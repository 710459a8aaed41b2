"""`rvne plan` and the arena formula: the menuconfig help, rvne.plan and the
firmware's rvne_head_arena_size (INFO/WINDOW arena= of the POSIX virtual
device) must agree; the plan's verdicts must go both ways; `rvne pack`
warns when the blob will not fit the default partition."""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rvne import icount, plan
from rvne.io import upstream_init
from rvne.link.device import Device
from rvne.model.contract import Dims
from rvne.targets import start_target

ROOT = Path(__file__).resolve().parents[1]
KCONFIG = ROOT / "firmware" / "ports" / "esp32s3" / "main" / "Kconfig.projbuild"
NAMES = ("input_dim", "n_q_heads", "n_kv_heads", "head_dim", "n_layers", "n_classes")
CASES = [(Dims(16, 4, 1, 32, 2, 4), (1, 100, 128)), (Dims(6, 3, 3, 5, 3, 7), (2, 9, 40))]


def kconfig_formula():
    text = KCONFIG.read_text()
    m = re.search(r"^\s*arena = (4 \* \(.*\))\s*$", text, re.M)
    assert m, "the RVNE_ARENA_WINDOW help has no `arena = ...` line"
    expr = m.group(1)
    assert re.fullmatch(r"[\w\s*+()]+", expr)
    return lambda dims, w: eval(expr, {"__builtins__": {}}, {**dict(zip(NAMES, dims)), "w": w})


def rvne(*args, cwd):
    return subprocess.run([sys.executable, "-m", "rvne", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("dims,windows", CASES)
def test_arena_formula_matches_the_firmware(dims, windows):
    formula = kconfig_formula()
    blob = upstream_init.init_blob(dims=dims, seed=5)
    with start_target("sim", blob, window=windows[0]) as t, Device(t.url, timeout=5) as dev:
        got = {windows[0]: dev.info().arena}
        for w in windows[1:]:
            window, arena = dev.window(w)
            assert window == w
            got[w] = arena
    for w, arena in got.items():
        assert plan.arena_bytes(dims, w) == arena, (dims, w)
        assert formula(dims, w) == arena, (dims, w)
    # The help text's per-frame cost: the caches and one score per query head.
    per_frame = got[windows[2]] - got[windows[1]]
    assert per_frame == (windows[2] - windows[1]) * 4 * (2 * dims.n_layers * dims.kv_dim + dims.n_q_heads)


def test_macs_count_every_multiply_add():
    d = Dims(16, 4, 1, 32, 2, 4)
    # q,k,v,o projections + scores and weighted sum over W per head, per layer; classifier.
    assert plan.macs_per_frame(d, 100) == 2 * (16 * 128 + 16 * 32 * 2 + 128 * 16 + 2 * 4 * 100 * 32) + 16 * 4
    assert plan.macs_per_frame(d, 101) - plan.macs_per_frame(d, 100) == 2 * 2 * 4 * 32


def test_plan_of_the_example_fits(tmp_path):
    upstream_init_path = tmp_path / "m.rvne"
    upstream_init_path.write_bytes(upstream_init.init_blob())
    r = rvne("plan", "m.rvne", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    p = json.loads(r.stdout)
    assert p["ok"] is True and p["fits_partition"] is True and p["fits_ram"] is True
    assert p["blob_bytes"] == upstream_init_path.stat().st_size
    # Either slot must hold it (an update writes the other one).
    assert p["partition_bytes"] == 0x160000 and p["partition_offset"] == 0x130000 and p["layout"] == "slots"
    assert p["partition_label"] == "rvne_a"
    assert p["window"] == 100 and p["arena_bytes"] == 53472      # docs/esp32s3.md, Stack and heap
    assert p["arena_window"] == 128 and p["app_arena_bytes"] == 68256
    # The measured case itself: the counts tools/bench_icount.py --record wrote.
    s3 = icount.load()["counts"]["esp32s3"]
    assert p["insns_per_frame"] == s3["asm"]["fp32"]["push"] and p["insns_per_frame_c"] == s3["c"]["fp32"]["push"]
    assert icount.load()["commit"][:12] in p["insns_source"]
    text = rvne("plan", "m.rvne", "--window", "256", cwd=tmp_path)
    assert text.returncode == 0
    assert "135840 bytes at W=256" in text.stdout and text.stdout.rstrip().endswith("OK")


def test_plan_without_a_usable_record_says_why_and_plans_the_rest(tmp_path, monkeypatch):
    path = tmp_path / "m.rvne"
    path.write_bytes(upstream_init.init_blob())
    record = tmp_path / "icount.json"
    record.write_text(icount.PATH.read_text().replace('"schema": 1', '"schema": 0'))
    monkeypatch.setattr(icount, "PATH", record)
    p = plan.make_plan(path)
    assert p.insns_per_frame is None and p.insns_per_frame_c is None and "not schema 1" in p.insns_source
    text = plan.render_text(p)
    assert "estimate   no estimate: icount.json: not schema 1" in text and text.endswith("OK")


def test_fp16_estimate_follows_where_the_weights_run(tmp_path):
    path = tmp_path / "h.rvne"
    path.write_bytes(upstream_init.init_blob(fp16=True))
    rec = icount.load()
    roomy = plan.make_plan(path)
    assert roomy.weights == "expanded"
    assert roomy.insns_per_frame == icount.estimate(rec, roomy.dims, 100, "fp16")
    tight = plan.make_plan(path, ram_budget=roomy.ram_bytes)          # the arena fits, the expansion does not
    assert tight.weights == "no-room"
    assert tight.insns_per_frame == icount.estimate(rec, tight.dims, 100, "fp16_decode") > roomy.insns_per_frame
    assert "decoded at every push" in plan.render_text(tight)


def test_plan_says_what_does_not_fit(tmp_path):
    (tmp_path / "m.rvne").write_bytes(upstream_init.init_blob())
    small = tmp_path / "small.csv"
    small.write_text("nvs, data, nvs, 0x9000, 0x6000,\nfactory, app, factory, 0x10000, 0x100000,\n"
                     "rvne, data, 0x40, 0x110000, 0x8000,\n")
    r = rvne("plan", "m.rvne", "--partitions", small, cwd=tmp_path)
    assert r.returncode == 1
    assert "DOES NOT FIT" in r.stdout and f"{41244 - 0x8000} bytes over" in r.stdout
    r = rvne("plan", "m.rvne", "--ram-budget", "60000", "--json", cwd=tmp_path)
    assert r.returncode == 1
    p = json.loads(r.stdout)
    assert p["fits_partition"] is True and p["fits_ram"] is False and p["ok"] is False
    assert p["ram_bytes"] == p["app_arena_bytes"] + p["queue_bytes"] + p["task_bytes"] + p["static_bytes"]


def test_plan_refuses_bad_input_in_one_line(tmp_path):
    (tmp_path / "junk.rvne").write_bytes(b"not a blob")
    r = rvne("plan", "junk.rvne", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "junk.rvne" in r.stderr
    (tmp_path / "m.rvne").write_bytes(upstream_init.init_blob())
    r = rvne("plan", "m.rvne", "--window", "0", cwd=tmp_path)
    assert r.returncode == 2
    (tmp_path / "nolabel.csv").write_text("nvs, data, nvs, 0x9000, 0x6000,\n")
    r = rvne("plan", "m.rvne", "--partitions", "nolabel.csv", cwd=tmp_path)
    assert r.returncode == 1 and "rvne" in r.stderr and "Traceback" not in r.stderr


def test_pack_and_init_warn_when_the_blob_will_not_fit(tmp_path):
    big = rvne("init", "big.rvne", "--dims", "256,8,2,64,2,16", cwd=tmp_path)
    assert big.returncode == 0, big.stderr
    assert "warning: big.rvne is" in big.stderr and "larger than partition 'rvne_a' (1441792 bytes" in big.stderr
    assert (tmp_path / "big.rvne").stat().st_size > 0x160000
    ok = rvne("init", "ok.rvne", cwd=tmp_path)
    assert ok.returncode == 0 and ok.stderr == ""
    # pack: the same warning, from weights
    assert rvne("export", "big.rvne", "w.npz", cwd=tmp_path).returncode == 0
    packed = rvne("pack", "w.npz", "packed.rvne", "--dims", "256,8,2,64,2,16", cwd=tmp_path)
    assert packed.returncode == 0, packed.stderr
    assert "warning: packed.rvne is" in packed.stderr and "rvne plan packed.rvne" in packed.stderr
    half = rvne("pack", "w.npz", "half.rvne", "--dims", "256,8,2,64,2,16", "--fp16", cwd=tmp_path)
    assert half.returncode == 0 and "warning" not in half.stderr


def test_plan_of_the_single_partition_layout_says_updates_are_refused(tmp_path):
    (tmp_path / "m.rvne").write_bytes(upstream_init.init_blob())
    old = tmp_path / "old.csv"
    old.write_text("factory, app, factory, 0x10000, 0x100000,\nrvne, data, 0x40, 0x110000, 0x200000,\n")
    r = rvne("plan", "m.rvne", "--partitions", old, "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    p = json.loads(r.stdout)
    assert p["layout"] == "single" and p["partition_label"] == "rvne" and p["partition_bytes"] == 0x200000
    text = rvne("plan", "m.rvne", "--partitions", old, cwd=tmp_path)
    assert "E_NO_SLOTS" in text.stdout


def test_plan_shows_the_ram_of_fp16_expanded_and_when_it_does_not_fit(tmp_path):
    # docs/model.md, "FP16 weights": the app expands FP16 weights to FP32 at
    # load when the heap has room, else decodes them (INFO weights=no-room).
    (tmp_path / "h.rvne").write_bytes(upstream_init.init_blob(fp16=True))
    p = json.loads(rvne("plan", "h.rvne", "--json", cwd=tmp_path).stdout)
    assert p["expand_bytes"] == 2 * (p["blob_bytes"] - 28) == 41216
    assert p["ram_expanded_bytes"] == p["ram_bytes"] + p["expand_bytes"]
    assert (p["fits_ram_expanded"], p["weights"], p["ok"]) == (True, "expanded", True)
    # A budget between the two: the model fits, its expansion does not.
    budget = p["ram_bytes"] + p["expand_bytes"] // 2
    r = rvne("plan", "h.rvne", "--ram-budget", budget, "--json", cwd=tmp_path)
    p = json.loads(r.stdout)
    assert r.returncode == 0 and (p["fits_ram_expanded"], p["weights"], p["ok"]) == (False, "no-room", True)
    text = rvne("plan", "h.rvne", "--ram-budget", budget, cwd=tmp_path).stdout
    assert "41216 bytes more RAM" in text and "DOES NOT FIT; the app falls back to decoding" in text
    # FP32 weights are read in place: no expansion, no line.
    (tmp_path / "f.rvne").write_bytes(upstream_init.init_blob())
    p = json.loads(rvne("plan", "f.rvne", "--json", cwd=tmp_path).stdout)
    assert (p["expand_bytes"], p["weights"]) == (0, "fp32")
    assert "expanded to FP32" not in rvne("plan", "f.rvne", cwd=tmp_path).stdout


@pytest.mark.parametrize("dims", [Dims(16, 4, 1, 32, 2, 4), Dims(24, 6, 2, 8, 2, 5), Dims(40, 2, 1, 8, 1, 50)],
                         ids=str)
def test_int8_sizes_match_the_firmware(dims, tmp_path):
    """An int8 blob's bytes and arena (rvne_head.c's state_bytes_i8: the
    acc words are max(Q, D, C), C the largest in the last case) as the
    virtual device reports them, at three windows."""
    from rvne.io import blob as blobmod
    from rvne.model import quantize

    arrays = blobmod.parse_loadable(upstream_init.init_blob(dims=dims, seed=5)).tensors()
    model, _ = quantize.quantize(arrays, dims, [np.random.default_rng(0).standard_normal((9, dims.input_dim))], 8)
    data = blobmod.from_int8(model)
    assert plan.blob_bytes(dims, "int8") == len(data)
    with start_target("sim", data, window=3) as t, Device(t.url, timeout=5) as dev:
        got = {3: dev.info().arena}
        for w in (7, 100):
            got[w] = dev.window(w)[1]
    for w, arena in got.items():
        assert plan.arena_bytes(dims, w, "int8") == arena, (dims, w)
    path = tmp_path / "q.rvne"
    path.write_bytes(data)
    p = plan.make_plan(path, window=100)
    assert p.dtype == "int8" and p.arena_bytes == got[100] and p.blob_bytes == len(data)
    assert p.trace_bytes == 4 * (dims.n_layers * (2 * dims.q_dim + 2 * dims.kv_dim + dims.input_dim) + dims.n_classes)


def test_a_float_models_trace_bytes_are_the_devices(tmp_path):
    """The trace of a float model holds the scores, W a query head and layer
    (docs/protocol.md, TRACE): what `rvne plan` prints is what TRACE ON takes."""
    from rvne.io import blob as blobmod
    from rvne.model import contract

    dims = Dims(16, 4, 2, 8, 2, 3)
    rng = np.random.default_rng(0)
    data = blobmod.from_arrays({s.name: rng.standard_normal(s.shape).astype(np.float32)
                                for s in contract.tensor_specs(dims)}, dims, False)
    path = tmp_path / "f.rvne"
    path.write_bytes(data)
    with start_target("sim", data, window=9) as t, Device(t.url, timeout=5) as dev:
        floats = dev.trace_on()
    assert plan.make_plan(path, window=9).trace_bytes == 4 * floats
    assert floats == dims.n_layers * (2 * dims.q_dim + 2 * dims.kv_dim + dims.input_dim + 9 * dims.n_q_heads) + 3
