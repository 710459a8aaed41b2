"""Import and export of named weights: .npz (in x out) and .safetensors
(PyTorch state dict, out x in)."""

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import save_file

from rvne import errors
from rvne.io import blob, upstream_init, weights as weights_io
from rvne.model import contract
from rvne.model.contract import Dims

DIMS = Dims(8, 6, 3, 4, 2, 3)


@pytest.fixture
def arrays():
    rng = np.random.default_rng(0)
    return {s.name: rng.standard_normal(s.shape).astype(np.float32) for s in contract.tensor_specs(DIMS)}


def state_dict(arrays):
    return {weights_io.state_dict_key(k): np.ascontiguousarray(v.T) for k, v in arrays.items()}


def test_names_map_both_ways():
    assert weights_io.state_dict_key("layers.3.wo") == "layers.3.attn.o_proj.weight"
    assert weights_io.state_dict_key("wc") == "classifier.weight"
    for name in contract.tensor_names(DIMS):
        assert weights_io.rvne_name(weights_io.state_dict_key(name)) == name
    assert weights_io.rvne_name("layers.0.attn.q_proj.bias") is None


@pytest.mark.parametrize("ext", ["npz", "safetensors"])
def test_round_trip(tmp_path, arrays, ext):
    path = tmp_path / f"w.{ext}"
    weights_io.save(path, arrays, DIMS)
    back, dims = weights_io.load(path)
    assert dims == DIMS
    assert set(back) == set(arrays)
    for k in arrays:
        np.testing.assert_array_equal(back[k], arrays[k])


def test_safetensors_is_out_by_in(tmp_path, arrays):
    path = tmp_path / "w.safetensors"
    weights_io.save(path, arrays, DIMS)
    with safe_open(str(path), framework="np") as f:
        assert f.metadata()["rvne.dims"] == "8,6,3,4,2,3"
        q = f.get_tensor("layers.1.attn.q_proj.weight")
    assert q.shape == (DIMS.q_dim, DIMS.input_dim)
    np.testing.assert_array_equal(q, arrays["layers.1.wq"].T)


def test_blob_export_pack_is_identity(tmp_path):
    data = upstream_init.init_blob()
    b = blob.parse(data)
    for ext in ("npz", "safetensors"):
        path = tmp_path / f"e.{ext}"
        weights_io.save(path, b.tensors(), b.header.dims)
        arrays, dims = weights_io.load(path)
        assert blob.from_arrays(arrays, dims) == data


def test_dims_required_without_metadata(tmp_path, arrays):
    path = tmp_path / "plain.safetensors"
    save_file(state_dict(arrays), str(path))
    with pytest.raises(errors.WeightsFileError, match="--dims"):
        weights_io.load(path)
    _, dims = weights_io.load(path, dims=DIMS)
    assert dims == DIMS
    npz = tmp_path / "plain.npz"
    np.savez(npz, **arrays)
    with pytest.raises(errors.WeightsFileError, match="--dims"):
        weights_io.load(npz)
    assert weights_io.load(npz, dims="8,6,3,4,2,3")[1] == DIMS


def test_dims_override_conflicting_shapes(tmp_path, arrays):
    path = tmp_path / "w.npz"
    weights_io.save(path, arrays, DIMS)
    # same Q and K, other head split: shapes agree, the override wins
    assert weights_io.load(path, dims=(8, 12, 6, 2, 2, 3))[1] == (8, 12, 6, 2, 2, 3)
    with pytest.raises(errors.WeightsFileError, match="layers.0.wq has shape"):
        weights_io.load(path, dims=(8, 4, 2, 4, 2, 3))


def test_npz_missing_extra_misshapen(tmp_path, arrays):
    cases = {
        "missing": ({k: v for k, v in arrays.items() if k != "layers.1.wk"}, "missing tensor layers.1.wk"),
        "extra": ({**arrays, "bias": np.zeros(3, np.float32)}, "unexpected tensor bias"),
        "shape": ({**arrays, "wc": arrays["wc"].T.copy()}, r"tensor wc has shape \(3, 8\)"),
        "dtype": ({**arrays, "wc": arrays["wc"].astype(np.int32)}, "wc has dtype int32"),
    }
    for label, (a, message) in cases.items():
        path = tmp_path / f"{label}.npz"
        np.savez(path, **a, **{"rvne.dims": np.array(str(DIMS))})
        with pytest.raises(errors.WeightsFileError, match=message):
            weights_io.load(path)


def test_safetensors_bias_and_shape_named_by_key(tmp_path, arrays):
    sd = state_dict(arrays)
    sd["layers.0.attn.q_proj.bias"] = np.zeros(DIMS.q_dim, np.float32)
    path = tmp_path / "bias.safetensors"
    save_file(sd, str(path), metadata={"rvne.dims": str(DIMS)})
    with pytest.raises(errors.WeightsFileError, match="layers.0.attn.q_proj.bias.*biases"):
        weights_io.load(path)
    sd = state_dict(arrays)
    sd["classifier.weight"] = np.zeros((DIMS.n_classes, 5), np.float32)
    save_file(sd, str(path), metadata={"rvne.dims": str(DIMS)})
    with pytest.raises(errors.WeightsFileError, match=r"classifier.weight has shape \(3, 5\).*\(3, 8\) \(out x in\)"):
        weights_io.load(path)


def test_garbage_files_refused(tmp_path):
    for name in ("junk.npz", "junk.safetensors"):
        p = tmp_path / name
        p.write_bytes(b"not a weights file at all")
        with pytest.raises(errors.WeightsFileError, match=name):
            weights_io.load(p)
    with pytest.raises(errors.WeightsFileError, match=r"\.npz, \.safetensors or \.pt"):
        weights_io.load(tmp_path / "w.bin")
    with pytest.raises(FileNotFoundError):
        weights_io.load(tmp_path / "absent.npz")


def test_bad_metadata_dims(tmp_path, arrays):
    path = tmp_path / "m.safetensors"
    save_file(state_dict(arrays), str(path), metadata={"rvne.dims": "8,6,4,4,2,3"})
    with pytest.raises(errors.WeightsFileError, match="GQA"):
        weights_io.load(path)
    save_file(state_dict(arrays), str(path), metadata={"rvne.dims": "eight"})
    with pytest.raises(errors.WeightsFileError, match="rvne.dims"):
        weights_io.load(path)
