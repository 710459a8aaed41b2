"""rvne.check and `rvne check` / `rvne device info` against a Python device
that streams the reference (so a right device passes and a device that is
off by a little, holds another blob, or is gone fails)."""

import json

import pytest

from fake_device import FakeDevice, ReferenceModel
from rvne import check, cli, upstream_init
from rvne.device import Device

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
    assert r.length > r.window == 5
    assert r.logits == 2 * r.length * 3 and r.bad == 0
    assert r.argmax_agree == r.frames == 2 * r.length
    assert r.max_abs < 1e-6
    assert "PASS" in check.render(r)


def test_window_command_is_sent_first(blob32):
    with serve(blob32, window=5) as fake, Device(fake.url, timeout=1) as dev:
        r = check.run_check(dev, blob32, vectors=1, window=3)
    assert r.passed and r.window == 3 and r.length == 3 + 3
    assert fake.executed[0] == "WINDOW"


def test_skewed_device_fails_with_the_worst_logit(blob32):
    # 1e-3 is ten times the absolute tolerance: every logit is out.
    with serve(blob32, skew=1e-3) as fake, Device(fake.url, timeout=1) as dev:
        r = check.run_check(dev, blob32, vectors=1)
    assert not r.passed
    assert r.bad == r.logits > 0
    assert r.max_abs == pytest.approx(1e-3, rel=1e-2)
    assert r.worst is not None and r.worst.device != r.worst.reference
    assert check.render(r).endswith("FAIL")


def test_skew_inside_tolerance_passes(blob32):
    with serve(blob32, skew=2e-5) as fake, Device(fake.url, timeout=1) as dev:
        r = check.run_check(dev, blob32, vectors=1)
    assert r.passed and 1e-5 < r.max_abs < 1e-4


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
        assert out["passed"] is True and out["blob_crc"] == f"{int.from_bytes(blob32[-4:], 'little'):08X}"
    with serve(blob32, skew=1.0) as fake:
        assert cli.main(["check", str(path), "--port", fake.url, "--vectors", "1"]) == 1
        assert capsys.readouterr().out.rstrip().endswith("FAIL")


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
