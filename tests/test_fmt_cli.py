"""The CLI over every foreign format (docs/formats.md): detection by content
whatever the file is called, inspect headers-only vs --data, verify's one
line and exit code, export of every tensor, and a corrupted copy of each
refused with its format's named error, one line, no traceback."""

import json

import numpy as np
import pytest

from fmt_fixtures import burnpack, cnn2, lwt, milblob, safetensors
from rvne.cli import main

RNG = np.random.default_rng(11)
A = RNG.standard_normal((3, 5)).astype(np.float32)
B = RNG.standard_normal(7).astype(np.float16)


def run(capsys, *argv):
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def make_lwt():
    return lwt.build({"a": A, "b": B.astype(np.float32)})[0], {"a": A, "b": B.astype(np.float32)}, "E_LWT_"


def make_burnpack():
    return burnpack.build({"a": A, "b": B})[0], {"a": A, "b": B}, "E_BP_"


def make_milblob():
    return milblob.build([("F32", A.ravel()), ("F16", B)])[0], {"blob_0": A.ravel(), "blob_1": B}, "E_MIL_"


def make_cnn2():
    layers = cnn2.example_layers()
    return cnn2.build(layers)[0], {f"layer_{i + 1}": w for i, w in enumerate(layers)}, "E_CNN2_"


def make_safetensors():
    return safetensors.build([("a", A), ("b", B)])[0], {"a": A, "b": B}, "E_ST_"


MAKERS = {"lwt": make_lwt, "burnpack": make_burnpack, "milblob": make_milblob, "cnn2": make_cnn2,
          "safetensors": make_safetensors}
TITLES = {"lwt": "LightwatchAI2 .lwt", "burnpack": "Burnpack", "milblob": "MILBlob", "cnn2": "CNN v2",
          "safetensors": "safetensors"}


@pytest.mark.parametrize("fmt", MAKERS)
def test_detect_inspect_verify_export(tmp_path, capsys, fmt):
    raw, arrays, _ = MAKERS[fmt]()
    path = tmp_path / "weights.rvne"   # a misleading name: detection goes by content
    path.write_bytes(raw)
    rc, out, err = run(capsys, "inspect", path, "--json")
    assert rc == 0, err
    info = json.loads(out)
    assert info["format"] == fmt and info["valid"] and len(info["tensors"]) == len(arrays)
    assert 0 < info["bytes_read"] < 4096   # sniffing + headers; the count includes re-reads
    rc, out, err = run(capsys, "inspect", path)
    assert rc == 0 and TITLES[fmt] in out and out.rstrip().endswith("result: valid")
    rc, out, err = run(capsys, "verify", path)
    assert rc == 0 and out.startswith(f"OK {path}: ") and TITLES[fmt] in out
    npz = tmp_path / "all.npz"
    rc, out, err = run(capsys, "export", path, npz)
    assert rc == 0, err
    with np.load(npz) as z:
        assert sorted(z.files) == sorted(arrays)
        for k, v in arrays.items():
            assert z[k].dtype == v.dtype and np.array_equal(z[k], v), k


@pytest.mark.parametrize("fmt", MAKERS)
def test_corrupt_copy_refused_with_named_error(tmp_path, capsys, fmt):
    raw, _, prefix = MAKERS[fmt]()
    path = tmp_path / "w"
    path.write_bytes(raw[:-1])   # truncated by one byte: every format must notice
    for argv in (("verify", path), ("inspect", path), ("export", path, tmp_path / "o.npz")):
        rc, out, err = run(capsys, *argv)
        assert rc == 1, argv
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("rvne: error: ") and prefix in lines[0], (argv, err)
        assert "Traceback" not in err
    assert not (tmp_path / "o.npz").exists()


def test_inspect_skips_data_checks_until_asked(tmp_path, capsys):
    raw, _, _ = make_lwt()
    bad = bytearray(raw)
    bad[-8] ^= 0xFF        # a data byte: only the CRC can tell
    path = tmp_path / "m.lwt"
    path.write_bytes(bytes(bad))
    rc, out, _ = run(capsys, "inspect", path)
    assert rc == 0 and "skip E_LWT_CRC" in out
    rc, out, err = run(capsys, "inspect", path, "--data")
    assert rc == 1 and "FAIL E_LWT_CRC" in out and "E_LWT_CRC" in err
    rc, _, err = run(capsys, "verify", path)
    assert rc == 1 and "E_LWT_CRC" in err


def test_inspect_stats(tmp_path, capsys):
    raw, arrays, _ = make_burnpack()
    path = tmp_path / "m.bpk"
    path.write_bytes(raw)
    rc, out, err = run(capsys, "inspect", path, "--json", "--stats")
    assert rc == 0, err
    by_name = {t["name"]: t for t in json.loads(out)["tensors"]}
    assert by_name["a"]["stats"]["min"] == pytest.approx(float(A.min()))
    assert by_name["b"]["stats"]["count"] == B.size


def test_pack_without_map_names_the_detected_format(tmp_path, capsys):
    raw, _, _ = make_burnpack()
    path = tmp_path / "model.bpk"
    path.write_bytes(raw)
    rc, _, err = run(capsys, "pack", path, tmp_path / "o.rvne")
    assert rc == 1 and "a Burnpack file" in err and "--map" in err


def test_export_foreign_format_to_safetensors_is_refused(tmp_path, capsys):
    raw, _, _ = make_cnn2()
    path = tmp_path / "c.bin"
    path.write_bytes(raw)
    out = tmp_path / "o.safetensors"
    rc, _, err = run(capsys, "export", path, out)
    assert rc == 1 and ".npz only" in err and not out.exists()


@pytest.mark.parametrize("fmt, damage, code", [
    ("milblob", lambda b: b[:20] + b"\x01" + b[21:], "E_MIL_RESERVED"),     # header reserved byte
    ("safetensors", lambda b: b[:40], "E_ST_HEADER_LENGTH"),                 # cut inside the JSON
    ("lwt", lambda b: b[:30], "E_LWT_"),
    ("burnpack", lambda b: b[:12], "E_BP_"),
    ("cnn2", lambda b: b[:30], "E_CNN2_"),
])
def test_damaged_headers_are_still_recognised(tmp_path, capsys, fmt, damage, code):
    """Damage inside the header must get the format's own named error, not
    "not a supported weight format": that would hide what is wrong."""
    raw, _, _ = MAKERS[fmt]()
    path = tmp_path / "w"
    path.write_bytes(damage(raw))
    rc, _, err = run(capsys, "verify", path)
    assert rc == 1 and code in err and "not a supported" not in err, err


COMMON_KEYS = ["path", "format", "title", "size", "version", "fields", "tensors", "checks", "readings", "holes",
               "valid", "error", "bytes_read"]


def make_rvne():
    from rvne.io import upstream_init

    return upstream_init.init_blob(), None, "E_"


@pytest.mark.parametrize("fmt", [*MAKERS, "rvne"])
def test_inspect_json_has_the_same_keys_for_every_format_rvne_included(tmp_path, capsys, fmt):
    raw = (MAKERS.get(fmt) or make_rvne)()[0]
    path = tmp_path / "w"
    path.write_bytes(raw)
    rc, out, _ = run(capsys, "inspect", path, "--json")
    info = json.loads(out)
    assert rc == 0 and [k for k in info if k in COMMON_KEYS] == COMMON_KEYS
    assert info["format"] == fmt and info["valid"] and info["error"] is None
    assert all(set(c) == {"code", "status", "detail"} for c in info["checks"]) and info["checks"]
    assert all({"index", "name", "dtype", "shape", "offset", "size", "align"} <= set(t) for t in info["tensors"])
    bad = bytearray(raw)
    bad[-5] ^= 0x40          # RVNE: a weight byte, so the CRC fails
    path.write_bytes(bytes(bad))
    rc, out, err = run(capsys, "inspect", path, "--json", "--data")
    info = json.loads(out)
    if rc:
        first = next(c for c in info["checks"] if c["status"] == "fail")
        assert info["error"] == first and not info["valid"]
        assert err.strip() == f"rvne: error: {path}: {first['code']}: {first['detail']}"


def test_rvne_errors_carry_their_code_in_the_line(tmp_path, capsys):
    raw = bytearray(make_rvne()[0])
    raw[100] ^= 1
    path = tmp_path / "b.rvne"
    path.write_bytes(bytes(raw))
    for argv in (("verify", path), ("inspect", path), ("export", path, tmp_path / "o.npz")):
        rc, out, err = run(capsys, *argv)
        assert rc == 1 and err.startswith(f"rvne: error: {path}: E_CRC: CRC mismatch") and err.count("\n") == 1, err
    info = json.loads(run(capsys, "inspect", path, "--json")[1])
    assert info["error"]["code"] == "E_CRC" and [c["status"] for c in info["checks"]][6:9] == ["ok", "fail", "skipped"]


def test_inspect_json_streams_tensors_one_per_line(tmp_path, capsys):
    """Memory follows the index, not the output: each tensor is one line
    written as it is produced (issue 16: 1M tensors took 1.4 GB and 85 s)."""
    names = [(f"t{i}", np.full(2, i, np.float32)) for i in range(300)]
    path = tmp_path / "many.safetensors"
    path.write_bytes(safetensors.build(names)[0])
    rc, out, _ = run(capsys, "inspect", path, "--json")
    lines = out.splitlines()
    tensor_lines = [ln for ln in lines if ln.lstrip().startswith('{"index": ')]
    assert rc == 0 and len(tensor_lines) == 300
    assert json.loads(out)["tensors"][299]["name"] == "t299"


def test_inspect_json_memory_per_tensor_is_bounded(tmp_path):
    """Issue 16: `inspect --json` on a file of 1M tensors took 1.4 GB. The
    header is parsed entry by entry into compact tensors and the output is
    streamed, so the peak of Python allocations per tensor stays well below
    what the whole-document path needed (1258 bytes; now 486)."""
    import contextlib
    import io
    import tracemalloc

    class Sink(io.TextIOBase):
        """Counts and checks the output without keeping it."""

        tensors, tail = 0, ""

        def write(self, text):
            joined = self.tail + text   # a key may come in pieces
            self.tensors += joined.count('"index": ') - self.tail.count('"index": ')
            self.tail = joined[-8:]
            return len(text)

    n = 50_000
    header = {f"t{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(n)}
    path = tmp_path / "many.safetensors"
    path.write_bytes(safetensors.assemble(safetensors.header_bytes(header), bytes(4 * n)))
    del header
    small = tmp_path / "one.safetensors"
    small.write_bytes(safetensors.build([("a", np.ones(2, np.float32))])[0])
    with contextlib.redirect_stdout(Sink()):
        assert main(["inspect", str(small), "--json"]) == 0   # imports and caches: not per tensor
    sink = Sink()
    tracemalloc.start()
    try:
        with contextlib.redirect_stdout(sink):
            rc = main(["inspect", str(path), "--json"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rc == 0 and sink.tensors == n
    assert peak / n < 800, peak / n
