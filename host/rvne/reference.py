"""The numpy reference of the temporal head (docs/model.md): batch and
streaming forward, FP32 throughout, and the agreement contract every other
implementation is judged by.

`weights` everywhere is the dict of named (in x out) arrays of
rvne.contract (Blob.tensors() gives one)."""

import numpy as np

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
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s, dtype=F32)
    return e / e.sum(axis=-1, keepdims=True, dtype=F32)


def _attend(q, k, v, mask, d):
    """q [T, HQ, HD]; k, v [S, HKV, HD]; mask [T, S] True where allowed.
    Returns [T, HQ*HD]."""
    T, S = q.shape[0], k.shape[0]
    G, HKV, HD = d.group, d.n_kv_heads, d.head_dim
    qg = q.reshape(T, HKV, G, HD).transpose(1, 2, 0, 3).reshape(HKV, G * T, HD)
    kg = k.transpose(1, 2, 0)                     # [HKV, HD, S]
    vg = v.transpose(1, 0, 2)                     # [HKV, S, HD]
    scores = np.matmul(qg, kg).reshape(HKV, G, T, S) / F32(np.sqrt(F32(HD)))
    scores = np.where(mask, scores, F32(-np.inf))
    a = _softmax_rows(scores).reshape(HKV, G * T, S)
    o = np.matmul(a, vg).reshape(HKV, G, T, HD)   # query head h = g_kv * G + i
    return o.transpose(2, 0, 1, 3).reshape(T, d.q_dim)


def forward_batch(weights, dims, frames, window=DEFAULT_WINDOW):
    """Logits [N, C] float32 for frames [N, D]: row t is what a stream that
    was reset and then pushed frames 0..t reports."""
    d, w = _prepare(weights, dims)
    W = _check_window(window)
    x = _check_frames(frames, d)
    N = x.shape[0]
    W = min(W, max(N, 1))    # a window longer than the sequence is the whole sequence
    HD = d.head_dim
    for layer in range(d.n_layers):
        p = f"layers.{layer}."
        q = (x @ w[p + "wq"]).reshape(N, d.n_q_heads, HD)
        k = (x @ w[p + "wk"]).reshape(N, d.n_kv_heads, HD)
        v = (x @ w[p + "wv"]).reshape(N, d.n_kv_heads, HD)
        o = np.empty((N, d.q_dim), dtype=F32)
        for t0 in range(0, N, BLOCK):
            t1 = min(N, t0 + BLOCK)
            s0 = max(0, t0 - W + 1)
            t = np.arange(t0, t1)[:, None]
            s = np.arange(s0, t1)[None, :]
            mask = (s <= t) & (s > t - W)
            o[t0:t1] = _attend(q[t0:t1], k[s0:t1], v[s0:t1], mask, d)
        x = x + o @ w[p + "wo"]
    return (x @ w["wc"]).astype(F32, copy=False)


def forward_blob(parsed_blob, frames, window=DEFAULT_WINDOW):
    """forward_batch over a parsed rvne.blob.Blob."""
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
    """Judge `device` logits against reference logits `ref` (same shape,
    [N, C] or [C]) by |a - b| <= atol + rtol*|b|. Returns a dict:
    max_abs, max_rel (|a-b|/|b| over b != 0), max_ratio (worst |a-b| over
    its tolerance; <= 1 passes), n_bad (logits out of tolerance), n (logits),
    rows, argmax_agree (fraction of rows whose argmax agree), ok."""
    a = np.asarray(device, dtype=np.float64)
    b = np.asarray(ref, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"device logits have shape {a.shape}, reference {b.shape}")
    if a.ndim == 1:
        a, b = a[None], b[None]
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        diff = np.where(same, 0.0, diff)
        diff = np.where(np.isnan(diff), np.inf, diff)
        tol = atol + rtol * np.abs(b)
        bad = ~(same | (diff <= tol))
        nz = b != 0
        rel = np.where(nz, diff / np.where(nz, np.abs(b), 1.0), np.where(diff == 0, 0.0, np.inf))
        ratio = diff / tol
    rows = a.shape[0]
    agree = float(np.mean(np.argmax(a, axis=-1) == np.argmax(b, axis=-1))) if rows and a.shape[-1] else 1.0
    return {
        "max_abs": float(diff.max()) if diff.size else 0.0,
        "max_rel": float(rel.max()) if rel.size else 0.0,
        "max_ratio": float(np.nan_to_num(ratio, nan=np.inf).max()) if ratio.size else 0.0,
        "n_bad": int(bad.sum()),
        "n": int(bad.size),
        "rows": int(rows),
        "argmax_agree": agree,
        "ok": not bool(bad.any()),
    }
