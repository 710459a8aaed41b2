"""Step-by-step judging of a device's trace (docs/model.md, "Step by
step"; the trace's layout is docs/protocol.md's TRACE): every traced value
is compared with the float64 result of its ONE step computed from the
device's own inputs to that step (its x, its q, its k and v of this and
earlier pushes), under a rigorous bound for that step alone, so rounding
never compounds through the network and a defect shows at the step that
makes it.

    judge = StepJudge(blob.tensors(), blob.header.dims, window)
    res = judge.sequence(frames, traces)      # [T, D], [T, trace_floats(dims)]: pushes 0..T-1 after a reset
    res.max_ratio, res.first                   # worst |device - step reference| / allowance; first value over 1

The pushes of `traces` must be the first T after a reset, all of them:
an attention step needs the k and v the device wrote at every position of
its window.
"""

from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np

from . import int8, reference
from .bounds import ETA, EXP_ARG, FMAX, SAFETY, U, gamma
from .contract import Dims

# Trace points of one layer, in trace order (docs/protocol.md, TRACE); then the logits.
LAYER_POINTS = ("q", "k", "v", "attention", "x")
POINTS = LAYER_POINTS + ("logits",)

# Which part of the forward pass makes each value, for the diagnosis.
KERNEL = {
    "q": "the projection x.Wq (matvec kernel)",
    "k": "the projection x.Wk (matvec kernel)",
    "v": "the projection x.Wv (matvec kernel)",
    "attention": "the attention over the window (scores, softmax, weighted sum; or the k/v ring it reads)",
    "x": "the output projection o.Wo or the residual add",
    "logits": "the classifier x.Wc (matvec kernel)",
}

# Query positions per block of the attention step: bounds its pairwise
# [heads, block, positions, positions] comparison (see _attention).
PAIRWISE_ELEMS = 4e6


def point_sizes(dims) -> Dict[str, int]:
    d = Dims.of(dims)
    return {"q": d.q_dim, "k": d.kv_dim, "v": d.kv_dim, "attention": d.q_dim, "x": d.input_dim,
            "logits": d.n_classes}


def trace_floats(dims) -> int:
    """Floats of one push's trace: L*(2Q + 2K + D) + C."""
    d = Dims.of(dims)
    s = point_sizes(d)
    return d.n_layers * sum(s[p] for p in LAYER_POINTS) + d.n_classes


def split(traces, dims):
    """[T, trace_floats] -> ({point: [L, T, size]} for the layer points, logits [T, C])."""
    d = Dims.of(dims)
    t = np.asarray(traces)
    if t.ndim != 2 or t.shape[1] != trace_floats(d):
        raise ValueError(f"traces have shape {t.shape}, need [T, {trace_floats(d)}] for dims {d}")
    sizes = point_sizes(d)
    per_layer = sum(sizes[p] for p in LAYER_POINTS)
    layers = t[:, :d.n_layers * per_layer].reshape(t.shape[0], d.n_layers, per_layer)
    out, at = {}, 0
    for p in LAYER_POINTS:
        out[p] = np.moveaxis(layers[:, :, at:at + sizes[p]], 1, 0)
        at += sizes[p]
    return out, t[:, d.n_layers * per_layer:]


@dataclass
class FirstWrong:
    """The first value (in computation order) outside its step's allowance."""

    sequence: int
    frame: int
    layer: Optional[int]                # None for the logits
    quantity: str                       # one of POINTS
    index: int                          # within that quantity's vector
    device: float
    reference: float
    allowance: float
    ratio: float
    kernel: str = ""                    # what computes it: the diagnosis
    head: Optional[int] = None          # query head (q, attention) or kv head (k, v) of the index

    def where(self) -> str:
        layer = "" if self.layer is None else f"layer {self.layer} "
        head = ""
        if self.head is not None:
            head = f" ({'kv' if self.quantity in ('k', 'v') else 'query'} head {self.head})"
        return f"sequence {self.sequence} frame {self.frame} {layer}{self.quantity}[{self.index}]{head}"


@dataclass
class StepResult:
    """One sequence's (or, merged, a check's) step verdict."""

    pushes: int = 0                     # traced pushes judged
    values: int = 0                     # values judged
    bad: int = 0                        # values outside their allowance
    unjudged: int = 0                   # values whose step leaves the FP32 range (the end-to-end rule decides)
    max_ratio: float = 0.0
    by_point: Dict[str, float] = field(default_factory=dict)   # worst ratio per quantity
    first: Optional[FirstWrong] = None

    def merge(self, other: "StepResult"):
        self.pushes += other.pushes
        self.values += other.values
        self.bad += other.bad
        self.unjudged += other.unjudged
        self.max_ratio = max(self.max_ratio, other.max_ratio)
        for k, v in other.by_point.items():
            self.by_point[k] = max(self.by_point.get(k, 0.0), v)
        if self.first is None:
            self.first = other.first


class _Proj:
    """One weight matrix with the step rule's pieces. A sum of n exact
    products t_i (any order, any tree, fused or not) rounds once per
    product and once per partial sum, and every partial sum is a subset
    sum, at most max(S+, S-) = (sum|t_i| + |sum t_i|)/2 in magnitude: so
    the error is at most u'*(sum|t_i| + (n-1)*(sum|t_i| + |y|)/2), u' =
    u/(1 - n*u), plus underflow terms (docs/model.md, "Step by step"). That
    is about half of gamma_n*sum|t_i| when the terms cancel."""

    def __init__(self, w, extra_terms=0):
        self.w = np.asarray(w, dtype=np.float64)
        self.abs = np.abs(self.w)
        self.n = self.w.shape[0] + extra_terms
        self.u = U / (1.0 - self.n * U)
        self.eta = ETA * (2 * self.n + 2 + self.abs.sum(axis=0))

    def step(self, x, start=None):
        """(reference, allowance) of x @ W (+ start, the residual, one more
        term that needs no product) from the device's x."""
        with np.errstate(over="ignore", invalid="ignore"):
            ref = x @ self.w
            mag = np.abs(x) @ self.abs
            prods = mag
            if start is not None:
                ref = ref + start
                mag = mag + np.abs(start)
            sums = (self.n - 1) * (mag + np.abs(ref)) / 2
            return ref, SAFETY * (self.u * (prods + sums) + self.eta)


def _ratios(device, ref, allowance, judged):
    """|device - ref| / allowance where judged (else NaN: not judged); inf
    for a non-finite device value against a judged step."""
    dev = np.asarray(device, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        r = np.abs(dev - ref) / allowance
        r = np.where(dev == ref, 0.0, r)
    r = np.where(np.isfinite(dev), r, np.inf)
    return np.where(judged, r, np.nan)


def _in_range(ref, allowance, inputs_finite):
    """A step is judged where its inputs are finite and its exact result and
    allowance stay well inside FP32 (else no FP32 result can be vouched for:
    docs/model.md, "Leaving the FP32 range")."""
    with np.errstate(invalid="ignore"):
        return inputs_finite & (np.abs(ref) <= FMAX / 2) & np.isfinite(allowance)


class StepJudge:
    """The step rule for one set of weights, dims and window."""

    def __init__(self, weights, dims, window):
        d, _ = reference._prepare(weights, dims)      # checks names and shapes
        self.dims = d
        self.window = reference._check_window(window)
        self.layers = []
        for layer in range(d.n_layers):
            p = f"layers.{layer}."
            self.layers.append({"q": _Proj(weights[p + "wq"]), "k": _Proj(weights[p + "wk"]),
                                "v": _Proj(weights[p + "wv"]), "x": _Proj(weights[p + "wo"], extra_terms=1)})
        self.wc = _Proj(weights["wc"])

    @classmethod
    def of_blob(cls, parsed_blob, window):
        return cls(parsed_blob.tensors(), parsed_blob.header.dims, window)

    def sequence(self, frames, traces, seq_index=0) -> StepResult:
        """Judge pushes 0..T-1 after a reset: frames [T, D] as sent (FP32),
        traces [T, trace_floats] as the device reported them."""
        return self._verdict(self.steps(frames, traces), len(frames), seq_index)

    def steps(self, frames, traces):
        """The steps of pushes 0..T-1 after a reset, in computation order:
        (layer (None for the logits), point, device [T, n], step reference,
        allowance, judged), each [T, n] (what sequence() judges)."""
        d = self.dims
        f = np.asarray(frames, dtype=np.float32).astype(np.float64)
        points, logits = split(np.asarray(traces, dtype=np.float32), d)
        if f.shape[0] != logits.shape[0]:
            raise ValueError(f"{f.shape[0]} frames but {logits.shape[0]} traces")
        steps = []                        # (layer, point, device, reference, allowance, judged), in computation order
        x = f
        for layer, lw in enumerate(self.layers):
            dev = {p: points[p][layer].astype(np.float64) for p in LAYER_POINTS}
            fin_x = np.isfinite(x).all(axis=1, keepdims=True)
            for p in ("q", "k", "v"):
                ref, allow = lw[p].step(x)
                steps.append((layer, p, dev[p], ref, allow, _in_range(ref, allow, fin_x)))
            steps.append((layer, "attention", dev["attention"]) + self._attention(dev["q"], dev["k"], dev["v"]))
            o = dev["attention"]
            ref, allow = lw["x"].step(o, start=x)
            fin = fin_x & np.isfinite(o).all(axis=1, keepdims=True)
            steps.append((layer, "x", dev["x"], ref, allow, _in_range(ref, allow, fin)))
            x = dev["x"]
        ref, allow = self.wc.step(x)
        steps.append((None, "logits", logits.astype(np.float64), ref, allow,
                      _in_range(ref, allow, np.isfinite(x).all(axis=1, keepdims=True))))
        return steps

    # -- the attention step ----------------------------------------------------------
    def _attention(self, q, k, v):
        """(reference, allowance, judged), [T, Q] each, of every push's
        attention output from the device's q [T, Q] and the k, v [T, K] it
        wrote at each position (docs/model.md, "Step by step")."""
        d = self.dims
        T, HD = q.shape[0], d.head_dim
        W = min(self.window, max(T, 1))
        ref = np.zeros((T, d.q_dim))
        allow = np.full((T, d.q_dim), np.inf)
        judged = np.zeros((T, d.q_dim), dtype=bool)
        block = 1
        while block < 256 and d.n_q_heads * (2 * block) * (2 * block + W) ** 2 <= PAIRWISE_ELEMS:
            block *= 2
        for t0 in range(0, T, block):
            t1 = min(T, t0 + block)
            s0 = max(0, t0 - W + 1)
            tt = np.arange(t0, t1)[:, None]
            ss = np.arange(s0, t1)[None, :]
            mask = (ss <= tt) & (ss > tt - W)
            r, a, j = _attend_bound(d, mask, q[t0:t1].reshape(-1, d.n_q_heads, HD),
                                    k[s0:t1].reshape(-1, d.n_kv_heads, HD), v[s0:t1].reshape(-1, d.n_kv_heads, HD))
            ref[t0:t1], allow[t0:t1], judged[t0:t1] = r, a, j
        return ref, allow, judged

    # -- verdict ---------------------------------------------------------------------
    def _verdict(self, steps, pushes, seq_index) -> StepResult:
        res = StepResult(pushes=pushes)
        first_key = None
        for layer, p, dev, ref, allow, judged in steps:
            r = _ratios(dev, ref, allow, judged)
            judged = ~np.isnan(r)
            res.values += int(judged.sum())
            res.unjudged += int((~judged).sum())
            bad = judged & ~(r <= 1.0)
            worst = float(np.nanmax(r)) if judged.any() else 0.0
            first_key = _tally(res, first_key, self.dims, seq_index, layer, p, dev, ref, bad, worst, allow, r,
                               KERNEL)
        return res


def _tally(res, first_key, dims, seq_index, layer, p, dev, ref, bad, worst, allow, ratio, kernel):
    """One trace point's wrong values and worst ratio into res; returns the
    (push, layer, point) key of the earliest wrong value so far, which
    res.first names. allow and ratio: arrays like dev, or scalars."""
    res.bad += int(bad.sum())
    res.by_point[p] = max(res.by_point.get(p, 0.0), worst)
    res.max_ratio = max(res.max_ratio, worst)
    if not bad.any():
        return first_key
    t = int(np.argmax(bad.any(axis=1)))
    key = (t, dims.n_layers if layer is None else layer, POINTS.index(p))
    if first_key is not None and key >= first_key:
        return first_key
    i = int(np.argmax(bad[t]))
    head = i // dims.head_dim if p in ("q", "k", "v", "attention") else None
    res.first = FirstWrong(seq_index, t, layer, p, i, float(dev[t, i]), float(ref[t, i]),
                           float(np.broadcast_to(allow, bad.shape)[t, i]),
                           float(np.broadcast_to(ratio, bad.shape)[t, i]), kernel[p], head)
    return key


def _attend_bound(d, mask, q, k, v):
    """The attention step for a block of query positions: q [Tb, HQ, HD],
    k and v [S, HKV, HD] (the device's), mask [Tb, S] True where position s
    is in row t's window. Returns (reference, allowance, judged), [Tb, Q].

    Per query head and position j of n: the score s_j = c*q.k_j carries at
    most delta_j (docs/model.md: products, subset-sum partial sums, c's
    rounding; + underflow); the weight a_j
    of exp(s_j - shift) a relative perturbation of at most R_j (the score's
    delta_j, expf's 4 ulp, the shift's subtraction, and r_j rescales of an
    online softmax, r_j = positions whose score can exceed j's). Such
    perturbations move o = sum a_j v_j by sum a_j (rho_j - rho_bar)(v_j - o)
    / (1 + rho_bar), bounded by E1 below; the weighted sum, the
    normalisation and the rescales' products round by E2."""
    Tb, HD, G = q.shape[0], d.head_dim, d.group
    c = 1.0 / np.sqrt(float(HD))
    fin_q = reference.query_rows(np.isfinite(q).all(axis=2)[..., None], d)[..., 0]   # [HKV, G*Tb]
    fin_kv = (np.isfinite(k).all(axis=2) & np.isfinite(v).all(axis=2))   # [S, HKV]
    qf = np.where(np.isfinite(q), q, 0.0)
    kf = np.where(np.isfinite(k), k, 0.0)
    vf = np.where(np.isfinite(v), v, 0.0)
    qg = reference.query_rows(qf, d)                                # [HKV, G*Tb, HD]
    kg = reference.kv_rows(kf).transpose(0, 2, 1)                   # [HKV, HD, S]
    vg = reference.kv_rows(vf)                                      # [HKV, S, HD]
    m = np.tile(mask, (G, 1))[None]                                 # [1, G*Tb, S]
    with np.errstate(over="ignore", invalid="ignore"):
        dot = np.matmul(qg, kg)
        mag = np.matmul(np.abs(qg), np.abs(kg))
        s = c * dot
        # Each product rounds at most twice (c folded into q, or not), each of
        # the HD - 1 partial sums once and is a subset sum (_Proj's argument),
        # and c's own sqrt and division and the final product are common.
        delta = (c * U / (1.0 - (HD + 4) * U) * (2 * mag + (HD - 1) * (mag + np.abs(dot)) / 2 + 3 * np.abs(dot))
                 + ETA * (2 * HD + 4))
        s = np.where(m, s, -np.inf)
        top = s.max(axis=-1, keepdims=True)
        e = np.where(m, np.exp(s - top), 0.0)
        n = m.sum(axis=-1, keepdims=True)                           # positions attended
        a = e / e.sum(axis=-1, keepdims=True)
        o = np.matmul(a, vg)                                        # [HKV, G*Tb, HD]
        low = np.where(m, s, np.inf).min(axis=-1, keepdims=True)
        rng = top - low
        dmax = np.where(m, delta, 0.0).max(axis=-1, keepdims=True)
        # r_j: positions l != j whose computed score can exceed j's, the most
        # rescales an online softmax can apply to j's term after it.
        up = np.where(m, s + delta, -np.inf)
        lo = np.where(m, s - delta, np.inf)
        r = (up[..., None, :] >= lo[..., :, None]).sum(axis=-1) - 1
        r = np.where(m, np.maximum(r, 0), 0)
        R = np.expm1(delta + EXP_ARG * (1 + r) + U * (top - s + rng + 2 * dmax) + 2 * U * r)
        R = np.where(m, R, 0.0)
        Rbar = (a * R).sum(axis=-1, keepdims=True)
        Rmax = R.max(axis=-1, keepdims=True)
        scale = 1.0 / (1.0 - Rbar)
        dev_v = np.abs(vg[:, None, :, :] - o[:, :, None, :])        # [HKV, G*Tb, S, HD]
        e1 = np.einsum("hts,htsi->hti", a * (R + Rbar), dev_v) * scale
        g_j = gamma(n + 2 + r)
        e2 = (np.matmul(a * g_j, np.abs(vg)) + gamma(n + 2 + r.max(axis=-1, keepdims=True)) * np.abs(o)) \
            * (1.0 + Rmax) * scale
        e3 = ETA * ((n + 2) * np.matmul(m.astype(float), np.abs(vg)) + 2 * n + 2)
        allow = SAFETY * (e1 + e2 + e3)
    rows_ok = (fin_q
               & ~(m & ~fin_kv.T[:, None, :]).any(axis=-1)
               & np.isfinite(top[..., 0]) & (np.abs(top[..., 0]) <= FMAX / 2) & (rng[..., 0] <= FMAX / 2))
    judged = rows_ok[..., None] & np.isfinite(allow) & (np.abs(o) <= FMAX / 2)
    shape = (Tb, d.q_dim)
    return (reference.query_heads(o, d, Tb).reshape(shape), reference.query_heads(allow, d, Tb).reshape(shape),
            reference.query_heads(judged, d, Tb).reshape(shape))


# What computes each value of an int8 device (docs/model.md, "Integer model").
KERNEL_INT8 = {
    "q": "the projection x.Wq, its rq and sat8 (matvec_i8, requant_i8)",
    "k": "the projection x.Wk, its rq and sat8 (matvec_i8, requant_i8; or the input quantisation)",
    "v": "the projection x.Wv, its rq and sat8 (matvec_i8, requant_i8)",
    "attention": "the integer attention (scores' rq, the exp table, p_j's division, the weighted sum's rq; "
                 "or the k/v ring it reads)",
    "x": "the output projection o.Wo, its rq, or the saturated residual add (matvec_i8, residual_i8)",
    "logits": "the classifier x.Wc (matvec_i8)",
}


def _as_ints(values, low=-128, high=127):
    """A device's traced values as the integers a later step takes: NaN as 0,
    the rest rounded and held to [low, high]. A value that is not such an
    integer already differs at its own step (the reference's are), so this
    only keeps the later steps' recomputation within int64."""
    v = np.asarray(values, dtype=np.float64)
    return np.clip(np.rint(np.nan_to_num(v, nan=0.0, posinf=high, neginf=low)), low, high).astype(np.int64)


class ExactStepJudge:
    """The step rule of an int8 blob (docs/model.md, "Step by step"): each
    traced value must EQUAL its step recomputed by rvne.model.int8 from the
    device's own inputs to that step (tolerance 0). The first layer's x is
    the frame quantised by the host: the device does not trace it, and its
    q, k, v show a wrong quantisation."""

    exact = True

    def __init__(self, model, window):
        self.model = model
        self.dims = model.dims
        self.window = reference._check_window(window)

    @classmethod
    def of_blob(cls, parsed_blob, window):
        return cls(parsed_blob.int8_model(), window)

    def sequence(self, frames, traces, seq_index=0) -> StepResult:
        """Judge pushes 0..T-1 after a reset (as StepJudge.sequence)."""
        return self._verdict(self.steps(frames, traces), len(frames), seq_index)

    def steps(self, frames, traces):
        """(layer (None for the logits), point, device [T, n], step reference
        [T, n]) in computation order, the references int64."""
        d, m = self.dims, self.model
        points, logits = split(np.asarray(traces, dtype=np.float32), d)
        f = np.asarray(frames, dtype=np.float32)
        if f.shape[0] != logits.shape[0]:
            raise ValueError(f"{f.shape[0]} frames but {logits.shape[0]} traces")
        T = f.shape[0]
        W = min(self.window, max(T, 1))
        out = []
        x = m.quantize_input(f)
        for layer in range(d.n_layers):
            dev = {p: points[p][layer].astype(np.float64) for p in LAYER_POINTS}
            for p, ref in zip(("q", "k", "v"), m.project(layer, x)):
                out.append((layer, p, dev[p], ref))
            q, k, v = (_as_ints(dev[p]) for p in ("q", "k", "v"))
            o = np.empty((T, d.q_dim), dtype=np.int64)
            for t0, t1, s0, mask in reference.blocks(T, W):
                o[t0:t1] = m._attend(layer, q[t0:t1], k[s0:t1], v[s0:t1], mask)
            out.append((layer, "attention", dev["attention"], o))
            out.append((layer, "x", dev["x"], m.residual(layer, x, _as_ints(dev["attention"]))))
            x = _as_ints(dev["x"])
        out.append((None, "logits", logits.astype(np.float64), m.logits(x)))
        return out

    def _verdict(self, steps, pushes, seq_index) -> StepResult:
        """Ratios as the agreement rule gives them for an allowance of 0: 0
        where equal, inf where not (a NaN is never equal)."""
        res = StepResult(pushes=pushes)
        first_key = None
        for layer, p, dev, ref in steps:
            bad = ~(dev == ref)
            res.values += int(bad.size)
            worst = float(np.inf) if bad.any() else 0.0
            first_key = _tally(res, first_key, self.dims, seq_index, layer, p, dev, ref, bad, worst, 0.0, np.inf,
                               KERNEL_INT8)
        return res


def first_wrong_text(fw: FirstWrong) -> str:
    if fw.allowance == 0.0:
        # The exact rule of an int8 blob: there is no ratio to give.
        return f"{fw.where()}: device {fw.device!r} reference {fw.reference!r} (exact, tolerance 0) -> {fw.kernel}"
    return (f"{fw.where()}: device {fw.device!r} step reference {fw.reference!r} allowed {fw.allowance:.3g} "
            f"(ratio {fw.ratio:.3g}) -> {fw.kernel}")


def trace_bytes_per_push(dims) -> int:
    """Arena bytes the device adds while tracing (docs/protocol.md, TRACE)."""
    return 4 * trace_floats(dims)


