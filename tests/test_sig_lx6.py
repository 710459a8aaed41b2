"""The signed-model check on the emulated esp32-class core (issue 33):
rvne_sig_check over Mbed TLS built from Debian's source package with the
board's compiler (`make lx6-bench-sig`, tools/bench_sig.py), on QEMU's lx60
de233_fpu: a model signed by espsecure with the trusted key passes, the
same with one byte flipped is refused (E_BAD_SIGNATURE), and the counts it
prints hold together (the hash alone is part of the check). The
instruction counts themselves are the bench's to print, not asserted."""
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "tools"))
    spec = importlib.util.spec_from_file_location("bench_sig", ROOT / "tools" / "bench_sig.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_lx6_core_verifies_a_signed_model_and_refuses_a_changed_one(bench):
    rows = bench.run()
    assert [r["model"] for r in rows] == [m[0] for m in bench.MODELS]
    for r in rows:
        assert r["rc"] == "OK" and r["tampered_rc"] == "E_BAD_SIGNATURE", r
        assert r["bytes"] == r["payload"] + 4096 and r["payload"] >= r["blob"] + 16
        assert 0 < r["sha256"] < r["check"] and r["rest"] > 0
    # The RSA part does not grow with the model; the hash does.
    small, large = rows
    assert large["sha256"] > 1.5 * small["sha256"]
    assert abs(large["rest"] - small["rest"]) < 0.2 * small["rest"]


def test_the_bench_refuses_a_run_whose_check_failed(bench, monkeypatch, capsys):
    monkeypatch.setattr(bench, "run", lambda: [{"model": "m", "blob": 1, "bytes": 4113, "rc": "E_BAD_SIGNATURE",
                                                "payload": 17, "check": 10, "sha256": 5, "rest": 5,
                                                "tampered_rc": "E_BAD_SIGNATURE"}])
    assert bench.main([]) == 1
    assert "rc=E_BAD_SIGNATURE" in capsys.readouterr().out
