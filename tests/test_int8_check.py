"""`rvne check` on int8 blobs (issue 35): the verdict is exact. A correct
virtual device equals rvne.model.int8 at every traced step and logit (at
several dims, GQA included); every int8 defect build fails naming the first
differing value at the step where it acts, and the correct variants pass
with zero difference; the text, --json, --save and --plot reports say so;
the float model is compared only as accuracy, never as the verdict."""

import json

import numpy as np
import pytest

import defect_devices as dd
from rvne import check, cli, results
from rvne.io import blob
from rvne.model import int8, steps
from rvne.model.contract import Dims

PASS_DIMS = (Dims(16, 4, 1, 32, 2, 4), Dims(24, 6, 2, 8, 2, 5), Dims(8, 2, 2, 4, 1, 3), Dims(32, 8, 2, 8, 3, 7))


@pytest.fixture(scope="module")
def defects_built():
    dd.build_defects()


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("dims", PASS_DIMS, ids=str)
def test_correct_device_equals_the_integer_reference(tmp_path, capsys, dims):
    path = write(tmp_path, "q.rvne", dd.int8_blob(dims))
    assert cli.main(["check", str(path), "--target", "sim", "--window", "12", "--length", "17", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["passed"] and r["rule"] == "exact" and r["blob_dtype"] == "int8", r
    assert r["bad"] == 0 and r["max_abs"] == 0 and r["logits"] == sum(r["lengths"]) * dims.n_classes
    assert r["traced"] == sum(r["lengths"]) and r["step_bad"] == 0 and r["step_max_ratio"] == 0
    assert r["first_wrong"] is None and "float_model" not in r


def test_the_text_report_states_the_exact_rule(tmp_path, capsys):
    dims = PASS_DIMS[1]
    path = write(tmp_path, "q.rvne", dd.int8_blob(dims))
    assert cli.main(["check", str(path), "--target", "sim", "--window", "6", "--length", "9"]) == 0
    out = capsys.readouterr().out
    assert "tolerance  exact (tolerance 0, docs/model.md): " in out
    n = out.split("tolerance  exact (tolerance 0, docs/model.md): ")[1].split()[0]
    assert n.split("/")[0] == n.split("/")[1] and int(n.split("/")[0]) > 0
    assert "steps      " in out and " equal" in out and "differing" not in out
    assert out.rstrip().endswith("PASS") and "float      " not in out


def test_float_model_is_accuracy_not_the_verdict(tmp_path, capsys):
    dims = PASS_DIMS[0]
    floats = write(tmp_path, "f.rvne", blob.from_arrays(dd.weights_for(dims), dims))
    path = write(tmp_path, "q.rvne", dd.int8_blob(dims))
    argv = ["check", str(path), "--target", "sim", "--window", "6", "--length", "9", "--float-model", str(floats)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("float      "))
    assert "accuracy, not the verdict" in line and "f.rvne" in line
    assert cli.main(argv + ["--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    f = r["float_model"]
    assert r["passed"] and f["frames"] == sum(r["lengths"]) and f["max_abs_error"] > 0   # int8 is not float
    # Only with an int8 blob, and never a tolerance for one.
    for bad in (["check", str(floats), "--target", "sim", "--float-model", str(floats)],
                ["check", str(path), "--target", "sim", "--atol", "1"]):
        with pytest.raises(SystemExit) as exc:
            cli.main(bad)
        assert exc.value.code == 2


def test_a_float_blobs_report_has_no_int8_fields(tmp_path):
    data = blob.from_arrays(dd.weights_for(PASS_DIMS[0]), PASS_DIMS[0])
    r = dd.run(data, 6, 9)
    assert r.rule == check.RULE_BOUND and "float_model" not in r.to_dict()
    assert "exact" not in check.render(r)


# -- the step judge on its own ---------------------------------------------------------------
def test_exact_step_judge_names_the_first_differing_value():
    dims = PASS_DIMS[1]
    model = blob.parse(dd.int8_blob(dims)).int8_model()
    frames = check.generated_frames(1, 9, 6, dims.input_dim, 3)[0]
    stream = int8.Int8Stream(model, 6)
    traces = []
    for f in frames:
        stream.push(f)
        traces.append(stream.trace.astype(np.float32))
    traces = np.stack(traces)
    judge = steps.ExactStepJudge(model, 6)
    ok = judge.sequence(frames, traces, seq_index=2)
    assert ok.bad == 0 and ok.values == traces.size and ok.first is None
    sizes = steps.point_sizes(dims)
    per_layer = sum(sizes[p] for p in steps.LAYER_POINTS)
    at = per_layer + sizes["q"] + sizes["k"] + 3            # layer 1, v[3]
    wrong = traces.copy()
    wrong[4, at] += 1
    res = judge.sequence(frames, wrong, seq_index=2)
    fw = res.first
    assert (fw.sequence, fw.frame, fw.layer, fw.quantity, fw.index) == (2, 4, 1, "v", 3)
    assert fw.device == traces[4, at] + 1 and fw.reference == traces[4, at] and fw.allowance == 0.0
    text = steps.first_wrong_text(fw)
    assert text.startswith("sequence 2 frame 4 layer 1 v[3] (kv head 0): device ") and "exact, tolerance 0" in text
    # A non-integer or NaN value is never equal.
    wrong = traces.copy()
    wrong[0, 0] = np.nan
    assert judge.sequence(frames, wrong).first.quantity == "q"


# -- defects and correct variants --------------------------------------------------------------
@pytest.mark.parametrize("name", list(dd.INT8_DEFECTS))
@pytest.mark.parametrize("dims", dd.INT8_DIMS, ids=str)
def test_int8_defect_fails_where_it_acts(defects_built, name, dims):
    r = dd.run_int8(name, dims)
    assert r.logits > 0 and not r.problems and r.traced > 0, check.render(r)
    assert not r.passed and r.step_bad > 0 and r.first_wrong is not None, check.render(r)
    fw = r.first_wrong
    assert fw.quantity in dd.INT8_DEFECTS[name], check.render(r)
    assert fw.device != fw.reference and fw.allowance == 0.0
    # The end-to-end comparison from the frames alone is exact too.
    assert r.bad > 0 and r.max_abs >= 1, check.render(r)


@pytest.mark.parametrize("name", dd.INT8_VARIANTS)
@pytest.mark.parametrize("dims", dd.INT8_DIMS, ids=str)
def test_int8_variant_passes_with_zero_difference(defects_built, name, dims):
    for kind in ("plain", "pow2", "loud", "boost"):        # every defect's blob
        r = dd.run_int8(name, dims, kind=kind)
        assert r.passed and r.max_abs == 0 and r.step_bad == 0 and r.traced > 0, (kind, check.render(r))


def test_defect_blobs_are_what_exercises_them(defects_built):
    """The crafted blobs matter: half-up rounding passes the plain blob
    (its factors M rarely give exact halves) and is caught on pow2's."""
    dims = dd.INT8_DIMS[0]
    assert dd.run_int8("i8_half_up", dims, kind="plain").passed
    assert not dd.run_int8("i8_half_up", dims, kind="pow2").passed


def test_a_failing_check_reports_the_first_wrong_everywhere(defects_built, tmp_path):
    dims = dd.INT8_DIMS[1]
    r = dd.run_int8("i8_rq_neighbour", dims)
    fw = r.first_wrong
    text = check.render(r)
    assert f"FIRST WRONG sequence {fw.sequence} frame {fw.frame} layer {fw.layer} {fw.quantity}[{fw.index}]" in text
    assert f"device {fw.device!r} reference {fw.reference!r} (exact, tolerance 0)" in text
    assert "first      differing logit: sequence " in text and text.rstrip().endswith("FAIL")
    d = json.loads(json.dumps(r.to_dict()))
    assert d["first_wrong"]["quantity"] == fw.quantity and d["first_wrong"]["reference"] == fw.reference
    results.save_npz(r, tmp_path / "r.npz")
    z = np.load(tmp_path / "r.npz")
    assert str(z["rule"]) == "exact" and (z["bound"][np.isfinite(z["bound"])] == 0).all()
    saved = json.loads(str(z["steps"]))["first_wrong"]
    assert (saved["frame"], saved["layer"], saved["quantity"], saved["index"]) == \
        (fw.frame, fw.layer, fw.quantity, fw.index)
    results.plot_png(r, tmp_path / "r.png")
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
