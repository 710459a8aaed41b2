"""Hostile .pt files for `rvne pack` (docs/model.md, "Named tensors for import
and export"): each ends with exit 1 and one line naming the file and what to
do, runs no code from the file, keeps the previous output and leaves no
temp file behind."""

import io
import os
import pickle
import zipfile

import pytest
from torch_required import torch

from conftest import Ran, rvne
from rvne import cli

DIMS = "8,6,3,4,2,3"


@pytest.fixture(scope="module")
def state_dict():
    from rvne.torch import TemporalHead

    torch.manual_seed(0)
    return TemporalHead(DIMS).state_dict()


@pytest.fixture(scope="module")
def good_pt(tmp_path_factory, state_dict):
    path = tmp_path_factory.mktemp("pt") / "good.pt"
    torch.save(state_dict, path)
    return path.read_bytes()


@pytest.fixture
def refused(tmp_path, capsys):
    """refused(data, *words): pack `data` over an existing output in this
    process (torch imports once): exit 1, one line, output kept, no temp file."""

    def run(data, *words, args=("--dims", DIMS), name="w.pt"):
        src, out = tmp_path / name, tmp_path / "out.rvne"
        src.write_bytes(data)
        out.write_bytes(b"previous")
        capsys.readouterr()
        rc = cli.main(["pack", str(src), str(out), *args])
        err = capsys.readouterr().err
        assert rc == 1, err
        line = Ran(rc, "", err).line(name, *words)
        assert out.read_bytes() == b"previous"
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, "out.rvne"])
        return line

    return run


@pytest.mark.parametrize("cut", [0.1, 0.5, 0.9, 0.999])
def test_truncated(refused, tmp_path, good_pt, cut):
    refused(good_pt[:int(len(good_pt) * cut)], "truncated or damaged")


def test_short_and_empty(refused, tmp_path):
    refused(b"", "not a torch.save file")
    refused(b"PK\x03", "not a torch.save file")


def _saved(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


class RunsCode:
    """Unpickling this runs os.system: what weights_only must never do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_with_code_is_refused_and_never_run(refused, tmp_path, state_dict):
    marker = tmp_path.parent / f"{tmp_path.name}-PWNED"
    data = _saved({**state_dict, "evil": RunsCode(marker)})
    line = refused(data, "needs more than tensors", "system", "never unpickles code")
    assert "torch.save" in line and not marker.exists()
    # And as a user runs it, in a process of its own.
    r = rvne("pack", tmp_path / "w.pt", tmp_path / "out.rvne", "--dims", DIMS, timeout=60)
    assert r.rc == 1 and not marker.exists()
    r.line("w.pt", "never unpickles code")
    # The same inside the legacy (bare pickle) format, and as plain pickle.dump.
    legacy = io.BytesIO()
    torch.save({"evil": RunsCode(marker)}, legacy, _use_new_zipfile_serialization=False)
    refused(legacy.getvalue(), "bare pickle")
    refused(pickle.dumps({"evil": RunsCode(marker)}), "bare pickle")
    assert not marker.exists()


class Custom:
    pass


def test_a_custom_class_is_refused(refused, state_dict):
    data = _saved({**state_dict, "config": Custom()})
    refused(data, "needs more than tensors", "Custom")


def test_a_compressed_record_is_refused(refused, good_pt):
    # torch.save stores records; a deflated one could inflate past the file's size.
    src = zipfile.ZipFile(io.BytesIO(good_pt))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            z.writestr(info.filename, src.read(info))
    refused(out.getvalue(), "is compressed")


def test_an_npz_named_pt(refused, tmp_path):
    import numpy as np

    buf = io.BytesIO()
    np.savez(buf, wc=np.zeros((8, 3), np.float32))
    refused(buf.getvalue(), "an .npz archive", "name it .npz")


def test_a_zip_that_is_not_torchs(refused, tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("readme.txt", "hello")
    refused(buf.getvalue(), "not torch.save's")


@pytest.mark.parametrize("obj, words", [
    (torch.zeros(3), "holds a Tensor, not a state dict"),
    ([torch.zeros(3)], "holds a list, not a state dict"),
])
def test_not_a_state_dict(refused, tmp_path, obj, words):
    refused(_saved(obj), words)


def test_a_value_that_is_not_a_tensor_under_a_head_name(refused, state_dict):
    refused(_saved({**state_dict, "classifier.weight": [[1.0, 2.0]]}), "classifier.weight is not a tensor")


def test_nesting_too_deep(refused, tmp_path):
    obj = {"w": torch.zeros(1)}
    for _ in range(40):
        obj = {"a": obj}
    refused(_saved(obj), "nested more than")


def test_wrong_shapes(refused, tmp_path, state_dict):
    sd = dict(state_dict)
    sd["layers.1.attn.o_proj.weight"] = torch.zeros(8, 23)
    refused(_saved(sd), "layers.1.attn.o_proj.weight has shape (8, 23)", "need (8, 24) (out x in)")
    sd["layers.1.attn.o_proj.weight"] = torch.zeros(8, 24, 1)
    refused(_saved(sd), "layers.1.attn.o_proj.weight has shape (8, 24, 1), need a matrix")


@pytest.mark.parametrize("value, words", [(float("nan"), "NaN or inf"), (float("inf"), "NaN or inf"),
                                          (1e300, "beyond float32's range")])
def test_non_finite_weights(refused, tmp_path, state_dict, value, words):
    sd = {k: v.double() for k, v in state_dict.items()}
    sd["layers.0.attn.k_proj.weight"][2, 3] = value
    refused(_saved(sd), "layers.0.attn.k_proj.weight has 1 value(s)", words, "(2, 3)")
    refused(_saved(sd), words, args=("--dims", DIMS, "--fp16"))


def test_a_fifo_pt_is_not_waited_for(tmp_path):
    os.mkfifo(tmp_path / "w.pt")
    r = rvne("pack", tmp_path / "w.pt", tmp_path / "o.rvne", "--dims", DIMS, timeout=30)
    assert r.rc == 1
    r.line("w.pt")
