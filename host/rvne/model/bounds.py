"""Ground truth for the verdict: the forward pass of docs/model.md in
float64 (FP16 weights decoded exactly) and, for every logit, a bound on how
far ANY correct FP32 implementation of the contract may land from it. The
derivation, and what "correct" covers, is docs/model.md ("Error bound"); the
step names below follow it.

    truth = Truth(blob.tensors(), blob.header.dims)     # once per blob
    ref64, bound = truth.forward(frames, window)        # [N, C] float64 each

Each computed vector z carries two bounds on its error: elementwise (E, same
shape) and per head in the 2-norm (Nm). A linear map propagates both and
keeps, per element, the smaller of |W|-propagation and the norm bound
(Cauchy-Schwarz with the column's norm): |W|-propagation alone grows by
about sqrt(fan_in) per projection in a deep stack, the 2-norm by ||W||_2.
A row whose values (or bounds) leave the FP32 range has an infinite bound:
no FP32 result there can be vouched for.
"""

import numpy as np

from . import reference
from .reference import blocks, kv_rows, mix, query_heads, query_rows

U = 2.0 ** -24                # unit roundoff of FP32, round to nearest
ETA = 2.0 ** -126             # absolute error of one operation that underflows (flush to zero included)
EXP_ULP = 4                   # expf budget: within 4 ulp of exp, i.e. relative 8u
SAFETY = 2.0                  # on the final bound: float64's own rounding, and headroom
FMAX = float(np.finfo(np.float32).max)


def gamma(n):
    """gamma_n = n*u / (1 - n*u): the relative error bound of an n-term
    dot product evaluated in any order, fused multiply-add or not."""
    n = np.asarray(n, dtype=np.float64)
    return n * U / (1.0 - n * U)


# Relative error of expf folded into its argument: |log(1 + 8u)| <= this.
EXP_ARG = -np.log1p(-2.0 * EXP_ULP * U)


def _norm(x, axis=-1):
    with np.errstate(over="ignore", invalid="ignore"):
        return np.sqrt(np.sum(np.square(x), axis=axis))


def _head_norms(x, heads):
    """[N, heads*HD] -> [N, heads] 2-norms of each head's slice."""
    return _norm(x.reshape(x.shape[0], heads, -1))


def _too_big(value):
    """Rows where a value comes within a factor 2 of the FP32 range's end
    (or is NaN). `value`: a float64 value, or the sum of a sum's terms'
    magnitudes (a partial sum in some order may reach it). Not |value| +
    its error bound: the rigorous forward bound can be astronomically loose
    while every value is a sane 1e16."""
    with np.errstate(over="ignore", invalid="ignore"):
        big = ~(np.abs(value) <= FMAX / 2)
    return big.reshape(big.shape[0], -1).any(axis=1) if big.ndim > 1 else big


def _spectral(w):
    """||w||_2, from the largest eigenvalue of the smaller Gram matrix (far
    cheaper than an SVD), rounded up generously for float64's own error."""
    if not np.isfinite(w).all():
        return np.inf
    gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
    top = float(np.linalg.eigvalsh(gram)[-1])
    return float(np.sqrt(max(top, 0.0)) * (1 + 1e-9) + 1e-300)


class _Linear:
    """One weight matrix W [n_in, n_out] with what the bound needs of it."""

    def __init__(self, w, heads=1):
        self.w = np.asarray(w, dtype=np.float64)
        self.wT32 = np.ascontiguousarray(self.w.T, dtype=np.float32)   # for the first-order pass
        n_in, n_out = self.w.shape
        self.abs = np.abs(self.w)
        self.col = _norm(self.w, axis=0)                  # ||W[:, j]||_2
        # Spectral norm of each head's column slice (the whole matrix when heads == 1).
        sl = self.w.reshape(n_in, heads, n_out // heads).transpose(1, 0, 2)
        self.spec = np.array([_spectral(s) for s in sl])
        self.gamma = float(gamma(n_in))
        # Underflow: 2 per term (product, sum) and inputs flushed to zero.
        self.eta = ETA * (2 * n_in + 2 + self.abs.sum(axis=0))
        self.heads = heads

    def apply(self, x, ex, nx, extra_terms=0):
        """y = x @ W with x's elementwise bound ex [N, n_in] and norm bound nx
        [N]. Returns y, its elementwise bound, its per-head norm bound
        [N, heads], and |x| @ |W|: what a partial sum may reach in some
        order (for the FP32 range check)."""
        with np.errstate(over="ignore", invalid="ignore"):
            y = x @ self.w
            mag = np.abs(x) @ self.abs
            ew = ex @ self.abs
            prop = np.minimum(ew, nx[:, None] * self.col)
            g = self.gamma if not extra_terms else float(gamma(self.w.shape[0] + extra_terms))
            local = g * (mag + ew) + self.eta
            e = prop + local
            n_prop = self.spec[None, :] * nx[:, None]
            nm = np.minimum(n_prop + _head_norms(local, self.heads), _head_norms(e, self.heads))
        return y, e, nm, mag


class Truth:
    """The float64 forward and its error bound for one set of weights."""

    def __init__(self, weights, dims):
        d, _ = reference._prepare(weights, dims)   # checks names and shapes
        self.dims = d
        self.layers = []
        for layer in range(d.n_layers):
            p = f"layers.{layer}."
            self.layers.append({
                "wq": _Linear(weights[p + "wq"], d.n_q_heads),
                "wk": _Linear(weights[p + "wk"], d.n_kv_heads),
                "wv": _Linear(weights[p + "wv"], d.n_kv_heads),
                "wo": _Linear(weights[p + "wo"]),
            })
        self.wc = _Linear(weights["wc"])
        self.first_order = True     # whether the last forward() had the first-order bound

    @classmethod
    def of_blob(cls, parsed_blob):
        return cls(parsed_blob.tensors(), parsed_blob.header.dims)

    def forward(self, frames, window=reference.DEFAULT_WINDOW, device=None, host=None):
        """(logits, bound), [N, C] float64 each, for frames [N, D] (taken as
        the FP32 values a device receives): row t is what a stream reset
        before frame 0 reports after frame t, and how far from it any
        correct FP32 implementation may be (inf where none can be vouched
        for: the FP32 range is left).

        Beyond ADJOINT_FLOPS the first-order bound is evaluated lazily
        against `device`'s logits [N, C] (and `host`'s, another correct
        implementation whose gap is only reported): the returned bound then
        decides every logit exactly as the first-order bound would, except
        where self.undecided is set (docs/model.md, "Deciding lazily").
        Without `device` it is the rigorous forward bound alone."""
        d = self.dims
        W = reference._check_window(window)
        x = reference._check_frames(frames, d).astype(np.float64)
        N = x.shape[0]
        W = min(W, max(N, 1))
        ex = np.zeros_like(x)
        nx = np.zeros(N)
        bad = _too_big(x)
        self.range_first = None         # (frame, layer, quantity) where the FP32 range is first left
        self.xs = []                    # x entering each layer, then the classifier's: the model's diagnosis
        first = self._first_out
        first(bad, 0, "frame")
        trace, kv_bad = [], []
        for layer, lw in enumerate(self.layers):
            self.xs.append(x)
            q, eq, nq, mq = lw["wq"].apply(x, ex, nx)
            k, ek, nk, mk = lw["wk"].apply(x, ex, nx)
            v, ev, nv, mv = lw["wv"].apply(x, ex, nx)
            bad_q = bad | _too_big(q) | _too_big(mq)
            bad_kv = bad | _too_big(k) | _too_big(mk) | _too_big(v) | _too_big(mv)
            first(bad_q, layer, "q")
            first(bad_kv, layer, "k, v")
            kv_bad.append(bad_kv)
            o = np.empty((N, d.q_dim))
            eo = np.empty((N, d.q_dim))
            no = np.empty(N)
            for t0, t1, s0, mask in blocks(N, W):
                hd = d.head_dim
                sl, kv = slice(t0, t1), slice(s0, t1)
                ob, eob, nob, big = _attention(
                    d, mask,
                    q[sl].reshape(-1, d.n_q_heads, hd), eq[sl].reshape(-1, d.n_q_heads, hd), nq[sl],
                    k[kv].reshape(-1, d.n_kv_heads, hd), ek[kv].reshape(-1, d.n_kv_heads, hd), nk[kv],
                    v[kv].reshape(-1, d.n_kv_heads, hd), ev[kv].reshape(-1, d.n_kv_heads, hd), nv[kv])
                o[sl], eo[sl], no[sl] = ob, eob, nob
                bad[sl] = bad_q[sl] | big | (mask & bad_kv[None, kv]).any(axis=1)
            first(bad, layer, "attention (scores, softmax or weighted sum)")
            bad |= _too_big(o)
            # x + o.Wo as one sum of Q + 1 terms in any order (the residual
            # may be the accumulator's starting value).
            trace.append(_Layer(x, q, k, v, o))
            y, ey, ny, my = lw["wo"].apply(o, eo, no, extra_terms=1)
            with np.errstate(over="ignore", invalid="ignore"):
                loc_x = float(gamma(d.q_dim + 1)) * (np.abs(x) + ex)
                bad |= _too_big(np.abs(x) + my)
                first(bad, layer, "o.Wo and the residual add")
                x = x + y
                ex = ex + ey + loc_x
                nx = np.minimum(nx + ny[:, 0] + _norm(loc_x), _norm(ex))
            bad |= _too_big(x)
            first(bad, layer, "x after the residual")
        self.xs.append(x)
        logits, el, _, ml = self.wc.apply(x, ex, nx)
        bad |= _too_big(logits) | _too_big(ml)
        first(bad, None, "logits")
        if bad.any():
            trace = _live_only(trace, kv_bad, bad, W)
        self.first_order = self._adjoint_cost(N, W) <= ADJOINT_FLOPS
        self.method = "first-order" if self.first_order else ("lazy" if device is not None else "forward")
        self.undecided = np.zeros(logits.shape, dtype=bool)
        self.lazy_stats = None
        if not bad.all():
            if self.first_order:
                # fmin: where the first-order pass overflowed (its derivatives are FP32),
                # the rigorous forward bound alone.
                el = np.fmin(el, self._adjoint(trace, x, W))
            elif device is not None:
                el = self._lazy(trace, x, W, logits, el, bad, device, host)
        with np.errstate(over="ignore", invalid="ignore"):
            bound = SAFETY * el
        bound = np.where(np.isnan(bound), np.inf, bound)
        bound[bad] = np.inf
        self.undecided &= ~bad[:, None]
        return logits, bound

    def _first_out(self, bad, layer, quantity):
        if self.range_first is None and np.any(bad):
            self.range_first = (int(np.argmax(bad)), layer, quantity)

    # -- first-order bound: every rounding's exact sensitivity -------------------
    def _adjoint_cost(self, N, W):
        """Operations of the first-order pass over the whole model. It runs
        only within ADJOINT_FLOPS, and only whole: the rigorous forward
        bound entering its lowest layer would dominate a partial one."""
        d = self.dims
        layers = d.n_layers
        span = layers * (W - 1)
        rows = _chunk_rows(N, W, layers, d.n_classes)
        chunks = -(-N // rows)
        P = min(N, rows + span)
        B = rows * d.n_classes
        per_layer = (4 * d.n_q_heads * B * P * P * d.head_dim
                     + 2 * B * P * d.input_dim * (2 * d.q_dim + 2 * d.kv_dim))
        return chunks * layers * per_layer

    def _adjoint(self, trace, x_top, W):
        """Per logit, the sum over every rounding of |d logit / d rounding|
        times its bound (docs/model.md, "Propagation, first order"). The
        frames themselves are exact, so nothing enters from below."""
        d = self.dims
        N, C = x_top.shape[0], d.n_classes
        out = np.full((N, C), np.inf)
        rows = _chunk_rows(N, W, d.n_layers, C)
        eps_y, local = self._locals(trace, x_top, W)
        for r0 in range(0, N, rows):
            r1 = min(N, r0 + rows)
            pos = np.repeat(np.arange(r0, r1), C)
            cls = np.tile(np.arange(C), r1 - r0)
            out[r0:r1] = self._adjoint_of(eps_y, local, pos, cls, W).reshape(r1 - r0, C)
        return out

    def _locals(self, trace, x_top, W):
        eps_y = float(gamma(self.dims.input_dim)) * (np.abs(x_top) @ self.wc.abs) + self.wc.eta
        return eps_y, [_Local(self.dims, self.layers[l], trace[l], W) for l in range(self.dims.n_layers)]

    def _adjoint_of(self, eps_y, local, pos, cls, W):
        """The first-order sum of logits (pos[b], cls[b]) [B], all layers."""
        d = self.dims
        r0, r1 = int(pos.min()), int(pos.max()) + 1
        p0 = max(0, r0 - d.n_layers * (W - 1))
        acc = eps_y[pos, cls].copy()
        with np.errstate(over="ignore", invalid="ignore"):
            # At the top, logit (t, c)'s gradient is Wc[:, c] at position t alone.
            G = local[-1].backward_top(self.wc.wT32[cls], pos, acc, p0, r1)
            for depth, lc in enumerate(reversed(local[:-1]), start=1):
                # Only positions within depth*(W-1) of the rows carry gradient here.
                qa = max(p0, r0 - depth * (W - 1))
                G = lc.backward(G, acc, p0, r1, qa)
        return acc

    def _top_terms(self, eps_y, top, W):
        """Per logit, the classifier's and the top layer's terms of the
        first-order sum alone [N, C]: a lower bound of the whole sum (every
        term is >= 0), in float64 throughout so that it stays one."""
        d = self.dims
        N, C = eps_y.shape
        out = np.empty((N, C))
        rows = max(1, int(TOP_ELEMS // (C * min(N, W + 16) * max(d.kv_dim, d.input_dim))))
        for r0 in range(0, N, rows):
            r1 = min(N, r0 + rows)
            pos = np.repeat(np.arange(r0, r1), C)
            cls = np.tile(np.arange(C), r1 - r0)
            acc = eps_y[pos, cls].copy()
            with np.errstate(over="ignore", invalid="ignore"):
                top.backward_top(self.wc.w.T[cls], pos, acc, max(0, r0 - (W - 1)), r1, grad=False)
            out[r0:r1] = acc.reshape(r1 - r0, C)
        return out

    def _lazy(self, trace, x_top, W, logits, fwd, bad, device, host):
        """The first-order bound decided per logit against the device's
        error (docs/model.md, "Deciding lazily"). fwd: the rigorous forward
        bound (>= the first-order sum's min with it). Returns the bound
        before the safety factor; sets self.undecided and self.lazy_stats."""
        d = self.dims
        eps_y, local = self._locals(trace, x_top, W)
        part = np.fmin(fwd, self._top_terms(eps_y, local[-1], W))
        with np.errstate(over="ignore", invalid="ignore"):
            err = np.abs(np.asarray(device, dtype=np.float64) - logits)
            seen = err if host is None else np.fmax(err, np.abs(np.asarray(host, dtype=np.float64) - logits))
            passes = seen <= SAFETY * part
            fails = ~np.isfinite(err) | (err > SAFETY * fwd)
            ratio = err / (SAFETY * part)
        bound = np.where(fails, fwd, part)
        open_ = ~passes & ~fails & ~bad[:, None]
        # The device's worst logits first: one proven failure decides the verdict.
        order = np.argsort(-np.nan_to_num(np.where(open_, ratio, -1.0), nan=np.inf), axis=None, kind="stable")
        order = order[: int(open_.sum())]
        t_all, c_all = np.unravel_index(order, logits.shape)
        N = logits.shape[0]
        group = max(1, int(CHUNK_ELEMS // min(N, d.n_layers * (W - 1) + 1) ** 2))
        spent, done, proven_bad = 0.0, 0, False
        while done < len(order) and not proven_bad:
            t, c = t_all[done:done + group], c_all[done:done + group]
            for sel in _runs(t, W):
                ts, cs = t[sel], c[sel]
                cost = self._batch_cost(len(ts), int(ts.min()), int(ts.max()) + 1, W)
                if spent + cost > LAZY_FLOPS:
                    break
                spent += cost
                full = np.fmin(fwd[ts, cs], self._adjoint_of(eps_y, local, ts, cs, W))
                bound[ts, cs] = full
                open_[ts, cs] = False
                proven_bad |= bool((err[ts, cs] > SAFETY * full).any())
            else:
                done += len(t)
                continue
            break
        # Undecided: still open and the device is beyond the partial sum (where
        # only the host is, the device passes by it all the same).
        self.undecided = open_ & ~(err <= SAFETY * part)
        self.lazy_stats = {"candidates": len(order), "computed": int(len(order) - open_.sum()),
                           "flops": spent, "undecided": int(self.undecided.sum())}
        return bound

    def _batch_cost(self, B, r0, r1, W):
        """Operations of _adjoint_of for B logits at positions [r0, r1)."""
        d = self.dims
        P = r1 - max(0, r0 - d.n_layers * (W - 1))
        return d.n_layers * (4 * d.n_q_heads * B * P * P * d.head_dim
                             + 2 * B * P * d.input_dim * (2 * d.q_dim + 2 * d.kv_dim))


ADJOINT_FLOPS = 4e11          # compute budget of the first-order bound per forward call
CHUNK_ELEMS = 2e6             # outputs x positions^2 per chunk of the first-order bound
LAZY_FLOPS = 4e11             # beyond ADJOINT_FLOPS: work cap of the per-logit passes per forward call
TOP_ELEMS = 4e6               # logits x positions x width per chunk of the top layer's terms


def _runs(t, W):
    """Index arrays splitting positions t into batches of nearby positions
    (sorted; a new batch where the span would pass W): logits far apart
    share no positions worth computing together."""
    order = np.argsort(t, kind="stable")
    ts = t[order]
    out, start = [], 0
    for i in range(1, len(ts) + 1):
        if i == len(ts) or ts[i] - ts[start] >= W:
            out.append(order[start:i])
            start = i
    return out


def _chunk_rows(N, W, layers, C):
    """Output rows per chunk so that rows*C * (rows + span)^2 stays near CHUNK_ELEMS."""
    span = layers * (W - 1)
    rows = 1
    while rows < N and (2 * rows) * C * min(N, 2 * rows + span) * min(N, 2 * rows + span - (W - 1)) <= CHUNK_ELEMS:
        rows *= 2
    return min(rows, max(N, 1))


def _mm(x, w):
    """x [..., n] @ w [n, m] as one 2-D product (BLAS), whatever x's lead axes."""
    return (x.reshape(-1, x.shape[-1]) @ w).reshape(x.shape[:-1] + (w.shape[1],))


def _abs_dot(g, eps):
    """sum over all but the first axis of |g| * eps: [B, ...] -> [B] (float64)."""
    flat = np.abs(g).reshape(g.shape[0], -1)
    if flat.dtype != np.float32:
        return flat @ eps.reshape(-1)
    # A float32 sum of n non-negative terms is off by at most gamma_n relative
    # (any order), and each eps loses one more rounding: cover both.
    n = flat.shape[1] + 2
    return (flat @ eps.reshape(-1).astype(np.float32)).astype(np.float64) * (1.0 + n * 2.0 ** -23)


class _Layer:
    """What the first-order bound needs of one layer's forward pass."""

    def __init__(self, x, q, k, v, o):
        self.x, self.q, self.k, self.v, self.o = x, q, k, v, o


def _live_only(trace, kv_bad, bad, W):
    """The trace with every row zeroed where it cannot reach a logit that
    keeps its bound (`bad`: rows whose bound is infinite; kv_bad[l]: rows
    whose k or v in layer l are out of range or come from such a row). A
    row's k and v reach the rows attending to it (W back), its q, o and
    residual its own row, in this layer and, through x, every layer above.
    The zeroed values are the out-of-range ones: their derivative towards
    every live logit is exactly 0, but 0 * inf in the first-order pass is
    NaN, which would take the bound of rows the value never reaches
    (docs/model.md, "Leaving the FP32 range")."""
    N = bad.shape[0]
    row = ~bad                                   # feeds a live logit through q, o and the residual
    out = [None] * len(trace)
    for l in range(len(trace) - 1, -1, -1):
        # k, v of row j feed rows j .. j+W-1 of this layer.
        c = np.concatenate([[0], np.cumsum(row)])
        kv = (c[np.minimum(np.arange(N) + W, N)] - c[np.arange(N)]) > 0
        tr = trace[l]
        zero = lambda z, live: np.where(live[:, None], z, 0.0)   # noqa: E731
        out[l] = _Layer(zero(tr.x, row | kv), zero(tr.q, row), zero(tr.k, kv), zero(tr.v, kv), zero(tr.o, row))
        row = row | kv                           # this layer's input x feeds both
    return out


class _Local:
    """One layer's roundings and their bounds (docs/model.md, "Error bound"),
    and the backward step of the first-order bound through it."""

    def __init__(self, d, lw, tr, W):
        self.d, self.lw, self.tr, self.W = d, lw, tr, W
        xa = np.abs(tr.x)
        self.eps_q = float(gamma(d.input_dim)) * (xa @ lw["wq"].abs) + lw["wq"].eta
        self.eps_k = float(gamma(d.input_dim)) * (xa @ lw["wk"].abs) + lw["wk"].eta
        self.eps_v = float(gamma(d.input_dim)) * (xa @ lw["wv"].abs) + lw["wv"].eta
        self.eps_res = float(gamma(d.q_dim + 1)) * (xa + np.abs(tr.o) @ lw["wo"].abs) + lw["wo"].eta

    def _heads(self):
        """(h, its kv head's column slice, h's column slice) per query head."""
        hd = self.d.head_dim
        for h in range(self.d.n_q_heads):
            g = h // self.d.group
            yield h, slice(g * hd, (g + 1) * hd), slice(h * hd, (h + 1) * hd)

    def _head_terms(self, qh, kg, vg, allowed, n_att):
        """One head's softmax a for query rows qh against keys kg where
        `allowed`, and the bounds of its roundings: on the exponent's
        argument (score and subtraction) and on o = a.v (n_att [rows, 1])."""
        c = 1.0 / np.sqrt(self.d.head_dim)
        hd = self.d.head_dim
        s = np.where(allowed, c * (qh @ kg.T), -np.inf)
        m = s.max(axis=1, keepdims=True)
        e = np.where(allowed, np.exp(s - m), 0.0)
        a = e / e.sum(axis=1, keepdims=True)
        eps_s = c * float(gamma(hd + 3)) * (np.abs(qh) @ np.abs(kg).T) + ETA * (2 * hd + 4)
        eps_arg = np.where(allowed, U * np.abs(np.where(allowed, s, m) - m) + EXP_ARG + eps_s, 0.0)
        eps_o = gamma(n_att + 1) * (a @ np.abs(vg)) + ETA * 2 * (n_att + 1)
        return a, eps_arg, eps_o

    def backward_top(self, g, pos, acc, p0, p1, grad=True):
        """backward() for the top layer, where logit b's gradient is g[b]
        [D] at position pos[b] alone: the same sums, without the rows that
        are zero. Returns d logit_b / d x^l_p [B, P, D]; with grad=False
        only the sums, in float64."""
        d, lw, tr = self.d, self.lw, self.tr
        hd = d.head_dim
        c = 1.0 / np.sqrt(hd)
        f32 = np.float32 if grad else np.float64
        B, P = g.shape[0], p1 - p0
        acc += np.sum(np.abs(g) * self.eps_res[pos], axis=1)
        go = g.astype(np.float64) @ lw["wo"].w.T                         # [B, Q]
        j = np.arange(p0, p1)[None, :]
        allowed = (j <= pos[:, None]) & (j > pos[:, None] - self.W)     # [B, P]
        n_att = allowed.sum(axis=1).astype(np.float64)[:, None]
        rho = gamma(n_att + 2)
        q = tr.q[pos].reshape(B, d.n_q_heads, hd)
        o = tr.o[pos].reshape(B, d.n_q_heads, hd)
        k = tr.k[p0:p1].reshape(P, d.n_kv_heads, hd)
        v = tr.v[p0:p1].reshape(P, d.n_kv_heads, hd)
        Gq = np.zeros((B, d.q_dim))
        Gk = np.zeros((B, P, d.kv_dim), dtype=f32)
        Gv = np.zeros((B, P, d.kv_dim), dtype=f32)
        k, v = k.reshape(P, -1), v.reshape(P, -1)
        for h, gs, hs in self._heads():
            qh, kg, vg = q[:, h], k[:, gs], v[:, gs]
            a, eps_arg, eps_o = self._head_terms(qh, kg, vg, allowed, n_att)
            goh = go[:, hs]
            acc += np.sum(np.abs(goh) * eps_o, axis=1)
            Ga = goh @ vg.T                                             # [B, P]
            acc += np.sum(np.abs(Ga) * a * rho, axis=1)
            Gs = a * (Ga - np.sum(goh * o[:, h], axis=1, keepdims=True))
            acc += np.sum(np.abs(Gs) * eps_arg, axis=1)
            Gq[:, hs] = c * (Gs @ kg)
            Gk[:, :, gs] += (c * Gs[:, :, None] * qh[:, None, :]).astype(f32)
            Gv[:, :, gs] += (a[:, :, None] * goh[:, None, :]).astype(f32)
        acc += np.sum(np.abs(Gq) * self.eps_q[pos], axis=1)
        acc += _abs_dot(Gk, self.eps_k[p0:p1])
        acc += _abs_dot(Gv, self.eps_v[p0:p1])
        if not grad:
            return None
        G = _mm(Gk, lw["wk"].wT32) + _mm(Gv, lw["wv"].wT32)
        G[np.arange(B), pos - p0] += (g + Gq @ lw["wq"].w.T).astype(f32)
        return G

    def backward(self, G, acc, p0, p1, qa):
        """G [B, P, D]: d logit_b / d x^{l+1}_p for p in [p0, p1), zero
        below qa. Adds this layer's roundings to acc [B]; returns
        d logit_b / d x^l_p."""
        d, lw, tr = self.d, self.lw, self.tr
        hd = d.head_dim
        c = 1.0 / np.sqrt(hd)
        f32 = np.float32
        P, A0 = p1 - p0, qa - p0              # positions; first active (query) one
        Ga_rows = np.ascontiguousarray(G[:, A0:])
        acc += _abs_dot(Ga_rows, self.eps_res[qa:p1])
        Go = _mm(Ga_rows, lw["wo"].wT32)                               # [B, Pa, Q]
        B, Pa = Go.shape[:2]
        t = np.arange(A0, P)[:, None]
        j = np.arange(P)[None, :]
        band = (j <= t) & (j > t - self.W)
        n_att = band.sum(axis=1).astype(np.float64)[:, None]
        rho = gamma(n_att + 2)
        q = tr.q[qa:p1].reshape(Pa, d.n_q_heads, hd)
        k = tr.k[p0:p1].reshape(P, d.n_kv_heads, hd)
        v = tr.v[p0:p1].reshape(P, d.n_kv_heads, hd)
        o = tr.o[qa:p1].reshape(Pa, d.n_q_heads, hd)
        Gq = np.zeros((B, Pa, d.q_dim), dtype=f32)
        Gk = np.zeros((B, P, d.kv_dim), dtype=f32)
        Gv = np.zeros((B, P, d.kv_dim), dtype=f32)
        k, v = k.reshape(P, -1), v.reshape(P, -1)
        for h, gs, hs in self._heads():
            qh, kg, vg = q[:, h], k[:, gs], v[:, gs]
            a, eps_arg, eps_o = self._head_terms(qh, kg, vg, band, n_att)   # [Pa, P]
            a32, q32, k32, v32 = (z.astype(f32) for z in (a, qh, kg, vg))
            Goh = np.ascontiguousarray(Go[:, :, hs])                    # [B, Pa, HD]
            acc += _abs_dot(Goh, eps_o)
            Ga = _mm(Goh, np.ascontiguousarray(v32.T))                  # [B, Pa(t), P(j)]
            acc += _abs_dot(Ga, a * rho)
            Ga -= np.sum(Goh * o[:, h].astype(f32), axis=-1)[:, :, None]
            Gs = np.multiply(a32, Ga, out=Ga)                           # softmax backward
            acc += _abs_dot(Gs, eps_arg)
            Gq[:, :, hs] = f32(c) * _mm(Gs, k32)
            Gk[:, :, gs] += f32(c) * _mm(np.ascontiguousarray(Gs.transpose(0, 2, 1)), q32)
            # sum_t a[t, j] Go[b, t]: positions first, then one product.
            moved = np.ascontiguousarray(Goh.transpose(1, 0, 2)).reshape(Pa, -1)
            Gv[:, :, gs] += (a32.T @ moved).reshape(P, B, hd).transpose(1, 0, 2)
        acc += _abs_dot(Gq, self.eps_q[qa:p1])
        acc += _abs_dot(Gk, self.eps_k[p0:p1])
        acc += _abs_dot(Gv, self.eps_v[p0:p1])
        G = G + _mm(Gk, lw["wk"].wT32) + _mm(Gv, lw["wv"].wT32)
        G[:, A0:] += _mm(Gq, lw["wq"].wT32)
        return G


def _attention(d, mask, q, eq, nq, k, ek, nk, v, ev, nv):
    """One block of the attention step with its bounds. q, eq [T, HQ, HD],
    nq [T, HQ]; k, v, ek, ev [S, HKV, HD], nk, nv [S, HKV]; mask [T, S].
    Returns o, its elementwise bound [T, Q], its 2-norm bound [T] and the
    rows whose scores or outputs leave the FP32 range."""
    T, S, G = q.shape[0], k.shape[0], d.group
    c = 1.0 / np.sqrt(d.head_dim)
    qa, ka, va = np.abs(q) + eq, np.abs(k) + ek, np.abs(v) + ev
    Q, EQ, QA = query_rows(q, d), query_rows(eq, d), query_rows(qa, d)         # [HKV, G*T, HD]
    K, KA, V, EV, VA = (kv_rows(z) for z in (k, ka, v, ev, va))                 # [HKV, S, HD]
    nq_r, Nq_r = query_rows(_norm(q)[..., None], d)[..., 0], query_rows(nq[..., None], d)[..., 0]
    nk_r, Nk_r = kv_rows(_norm(k)[..., None])[..., 0], kv_rows(nk[..., None])[..., 0]
    nv_r, Nv_r = kv_rows(_norm(v)[..., None])[..., 0], kv_rows(nv[..., None])[..., 0]
    allowed = np.tile(mask, (G, 1))[None]                                      # [1, G*T, S]
    n_att = allowed.sum(axis=-1, keepdims=True).astype(np.float64)            # positions per row

    with np.errstate(over="ignore", invalid="ignore"):
        # Scores s = c * q.k: |q^.k^ - q.k| <= (|q|+Eq).(|k|+Ek) - |q|.|k| elementwise,
        # or ||q|| Nk + Nq ||k|| + Nq Nk by Cauchy-Schwarz; rounding gamma_{HD+3}
        # (HD-term sum, then c: sqrt, divide, scale).
        s = c * np.matmul(Q, K.transpose(0, 2, 1))
        P = np.matmul(QA, KA.transpose(0, 2, 1))
        R = np.matmul(np.abs(Q), np.abs(K).transpose(0, 2, 1))
        nqk = nq_r[..., None] * Nk_r[:, None, :] + Nq_r[..., None] * (nk_r + Nk_r)[:, None, :]
        prop = np.minimum(P - R, nqk)
        rnd = gamma(d.head_dim + 3) * np.minimum(P, (nq_r + Nq_r)[..., None] * (nk_r + Nk_r)[:, None, :])
        es = c * (prop + rnd) + ETA * (2 * d.head_dim + 4) * (1 + c * P)
        # A score's partial sums reach sum_i |q_i k_i| in some order.
        big = ~((np.abs(s) <= FMAX / 2) & (R <= FMAX / 2)) & allowed
        s = np.where(allowed, s, -np.inf)
        es = np.where(allowed, es, 0.0)

        # Softmax. The argument of exp is s_j - max (rounded) with error A_j;
        # expf's own error and the sum's and division's roundings are folded
        # in. Bounds on a_j = 1 / (1 + sum_{l!=j} exp(s_l - s_j)) with every
        # difference moved by A_l + A_j toward each side.
        m = s.max(axis=-1, keepdims=True)
        emax = es.max(axis=-1, keepdims=True)
        A = es + U * (np.abs(s - m) + es + emax) + EXP_ARG
        A = np.where(allowed, A, 0.0)
        e = np.where(allowed, np.exp(s - m), 0.0)
        a = e / e.sum(axis=-1, keepdims=True)
        top = np.where(allowed, s + A, -np.inf).max(axis=-1, keepdims=True)
        plus = np.where(allowed, np.exp(s + A - top), 0.0)
        minus = np.where(allowed, np.exp(s - A - top), 0.0)
        rest_minus = np.maximum(minus.sum(axis=-1, keepdims=True) - minus, 0.0)
        rest_plus = np.maximum(plus.sum(axis=-1, keepdims=True) - plus, 0.0)
        hi = plus / (plus + rest_minus)
        lo = minus / (minus + rest_plus)
        hi = np.where(np.isnan(hi), 1.0, hi)
        lo = np.where(np.isnan(lo), 0.0, lo)
        rho = gamma(n_att + 2)
        hi = np.minimum(1.0, hi * (1 + rho))
        lo = lo * (1 - rho)
        ea = np.maximum(np.maximum(hi - a, a - lo), 0.0) + 2 * ETA
        ea = np.where(allowed, np.minimum(ea, np.maximum(a, 1 - a) + 2 * ETA), 0.0)
        ea = np.where(np.isfinite(A).all(axis=-1, keepdims=True), ea, np.where(allowed, 1.0, 0.0))

        # o = sum_j a_j v_j: errors of a and of v, and an (n+1)-term rounding.
        # Normalised once at the end (the C kernel), its partial sums reach
        # sum_j e_j |v_j| with e_j <= 1 up to n times the result.
        o = mix(a, V)
        big_sum = ~(mix(e, np.abs(V)) <= FMAX / 2).all(axis=-1)                  # [HKV, G*T]
        g = gamma(n_att + 1)
        w_r = ea + g * (a + ea)
        eo = mix(w_r, VA) + mix(a, EV) + ETA * 2 * (n_att + 1)
        no = (mix(ea, (nv_r + Nv_r)[..., None])[..., 0] + mix(a + ea, Nv_r[..., None])[..., 0]
              + _norm(g * mix(a + ea, VA)))

    o = query_heads(o, d, T).reshape(T, d.q_dim)
    eo = query_heads(eo, d, T).reshape(T, d.q_dim)
    no = query_heads(no[..., None], d, T)[..., 0]                              # [T, HQ]
    no = np.minimum(_norm(no), _norm(eo))
    big_rows = query_heads((big.any(axis=-1) | big_sum)[..., None], d, T)[..., 0].any(axis=1)
    return o, eo, no, big_rows
