"""rvne.torch.TemporalHead against the contract: the verdict of docs/model.md
(rvne.model.bounds' float64 reference and error bound) for random dims, FP32 and
FP16 blobs, windows 1, 7 and 100 over sequences longer than the window;
gradients; the blob round trip; and a head with a wrong window mask that
the same comparison must fail."""

import numpy as np
import pytest
from torch_required import torch

from rvne import cli, errors
from rvne import torch as rvne_torch
from rvne.io import blob, weights as weights_io
from rvne.model import bounds, contract, verdict
from rvne.model.contract import Dims
from rvne.torch import TemporalHead

WINDOWS = (1, 7, 100)


def random_dims(seed):
    rng = np.random.default_rng(seed)
    hkv = int(rng.integers(1, 4))
    return Dims(int(rng.integers(1, 25)), hkv * int(rng.integers(1, 4)), hkv, int(rng.integers(1, 9)),
                int(rng.integers(1, 4)), int(rng.integers(2, 7)))


def frames_for(dims, window, seed, batch=2):
    """Sequences a few frames past the window, so it slides and evicts."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, window + 13, dims.input_dim, generator=g)


def judge_head(head, parsed, frames, window):
    """rvne.model.verdict's judgement of the head's logits for every sequence,
    against the float64 reference of the blob's weights."""
    truth = bounds.Truth(parsed.tensors(), parsed.header.dims)
    with torch.no_grad():
        got = head(frames, window).double().numpy()
    refs, bds = zip(*(truth.forward(f.numpy(), window) for f in frames))
    return verdict.judge(got, np.stack(refs), np.stack(bds))


def new_head(dims, seed, scale=1.0):
    torch.manual_seed(seed)
    head = TemporalHead(dims)
    with torch.no_grad():
        for p in head.parameters():
            p.mul_(scale)
    return head


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("fp16", [False, True])
def test_equals_the_reference_within_the_bound(tmp_path, seed, fp16):
    dims = random_dims(seed)
    path = tmp_path / "h.rvne"
    # 3x nn.Linear's init: scores far from uniform, so the mask and softmax matter.
    new_head(dims, seed, scale=3.0).to_blob(path, fp16=fp16)
    parsed = blob.read_file(path, contract=True)
    assert parsed.header.fp16 == fp16 and parsed.header.dims == dims
    for dtype in (torch.float32, torch.float64):
        head = TemporalHead.from_blob(path, dtype=dtype)
        for window in WINDOWS:
            v = judge_head(head, parsed, frames_for(dims, window, seed), window)
            assert v["ok"], (dims, dtype, window, v)
            if dtype == torch.float64:     # float64 is far inside the FP32 allowance
                assert v["max_ratio"] < 1e-3, (dims, window, v)


@pytest.mark.parametrize("window", [7, 100])
@pytest.mark.parametrize("off", [-1, 1])
def test_a_window_off_by_one_fails_the_same_comparison(tmp_path, monkeypatch, window, off):
    dims = Dims(16, 4, 1, 32, 2, 4)
    path = tmp_path / "h.rvne"
    new_head(dims, 0, scale=3.0).to_blob(path)
    parsed = blob.read_file(path, contract=True)
    head = TemporalHead.from_blob(path)
    frames = frames_for(dims, window, 0)
    assert judge_head(head, parsed, frames, window)["ok"]
    right = rvne_torch.band_mask
    monkeypatch.setattr(rvne_torch, "band_mask", lambda t0, t1, s0, w, dev: right(t0, t1, s0, w + off, dev))
    v = judge_head(head, parsed, frames, window)
    assert not v["ok"] and v["max_ratio"] > 10, v
    # Rows before the window fills attend the same positions either way: they still agree.
    assert v["worst"][1] >= window - (off < 0)


def test_a_batch_equals_its_sequences_one_by_one():
    head = new_head(Dims(5, 2, 1, 3, 2, 3), 1, scale=2.0)
    frames = torch.randn(3, 40, 5, dtype=torch.float64)
    head = head.double()
    with torch.no_grad():
        batch = head(frames, 9)
        for b in range(3):
            torch.testing.assert_close(batch[b], head(frames[b], 9), rtol=1e-12, atol=1e-12)
            # A prefix is a stream stopped early: causal.
            torch.testing.assert_close(batch[b, :17], head(frames[b, :17], 9), rtol=1e-12, atol=1e-12)


def test_long_sequences_cross_query_blocks(tmp_path):
    """Past rvne.torch.BLOCK positions the mask is applied block by block."""
    dims = Dims(6, 2, 2, 4, 2, 3)
    path = tmp_path / "h.rvne"
    new_head(dims, 3, scale=3.0).to_blob(path)
    parsed = blob.read_file(path, contract=True)
    head = TemporalHead.from_blob(path)
    g = torch.Generator().manual_seed(5)
    frames = torch.randn(1, rvne_torch.BLOCK + 150, 6, generator=g)
    for window in (7, 100):
        v = judge_head(head, parsed, frames, window)
        assert v["ok"], v


def test_gradients_flow_to_every_parameter_and_the_frames():
    head = new_head(Dims(8, 4, 2, 4, 2, 3), 2)
    frames = torch.randn(2, 20, 8, requires_grad=True)
    head(frames, 7).logsumexp(-1).sum().backward()
    for name, p in head.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name
    assert frames.grad.abs().sum() > 0


def test_gradients_match_finite_differences():
    from torch.func import functional_call

    head = new_head(Dims(3, 2, 1, 2, 2, 2), 4, scale=2.0).double()
    frames = torch.randn(2, 6, 3, dtype=torch.float64, requires_grad=True)
    key = "layers.1.attn.k_proj.weight"
    wk = head.state_dict()[key].clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda f, w: functional_call(head, {key: w}, (f, 3)), (frames, wk))


def test_state_dict_is_the_contracts_state_dict():
    dims = Dims(8, 6, 3, 4, 2, 3)
    sd = TemporalHead(dims).state_dict()
    assert list(sd) == [weights_io.state_dict_key(n) for n in contract.tensor_names(dims)]
    for spec in contract.tensor_specs(dims):
        assert tuple(sd[weights_io.state_dict_key(spec.name)].shape) == spec.shape[::-1]   # out x in


def test_to_blob_from_blob_round_trip(tmp_path):
    dims = Dims(8, 6, 3, 4, 2, 3)
    head = new_head(dims, 6)
    p32, p16 = tmp_path / "h32.rvne", tmp_path / "h16.rvne"
    head.to_blob(p32)
    head.to_blob(p16, fp16=True)
    # One writer: the bytes are rvne.io.blob's for the same named arrays.
    assert p32.read_bytes() == blob.from_arrays(head.arrays(), dims)
    back = TemporalHead.from_blob(p32)
    for k, v in head.state_dict().items():
        assert torch.equal(back.state_dict()[k], v), k
    back16 = TemporalHead.from_blob(p16)
    for k, v in head.state_dict().items():
        assert torch.equal(back16.state_dict()[k], v.half().float()), k
    assert blob.read_file(p16).header.weights_len == contract.expected_weights_len(dims, True)
    # A float64 head rounds once, straight to FP16.
    h64 = head.double()
    with torch.no_grad():
        h64.classifier.weight[0, 0] = 1 + 2.0 ** -11 + 2.0 ** -40   # just above a tie: rounds up
    h64.to_blob(p16, fp16=True)
    assert TemporalHead.from_blob(p16).classifier.weight[0, 0].item() == 1 + 2.0 ** -10


def test_to_blob_refuses_bad_weights_and_keeps_the_old_file(tmp_path):
    dims = Dims(4, 2, 1, 2, 1, 2)
    path = tmp_path / "h.rvne"
    head = new_head(dims, 7)
    head.to_blob(path)
    before = path.read_bytes()
    with torch.no_grad():
        head.layers[0].attn.v_proj.weight[1, 2] = float("nan")
    with pytest.raises(errors.WeightsFileError, match=r"layers\.0\.wv \(layers\.0\.attn\.v_proj\.weight\) has 1 NaN"):
        head.to_blob(path)
    with torch.no_grad():
        head.layers[0].attn.v_proj.weight[1, 2] = 1e6
    head.to_blob(path)      # FP32 holds 1e6
    with pytest.raises(errors.WeightsFileError, match="beyond FP16's range"):
        head.to_blob(path, fp16=True)
    assert blob.read_file(path).header.fp16 is False and path.read_bytes() != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.rvne"]       # no temp file left


def test_state_dict_packs_without_a_map(tmp_path, capsys):
    from safetensors.torch import save_file

    dims = Dims(8, 6, 3, 4, 2, 3)
    head = new_head(dims, 8)
    head.to_blob(tmp_path / "direct.rvne")
    save_file(head.state_dict(), str(tmp_path / "h.safetensors"), metadata=head.metadata())
    assert cli.main(["pack", str(tmp_path / "h.safetensors"), str(tmp_path / "st.rvne")]) == 0
    save_file(head.state_dict(), str(tmp_path / "bare.safetensors"))
    assert cli.main(["pack", str(tmp_path / "bare.safetensors"), str(tmp_path / "bare.rvne"), "--dims", str(dims)]) == 0
    direct = (tmp_path / "direct.rvne").read_bytes()
    assert (tmp_path / "st.rvne").read_bytes() == direct == (tmp_path / "bare.rvne").read_bytes()


def test_refuses_bad_arguments():
    head = TemporalHead("4,2,1,2,1,2")
    for w in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="window"):
            head(torch.zeros(1, 3, 4), w)
    with pytest.raises(ValueError, match=r"need \[B, T, 4\]"):
        head(torch.zeros(1, 3, 5), 2)
    with pytest.raises(errors.GqaError):
        TemporalHead("4,3,2,2,1,2")


def test_every_tensor_follows_the_frames_device():
    """No GPU here: the meta device stands in. A tensor made on the CPU
    behind the caller's back (the mask) fails this as it would on CUDA."""
    head = TemporalHead("8,4,2,4,2,3").to("meta")
    out = head(torch.empty(2, 70, 8, device="meta"), 7)
    assert out.shape == (2, 70, 3) and out.device.type == "meta"


def test_a_later_non_finite_frame_leaves_earlier_rows_alone():
    """Causal as streaming is: a frame that overflows poisons only the rows
    whose window holds it (docs/model.md, "Streaming forward")."""
    head = new_head(Dims(6, 2, 1, 4, 2, 3), 9)
    frames = torch.randn(2, 50, 6)
    frames[0, 20, 3] = float("inf")
    frames[1, 41, 0] = float("nan")
    with torch.no_grad():
        out = head(frames, 7)
        torch.testing.assert_close(out[0, :20], head(frames[0, :20], 7))
        torch.testing.assert_close(out[1, :41], head(frames[1, :41], 7))
    assert not torch.isfinite(out[0, 20]).any() and not torch.isfinite(out[1, 41]).any()
    assert torch.isfinite(out[0, :20]).all() and torch.isfinite(out[1, :41]).all()
