"""A streaming FP32 forward in numpy that writes the trace of
docs/protocol.md (TRACE) the way the firmware does, with knobs to break
one step: the host-side stand-in for a device's trace in tests of
rvne.model.steps (the virtual device's defect builds are the C side)."""

import numpy as np

from rvne.model import contract, steps
from rvne.model.contract import Dims


def weights(dims, seed=0, gain=1.0):
    rng = np.random.default_rng(seed)
    return {s.name: (rng.standard_normal(s.shape) * gain / np.sqrt(s.shape[0])).astype(np.float32)
            for s in contract.tensor_specs(dims)}


def traces(w, dims, frames, window, scale_err=0.0, online=False, break_at=None, scores=True, exp_err=0.0):
    """[T, trace_floats] for frames [T, D] pushed after a reset, with the
    scaled scores (protocol 3; scores=False: protocol 2's layout without).
    scale_err: 1/sqrt(head_dim) off by that relative error. exp_err: every
    exponential off by up to that relative error, varying with its argument. online: an online softmax
    (running max, rescaled sums). break_at (frame, layer, point, index,
    factor): that value is multiplied by factor before the next step uses it
    (a score's index: head * W + position, the oldest attended first)."""
    d = Dims.of(dims)
    wf = {k: np.asarray(v, np.float32) for k, v in w.items()}
    T, W, hd = len(frames), window, d.head_dim
    tw = W if scores else None
    out = np.zeros((T, steps.trace_floats(d, tw)), np.float32)
    # exp_err varies with the argument, as the exp_err defect build's does (a constant cancels).
    exp = lambda z: (np.exp(z) * (1 + np.float32(exp_err) * np.sin(np.float32(9.0647203) * z))).astype(np.float32)  # noqa
    K = np.zeros((d.n_layers, W, d.kv_dim), np.float32)
    V = np.zeros_like(K)
    scale = np.float32(1 / np.sqrt(hd) * (1 + scale_err))

    def hit(t, layer, point, vec):
        if break_at and break_at[:3] == (t, layer, point):
            vec = vec.copy()
            vec[break_at[3]] *= np.float32(break_at[4])
        return vec

    for t, f in enumerate(np.asarray(frames, np.float32)):
        x, row = f, []
        slot, n = t % W, min(t + 1, W)
        order = (np.arange(n) + (slot + 1 if n == W else 0)) % W     # ring slots, the oldest position first
        for layer in range(d.n_layers):
            p = f"layers.{layer}."
            q = hit(t, layer, "q", x @ wf[p + "wq"])
            K[layer, slot] = hit(t, layer, "k", x @ wf[p + "wk"])
            V[layer, slot] = hit(t, layer, "v", x @ wf[p + "wv"])
            o = np.zeros(d.q_dim, np.float32)
            traced_sc = np.zeros(d.n_q_heads * W, np.float32)
            for h in range(d.n_q_heads):
                g = h // d.group
                ks, vs = K[layer, order, g * hd:(g + 1) * hd], V[layer, order, g * hd:(g + 1) * hd]
                sc = (ks @ q[h * hd:(h + 1) * hd]) * scale
                traced_sc[h * W:h * W + n] = sc
                sc = hit(t, layer, "scores", traced_sc)[h * W:h * W + n]
                traced_sc[h * W:h * W + n] = sc
                if online:
                    m, s, acc = np.float32(-np.inf), np.float32(0), np.zeros(hd, np.float32)
                    for j in range(n):
                        m2 = max(m, sc[j])
                        a = exp(np.float32(m - m2)) if m > -np.inf else np.float32(0)
                        e = exp(np.float32(sc[j] - m2))
                        s, acc, m = s * a + e, acc * a + e * vs[j], m2
                    o[h * hd:(h + 1) * hd] = acc / s
                else:
                    e = exp(sc - sc.max())
                    o[h * hd:(h + 1) * hd] = (e @ vs) * (np.float32(1) / e.sum())
            o = hit(t, layer, "attention", o)
            x = hit(t, layer, "x", x + o @ wf[p + "wo"])
            row += [q, K[layer, slot], V[layer, slot]] + ([traced_sc] if scores else []) + [o, x]
        row.append(hit(t, None, "logits", x @ wf["wc"]))
        out[t] = np.concatenate(row)
    return out
