"""The blob commands of the `rvne` CLI: outputs, exit codes (0 ok, 1 bad
input or failed check, 2 usage) and one-line errors without tracebacks."""

import json
import struct
import subprocess
import sys

import crcmod.predefined
import numpy as np
import pytest

from rvne.cli import main
from rvne.io import blob, upstream_init, weights as weights_io
from rvne.model import reference

ORACLE = crcmod.predefined.mkCrcFun("crc-32")


def run(capsys, *argv):
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse usage errors and --help
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line_error(err, *words):
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines, "expected an error line on stderr"
    assert lines[-1].startswith("rvne: error: ") or "error:" in lines[-1]
    assert "Traceback" not in err
    for w in words:
        assert w in err, (w, err)


@pytest.fixture
def example(tmp_path, capsys):
    path = tmp_path / "model.rvne"
    assert run(capsys, "init", path)[0] == 0
    return path


def test_init_default_is_upstream_example(example, capsys):
    data = example.read_bytes()
    assert len(data) == 41244
    assert struct.unpack("<I", data[-4:])[0] == 0xDC807956 == ORACLE(data[:-4])
    assert data == upstream_init.init_blob()


def test_init_options(tmp_path, capsys):
    out = tmp_path / "o.rvne"
    rc, text, _ = run(capsys, "init", out, "--fp16", "--dims", "8,6,3,4,3,5", "--seed", "0x1234")
    assert rc == 0 and "fp16" in text and "8,6,3,4,3,5" in text
    b = blob.parse(out.read_bytes())
    assert b.header.fp16 and b.header.dims == (8, 6, 3, 4, 3, 5) and b.loadable
    assert out.read_bytes() == upstream_init.init_blob((8, 6, 3, 4, 3, 5), 0x1234, True)


@pytest.mark.parametrize("argv", [
    ["init"], ["init", "x", "--dims", "1,2,3"], ["init", "x", "--dims", "16,6,4,8,1,2"],
    ["init", "x", "--seed", "zero"], ["init", "x", "--seed", "0"], ["infer", "a", "b"],
    ["infer", "a", "b", "--out", "c", "--window", "0"], ["nosuch"], [],
])
def test_usage_errors_exit_2(capsys, argv):
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and "usage:" in err and "Traceback" not in err


def test_help_for_every_command(capsys):
    for cmd in ("init", "pack", "export", "inspect", "verify", "infer"):
        rc, out, _ = run(capsys, cmd, "--help")
        assert rc == 0 and f"rvne {cmd}" in out


def test_verify_ok_and_failures(example, tmp_path, capsys):
    rc, out, err = run(capsys, "verify", example)
    assert rc == 0 and out.startswith("OK ") and "0xDC807956" in out and err == ""
    data = example.read_bytes()
    bad = {
        "truncated.rvne": (data[:1000], "E_LENGTH", "truncated"),
        "tiny.rvne": (data[:5], "E_TOO_SHORT", "5 bytes"),
        "empty.rvne": (b"", "E_TOO_SHORT", "0 bytes"),
        "swapped.rvne": (b"RVNE" + data[4:], "E_BAD_MAGIC", "byte order"),
        "erased.rvne": (b"\xff" * len(data), "E_ERASED", "erased flash? flash a blob with rvne flash"),
        "crc.rvne": (data[:-1] + bytes([data[-1] ^ 1]), "E_CRC", "stored"),
    }
    for name, (content, _code, words) in bad.items():
        p = tmp_path / name
        p.write_bytes(content)
        rc, out, err = run(capsys, "verify", p)
        assert rc == 1, name
        assert out == ""
        assert_one_line_error(err, words)


def test_verify_contract_and_partition(tmp_path, capsys):
    not_loadable = tmp_path / "nl.rvne"
    not_loadable.write_bytes(blob.serialize(blob.Header.for_dims((16, 4, 1, 32, 2, 4)), b"\0" * 16))
    rc, _, err = run(capsys, "verify", not_loadable)
    assert rc == 1
    assert_one_line_error(err, "weights_len is 16", "41216")
    assert run(capsys, "verify", not_loadable, "--container")[0] == 0
    part = tmp_path / "part.bin"
    part.write_bytes(upstream_init.init_blob() + b"\xff" * 1000)
    assert run(capsys, "verify", part)[0] == 1
    assert run(capsys, "verify", part, "--partition")[0] == 0


def test_missing_file_and_directory(tmp_path, capsys):
    for cmd in (["verify"], ["inspect"], ["infer"]):
        extra = [tmp_path / "f.npy", "--out", tmp_path / "l.npy"] if cmd == ["infer"] else []
        rc, _, err = run(capsys, *cmd, tmp_path / "absent.rvne", *extra)
        assert rc == 1
        assert_one_line_error(err, "No such file", "absent.rvne")
        rc, _, err = run(capsys, *cmd, tmp_path, *extra)
        assert rc == 1
        assert_one_line_error(err, "directory")


def test_inspect_text_and_json(example, capsys):
    rc, out, _ = run(capsys, "inspect", example)
    assert rc == 0
    for word in ("magic", "0x52564E45", "version", "n_kv_heads", "weights_len", "41216", "fp32",
                 "0xDC807956", "10304", "contract", "layers.1.wo", "wc", "NaN"):
        assert word in out, word
    rc, out, _ = run(capsys, "inspect", example, "--json")
    assert rc == 0
    info = json.loads(out)
    assert info["valid"] and info["loadable"] and info["params"] == 10304
    assert info["header"]["input_dim"] == 16 and info["header"]["weights_len"] == 41216
    assert info["crc"] == {"stored": 0xDC807956, "computed": 0xDC807956, "match": True}
    assert [t["name"] for t in info["tensors"]][-1] == "wc" and len(info["tensors"]) == 9
    wc = blob.parse(example.read_bytes()).tensors()["wc"]
    t = info["tensors"][-1]
    assert t["min"] == pytest.approx(float(wc.min())) and t["std"] == pytest.approx(float(wc.std()), rel=1e-6)
    assert t["nan"] == 0 and t["inf"] == 0


def test_inspect_reports_bad_blobs(example, tmp_path, capsys):
    data = bytearray(example.read_bytes())
    data[200] ^= 0xFF
    p = tmp_path / "bad.rvne"
    p.write_bytes(bytes(data))
    rc, out, err = run(capsys, "inspect", p, "--json")
    assert rc == 1
    info = json.loads(out)
    assert info["error"]["code"] == "E_CRC" and info["crc"]["match"] is False
    assert info["crc"]["stored"] == 0xDC807956
    assert info["crc"]["computed"] == ORACLE(bytes(data[:-4]))
    assert_one_line_error(err, "CRC")


def test_inspect_counts_nan_inf(tmp_path, capsys):
    arrays = upstream_init.init_arrays()
    arrays["layers.0.wk"][0, :3] = np.nan
    arrays["wc"][1, 1] = np.inf
    p = tmp_path / "nan.rvne"
    p.write_bytes(blob.from_arrays(arrays, upstream_init.DIMS))
    rc, out, _ = run(capsys, "inspect", p, "--json")
    info = json.loads(out)
    assert rc == 0 and info["nan"] == 3 and info["inf"] == 1
    by_name = {t["name"]: t for t in info["tensors"]}
    assert by_name["layers.0.wk"]["nan"] == 3 and by_name["wc"]["inf"] == 1


def test_pack_npz_and_safetensors(tmp_path, capsys):
    arrays = upstream_init.init_arrays()
    for ext in ("npz", "safetensors"):
        w = tmp_path / f"w.{ext}"
        weights_io.save(w, arrays, upstream_init.DIMS)
        out = tmp_path / f"{ext}.rvne"
        rc, text, _ = run(capsys, "pack", w, out)
        assert rc == 0 and str(out) in text
        assert out.read_bytes() == upstream_init.init_blob()
        rc, _, _ = run(capsys, "pack", w, out, "--fp16")
        assert rc == 0 and out.read_bytes() == upstream_init.init_blob(fp16=True)


def test_export_then_pack(example, tmp_path, capsys):
    for ext in ("npz", "safetensors"):
        w = tmp_path / f"x.{ext}"
        assert run(capsys, "export", example, w)[0] == 0
        out = tmp_path / f"x{ext}.rvne"
        assert run(capsys, "pack", w, out)[0] == 0
        assert out.read_bytes() == example.read_bytes()


def test_pack_bad_inputs_keep_previous_output(tmp_path, capsys):
    arrays = upstream_init.init_arrays()
    good = tmp_path / "good.rvne"
    good.write_bytes(upstream_init.init_blob())
    dims = np.array("16,4,1,32,2,4")
    cases = {
        "missing.npz": ({k: v for k, v in arrays.items() if k != "wc"}, "missing tensor wc"),
        "extra.npz": ({**arrays, "layers.9.wq": arrays["layers.0.wq"]}, "unexpected tensor layers.9.wq"),
        "shape.npz": ({**arrays, "layers.0.wv": arrays["layers.0.wv"][:, :5]}, "layers.0.wv has shape (16, 5)"),
    }
    for name, (content, words) in cases.items():
        p = tmp_path / name
        np.savez(p, **content, **{"rvne.dims": dims})
        rc, _, err = run(capsys, "pack", p, good)
        assert rc == 1
        assert_one_line_error(err, words)
        assert good.read_bytes() == upstream_init.init_blob()
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"junk")
    rc, _, err = run(capsys, "pack", junk, good)
    assert rc == 1
    assert_one_line_error(err, "junk.npz")
    rc, _, err = run(capsys, "pack", tmp_path / "w.bin", good)
    assert rc == 1
    assert_one_line_error(err, ".npz, .safetensors or .pt")
    assert good.read_bytes() == upstream_init.init_blob()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".rvne-")) == []


def test_infer_matches_reference(example, tmp_path, capsys):
    frames = np.random.default_rng(0).standard_normal((30, 16)).astype(np.float32)
    fpath, lpath = tmp_path / "frames.npy", tmp_path / "logits.npy"
    np.save(fpath, frames)
    rc, out, _ = run(capsys, "infer", example, fpath, "--window", "7", "--out", lpath)
    assert rc == 0 and "30x4" in out
    logits = np.load(lpath)
    assert logits.dtype == np.float32 and logits.shape == (30, 4)
    b = blob.parse(example.read_bytes())
    np.testing.assert_array_equal(logits, reference.forward_batch(b.tensors(), b.header.dims, frames, 7))
    default = tmp_path / "d.npy"
    assert run(capsys, "infer", example, fpath, "--out", default)[0] == 0
    assert not np.array_equal(np.load(default), logits)  # window 100 != window 7 on 30 frames


def test_infer_bad_frames(example, tmp_path, capsys):
    cases = {
        "wide.npy": (np.zeros((3, 5), np.float32), "shape (3, 5)"),
        "flat.npy": (np.zeros(16, np.float32), "shape (16,)"),
        "ints.npy": (np.zeros((3, 16), np.int64), "dtype int64"),
    }
    for name, (a, words) in cases.items():
        p = tmp_path / name
        np.save(p, a)
        rc, _, err = run(capsys, "infer", example, p, "--out", tmp_path / "l.npy")
        assert rc == 1
        assert_one_line_error(err, words)
    rc, _, err = run(capsys, "infer", example, example, "--out", tmp_path / "l.npy")
    assert rc == 1
    assert_one_line_error(err, "not an .npy")
    assert not (tmp_path / "l.npy").exists()


def test_console_entry_point_no_traceback(tmp_path):
    """Through a real interpreter: the exit code and stderr the shell sees."""
    p = tmp_path / "t.rvne"
    p.write_bytes(upstream_init.init_blob()[:100])
    proc = subprocess.run([sys.executable, "-m", "rvne", "verify", str(p)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr and "E_LENGTH" not in proc.stdout
    assert "41244" in proc.stderr
