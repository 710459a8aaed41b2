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
from .precision import Tally, dot_size
from .bounds import ETA, EXP_ARG, FMAX, SAFETY, U, gamma
from .contract import Dims

# Trace points of one layer, in trace order (docs/protocol.md, TRACE); then the logits.
# A float device of protocol 3 also traces the scaled scores (SCORED_POINTS);
# an int8 one, and a float one of protocol 2, do not.
LAYER_POINTS = ("q", "k", "v", "attention", "x")
SCORED_POINTS = ("q", "k", "v", "scores", "attention", "x")
POINTS = SCORED_POINTS + ("logits",)

# Which part of the forward pass makes each value, for the diagnosis.
KERNEL = {
    "q": "the projection x.Wq (matvec kernel)",
    "k": "the projection x.Wk (matvec kernel)",
    "v": "the projection x.Wv (matvec kernel)",
    "scores": "the scores q.k/sqrt(head_dim) (scores kernel, the scale; or the k ring it reads)",
    "attention": "the attention over the window (scores, softmax, weighted sum; or the k/v ring it reads)",
    "x": "the output projection o.Wo or the residual add",
    "logits": "the classifier x.Wc (matvec kernel)",
}

# Query positions per block of the attention step: bounds its pairwise
# [heads, block, positions, positions] comparison (see _attention).
PAIRWISE_ELEMS = 4e6


def point_sizes(dims, window=None) -> Dict[str, int]:
    """Values of each trace point; with `window`, the scores' too (HQ*W: a
    device tracing scores writes W per query head whatever it attends)."""
    d = Dims.of(dims)
    out = {"q": d.q_dim, "k": d.kv_dim, "v": d.kv_dim, "attention": d.q_dim, "x": d.input_dim,
           "logits": d.n_classes}
    if window is not None:
        out["scores"] = d.n_q_heads * int(window)
    return out


def layer_points(window=None):
    return LAYER_POINTS if window is None else SCORED_POINTS


def trace_floats(dims, window=None) -> int:
    """Floats of one push's trace: L*(2Q + 2K + D) + C, and L*HQ*W more
    with the scores (`window` W; None: a trace without them)."""
    d = Dims.of(dims)
    s = point_sizes(d, window)
    return d.n_layers * sum(s[p] for p in layer_points(window)) + d.n_classes


def split(traces, dims, window=None):
    """[T, trace_floats] -> ({point: [L, T, size]} for the layer points, logits [T, C])."""
    d = Dims.of(dims)
    t = np.asarray(traces)
    if t.ndim != 2 or t.shape[1] != trace_floats(d, window):
        raise ValueError(f"traces have shape {t.shape}, need [T, {trace_floats(d, window)}] for dims {d}")
    sizes = point_sizes(d, window)
    points = layer_points(window)
    per_layer = sum(sizes[p] for p in points)
    layers = t[:, :d.n_layers * per_layer].reshape(t.shape[0], d.n_layers, per_layer)
    out, at = {}, 0
    for p in points:
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
    precision: Tally = field(default_factory=Tally)   # deviations in rounding's units

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
        self.precision.merge(other.precision)


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
        self.sq = np.square(self.w)
        self.n = self.w.shape[0] + extra_terms
        self.u = U / (1.0 - self.n * U)
        self.eta = ETA * (2 * self.n + 2 + self.abs.sum(axis=0))

    def step(self, x, start=None):
        """(reference, allowance, statistical size) of x @ W (+ start, the
        residual, one more term that needs no product) from the device's x;
        the size u*sqrt(n*sum t_i^2) is precision's unit (rvne.model.precision)."""
        with np.errstate(over="ignore", invalid="ignore"):
            ref = x @ self.w
            mag = np.abs(x) @ self.abs
            prods = mag
            sq = np.square(x) @ self.sq
            if start is not None:
                ref = ref + start
                mag = mag + np.abs(start)
                sq = sq + np.square(start)
            sums = (self.n - 1) * (mag + np.abs(ref)) / 2
            return ref, SAFETY * (self.u * (prods + sums) + self.eta), dot_size(sq, self.n)


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
    """The step rule for one set of weights, dims and window; `scores`: the
    traces hold the scaled scores (a float device of protocol 3), judged as
    a step of their own, and the attention output is judged from them."""

    def __init__(self, weights, dims, window, scores=False):
        d, _ = reference._prepare(weights, dims)      # checks names and shapes
        self.dims = d
        self.window = reference._check_window(window)
        self.scores = bool(scores)
        self.layers = []
        for layer in range(d.n_layers):
            p = f"layers.{layer}."
            self.layers.append({"q": _Proj(weights[p + "wq"]), "k": _Proj(weights[p + "wk"]),
                                "v": _Proj(weights[p + "wv"]), "x": _Proj(weights[p + "wo"], extra_terms=1)})
        self.wc = _Proj(weights["wc"])

    @classmethod
    def of_blob(cls, parsed_blob, window, scores=False):
        return cls(parsed_blob.tensors(), parsed_blob.header.dims, window, scores)

    @property
    def trace_window(self):
        """split()'s `window`: W with the scores traced, else None."""
        return self.window if self.scores else None

    def sequence(self, frames, traces, seq_index=0, pushes=None) -> StepResult:
        """Judge pushes 0..T-1 after a reset: frames [T, D] as sent (FP32),
        traces [T, trace_floats] as the device reported them; or, with
        `pushes` (increasing indices into frames), traces of those pushes
        alone (steps())."""
        out = self.steps(frames, traces, pushes)
        return self._verdict(out, len(traces), seq_index, pushes)

    def steps(self, frames, traces, pushes=None):
        """The steps of pushes 0..T-1 after a reset, in computation order:
        (layer (None for the logits), point, device [T, n], step reference,
        allowance, judged, statistical size), each [T, n] (what sequence()
        judges; the last is precision's unit: rvne.model.precision).

        With `pushes`, traces [len(pushes), F] are those pushes' (frames
        all of the sequence's, from its reset): every step whose inputs are
        in those traces is judged; the scores and attention output of a push
        whose window holds an untraced push are not (allowance NaN)."""
        if pushes is not None:
            return self._some(frames, traces, np.asarray(pushes, dtype=np.int64))
        d = self.dims
        f = np.asarray(frames, dtype=np.float32).astype(np.float64)
        points, logits = split(np.asarray(traces, dtype=np.float32), d, self.trace_window)
        if f.shape[0] != logits.shape[0]:
            raise ValueError(f"{f.shape[0]} frames but {logits.shape[0]} traces")
        steps = []                        # (layer, point, device, reference, allowance, judged, size), in order
        x = f
        for layer, lw in enumerate(self.layers):
            dev = {p: points[p][layer].astype(np.float64) for p in layer_points(self.trace_window)}
            fin_x = np.isfinite(x).all(axis=1, keepdims=True)
            for p in ("q", "k", "v"):
                ref, allow, size = lw[p].step(x)
                steps.append((layer, p, dev[p], ref, allow, _in_range(ref, allow, fin_x), size))
            if self.scores:
                steps += [(layer, p, dev[p]) + out for p, out in
                          zip(("scores", "attention"), self._attention(dev["q"], dev["k"], dev["v"], dev["scores"]))]
            else:
                steps.append((layer, "attention", dev["attention"])
                             + self._attention(dev["q"], dev["k"], dev["v"])[1])
            o = dev["attention"]
            ref, allow, size = lw["x"].step(o, start=x)
            fin = fin_x & np.isfinite(o).all(axis=1, keepdims=True)
            steps.append((layer, "x", dev["x"], ref, allow, _in_range(ref, allow, fin), size))
            x = dev["x"]
        ref, allow, size = self.wc.step(x)
        steps.append((None, "logits", logits.astype(np.float64), ref, allow,
                      _in_range(ref, allow, np.isfinite(x).all(axis=1, keepdims=True)), size))
        return steps

    def _some(self, frames, traces, pushes):
        """steps() of the pushes `pushes` alone: the whole sequence up to the
        last with NaN traces between, then their rows."""
        full, whole = _spread(traces, pushes, len(frames), self.window)
        T = len(full)
        out = []
        for layer, p, dev, ref, allow, judged, size in self.steps(frames[:T], full):
            allow = allow[pushes]
            if p in ("scores", "attention"):
                allow = np.where(whole[pushes][:, None], allow, np.nan)
            out.append((layer, p, dev[pushes], ref[pushes], allow, judged[pushes] & ~np.isnan(allow), size[pushes]))
        return out

    # -- the attention step ----------------------------------------------------------
    def _attention(self, q, k, v, sc=None):
        """((reference, allowance, judged, size) of the scores [T, HQ*W],
        the same of the attention output [T, Q]) of every push, from the
        device's q [T, Q] and the k, v [T, K] it wrote at each position
        (docs/model.md, "Step by step"). With the device's scores `sc`
        [T, HQ*W] (position i of W: the i-th oldest attended), the output is
        judged from them; without, from scores recomputed from q and k."""
        d = self.dims
        T, HD, HQ = q.shape[0], d.head_dim, d.n_q_heads
        W = min(self.window, max(T, 1))
        Wt = self.window
        out_s = [np.zeros((T, HQ * Wt)), np.full((T, HQ * Wt), np.nan), np.zeros((T, HQ * Wt), dtype=bool),
                 np.full((T, HQ * Wt), np.inf)]
        out_o = [np.zeros((T, d.q_dim)), np.full((T, d.q_dim), np.inf), np.zeros((T, d.q_dim), dtype=bool),
                 np.full((T, d.q_dim), np.inf)]
        block = 1
        while block < 256 and HQ * (2 * block) * (2 * block + W) ** 2 <= PAIRWISE_ELEMS:
            block *= 2
        for t0 in range(0, T, block):
            t1 = min(T, t0 + block)
            s0 = max(0, t0 - W + 1)
            tt = np.arange(t0, t1)[:, None]
            ss = np.arange(s0, t1)[None, :]
            mask = (ss <= tt) & (ss > tt - W)
            qb = q[t0:t1].reshape(-1, HQ, HD)
            s_ref, delta, fin_q, fin_k = _score_block(d, qb, k[s0:t1].reshape(-1, d.n_kv_heads, HD))
            m = np.tile(mask, (d.group, 1))[None]                                # [1, G*Tb, S]
            fin_qk = fin_q[..., None] & fin_k.T[:, None, :]                     # [HKV, G*Tb, S]
            s_size = _score_size(d, qb, k[s0:t1].reshape(-1, d.n_kv_heads, HD))
            if sc is None:
                s_use, d_use, ok_rows = s_ref, delta, fin_q & ~(m & ~fin_qk).any(axis=-1)
            else:
                # Position i of a row's W scores is the i-th oldest of its window.
                idx = ss - np.maximum(0, tt - W + 1)
                dev_s = sc[t0:t1].reshape(-1, HQ, Wt)                             # [Tb, HQ, W]
                gathered = np.take_along_axis(dev_s, np.clip(idx, 0, Wt - 1)[:, None, :], axis=2)  # [Tb, HQ, S]
                s_use = reference.query_rows(gathered, d)                         # [HKV, G*Tb, S]
                d_use = np.zeros_like(s_use)
                ok_rows = ~(m & ~np.isfinite(s_use)).any(axis=-1)
                s_use = np.where(np.isfinite(s_use), s_use, 0.0)
                # The scores step: each traced score against c*q.k from the device's q and k.
                judged_s = m & fin_qk & (np.abs(s_ref) <= FMAX / 2) & np.isfinite(delta)
                back = lambda a, fill: _scores_back(a, d, idx, mask, Wt, fill)      # noqa: E731
                out_s[0][t0:t1], out_s[1][t0:t1] = back(s_ref, 0.0), back(SAFETY * delta, np.nan)
                out_s[2][t0:t1], out_s[3][t0:t1] = back(judged_s, False), back(s_size, np.inf)
            o, allow, judged, size = _softmax_bound(d, m, s_use, d_use, v[s0:t1].reshape(-1, d.n_kv_heads, HD),
                                                    ok_rows, s_size if sc is None else None)
            shape = (t1 - t0, d.q_dim)
            for i, a in enumerate((o, allow, judged, size)):
                out_o[i][t0:t1] = reference.query_heads(a, d, t1 - t0).reshape(shape)
        return tuple(out_s), tuple(out_o)

    # -- verdict ---------------------------------------------------------------------
    def _verdict(self, steps, count, seq_index, pushes=None) -> StepResult:
        res = StepResult(pushes=count)
        first_key = None
        for layer, p, dev, ref, allow, judged, size in steps:
            r = _ratios(dev, ref, allow, judged)
            judged = ~np.isnan(r)
            res.precision.add(p, dev, ref, size, judged)
            res.values += int(judged.sum())
            # NaN allowance: a value the step does not have (a score past the
            # positions attended) or cannot judge (its window not traced).
            res.unjudged += int((~judged & ~np.isnan(allow)).sum())
            bad = judged & ~(r <= 1.0)
            worst = float(np.nanmax(r)) if judged.any() else 0.0
            first_key = _tally(res, first_key, self.dims, seq_index, layer, p, dev, ref, bad, worst, allow, r,
                               KERNEL, pushes)
        return res


def _spread(traces, pushes, frames, window):
    """Traces of the pushes `pushes` (increasing) as rows of [T, F], T = the
    last push + 1, NaN between; and whether each push's window (itself and
    the W - 1 before) was traced whole."""
    t = np.asarray(traces, dtype=np.float32)
    if t.ndim != 2 or t.shape[0] != len(pushes) or (len(pushes) and (np.diff(pushes) <= 0).any()):
        raise ValueError(f"{t.shape[0]} traces for pushes {list(pushes)[:8]}...: one each, increasing")
    T = int(pushes[-1]) + 1 if len(pushes) else 0
    if T > frames:
        raise ValueError(f"push {T - 1} traced but the sequence has {frames} frames")
    full = np.full((T, t.shape[1]), np.nan, dtype=np.float32)
    full[pushes] = t
    missing = np.cumsum(~np.isin(np.arange(T), pushes))
    before = np.arange(T) - window                   # the last push outside the window
    whole = missing - np.where(before >= 0, missing[np.maximum(before, 0)], 0) == 0
    return full, whole


def _tally(res, first_key, dims, seq_index, layer, p, dev, ref, bad, worst, allow, ratio, kernel, pushes=None):
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
    head = (i // dims.head_dim if p in ("q", "k", "v", "attention")
            else i // (len(dev[t]) // dims.n_q_heads) if p == "scores" else None)
    frame = t if pushes is None else int(pushes[t])
    res.first = FirstWrong(seq_index, frame, layer, p, i, float(dev[t, i]), float(ref[t, i]),
                           float(np.broadcast_to(allow, bad.shape)[t, i]),
                           float(np.broadcast_to(ratio, bad.shape)[t, i]), kernel[p], head)
    return key


def _score_block(d, q, k):
    """The scores of a block of query positions from the device's q [Tb, HQ,
    HD] and k [S, HKV, HD]: (c*q.k [HKV, G*Tb, S], the rigorous bound delta
    of one score's rounding, query rows finite [HKV, G*Tb], keys finite
    [S, HKV]). Each product rounds at most twice (c folded into q, or not),
    each of the HD - 1 partial sums once and is a subset sum (_Proj's
    argument), and c's own sqrt and division and the final product are
    common (docs/model.md, "Step by step")."""
    HD = d.head_dim
    c = 1.0 / np.sqrt(float(HD))
    fin_q = reference.query_rows(np.isfinite(q).all(axis=2)[..., None], d)[..., 0]
    fin_k = np.isfinite(k).all(axis=2)
    qg = reference.query_rows(np.where(np.isfinite(q), q, 0.0), d)            # [HKV, G*Tb, HD]
    kg = reference.kv_rows(np.where(np.isfinite(k), k, 0.0)).transpose(0, 2, 1)   # [HKV, HD, S]
    with np.errstate(over="ignore", invalid="ignore"):
        dot = np.matmul(qg, kg)
        mag = np.matmul(np.abs(qg), np.abs(kg))
        delta = (c * U / (1.0 - (HD + 4) * U) * (2 * mag + (HD - 1) * (mag + np.abs(dot)) / 2 + 3 * np.abs(dot))
                 + ETA * (2 * HD + 4))
        delta = np.where(mag <= FMAX / 2, delta, np.inf)
    return c * dot, delta, fin_q, fin_k


def _score_size(d, q, k):
    """precision's unit of each score c*q.k: c*u*sqrt(HD*sum (q_i k_i)^2), [HKV, G*Tb, S]."""
    c = 1.0 / np.sqrt(float(d.head_dim))
    qg = reference.query_rows(np.where(np.isfinite(q), q, 0.0), d)
    kg = reference.kv_rows(np.where(np.isfinite(k), k, 0.0)).transpose(0, 2, 1)
    with np.errstate(over="ignore", invalid="ignore"):
        return c * dot_size(np.matmul(np.square(qg), np.square(kg)), d.head_dim)


def _scores_back(a, d, idx, mask, width, fill):
    """A block's [HKV, G*Tb, S] per-score array as the trace lays scores out:
    [Tb, HQ*width], position i of a row's `width` its i-th oldest (idx), `fill` past them."""
    Tb = mask.shape[0]
    per = reference.query_heads(a, d, Tb)                                 # [Tb, HQ, S]
    out = np.full((Tb, d.n_q_heads, width), fill, dtype=per.dtype)
    tt, ss = np.nonzero(mask)
    out[tt, :, idx[tt, ss]] = per[tt, :, ss]
    return out.reshape(Tb, -1)


def _softmax_bound(d, m, s, delta, v, rows_ok, score_size=None):
    """The attention output from scores s [HKV, G*Tb, S] (mask m [1 or HKV,
    G*Tb, S]) each off from the exact score by at most delta (0 where the
    scores are the device's own), and the device's v [S, HKV, HD]. Returns
    (o, allowance, judged, statistical size), [HKV, G*Tb, HD]; the size
    (precision's unit) counts each score's own rounding where
    `score_size` gives it (None: the scores are the device's).

    The weight a_j of exp(s_j - shift) carries a relative perturbation of
    at most R_j (the score's delta_j, expf's 4 ulp, the shift's subtraction,
    and r_j rescales of an online softmax, r_j = positions whose score can
    exceed j's). Such perturbations move o = sum a_j v_j by sum a_j (rho_j -
    rho_bar)(v_j - o) / (1 + rho_bar), bounded by E1 below; the weighted
    sum, the normalisation and the rescales' products round by E2. A
    position far below the maximum has a weight so small that R_j itself
    overflows while a_j*R_j does not: that product is taken in logarithms."""
    fin_v = np.isfinite(v).all(axis=2)                                  # [S, HKV]
    vg = reference.kv_rows(np.where(np.isfinite(v), v, 0.0))           # [HKV, S, HD]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        s = np.where(m, s, -np.inf)
        top = s.max(axis=-1, keepdims=True)
        e = np.where(m, np.exp(s - top), 0.0)
        n = m.sum(axis=-1, keepdims=True)                           # positions attended
        total = e.sum(axis=-1, keepdims=True)
        a = e / total
        o = np.matmul(a, vg)                                        # [HKV, G*Tb, HD]
        low = np.where(m, s, np.inf).min(axis=-1, keepdims=True)
        rng = top - low
        dm = np.where(m, delta, 0.0)
        dmax = dm.max(axis=-1, keepdims=True)
        # r_j: positions l != j whose computed score can exceed j's, the most
        # rescales an online softmax can apply to j's term after it.
        up = np.where(m, s + dm, -np.inf)
        lo = np.where(m, s - dm, np.inf)
        r = (up[..., None, :] >= lo[..., :, None]).sum(axis=-1) - 1
        r = np.where(m, np.maximum(r, 0), 0)
        # The shift's subtraction rounds by u*|s_j - shift|; an online
        # softmax's running shift m is at least s_j, and its later rescales'
        # arguments add up to top - m, so u*(top - s_j) twice covers both.
        # With scores recomputed (delta > 0) the device's own top and order
        # are unknown: the whole range then.
        spread = (top - s) if score_size is None else rng
        arg = np.where(m, dm + EXP_ARG * (1 + r) + U * (top - s + spread + 2 * dmax) + 2 * U * r, 0.0)
        R = np.expm1(arg)
        # a_j*R_j, finite where a_j is tiny enough to absorb R_j's overflow.
        aR = np.where(arg < 600, a * R, np.exp(s - top - np.log(total) + arg))
        aR = np.where(m, aR, 0.0)
        Rbar = aR.sum(axis=-1, keepdims=True)
        Rmax = np.where(m, R, 0.0).max(axis=-1, keepdims=True)
        scale = 1.0 / (1.0 - Rbar)
        dev_v = np.abs(vg[:, None, :, :] - o[:, :, None, :])        # [HKV, G*Tb, S, HD]
        e1 = (np.einsum("hts,htsi->hti", aR + a * Rbar, dev_v)) * scale
        # Every weight perturbed: at most a_j + a_j*R_j over 1 - Rbar; the
        # output's size, for its own roundings, at most the same weights
        # times |v| (or |o|(1 + R_max) where that is finite and smaller).
        g_j = gamma(n + 2 + r)
        big_o = np.matmul(a + aR, np.abs(vg))
        with_max = np.abs(o) * (1.0 + Rmax)
        out_mag = np.where(np.isfinite(with_max), np.minimum(with_max, big_o), big_o)
        e2 = (np.matmul((a + aR) * g_j, np.abs(vg)) + gamma(n + 2 + r.max(axis=-1, keepdims=True)) * out_mag) * scale
        e3 = ETA * ((n + 2) * np.matmul(m.astype(float), np.abs(vg)) + 2 * n + 2)
        allow = SAFETY * (e1 + e2 + e3)
        allow = np.where(Rbar < 1.0, allow, np.inf)
        # The rms counterpart (independent roundings add in quadrature): each
        # weight perturbed by its score's rounding, the shift's subtraction
        # and the exponential, then the weighted sum's rounding.
        rho2 = np.where(m, np.square(U * (top - s)) + U * U, 0.0)
        if score_size is not None:
            rho2 = rho2 + np.where(m, np.square(score_size), 0.0)
        size = (np.sqrt(np.einsum("hts,htsi->hti", np.square(a) * rho2, np.square(dev_v)))
                + U * np.sqrt(n * np.matmul(np.square(a), np.square(vg))) + U * np.abs(o))
    mm = np.broadcast_to(m, s.shape)
    rows_ok = (rows_ok
               & ~(mm & ~fin_v.T[:, None, :]).any(axis=-1)
               & np.isfinite(top[..., 0]) & (np.abs(top[..., 0]) <= FMAX / 2) & (rng[..., 0] <= FMAX / 2))
    judged = rows_ok[..., None] & np.isfinite(allow) & (np.abs(o) <= FMAX / 2)
    return o, allow, judged, size


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

    def sequence(self, frames, traces, seq_index=0, pushes=None) -> StepResult:
        """Judge pushes 0..T-1 after a reset, or those of `pushes` (as
        StepJudge.sequence: the attention of a push whose window holds an
        untraced push is not judged)."""
        if pushes is None:
            return self._verdict(self.steps(frames, traces), len(traces), seq_index)
        pushes = np.asarray(pushes, dtype=np.int64)
        full, whole = _spread(traces, pushes, len(frames), self.window)
        out = []
        for layer, p, dev, ref in self.steps(np.asarray(frames)[:len(full)], full):
            keep = whole[pushes] if p == "attention" else np.ones(len(pushes), dtype=bool)
            out.append((layer, p, dev[pushes], ref[pushes], keep))
        return self._verdict(out, len(pushes), seq_index, pushes)

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

    def _verdict(self, steps, count, seq_index, pushes=None) -> StepResult:
        """Ratios as the agreement rule gives them for an allowance of 0: 0
        where equal, inf where not (a NaN is never equal). A step's optional
        fifth element: the pushes [T] it is judged at."""
        res = StepResult(pushes=count)
        first_key = None
        for layer, p, dev, ref, *keep in steps:
            keep = np.broadcast_to((keep[0] if keep else True), (dev.shape[0],))[:, None]
            bad = ~(dev == ref) & keep
            res.values += int(keep.sum()) * dev.shape[1]
            worst = float(np.inf) if bad.any() else 0.0
            first_key = _tally(res, first_key, self.dims, seq_index, layer, p, dev, ref, bad, worst, 0.0, np.inf,
                               KERNEL_INT8, pushes)
        return res


def first_wrong_text(fw: FirstWrong) -> str:
    if fw.allowance == 0.0:
        # The exact rule of an int8 blob: there is no ratio to give.
        return f"{fw.where()}: device {fw.device!r} reference {fw.reference!r} (exact, tolerance 0) -> {fw.kernel}"
    return (f"{fw.where()}: device {fw.device!r} step reference {fw.reference!r} allowed {fw.allowance:.3g} "
            f"(ratio {fw.ratio:.3g}) -> {fw.kernel}")


def trace_bytes_per_push(dims, window=None) -> int:
    """Arena bytes the device adds while tracing (docs/protocol.md, TRACE);
    `window`: a float model's, whose trace holds the scores."""
    return 4 * trace_floats(dims, window)


