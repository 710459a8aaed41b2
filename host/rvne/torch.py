"""The temporal head of docs/model.md as a torch.nn.Module, for training in
PyTorch (`pip install 'rvne[torch]'`; the rest of rvne never imports torch).

    head = TemporalHead((16, 4, 1, 32, 2, 4))      # dims as the CLI's --dims
    logits = head(frames, window=100)             # [B, T, D] -> [B, T, C]
    head.to_blob("head.rvne", fp16=False)         # through rvne.io.blob
    head.to_blob("q.rvne", dtype="int8", calibration=frames)   # rvne.model.quantize
    head = TemporalHead.from_blob("head.rvne")    # FP16 blobs decoded exactly

The parameters are docs/model.md's state-dict tensors ("Named tensors for
import and export": `layers.{l}.attn.{q,k,v,o}_proj.weight`,
`classifier.weight`, nn.Linear's out x in, no biases), in blob order, so
`safetensors.torch.save_file(head.state_dict(), f, metadata=head.metadata())`
and `torch.save(head.state_dict(), f)` pack with `rvne pack` as they are.

forward() is the batch form of the streaming push: position t attends to
positions max(0, t-W+1) .. t of its layer's input, all sequences and heads
at once under a banded causal mask (in blocks of BLOCK query positions). Layer l's keys and values at
a past position come from layer l-1's output there, which is what the
device's cache holds, so row t equals what a device reports after a reset
and frames 0 .. t (checked against rvne.model.bounds by tests/test_torch_head.py).
"""

import math

import numpy as np
import torch
from torch import nn

from .errors import WeightsFileError
from .io import blob
from .io.atomic import write_atomic
from .io.names import DIMS_KEY, state_dict_key
from .model import contract
from .model.contract import Dims
from .model.reference import DEFAULT_WINDOW

# Query positions per block: every sequence and head at once, against the
# BLOCK + W - 1 positions the block's rows may see, under the band mask. Small
# blocks waste little on masked scores (B 32, T 256, W 100 on one CPU thread:
# 32 runs ~4x faster than one 256-row block) and bound memory however long T is.
BLOCK = 32


def band_mask(t0, t1, s0, window, device):
    """[t1-t0, t1-s0] True where query t may attend position s:
    t - W < s <= t (the last min(t+1, W) positions)."""
    t = torch.arange(t0, t1, device=device)[:, None]
    s = torch.arange(s0, t1, device=device)[None, :]
    return (s <= t) & (s > t - window)


def _check_window(window):
    if isinstance(window, bool) or int(window) != window or window < 1:
        raise ValueError(f"window is {window!r}: the attention window must be an integer >= 1")
    return int(window)


class Attention(nn.Module):
    """One layer's grouped-query attention over a sliding window."""

    def __init__(self, d):
        super().__init__()
        self.dims = d
        self.q_proj = nn.Linear(d.input_dim, d.q_dim, bias=False)
        self.k_proj = nn.Linear(d.input_dim, d.kv_dim, bias=False)
        self.v_proj = nn.Linear(d.input_dim, d.kv_dim, bias=False)
        self.o_proj = nn.Linear(d.q_dim, d.input_dim, bias=False)

    def forward(self, x, window):
        d = self.dims
        B, T, _ = x.shape
        HKV, G, HD = d.n_kv_heads, d.group, d.head_dim
        # Query head h = g*G + i uses kv head g (docs/model.md): heads as [HKV, G].
        # The scale is folded into q (docs/model.md's bound covers either); an
        # explicit softmax, not an online one (scaled_dot_product_attention's
        # fused kernels rescale as they go, which the bound does not cover).
        q = (self.q_proj(x) * (1.0 / math.sqrt(HD))).view(B, T, HKV, G, HD).permute(0, 2, 3, 1, 4)  # B HKV G T HD
        k = self.k_proj(x).view(B, T, HKV, HD).transpose(1, 2)                # B HKV T HD
        v = self.v_proj(x).view(B, T, HKV, HD).transpose(1, 2)
        outs = []
        for t0 in range(0, T, BLOCK):
            t1 = min(T, t0 + BLOCK)
            s0 = max(0, t0 - window + 1)
            n, m = t1 - t0, t1 - s0
            # One matrix product per kv head for all its query heads: [G*n, HD] x [HD, m].
            qb = q[..., t0:t1, :].reshape(B, HKV, G * n, HD)
            scores = (qb @ k[:, :, s0:t1].transpose(-1, -2)).view(B, HKV, G, n, m)
            scores = scores.masked_fill(~band_mask(t0, t1, s0, window, x.device), float("-inf"))
            a = torch.softmax(scores, dim=-1).view(B, HKV, G * n, m)
            outs.append(_mix(a, v[:, :, s0:t1]).view(B, HKV, G, n, HD))
        o = torch.cat(outs, dim=3) if len(outs) > 1 else outs[0]               # B HKV G T HD
        return self.o_proj(o.permute(0, 3, 1, 2, 4).reshape(B, T, d.q_dim))


def _mix(a, v):
    """a @ v, causal even when v holds a non-finite value: a masked
    position's weight is exactly 0, and 0 * inf would be NaN in every row of
    the block (docs/model.md, "Streaming forward"). A row that does attend a
    non-finite value is NaN, as no FP32 result there is vouched for."""
    bad = ~torch.isfinite(v)
    out = a @ v.masked_fill(bad, 0)
    hit = (a @ bad.any(-1, keepdim=True).to(a.dtype)) > 0          # rows that attend one
    return out.masked_fill(hit, float("nan"))


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = Attention(d)


class TemporalHead(nn.Module):
    """docs/model.md's head for dims (D, HQ, HKV, HD, L, C): a Dims, a
    6-sequence or the CLI's "D,HQ,HKV,HD,L,C" string. Parameters start as
    nn.Linear's default (uniform in +-1/sqrt(fan_in))."""

    def __init__(self, dims):
        super().__init__()
        self.dims = Dims.of(dims).check()
        d = self.dims
        self.layers = nn.ModuleList(Layer(d) for _ in range(d.n_layers))
        self.classifier = nn.Linear(d.input_dim, d.n_classes, bias=False)

    def forward(self, frames, window=DEFAULT_WINDOW):
        """Logits [B, T, C] for frames [B, T, D] (or [T, D] -> [T, C]): row t
        of a sequence is what a device streaming it reports after frame t.
        Frames are cast to the parameters' dtype (float32 or float64)."""
        W = _check_window(window)
        d = self.dims
        single = frames.dim() == 2
        x = frames[None] if single else frames
        if x.dim() != 3 or x.shape[-1] != d.input_dim:
            raise ValueError(f"frames have shape {tuple(frames.shape)}, need [B, T, {d.input_dim}] or "
                             f"[T, {d.input_dim}]")
        x = x.to(self.classifier.weight.dtype)
        for layer in self.layers:
            x = x + layer.attn(x, W)
        logits = self.classifier(x)
        return logits[0] if single else logits

    def extra_repr(self):
        return f"dims={self.dims}"

    # -- the blob's named arrays ---------------------------------------------------------
    def metadata(self):
        """safetensors metadata carrying the dims, so `rvne pack` needs no --dims."""
        return {DIMS_KEY: str(self.dims)}

    def arrays(self, dtype=np.float32):
        """docs/model.md's named (in x out) numpy arrays, in blob order."""
        sd = self.state_dict()
        return {name: sd[state_dict_key(name)].detach().to("cpu", torch.float64).numpy().T.astype(dtype)
                for name in contract.tensor_names(self.dims)}

    @torch.no_grad()
    def load_arrays(self, arrays):
        """Set every parameter from named (in x out) arrays (Blob.tensors(),
        rvne.io.weights.load()); their names and shapes are checked first."""
        contract.check_arrays(arrays, self.dims)
        params = dict(self.named_parameters())
        for name in contract.tensor_names(self.dims):
            p = params[state_dict_key(name)]
            p.copy_(torch.from_numpy(np.array(arrays[name], dtype=np.float64).T).to(p.dtype))
        return self

    def to_blob(self, path, fp16=False, *, dtype=None, calibration=None, window=DEFAULT_WINDOW):
        """Write this head as an RVNE blob (rvne.io.blob, replaced atomically);
        FP16 rounds each weight once, to nearest even. Refuses, writing
        nothing, weights that are NaN/inf or beyond FP16's range. Returns
        the parsed blob (header, CRC).

        dtype="int8" quantises it (rvne.model.quantize, what `rvne quantize`
        runs) calibrated on `calibration`: frames [T, D], [N, T, D] or a list
        of [T, D] sequences, numpy or torch, each from a reset state."""
        dtype = contract.dtype_name(fp16 if dtype is None else dtype)
        if dtype == "int8":
            if calibration is None:
                raise ValueError("to_blob(dtype='int8') needs calibration frames: calibration=[T, D] or [N, T, D]")
            from .model import quantize

            if isinstance(calibration, torch.Tensor):
                calibration = calibration.detach().to("cpu", torch.float32).numpy()
            elif isinstance(calibration, (list, tuple)):
                calibration = [c.detach().to("cpu", torch.float32).numpy() if isinstance(c, torch.Tensor) else c
                               for c in calibration]
            model, _ = quantize.quantize(self.arrays(np.float64), self.dims, calibration, _check_window(window))
            data = blob.from_int8(model)
            write_atomic(path, data)
            return blob.parse(data)
        fp16 = dtype == "fp16"
        arrays = self.arrays(np.float64)
        for name, a in arrays.items():
            bad = ~np.isfinite(a)
            if bad.any():
                raise WeightsFileError(f"{name} ({state_dict_key(name)}) has {int(bad.sum())} NaN/inf values; "
                                       "a blob of them would poison every logit: fix the training")
            if fp16:
                with np.errstate(over="ignore"):
                    h = a.astype(np.float16)        # straight from float64: no double rounding
                if np.isinf(h).any():
                    raise WeightsFileError(f"{name} ({state_dict_key(name)}) has values up to "
                                           f"{float(np.abs(a).max()):g}, beyond FP16's range (65504); "
                                           "export as FP32")
                arrays[name] = h
        data = blob.from_arrays(arrays, self.dims, fp16)
        write_atomic(path, data)
        return blob.parse(data)

    @classmethod
    def from_blob(cls, path, dtype=torch.float32, device=None):
        """A head holding a loadable blob's weights (FP16 decoded exactly)."""
        parsed = blob.read_file(path, contract=True)
        head = cls(parsed.header.dims).load_arrays(parsed.tensors())
        return head.to(device=device, dtype=dtype)
