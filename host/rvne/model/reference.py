"""The numpy FP32 reference of the temporal head (docs/model.md): batch and
streaming forward, FP32 throughout, what `rvne infer` reports. The ground
truth a device is judged by is rvne.model.bounds (float64, with error bounds);
the verdict rule is rvne.model.verdict.

`weights` everywhere is the dict of named (in x out) arrays of
rvne.model.contract (Blob.tensors() gives one)."""

import numpy as np

from .agreement import judge, tolerance
from .contract import Dims, check_arrays

ATOL = 1e-4
RTOL = 1e-4
DEFAULT_WINDOW = 100
F32 = np.float32

# Query positions per block of the batch form: bounds the score matrix to
# BLOCK x (BLOCK + W - 1) per head however long the sequence.
BLOCK = 256


def _prepare(weights, dims):
    d = Dims.of(dims).check()
    check_arrays(weights, d)
    w = {k: np.asarray(v, dtype=F32) for k, v in weights.items()}
    return d, w


def _check_window(window):
    if int(window) != window or window < 1:
        raise ValueError(f"window is {window}: the attention window must be an integer >= 1")
    return int(window)


def _check_frames(frames, d):
    x = np.asarray(frames)
    if x.ndim != 2 or x.shape[1] != d.input_dim:
        raise ValueError(f"frames have shape {x.shape}, need [N, {d.input_dim}] (N frames of input_dim values)")
    return x.astype(F32, copy=False)


def _softmax_rows(s):
    with np.errstate(invalid="ignore", over="ignore"):   # an overflowed row stays NaN/inf, causally
        s = s - s.max(axis=-1, keepdims=True)
        e = np.exp(s, dtype=F32)
        return e / e.sum(axis=-1, keepdims=True, dtype=F32)


def query_rows(q, d):
    """[T, HQ, ...] -> [HKV, G*T, ...]: the query heads of each kv head as
    rows (query head h = g_kv * G + i sits at row i*T + t of block g_kv)."""
    T, G, HKV = q.shape[0], d.group, d.n_kv_heads
    rest = q.shape[2:]
    moved = q.reshape((T, HKV, G) + rest).transpose((1, 2, 0) + tuple(range(3, 3 + len(rest))))
    return moved.reshape((HKV, G * T) + rest)


def query_heads(o, d, T):
    """The inverse of query_rows: [HKV, G*T, ...] -> [T, HQ, ...]."""
    G, HKV = d.group, d.n_kv_heads
    rest = o.shape[2:]
    moved = o.reshape((HKV, G, T) + rest).transpose((2, 0, 1) + tuple(range(3, 3 + len(rest))))
    return moved.reshape((T, d.n_q_heads) + rest)


def kv_rows(k):
    """[S, HKV, ...] -> [HKV, S, ...]."""
    return np.moveaxis(k, 1, 0)


def mix(a, v):
    """a @ v over the last two axes, where a weight of exactly 0 (a masked
    position) contributes 0 even against an inf or NaN in v: 0 * inf is NaN
    in IEEE, and would leak a later frame's overflow into earlier rows of a
    block (the batch form must stay causal, like streaming)."""
    finite = np.isfinite(v)
    if finite.all():
        return np.matmul(a, v)
    out = np.matmul(a, np.where(finite, v, 0))
    with np.errstate(invalid="ignore", over="ignore"):
        for j in np.nonzero(~finite.all(axis=tuple(i for i in range(v.ndim) if i != v.ndim - 2)))[0]:
            aj = a[..., j:j + 1]
            vj = np.where(finite[..., j:j + 1, :], 0, v[..., j:j + 1, :])
            out = out + np.where(aj != 0, aj * vj, 0)
    return out


def blocks(n, window):
    """(t0, t1, s0, mask) per block of query positions of the batch form:
    rows t0..t1-1 attend to positions s0..t1-1 where mask [t1-t0, t1-s0]
    is True (max(0, t-W+1) <= s <= t)."""
    for t0 in range(0, n, BLOCK):
        t1 = min(n, t0 + BLOCK)
        s0 = max(0, t0 - window + 1)
        t = np.arange(t0, t1)[:, None]
        s = np.arange(s0, t1)[None, :]
        yield t0, t1, s0, (s <= t) & (s > t - window)


def _attend(q, k, v, mask, d):
    """q [T, HQ, HD]; k, v [S, HKV, HD]; mask [T, S] True where allowed.
    Returns [T, HQ*HD]."""
    T, S = q.shape[0], k.shape[0]
    HKV, HD = d.n_kv_heads, d.head_dim
    qg = query_rows(q, d)                          # [HKV, G*T, HD]
    kg = kv_rows(k).transpose(0, 2, 1)             # [HKV, HD, S]
    with np.errstate(invalid="ignore", over="ignore"):
        scores = np.matmul(qg, kg).reshape(HKV, d.group, T, S) / F32(np.sqrt(F32(HD)))
    scores = np.where(mask, scores, F32(-np.inf))
    a = _softmax_rows(scores).reshape(HKV, d.group * T, S)
    o = mix(a, kv_rows(v))
    return query_heads(o, d, T).reshape(T, d.q_dim)


def forward_batch(weights, dims, frames, window=DEFAULT_WINDOW, xs=None):
    """Logits [N, C] float32 for frames [N, D]: row t is what a stream that
    was reset and then pushed frames 0..t reports. `xs`: a list to append
    x entering each layer and the classifier to."""
    d, w = _prepare(weights, dims)
    W = _check_window(window)
    x = _check_frames(frames, d)
    N = x.shape[0]
    W = min(W, max(N, 1))    # a window longer than the sequence is the whole sequence
    HD = d.head_dim
    for layer in range(d.n_layers):
        if xs is not None:
            xs.append(x)
        p = f"layers.{layer}."
        q = (x @ w[p + "wq"]).reshape(N, d.n_q_heads, HD)
        k = (x @ w[p + "wk"]).reshape(N, d.n_kv_heads, HD)
        v = (x @ w[p + "wv"]).reshape(N, d.n_kv_heads, HD)
        o = np.empty((N, d.q_dim), dtype=F32)
        for t0, t1, s0, mask in blocks(N, W):
            o[t0:t1] = _attend(q[t0:t1], k[s0:t1], v[s0:t1], mask, d)
        x = x + o @ w[p + "wo"]
    if xs is not None:
        xs.append(x)
    return (x @ w["wc"]).astype(F32, copy=False)


def forward_blob(parsed_blob, frames, window=DEFAULT_WINDOW):
    """forward_batch over a parsed rvne.io.blob.Blob."""
    return forward_batch(parsed_blob.tensors(), parsed_blob.header.dims, frames, window)


class Stream:
    """The streaming head: push one frame at a time, like the firmware."""

    def __init__(self, weights, dims, window=DEFAULT_WINDOW):
        self.dims, self._w = _prepare(weights, dims)
        self.window = _check_window(window)
        d = self.dims
        shape = (d.n_layers, self.window, d.n_kv_heads, d.head_dim)
        self._k = np.zeros(shape, dtype=F32)
        self._v = np.zeros(shape, dtype=F32)
        self.reset()

    def reset(self):
        self._cached = 0
        self._next = 0
        self.pushes = 0
        self._logits = None

    def push(self, frame):
        """Push one frame [D]; returns its logits [C]."""
        d, w = self.dims, self._w
        x = _check_frames(np.asarray(frame).reshape(1, -1), d)
        slot = self._next
        cached = min(self._cached + 1, self.window)
        for layer in range(d.n_layers):
            p = f"layers.{layer}."
            q = (x @ w[p + "wq"]).reshape(1, d.n_q_heads, d.head_dim)
            self._k[layer, slot] = (x @ w[p + "wk"]).reshape(d.n_kv_heads, d.head_dim)
            self._v[layer, slot] = (x @ w[p + "wv"]).reshape(d.n_kv_heads, d.head_dim)
            # The softmax is order-free, so the ring's slot order is fine.
            k = self._k[layer, :cached]
            v = self._v[layer, :cached]
            mask = np.ones((1, cached), dtype=bool)
            x = x + _attend(q, k, v, mask, d) @ w[p + "wo"]
        self._cached = cached
        self._next = (slot + 1) % self.window
        self.pushes += 1
        self._logits = (x @ w["wc"]).reshape(d.n_classes).astype(F32, copy=False)
        return self._logits.copy()

    def push_many(self, frames):
        """Push frames [N, D]; logits [N, C] after each."""
        x = _check_frames(frames, self.dims)
        return np.stack([self.push(f) for f in x]) if len(x) else np.zeros((0, self.dims.n_classes), F32)

    def logits(self):
        """Logits of the latest frame; None before any push since reset."""
        return None if self._logits is None else self._logits.copy()


def compare(device, ref, atol=ATOL, rtol=RTOL):
    """Judge `device` logits against reference logits `ref` (same shape) by
    the fixed tolerance |a - b| <= atol + rtol*|b| under rvne.model.agreement's rule
    (a non-finite comparison never agrees unless both sides are the same
    infinity). Returns rvne.model.agreement.judge's dict. The default contract is
    rvne.model.bounds' error bound; this is the `--atol/--rtol` one."""
    a = np.asarray(device)
    b = np.asarray(ref)
    if a.shape != b.shape:
        raise ValueError(f"device logits have shape {a.shape}, reference {b.shape}")
    return judge(a, b, tolerance(b, atol, rtol))
