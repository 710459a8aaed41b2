"""`rvne pack FILE OUT --map MAP` (docs/formats.md, "Import map") and the
format-detecting inspect/verify/export commands, from files written by the
real safetensors writer and numpy."""

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from rvne.cli import main
from rvne.io import blob
from rvne.io.formats import mapping
from rvne.model import contract

DIMS = "8,2,1,4,2,3"   # D=8, Q=8, K=4, L=2, C=3


def run(capsys, *argv):
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def contract_arrays(seed=1, dims=DIMS):
    rng = np.random.default_rng(seed)
    return {s.name: rng.standard_normal(s.shape).astype(np.float32) for s in contract.tensor_specs(
        contract.Dims.parse(dims))}


def hf_name(rvne_name):
    return "model." + rvne_name.replace("wq", "attn.query").replace("wk", "attn.key") \
        .replace("wv", "attn.value").replace("wo", "attn.out") + ".weight" if rvne_name != "wc" else "head.weight"


@pytest.fixture
def st_file(tmp_path):
    """A PyTorch-style state dict (out x in) under names rvne does not know,
    plus a bias the map leaves out."""
    arrays = contract_arrays()
    tensors = {hf_name(k): np.ascontiguousarray(v.T) for k, v in arrays.items()}
    tensors["model.layers.0.attn.query.bias"] = np.zeros(8, np.float32)
    path = tmp_path / "w.safetensors"
    save_file(tensors, str(path))
    return path, arrays


def write_map(tmp_path, tensors, **extra):
    path = tmp_path / "map.json"
    path.write_text(json.dumps({"tensors": tensors, **extra}))
    return path


def full_map(transpose=True):
    return {k: {"source": hf_name(k), "transpose": transpose} for k in contract_arrays()}


def test_safetensors_import_transposed_is_bit_exact(tmp_path, capsys, st_file):
    path, arrays = st_file
    m = write_map(tmp_path, full_map(), dims=DIMS)
    out = tmp_path / "o.rvne"
    rc, stdout, err = run(capsys, "pack", path, out, "--map", m)
    assert rc == 0, err
    got = blob.read_file(out, contract=True).tensors()
    for k, v in arrays.items():
        assert np.array_equal(got[k], v), k
    assert "F32 -> FP32 exact" in stdout and "transposed" in stdout
    assert "1 source tensors not used" in stdout


def test_npz_import_any_names_and_dims_from_cli(tmp_path, capsys):
    arrays = contract_arrays(seed=2)
    src = tmp_path / "w.npz"
    np.savez(src, **{f"t{i}": v for i, v in enumerate(arrays.values())})
    m = write_map(tmp_path, {k: f"t{i}" for i, k in enumerate(arrays)})
    out = tmp_path / "o.rvne"
    rc, _, err = run(capsys, "pack", src, out, "--map", m, "--dims", DIMS)
    assert rc == 0, err
    got = blob.read_file(out, contract=True).tensors()
    assert all(np.array_equal(got[k], v) for k, v in arrays.items())


def test_fp16_conversions_reported_and_rounded_once(tmp_path, capsys):
    arrays = contract_arrays(seed=3)
    # One value where rounding F64 -> F32 -> F16 differs from F64 -> F16:
    # 1 + 2^-11 + 2^-40 rounds up to 1 + 2^-10 directly, but to 1.0 via the
    # tie 1 + 2^-11 that float32 leaves.
    tricky = {k: v.astype(np.float64) for k, v in arrays.items()}
    tricky["wc"][0, 0] = 1 + 2.0 ** -11 + 2.0 ** -40
    src = tmp_path / "w.npz"
    np.savez(src, **tricky)
    m = write_map(tmp_path, {k: k for k in arrays}, dims=DIMS, dtype="fp16")
    out = tmp_path / "o.rvne"
    rc, stdout, err = run(capsys, "pack", src, out, "--map", m)
    assert rc == 0, err
    parsed = blob.read_file(out, contract=True)
    assert parsed.header.fp16
    got = parsed.tensors()
    assert got["wc"][0, 0] == np.float32(1 + 2.0 ** -10)
    for k, v in tricky.items():
        assert np.array_equal(got[k], v.astype(np.float16).astype(np.float32)), k
    assert "F64 -> FP16 rounded (max abs change" in stdout


def test_f16_source_widens_exactly(tmp_path, capsys):
    arrays = {k: v.astype(np.float16) for k, v in contract_arrays(seed=4).items()}
    src = tmp_path / "w.safetensors"
    save_file({k: v for k, v in arrays.items()}, str(src))
    m = write_map(tmp_path, {k: k for k in arrays}, dims=DIMS)
    out = tmp_path / "o.rvne"
    rc, stdout, err = run(capsys, "pack", src, out, "--map", m)
    assert rc == 0, err
    got = blob.read_file(out, contract=True).tensors()
    assert all(np.array_equal(got[k], v.astype(np.float32)) for k, v in arrays.items())
    assert stdout.count("F16 -> FP32 exact") == len(arrays)


@pytest.mark.parametrize("edit, words", [
    (lambda t: t.pop("wc"), ["no entry for wc"]),
    (lambda t: t.update({"layers.2.wq": "x"}), ["'layers.2.wq' is not a tensor of dims"]),
    (lambda t: t.update({"wc": {"source": "head.weigth", "transpose": True}}),
     ["no tensor named 'head.weigth'", "did you mean 'head.weight'"]),
    (lambda t: t.update({"wc": "head.weight"}), ["has shape (3, 8)", "add \"transpose\": true"]),
    (lambda t: t.update({"wc": {"source": "head.weight", "transpose": "yes"}}), ["must be true or false"]),
    (lambda t: t.update({"wc": {"source": "head.weight", "flip": True}}), ["unknown key 'flip'"]),
    (lambda t: t.update({"wc": {"source": "#99"}}), ["no tensor with index 99"]),
    (lambda t: t.update({"wc": {"source": "model.layers.0.attn.query.bias"}}), ["holds 8 values"]),
    (lambda t: t.update({"wc": None}), ["the source must be"]),
])
def test_map_errors_name_the_fault_and_keep_previous_output(tmp_path, capsys, st_file, edit, words):
    path, _ = st_file
    tensors = full_map()
    edit(tensors)
    m = write_map(tmp_path, tensors, dims=DIMS)
    out = tmp_path / "o.rvne"
    out.write_bytes(b"previous")
    rc, _, err = run(capsys, "pack", path, out, "--map", m)
    assert rc == 1
    assert err.startswith("rvne: error: ") and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, (w, err)
    assert out.read_bytes() == b"previous"


@pytest.mark.parametrize("values, words", [
    (lambda a: a.astype(np.int32), ["is I32, not floating point"]),
    (lambda a: np.where(a > 1, np.nan, a), ["NaN/inf values"]),
    (lambda a: a * 1e5, ["beyond FP16 range", "pack as FP32"]),
])
def test_value_refusals(tmp_path, capsys, values, words):
    arrays = contract_arrays(seed=5)
    arrays["wc"] = values(arrays["wc"])
    src = tmp_path / "w.npz"
    np.savez(src, **arrays)
    m = write_map(tmp_path, {k: k for k in arrays}, dims=DIMS, dtype="fp16")
    rc, _, err = run(capsys, "pack", src, tmp_path / "o.rvne", "--map", m)
    assert rc == 1
    for w in words:
        assert w in err, (w, err)


@pytest.mark.parametrize("text, words", [
    ("{", ["not a valid map file"]),
    ('{"tensors": {"wc": "a", "wc": "b"}}', ["duplicate key 'wc'"]),
    ("[1]", ["a JSON object"]),
    ('{"tensors": {}}', ["non-empty"]),
    ('{"tensors": {"wc": "a"}, "dim": "1"}', ["unknown key 'dim'"]),
    ('{"tensors": {"wc": "a"}, "dims": "1,2"}', ["\"dims\""]),
    ('{"tensors": {"wc": "a"}, "dtype": "int8"}', ["\"dtype\""]),
])
def test_bad_map_files(tmp_path, text, words):
    m = tmp_path / "m.json"
    m.write_text(text)
    with pytest.raises(mapping.MapError) as info:
        mapping.load_map(m)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_no_dims_anywhere(tmp_path, capsys, st_file):
    path, _ = st_file
    m = write_map(tmp_path, full_map())
    rc, _, err = run(capsys, "pack", path, tmp_path / "o.rvne", "--map", m)
    assert rc == 1 and "no dims" in err


def test_dims_from_source_metadata(tmp_path, capsys):
    arrays = contract_arrays(seed=6)
    src = tmp_path / "w.safetensors"
    save_file(arrays, str(src), metadata={"rvne.dims": DIMS})
    m = write_map(tmp_path, {k: k for k in arrays})
    rc, _, err = run(capsys, "pack", src, tmp_path / "o.rvne", "--map", m)
    assert rc == 0, err


def test_pack_without_map_names_the_format(tmp_path, capsys):
    src = tmp_path / "weights.bin"
    save_file({"a": np.zeros(2, np.float32)}, str(src))
    rc, _, err = run(capsys, "pack", src, tmp_path / "o.rvne")
    assert rc == 1 and "safetensors file" in err and "--map" in err


def test_rvne_blob_as_map_source_is_refused(tmp_path, capsys):
    b = tmp_path / "x.rvne"
    assert run(capsys, "init", b)[0] == 0
    m = write_map(tmp_path, {"wc": "wc"})
    rc, _, err = run(capsys, "pack", b, tmp_path / "o.rvne", "--map", m)
    assert rc == 1 and "already an RVNE blob" in err


def test_unknown_format_everywhere(tmp_path, capsys):
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"hello, this is not weights at all")
    for argv in (("inspect", junk), ("verify", junk), ("export", junk, tmp_path / "o.npz")):
        rc, _, err = run(capsys, *argv)
        assert rc == 1 and "not a supported weight format" in err, argv
        assert len(err.strip().splitlines()) == 1


def test_inspect_verify_export_safetensors(tmp_path, capsys, st_file):
    path, arrays = st_file
    rc, out, err = run(capsys, "inspect", path)
    assert rc == 0, err
    assert "safetensors" in out and "head.weight" in out and "result: valid" in out
    rc, out, _ = run(capsys, "inspect", path, "--json", "--stats")
    info = json.loads(out)
    assert info["valid"] and info["format"] == "safetensors"
    head = next(t for t in info["tensors"] if t["name"] == "head.weight")
    assert head["shape"] == [3, 8] and head["stats"]["max"] == pytest.approx(float(arrays["wc"].max()))
    rc, out, _ = run(capsys, "verify", path)
    assert rc == 0 and out.startswith("OK ")
    npz = tmp_path / "o.npz"
    rc, _, err = run(capsys, "export", path, npz)
    assert rc == 0, err
    with np.load(npz) as z:
        assert np.array_equal(z["head.weight"], arrays["wc"].T)
        assert z["head.weight"].dtype == np.float32


def test_lwt_import_and_export(tmp_path, capsys):
    from fmt_fixtures import lwt as lwt_fixture

    arrays = contract_arrays(seed=7)
    # Stored out x in, like the Linear layers the .lwt document describes.
    path = tmp_path / "model.lwt"
    lwt_fixture.write(path, {f"head.{k}": np.ascontiguousarray(v.T) for k, v in arrays.items()})
    m = write_map(tmp_path, {k: {"source": f"head.{k}", "transpose": True} for k in arrays}, dims=DIMS)
    out = tmp_path / "o.rvne"
    rc, stdout, err = run(capsys, "pack", path, out, "--map", m, "--fp16")
    assert rc == 0, err
    got = blob.read_file(out, contract=True).tensors()
    assert all(np.array_equal(got[k], v.astype(np.float16).astype(np.float32)) for k, v in arrays.items())
    assert "F32 -> FP16 rounded" in stdout
    npz = tmp_path / "all.npz"
    assert run(capsys, "export", path, npz)[0] == 0
    with np.load(npz) as z:
        assert sorted(z.files) == sorted(f"head.{k}" for k in arrays)
        assert np.array_equal(z["head.wc"], arrays["wc"].T)


def test_milblob_import_by_index_and_offset_from_coreml_writer(tmp_path, capsys):
    """Nameless blobs written by Core ML's own writer, named in the map by
    index, by metadata offset (what BlobFileValue.offset holds) and by data
    offset; an FP16 blob widens exactly."""
    from coremltools import libmilstoragepython as storage   # test extras: never skipped
    arrays = contract_arrays(seed=8)
    names = list(arrays)
    path = tmp_path / "weight.bin"
    writer = storage._BlobStorageWriter(str(path))
    meta = {}
    for k in names:
        v = arrays[k]
        if k == "wc":   # stored out x in, FP16
            meta[k] = writer.write_fp16_data(np.ascontiguousarray(v.T).astype(np.float16).view(np.uint16).ravel())
        else:
            meta[k] = writer.write_float_data(v.ravel())
    del writer  # the header's count is written when the writer is destroyed
    tensors = {}
    for i, k in enumerate(names):
        if k == "wc":
            tensors[k] = {"source": f"@{meta[k]}", "transpose": True}
        elif i % 2:
            tensors[k] = f"#{i}"
        else:
            tensors[k] = {"source": f"@{hex(meta[k] + 64)}"}   # the data offset
    m = write_map(tmp_path, tensors, dims=DIMS)
    out = tmp_path / "o.rvne"
    rc, stdout, err = run(capsys, "pack", path, out, "--map", m)
    assert rc == 0, err
    got = blob.read_file(out, contract=True).tensors()
    for k in names[:-1]:
        assert np.array_equal(got[k], arrays[k]), k
    assert np.array_equal(got["wc"], arrays["wc"].astype(np.float16).astype(np.float32))
    assert "F16 -> FP32 exact" in stdout
    bad = write_map(tmp_path, {**tensors, "wc": "@12345"}, dims=DIMS)
    rc, _, err = run(capsys, "pack", path, out, "--map", bad)
    assert rc == 1 and "no blob at offset 12345" in err


def test_burnpack_import_dims_from_its_metadata(tmp_path, capsys):
    from fmt_fixtures import burnpack as bp_fixture

    arrays = contract_arrays(seed=9)
    path = tmp_path / "model.bpk"
    bp_fixture.write(path, {f"enc.{k}": v.astype(np.float16) for k, v in arrays.items()},
                     metadata={"rvne.dims": DIMS})
    m = write_map(tmp_path, {k: f"enc.{k}" for k in arrays})
    out = tmp_path / "o.rvne"
    rc, stdout, err = run(capsys, "pack", path, out, "--map", m, "--fp16")
    assert rc == 0, err
    got = blob.read_file(out, contract=True).tensors()
    assert all(np.array_equal(got[k], v.astype(np.float16).astype(np.float32)) for k, v in arrays.items())
    assert stdout.count("F16 -> FP16 exact") == len(arrays)
