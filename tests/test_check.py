"""rvne.check and `rvne check` / `rvne device info` against a Python device
that streams the reference (so a right device passes and a device that is
off by a little, holds another blob, or is gone fails)."""

import json

import pytest

import numpy as np

from fake_device import FakeDevice, ReferenceModel
from rvne import check, cli
from rvne.io import upstream_init
from rvne.link.device import Device

SMALL = (8, 2, 1, 4, 1, 3)   # D, HQ, HKV, HD, L, C: quick on any device


@pytest.fixture(scope="module")
def blob32():
    return upstream_init.init_blob(SMALL)


@pytest.fixture(scope="module")
def blob16():
    return upstream_init.init_blob(SMALL, fp16=True)


def serve(blob_bytes, window=5, skew=0.0, line_max=1024):
    return FakeDevice(ReferenceModel(blob_bytes, window=window, skew=skew), line_max=line_max, window=window)


def test_right_device_passes(blob32):
    with serve(blob32) as fake, Device(fake.url, timeout=1) as dev:
        r = check.run_check(dev, blob32, vectors=2, seed=3)
    assert r.passed, check.render(r)
    assert min(r.lengths) > r.window == 5 and r.length == max(r.lengths) and len(r.lengths) == 2
    assert r.logits == sum(r.lengths) * 3 and r.bad == 0
    assert r.argmax_agree == r.frames == sum(r.lengths)
    assert r.max_abs < 1e-6
    assert "PASS" in check.render(r)


def test_window_command_is_sent_first(blob32):
    with serve(blob32, window=5) as fake, Device(fake.url, timeout=1) as dev:
        r = check.run_check(dev, blob32, vectors=1, window=3)
    assert r.passed and r.window == 3 and r.length == 3 + 2     # W + 3 would be a multiple of W
    assert fake.executed[0] == "WINDOW"


@pytest.mark.parametrize("window", [1, 2, 3, 8, 10, 64, 100, 256])
def test_generated_sequences_exercise_the_state(window):
    """docs/model.md, "What `rvne check` streams": past W, lengths that
    differ and are no multiple of W, nor is any running total (a ring index
    a RESET left alone is never back at 0 by chance); a share of Cauchy
    values; the same frames for the same seed."""
    n = check.default_length(window)
    lengths = check.sequence_lengths(6, n, window, seed=0)
    assert lengths[0] == n and min(lengths) > window and len(lengths) == 6
    assert window == 1 or all(t % window for t in lengths)
    if window >= 8:         # room for that many lengths
        assert len(set(lengths[:4])) == 4 and all(t % window for t in np.cumsum(lengths))
    frames = check.generated_frames(6, n, window, 16, seed=0)
    assert [len(f) for f in frames] == lengths and all(f.dtype == np.float32 for f in frames)
    assert all(np.abs(f).max() < 6 for f in frames[0::2])            # N(0, 1)
    long = check.generated_frames(4, 1000, window, 16, seed=0)       # enough values for their statistics
    values = np.concatenate(long[1::2]).ravel()
    assert np.abs(values).max() > 10                                  # N(0, 1) over as many: about 4.5
    assert 0.001 < np.mean(np.abs(values) > 4) < 0.01       # 1/8 * P(|t_3| > 4) = 0.0035; N(0, 1): 6e-5
    again = check.generated_frames(6, n, window, 16, seed=0)
    assert all(np.array_equal(a, b) for a, b in zip(frames, again))
    other = check.generated_frames(6, n, window, 16, seed=1)
    assert not np.array_equal(frames[0][:4], other[0][:4])


def test_sequences_of_different_lengths_are_saved_padded(blob32, tmp_path):
    from rvne import results

    with serve(blob32) as fake, Device(fake.url, timeout=1) as dev:
        r = check.run_check(dev, blob32, vectors=3, seed=2)
    assert r.passed and len(set(r.lengths)) == 3
    results.save_npz(r, tmp_path / "run.npz")
    saved = np.load(tmp_path / "run.npz")
    assert saved["lengths"].tolist() == r.lengths and saved["device"].shape[:2] == (3, r.length)
    for v, n in enumerate(r.lengths):
        assert np.isfinite(saved["device"][v, :n]).all() and np.isnan(saved["device"][v, n:]).all()
        assert np.isfinite(saved["frames"][v, :n]).all() and np.isnan(saved["reference"][v, n:]).all()


class _ResetKeepsRing(ReferenceModel):
    """A device whose RESET empties the cache but leaves the ring's write index."""

    def reset(self):
        nxt = self._stream._next
        self._stream.reset()
        self._stream._next = nxt


@pytest.mark.parametrize("window", [8, 10])
def test_a_reset_that_keeps_the_ring_index_fails(blob32, window):
    """At W 8 and 10 the old default length (2W) brought the index back to
    0 between sequences, and such a device passed."""
    model = _ResetKeepsRing(blob32, window=window)
    with FakeDevice(model, window=window) as fake, Device(fake.url, timeout=1) as dev:
        r = check.run_check(dev, blob32)
    assert not r.passed and r.bad > 0 and r.worst.vector > 0, check.render(r)
    with serve(blob32, window=window) as fake, Device(fake.url, timeout=1) as dev:
        assert check.run_check(dev, blob32).passed


def test_skewed_device_fails_with_the_worst_logit(blob32):
    # 1e-3 is ten times the absolute tolerance: every logit is out.
    with serve(blob32, skew=1e-3) as fake, Device(fake.url, timeout=1) as dev:
        r = check.run_check(dev, blob32, vectors=1)
    assert not r.passed
    assert r.bad == r.logits > 0
    assert r.max_abs == pytest.approx(1e-3, rel=1e-2)
    assert r.worst is not None and r.worst.device != r.worst.reference
    assert check.render(r).endswith("FAIL")


def test_skew_inside_the_users_tolerance_passes_but_not_the_bound(blob32):
    # 2e-5 on every logit: inside the old fixed 1e-4 tolerance, far outside
    # what FP32 rounding can do to logits of this size.
    with serve(blob32, skew=2e-5) as fake, Device(fake.url, timeout=1) as dev:
        loose = check.run_check(dev, blob32, vectors=1, atol=1e-4, rtol=1e-4)
        tight = check.run_check(dev, blob32, vectors=1)
    assert loose.passed and loose.rule == "tolerance" and 1e-5 < loose.max_abs < 1e-4
    assert "--atol/--rtol" in check.render(loose)
    assert not tight.passed and tight.rule == "bound" and tight.max_ratio > 1
    assert tight.worst is not None and tight.worst.ratio == tight.max_ratio > 1


def test_device_holding_another_blob_fails_before_streaming(blob32, blob16):
    with serve(blob16) as fake, Device(fake.url, timeout=1) as dev:
        r = check.run_check(dev, blob32, vectors=1)
    assert not r.passed and r.logits == 0
    text = " ".join(r.problems)
    assert "blob CRC differs" in text and "dtype differs: device fp16, file fp32" in text
    assert "PUSH" not in fake.executed and "RUN" not in fake.executed


def test_fp16_blob_on_small_line_max_chunks(blob16):
    with serve(blob16, window=7, line_max=1024) as fake, Device(fake.url, timeout=1) as dev:
        r = check.run_check(dev, blob16, vectors=1, length=200)
    assert r.passed and r.frames == 200
    assert fake.executed.count("PUSH") >= 1   # 200 frames of D=8 need several requests


def test_cli_check_exit_codes_and_json(tmp_path, blob32, capsys):
    path = tmp_path / "m.rvne"
    path.write_bytes(blob32)
    with serve(blob32) as fake:
        assert cli.main(["check", str(path), "--port", fake.url, "--vectors", "1", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["passed"] is True and out["blob_crc"] == int.from_bytes(blob32[-4:], 'little')
    with serve(blob32, skew=1.0) as fake:
        assert cli.main(["check", str(path), "--port", fake.url, "--vectors", "1"]) == 1
        assert capsys.readouterr().out.rstrip().endswith("FAIL")
    # The fake device does not trace: a PASS says so, and --strict fails it.
    with serve(blob32) as fake:
        assert cli.main(["check", str(path), "--port", fake.url, "--vectors", "1"]) == 0
        last = capsys.readouterr().out.rstrip().splitlines()[-1]
        assert last == "PASS (end to end only: --trace sample asked, the device did not trace)", last
        assert cli.main(["check", str(path), "--port", fake.url, "--vectors", "1", "--strict"]) == 1
        assert capsys.readouterr().out.rstrip().endswith("the device did not trace, and --strict fails that)")
        assert cli.main(["check", str(path), "--port", fake.url, "--vectors", "1", "--strict", "--trace", "off"]) == 0


def test_cli_check_bad_blob_file_is_one_line_error(tmp_path, capsys):
    path = tmp_path / "bad.rvne"
    path.write_bytes(b"\xff" * 64)
    assert cli.main(["check", str(path), "--port", "socket://127.0.0.1:1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("rvne: error:") and "erased" in err and "\n" not in err


def test_cli_check_no_device_is_one_line_error(tmp_path, blob32, capsys):
    path = tmp_path / "m.rvne"
    path.write_bytes(blob32)
    with serve(blob32) as fake:
        fake.drop_requests = 100
        rc = cli.main(["check", str(path), "--port", fake.url, "--timeout", "0.2", "--retries", "0"])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and "no reply within 0.2 s" in err and "\n" not in err


def test_cli_device_info(blob32, capsys):
    with serve(blob32) as fake:
        assert cli.main(["device", "info", "--port", fake.url]) == 0
    out = capsys.readouterr().out
    assert any(line.split() == ["dims", "8,2,1,4,1,3"] for line in out.splitlines())
    assert any(line.split() == ["crc", f"{int.from_bytes(blob32[-4:], 'little'):08X}"]
               for line in out.splitlines())


def test_cli_usage_errors_exit_2(tmp_path):
    with pytest.raises(SystemExit) as exc:
        cli.main(["check", "x.rvne", "--port", "p", "--target", "sim"])   # both
    assert exc.value.code == 2
    # Neither: the port comes from ESPPORT or the one board attached
    # (tests/test_board_conventions.py), so that is not a usage error.
    with pytest.raises(SystemExit) as exc:
        cli.main(["check", "x.rvne", "--port", "p", "--vectors", "0"])
    assert exc.value.code == 2


class ConstantModel:
    """A wrong device: the same logits whatever it is sent."""

    def __init__(self, blob_bytes, value):
        from rvne.io import blob

        ref = ReferenceModel(blob_bytes, window=5)
        self.dim, self.n_classes, self.info = ref.dim, ref.n_classes, ref.info
        self.value = np.float32(value)

    def reset(self):
        pass

    def push(self, frame):
        return np.full(self.n_classes, self.value, np.float32)


def _scaled_blob(scale, fp16=False):
    from rvne.io import blob
    from rvne.model import contract

    arrays = {k: v * np.float32(scale) for k, v in upstream_init.init_arrays(SMALL).items()}
    return blob.from_arrays(arrays, contract.Dims(*SMALL), fp16)


@pytest.mark.parametrize("rule", [{}, {"atol": 1e-4, "rtol": 1e-4}], ids=["bound", "tolerance"])
def test_zeros_never_pass_an_overflowing_model(rule):
    """Issue 16 item 1: |0 - inf| = inf <= tol = inf passed a device that
    answers 0.0 for every logit. Where the model leaves the FP32 range no
    FP32 result can be vouched for, either way: UNDECIDED (exit 3), with the
    model named before the device, where it leaves and what would help."""
    huge = _scaled_blob(1e30)
    with FakeDevice(ConstantModel(huge, 0.0), window=5) as fake, Device(fake.url, timeout=5) as dev:
        r = check.run_check(dev, huge, vectors=1, length=6, **rule)
    assert not r.passed and r.outcome == "UNDECIDED" and r.exit_code == 3 and r.undecided == r.logits > 0
    note = " ".join(r.model_notes)
    assert "leaves the FP32 range" in note and "first at sequence 0 frame 0, layer 0 attention" in note, note
    assert "smaller weights" in note
    text = check.render(r).splitlines()
    assert text[-1].startswith("UNDECIDED") and [i for i, t in enumerate(text) if t.startswith("MODEL")][0] < \
        [i for i, t in enumerate(text) if t.startswith("tolerance")][0]
    d = r.to_dict()
    assert d["outcome"] == "UNDECIDED" and len(d["undecided_values"]) == r.logits
    assert "FP32 range" in d["undecided_values"][0]["why"]


@pytest.mark.parametrize("rule", [{}, {"atol": 1e-4, "rtol": 1e-4}], ids=["bound", "tolerance"])
def test_nan_model_never_passes(rule):
    """Issue 16 item 1: a blob whose logits are all NaN passed a device
    answering NaN. Since issue 33 its NaN weights break rule 18: refused
    (E_NONFINITE) before a frame is sent, as the device refuses to load it."""
    from rvne.errors import NonFiniteError

    nan = _scaled_blob(np.nan)
    with FakeDevice(ConstantModel(_scaled_blob(1.0), np.nan), window=5) as fake, \
            Device(fake.url, timeout=5) as dev:
        with pytest.raises(NonFiniteError, match="weight 0 .* is nan"):
            check.run_check(dev, nan, vectors=1, length=6, **rule)


def test_users_frames_save_and_plot(tmp_path, blob32, capsys):
    path = tmp_path / "m.rvne"
    path.write_bytes(blob32)
    seqs = np.random.default_rng(5).standard_normal((3, 9, SMALL[0])).astype(np.float32)
    np.save(tmp_path / "seqs.npy", seqs)
    np.save(tmp_path / "one.npy", seqs[1].astype(np.float64))
    with serve(blob32) as fake:
        rc = cli.main(["check", str(path), "--port", fake.url, "--frames", str(tmp_path / "seqs.npy"),
                       "--save", str(tmp_path / "r.npz"), "--plot", str(tmp_path / "r.png"), "--json"])
        out = json.loads(capsys.readouterr().out)
        assert rc == 0 and out["passed"] and out["frames_source"] == "file"
        assert out["vectors"] == 3 and out["length"] == 9 and out["logits"] == 3 * 9 * SMALL[5]
        assert out["rule"] == "bound" and 0 < out["host_gap"] < 1 and out["worst"]["ratio"] == out["max_ratio"]
        saved = np.load(tmp_path / "r.npz")
        np.testing.assert_array_equal(saved["frames"], seqs)
        assert saved["device"].shape == saved["reference"].shape == saved["bound"].shape == (3, 9, SMALL[5])
        assert saved["reference"].dtype == np.float64 and str(saved["rule"]) == "bound"
        assert np.all(np.abs(saved["device"] - saved["reference"]) <= saved["bound"])
        assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        # One sequence [T, D], float64 in the file: streamed as the FP32 values a device gets.
        assert cli.main(["check", str(path), "--port", fake.url, "--frames", str(tmp_path / "one.npy"),
                         "--atol", "1e-3", "--save", str(tmp_path / "one.npz")]) == 0
        text = capsys.readouterr().out
        assert "1 sequences x 9 frames from the frames file" in text and "|a-b| <= 0.001 + 0*|b|" in text
        one = np.load(tmp_path / "one.npz")
        np.testing.assert_array_equal(one["frames"][0], seqs[1])
        assert str(one["rule"]) == "tolerance atol=0.001 rtol=0"
        np.testing.assert_array_equal(one["device"][0], saved["device"][1])   # same frames, same logits


def test_frames_file_refusals(tmp_path, blob32, capsys):
    path = tmp_path / "m.rvne"
    path.write_bytes(blob32)
    np.save(tmp_path / "wide.npy", np.zeros((2, 5, SMALL[0] + 1), np.float32))
    bad = np.zeros((2, 5, SMALL[0]), np.float32)
    bad[1, 3, 2] = np.inf
    np.save(tmp_path / "inf.npy", bad)
    for name, words in [("wide.npy", "[T, 8] or [N, T, 8]"), ("inf.npy", "sequence 1 frame 3 value 2 is inf")]:
        assert cli.main(["check", str(path), "--port", "socket://127.0.0.1:1", "--frames",
                         str(tmp_path / name)]) == 1
        err = capsys.readouterr().err.strip()
        assert words in err and "\n" not in err, err
    with pytest.raises(SystemExit) as exc:          # a usage error: check's usage, then one line
        cli.main(["check", str(path), "--port", "p", "--frames", "x.npy", "--vectors", "2"])
    assert exc.value.code == 2
    for bad_tol in ("-1", "nan", "inf", "x"):
        with pytest.raises(SystemExit) as exc:
            cli.main(["check", str(path), "--port", "p", "--atol", bad_tol])
        assert exc.value.code == 2


def test_report_says_when_the_bound_is_decided_per_logit(blob32, monkeypatch):
    from rvne.model import bounds

    monkeypatch.setattr(bounds, "ADJOINT_FLOPS", 0)
    with serve(blob32) as fake, Device(fake.url, timeout=1) as dev:
        r = check.run_check(dev, blob32, vectors=1)
    assert r.passed and r.bound_method == "lazy" and r.undecided == 0, check.render(r)
    assert "decided per logit" in check.render(r)
    with serve(blob32, skew=1e-3) as fake, Device(fake.url, timeout=1) as dev:
        r = check.run_check(dev, blob32, vectors=1)
    assert not r.passed and r.bad > 0 and r.bound_method == "lazy", check.render(r)


def test_undecided_logits_never_pass():
    """Logits the lazy bound left undecided are counted apart and make the
    outcome UNDECIDED, exit 3 (never PASS, never FAIL), with what to do
    about it; a logit proven out besides makes it FAIL."""
    r = check.CheckReport(url="u", blob_crc=0, blob_dims=(1,) * 6, blob_dtype="fp32", frames=2)
    ref = np.zeros((1, 2, 3))
    got = ref + 1e-6
    allowed = np.full(ref.shape, 1e-7)        # the device is beyond the cheap bound everywhere...
    undecided = np.zeros(ref.shape, dtype=bool)
    undecided[0, 1, 2] = True                 # ...and one logit's exact bound was never computed
    allowed[~undecided] = 1e-5
    check._judge(r, got, ref, ref, allowed, allowed, undecided)
    assert r.bad == 0 and r.undecided == 1 and not r.passed and r.outcome == "UNDECIDED" and r.exit_code == 3
    text = check.render(r)
    assert text.splitlines()[-1] == "UNDECIDED" and "--atol/--rtol" in text and "work cap" in text, text
    got[0, 0, 0] = 1.0
    check._judge(r, got, ref, ref, allowed, allowed, undecided)
    assert r.outcome == "FAIL" and r.exit_code == 1 and check.render(r).splitlines()[-1] == "FAIL"
    got[0, 0, 0] = ref[0, 0, 0]
    allowed[:] = 1e-5
    check._judge(r, got, ref, ref, allowed, allowed, np.zeros_like(undecided))
    assert r.passed and r.exit_code == 0


def test_cli_exit_3_when_undecided(tmp_path, capsys):
    huge = _scaled_blob(1e30)
    path = tmp_path / "huge.rvne"
    path.write_bytes(huge)
    with FakeDevice(ConstantModel(huge, 0.0), window=5) as fake:
        rc = cli.main(["check", str(path), "--port", fake.url, "--vectors", "1", "--length", "6", "--json",
                       "--save", str(tmp_path / "r.npz")])
    out = json.loads(capsys.readouterr().out)
    assert rc == 3 and out["outcome"] == "UNDECIDED" and out["passed"] is False and out["model_notes"]
    with np.load(tmp_path / "r.npz") as z:
        assert str(z["outcome"]) == "UNDECIDED" and (z["undecided_why"][0, :6] == check.WHY_RANGE).all()


def test_the_host_outside_the_bound_is_said_about_the_model(blob32):
    """Where the host's own FP32 reference (a correct implementation) falls
    outside the bound, the bound does not hold on these frames: logits
    outside it are undecided, not failed, and a MODEL line says where the
    FP32 values depart from float64 before any judgement of the device."""
    from rvne.io import blob as blobmod
    from rvne.model import reference

    parsed = blobmod.parse_loadable(blob32)
    w, dims = parsed.tensors(), parsed.header.dims
    frames = [np.random.default_rng(1).standard_normal((7, dims.input_dim)).astype(np.float32)]
    xs = []
    ref32 = reference.forward_batch(w, dims, frames[0], 5, xs=xs).astype(np.float64)
    assert len(xs) == dims.n_layers + 1
    xs64 = [[x.astype(np.float64) for x in xs]]
    xs64[0][-1] = xs64[0][-1] * 1.01          # float64 and FP32 part at the classifier's input
    r = check.CheckReport(url="u", blob_crc=0, blob_dims=tuple(dims), blob_dtype="fp32", frames=7, lengths=[7])
    ref = ref32 + 1e-3
    allowed = np.full(ref.shape, 1e-4)        # the host is 10x outside
    got = ref + 5e-4                          # and so is the device, by less
    why = check._judge(r, got, ref, ref32, allowed, allowed)
    assert r.host_gap == pytest.approx(10, rel=1e-3) and r.bad == 0 and r.undecided == got.size
    assert (why == check.WHY_HOST).all() and r.outcome == "UNDECIDED"
    check._model_notes(r, [None], xs64, w, frames, 5, why)
    note = " ".join(r.model_notes)
    assert "host's own FP32 reference is at 10x the allowance" in note, note
    assert "first at the classifier's input there (the output of layer 0)" in note and "smaller weights" in note
    got[0, 0] = ref[0, 0] + 1.0               # beyond what even the host is off by: still not proven wrong
    check._judge(r, got, ref, ref32, allowed, allowed)
    assert r.outcome == "UNDECIDED"
