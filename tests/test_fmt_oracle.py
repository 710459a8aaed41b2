"""Oracle tests (docs/formats.md, "What is accepted"): files written by each
format's own library, every tensor rvne exports compared with that
library's own reader. safetensors: MLX's save_safetensors (it writes
`"__metadata__": null` and unpadded headers) against MLX's and the
safetensors package's readers. Core ML MILBlob: coremltools 7.2 (before
iOS 18: uninitialised record bytes) and 8.3 in side venvs built by the
test, each version's StorageWriter and converter against its own
StorageReader; coremltools 9 is covered in test_fmt_milblob.py. Burnpack's
library is Rust (not on PyPI) and .lwt / CNN v2 have none: their tests use
fixture writers (docs/formats.md)."""

import json
import pathlib
import struct

import numpy as np
import pytest
from safetensors.numpy import load_file as st_load_file

from fmt_fixtures import venvs
from rvne.cli import main
from rvne.io.formats import base, milblob
from rvne.io.formats import safetensors_fmt as st

SIDE = pathlib.Path(__file__).parent / "fmt_fixtures" / "coreml_side.py"
COREML = {"7": ["coremltools==7.2", "numpy<2"], "8": ["coremltools==8.3.0", "numpy<2"]}
KIND = {1: "fp16", 2: "float", 3: "uint8", 4: "int8", 6: "int16", 7: "uint16", 8: "int4", 9: "uint1",
        10: "uint2", 11: "uint4", 12: "uint3", 13: "uint6", 14: "int32", 15: "uint32"}


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def raw_bytes_24_63(path, rep):
    raw = pathlib.Path(path).read_bytes()
    return [raw[t.extra["metadata_offset"] + 24:t.extra["metadata_offset"] + 64] for t in rep.tensors]


# -- Core ML MILBlob from coremltools 7 and 8 -----------------------------------------
@pytest.fixture(scope="module", params=sorted(COREML))
def coreml(request, tmp_path_factory):
    exe = venvs.python(f"coremltools{request.param}", COREML[request.param])
    out = tmp_path_factory.mktemp(f"coreml{request.param}")
    info = json.loads(venvs.run(exe, SIDE, "write", out).strip().splitlines()[-1])
    assert info["version"].split(".")[0] == request.param
    files = [out / "storage.bin"] + sorted(out.glob("*.mlpackage/Data/com.apple.CoreML/weights/weight.bin"))
    assert len(files) == 3
    return request.param, exe, files, info


def test_coreml_files_are_accepted_and_every_blob_matches_its_own_reader(coreml, tmp_path, capsys):
    version, exe, files, info = coreml
    for path in files:
        src = base.Source(path.read_bytes(), path)
        rep = milblob.read(src)
        assert rep.valid, (path, rep.error)
        garbage = [b for b in raw_bytes_24_63(path, rep) if b.strip(b"\0")]
        warned = [c for c in rep.checks if c.code == "W_MIL_LEGACY_RESERVED"]
        if version == "8":   # coremltools 8 zeroes the record, bar the sub-byte types' padding_size_in_bits
            assert not [b for b in raw_bytes_24_63(path, rep) if b[8:].strip(b"\0")] and not warned
        else:                # 7 leaves bytes 24..63 uninitialised; Core ML reads them all the same
            assert bool(garbage) == bool(warned), path
        rc, out, err = run(capsys, "verify", path)
        assert rc == 0 and out.startswith("OK ") and err == ""
        assert ("W_MIL_LEGACY_RESERVED" in out) == bool(warned)
        npz = tmp_path / f"{path.parent.parent.parent.parent.name}.npz"
        assert run(capsys, "export", path, npz)[0] == 0
        specs = [f"{KIND[t.extra['dtype_code']]}@{t.extra['metadata_offset']}" for t in rep.tensors]
        theirs_path = tmp_path / "theirs.npz"
        venvs.run(exe, SIDE, "read", path, theirs_path, *specs)
        with np.load(npz) as mine, np.load(theirs_path) as theirs:
            assert len(mine.files) == len(rep.tensors) == len(theirs.files) > 0
            for t in rep.tensors:
                a, b = mine[f"blob_{t.index}"], theirs[str(t.extra["metadata_offset"])]
                if t.dtype == "F16":
                    b = b.view(np.float16)   # Core ML's binding hands out FP16 as its bits
                assert a.shape == b.shape and a.tobytes() == b.astype(a.dtype).tobytes(), (path, t.label)
    # the storage file holds every type this version's binding writes
    assert len(info["offsets"]) >= 6


def test_coreml7_files_show_the_legacy_bytes_as_written(coreml):
    """The reason for W_MIL_LEGACY_RESERVED: coremltools 7's records carry
    uninitialised memory where 8 put padding_size_in_bits. Seen on every
    run so far; if a run ever gets zeros there, the file is simply clean."""
    version, _, files, _ = coreml
    rep = milblob.read(base.Source(files[0].read_bytes()))
    dirty = [b for b in raw_bytes_24_63(files[0], rep) if b.strip(b"\0")]
    if version == "7":
        assert rep.valid and len(dirty) in (0, len(rep.tensors))
    else:
        assert rep.valid and [b for b in dirty if b[8:].strip(b"\0")] == []


# -- safetensors from MLX ---------------------------------------------------------------
def mlx_arrays():
    import mlx.core as mx

    rng = np.random.default_rng(5)
    f32 = rng.standard_normal((3, 4)).astype(np.float32)
    out = {"f32": mx.array(f32), "f16": mx.array(f32[0].astype(np.float16)), "bf16": mx.array(f32).astype(mx.bfloat16),
           "scalar": mx.array(2.5), "mask": mx.array(rng.random(6) > 0.5)}
    for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        info = np.iinfo(t)
        out[t] = mx.array(rng.integers(info.min, info.max, (2, 3), dtype=t, endpoint=True))
    return out


@pytest.mark.parametrize("metadata", [None, {"rvne.dims": "8,2,1,4,2,3"}])
def test_mlx_files_are_accepted_and_every_tensor_matches_mlx_and_safetensors(tmp_path, capsys, metadata):
    import mlx.core as mx

    path = tmp_path / "mlx.safetensors"
    arrays = mlx_arrays()
    mx.save_safetensors(str(path), arrays, metadata=metadata)
    raw = path.read_bytes()
    header = raw[8:8 + struct.unpack("<Q", raw[:8])[0]]
    assert (b'"__metadata__":null' in header) == (metadata is None)   # what MLX writes
    src = base.Source(raw, path)
    rep = st.read(src)
    assert rep.valid, rep.error
    meta_check = next(c for c in rep.checks if c.code == "E_ST_METADATA")
    assert meta_check.status == (base.WARN if metadata is None else base.OK)
    assert rep.fields.get("metadata") == metadata
    rc, out, err = run(capsys, "verify", path)
    assert rc == 0 and out.startswith("OK ") and err == ""
    npz = tmp_path / "mlx.npz"
    assert run(capsys, "export", path, npz)[0] == 0
    theirs_mlx = mx.load(str(path))
    theirs_st = st_load_file(str(path)) if "bf16" not in arrays else None
    with np.load(npz) as mine:
        assert set(mine.files) == set(arrays) == set(theirs_mlx)
        for name in arrays:
            ref = theirs_mlx[name]
            ref = np.array(ref.astype(mx.float32)) if ref.dtype == mx.bfloat16 else np.array(ref)
            got = mine[name]
            assert got.shape == ref.shape and got.dtype == ref.dtype and got.tobytes() == ref.tobytes(), name
    # the safetensors package's reader, for every dtype numpy has (it has no bfloat16)
    del arrays["bf16"]
    mx.save_safetensors(str(path), arrays, metadata=metadata)
    theirs_st = st_load_file(str(path))
    src = base.Source(path.read_bytes(), path)
    rep = st.read(src)
    assert rep.valid, rep.error
    for t in rep.tensors:
        ref = theirs_st[t.name]
        got = st.tensor_array(src, t)
        assert got.shape == ref.shape and got.dtype == ref.dtype and got.tobytes() == ref.tobytes(), t.name
