"""`rvne pack model.pt`: a torch.save'd state dict, its prefixes, extra
entries, other names (the --map the error suggests) and dtypes
(docs/model.md, "Named tensors for import and export")."""

import json
import re

import pytest
from torch_required import torch

from rvne import cli
from rvne.io import blob
from rvne.model.contract import Dims
from rvne.torch import TemporalHead

DIMS = Dims(8, 6, 3, 4, 2, 3)


@pytest.fixture
def head():
    torch.manual_seed(0)
    return TemporalHead(DIMS)


@pytest.fixture
def direct(tmp_path, head):
    path = tmp_path / "direct.rvne"
    head.to_blob(path)
    return path.read_bytes()


def pack(tmp_path, obj, *args, name="w.pt"):
    """(exit code, output blob bytes or None) of `rvne pack` on torch.save(obj)."""
    src, out = tmp_path / name, tmp_path / "out.rvne"
    torch.save(obj, src)
    out.unlink(missing_ok=True)
    rc = cli.main(["pack", str(src), str(out), *args])
    return rc, (out.read_bytes() if out.exists() else None)


def err_line(capsys):
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rvne: error: "), err
    return lines[0]


def test_a_state_dict_packs_as_to_blob_writes(tmp_path, head, direct, capsys):
    assert pack(tmp_path, head.state_dict(), "--dims", str(DIMS)) == (0, direct)
    assert pack(tmp_path, {**head.state_dict(), "rvne.dims": str(DIMS)}) == (0, direct)
    assert pack(tmp_path, head.state_dict(), "--dims", str(DIMS), name="w.pth") == (0, direct)
    rc, data = pack(tmp_path, head.state_dict(), "--dims", str(DIMS), "--fp16")
    assert rc == 0 and blob.parse(data).header.fp16
    # Parameters (requires_grad) and tensors saved from a non-contiguous view load the same.
    params = {k: torch.nn.Parameter(v.t().contiguous().t()) for k, v in head.state_dict().items()}
    assert pack(tmp_path, params, "--dims", str(DIMS)) == (0, direct)


def test_without_dims_it_says_to_pass_them(tmp_path, head, capsys):
    assert pack(tmp_path, head.state_dict()) == (1, None)
    assert "pass --dims D,HQ,HKV,HD,L,C" in err_line(capsys)


@pytest.mark.parametrize("prefix", ["model.", "module.", "module.model."])
def test_a_common_prefix_is_stripped(tmp_path, head, direct, capsys, prefix):
    sd = {prefix + k: v for k, v in head.state_dict().items()}
    assert pack(tmp_path, sd, "--dims", str(DIMS)) == (0, direct)
    assert f"under {prefix!r}: prefix stripped" in capsys.readouterr().out


def test_a_missing_tensor_is_named_with_its_prefix(tmp_path, head, capsys):
    sd = {"model." + k: v for k, v in head.state_dict().items() if k != "layers.1.attn.v_proj.weight"}
    assert pack(tmp_path, sd, "--dims", str(DIMS)) == (1, None)
    assert "missing tensor model.layers.1.attn.v_proj.weight" in err_line(capsys)


class Wrapped(torch.nn.Module):
    """A model with more than the head: a front end before it."""

    def __init__(self, head):
        super().__init__()
        self.frontend = torch.nn.Linear(3, DIMS.input_dim)
        self.head = head


def test_extra_parameters_only_when_the_user_says_how(tmp_path, head, direct, capsys):
    sd = Wrapped(head).state_dict()
    assert pack(tmp_path, sd, "--dims", str(DIMS)) == (1, None)
    line = err_line(capsys)
    for words in ("2 entries besides the head's", "frontend.weight, frontend.bias", "--prefix head.", "--map"):
        assert words in line, line
    assert pack(tmp_path, sd, "--dims", str(DIMS), "--prefix", "head.") == (0, direct)
    assert "ignored 2 entries outside the head: frontend.weight, frontend.bias" in capsys.readouterr().out
    # A training checkpoint: the state dict nested, and values that are not tensors.
    ckpt = {"model": sd, "epoch": 7, "rvne.dims": str(DIMS)}
    assert pack(tmp_path, ckpt) == (1, None)
    assert "--prefix model.head." in err_line(capsys)
    assert pack(tmp_path, ckpt, "--prefix", "model.head.") == (0, direct)
    # Top-level extras: the empty prefix.
    assert pack(tmp_path, {**head.state_dict(), "step": 3}, "--dims", str(DIMS)) == (1, None)
    assert "--prefix ''" in err_line(capsys)
    assert pack(tmp_path, {**head.state_dict(), "step": 3}, "--dims", str(DIMS), "--prefix", "") == (0, direct)


def test_biases_are_refused_even_under_a_prefix(tmp_path, head, capsys):
    sd = {**head.state_dict(), "layers.0.attn.q_proj.bias": torch.zeros(DIMS.q_dim)}
    for args in ([], ["--prefix", ""]):
        assert pack(tmp_path, sd, "--dims", str(DIMS), *args) == (1, None)
        assert "layers.0.attn.q_proj.bias: biases are not part of the contract" in err_line(capsys)


def test_other_names_get_the_map_that_fixes_them(tmp_path, head, direct, capsys):
    rename = {"layers.": "enc.", "attn.": "", "classifier": "cls"}
    sd = {}
    for k, v in head.state_dict().items():
        for a, b in rename.items():
            k = k.replace(a, b)
        sd[k] = v
    sd["enc.norm.weight"] = torch.ones(DIMS.input_dim)      # 1-D: not paired
    assert pack(tmp_path, sd) == (1, None)
    line = err_line(capsys)
    assert "add --dims" in line and "expected layers.N.attn.{q,k,v,o}_proj.weight" in line
    assert pack(tmp_path, sd, "--dims", str(DIMS)) == (1, None)
    line = err_line(capsys)
    assert "expected layers.{0..1}.attn.{q,k,v,o}_proj.weight and classifier.weight" in line
    assert "found enc.0.q_proj.weight, enc.0.k_proj.weight" in line and "(10 in all)" in line
    doc = json.loads(re.search(r"MAP = (\{.*\}) \(paired", line).group(1))
    assert doc["dims"] == str(DIMS) and doc["tensors"]["wc"] == {"source": "cls.weight", "transpose": True}
    (tmp_path / "map.json").write_text(json.dumps(doc))
    rc, data = pack(tmp_path, sd, "--map", str(tmp_path / "map.json"))
    assert (rc, data) == (0, direct)
    out = capsys.readouterr().out
    assert "layers.1.wo <- enc.1.o_proj.weight [8x24] transposed: F32 -> FP32 exact" in out
    assert "1 source tensors not used" in out
    assert pack(tmp_path, sd, "--map", str(tmp_path / "map.json"), "--prefix", "enc.") == (1, None)
    assert "use one" in err_line(capsys)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_float_dtypes_convert(tmp_path, head, dtype):
    sd = {k: v.to(dtype) for k, v in head.state_dict().items()}
    rc, data = pack(tmp_path, sd, "--dims", str(DIMS))
    assert rc == 0
    got = blob.parse(data).tensors()
    for name, want in TemporalHead(DIMS).load_arrays(got).state_dict().items():
        assert torch.equal(want, sd[name].float()), name     # each value the source's, rounded once to FP32


@pytest.mark.parametrize("make, words", [
    (lambda t: t.to(torch.int32), "has dtype int32"),
    (lambda t: t.to_sparse(), "is sparse_coo"),
    (lambda t: torch.empty(t.shape, device="meta"), "meta device"),
    (lambda t: t.to(torch.complex64), "has dtype complex64"),
])
def test_tensors_without_plain_float_values_are_refused(tmp_path, head, capsys, make, words):
    sd = dict(head.state_dict())
    sd["classifier.weight"] = make(sd["classifier.weight"])
    assert pack(tmp_path, sd, "--dims", str(DIMS)) == (1, None)
    line = err_line(capsys)
    assert "tensor classifier.weight" in line and words in line, line


def test_prefix_is_for_state_dicts(tmp_path, capsys):
    assert cli.main(["init", str(tmp_path / "m.rvne")]) == 0
    assert cli.main(["export", str(tmp_path / "m.rvne"), str(tmp_path / "m.npz")]) == 0
    capsys.readouterr()
    assert cli.main(["pack", str(tmp_path / "m.npz"), str(tmp_path / "o.rvne"), "--prefix", "x."]) == 1
    assert "--prefix picks from a state dict" in err_line(capsys)


def test_export_does_not_write_pt(tmp_path, capsys):
    assert cli.main(["init", str(tmp_path / "m.rvne")]) == 0
    capsys.readouterr()
    assert cli.main(["export", str(tmp_path / "m.rvne"), str(tmp_path / "m.pt")]) == 1
    assert "use .npz or .safetensors" in err_line(capsys)


def test_safetensors_shares_the_prefix_rules(tmp_path, head, direct, capsys):
    from safetensors.torch import save_file

    path = tmp_path / "w.safetensors"
    save_file({"module." + k: v for k, v in head.state_dict().items()}, str(path), metadata=head.metadata())
    assert cli.main(["pack", str(path), str(tmp_path / "o.rvne")]) == 0
    assert (tmp_path / "o.rvne").read_bytes() == direct
    save_file({f"head.{k}": v for k, v in Wrapped(head).state_dict().items()}, str(path), metadata=head.metadata())
    assert cli.main(["pack", str(path), str(tmp_path / "o.rvne")]) == 1
    assert "--prefix head.head." in err_line(capsys)
    assert cli.main(["pack", str(path), str(tmp_path / "o.rvne"), "--prefix", "head.head."]) == 0
    assert (tmp_path / "o.rvne").read_bytes() == direct


def test_inspect_and_verify_take_the_pt_that_pack_reads(tmp_path, head, capsys):
    src = tmp_path / "w.pt"
    torch.save({**head.state_dict(), "rvne.dims": str(DIMS)}, src)
    assert cli.main(["verify", str(src)]) == 0
    assert capsys.readouterr().out.startswith(f"OK {src}: PyTorch state dict")
    assert cli.main(["inspect", str(src), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["valid"] and doc["fields"]["dims"] == list(DIMS) and len(doc["tensors"]) == 4 * DIMS.n_layers + 1
    torch.save(head.state_dict(), src)      # no dims: pack needs --dims, and verify says so
    assert cli.main(["verify", str(src)]) == 1
    assert "--dims" in err_line(capsys)


def test_verify_takes_packs_dims_for_a_pt_without_them(tmp_path, head, capsys):
    src = tmp_path / "w.pt"
    torch.save(head.state_dict(), src)
    assert cli.main(["verify", str(src), "--dims", str(DIMS)]) == 0
    assert cli.main(["inspect", str(src), "--dims", str(DIMS)]) == 0
