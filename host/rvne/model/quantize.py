"""Quantisation of a float temporal head into docs/model.md's integer
model: calibration over frames (the float model's activation maxima),
per-output-channel weight scales, (mult, shift) pairs and exp tables. What
`rvne quantize` and rvne.torch.TemporalHead.to_blob(dtype="int8") run.

Only the choice of scales is the host's; the arithmetic they feed is the
integer model's, so any scale the rules accept gives an exact device."""

import math
from typing import List, NamedTuple

import numpy as np

from ..errors import CalibrationError, ScaleRangeError, WeightsFileError, ZeroRangeError
from .contract import INT8_EXP_LEN, Dims, check_arrays, check_int8_dims, tensor_specs
from .int8 import (
    MULT_MAX, MULT_MIN, ONE, SCALE_MAX, SCALE_MIN, SHIFT_MAX, SHIFT_MIN, Int8Model, round_half_away, rq_sizes,
)
from .reference import DEFAULT_WINDOW, _check_window, blocks, forward_batch

# One score unit: exp(-i * unit) in the table, so 255 units span 16 octaves,
# beyond which EXP rounds to 1 or 0 of 32768 (the table's clamp costs nothing).
SCORE_UNIT = math.log(2) / 16
F64 = np.float64
# x's ranges tried by the search: max |x| times 2^(-k/4), k = 0 .. 16, each
# x (input, every layer's residual stream) in turn: clipping a range's rare
# peaks (saturation) can cost less than the levels they take from the rest.
X_SEARCH = tuple(2.0 ** (-k / 4) for k in range(17))


class Ranges(NamedTuple):
    """max |value| of each activation on the calibration frames (x[l]: the
    range s_l maps to 127, at most x_max[l])."""

    x: List[float]         # L + 1: the input, then the residual stream after each layer
    q: List[float]         # per layer
    k: List[float]
    v: List[float]
    o: List[float]
    x_max: List[float] = None    # max |x| itself, L + 1


def check_weights(arrays, dims):
    d = Dims.of(dims).check()
    check_arrays(arrays, d)
    for name in (s.name for s in tensor_specs(d)):
        a = np.asarray(arrays[name], dtype=F64)
        bad = ~np.isfinite(a)
        if bad.any():
            raise WeightsFileError(f"tensor {name} has {int(bad.sum())} NaN/inf values: a float model with them "
                                   "has no int8 equivalent; fix the model")
    return d


def check_frames(sequences, dims, what="calibration frames"):
    """A list of [T, D] float arrays (one sequence each) from [T, D],
    [N, T, D] or a list; empty, wrong-width or non-finite frames refused."""
    d = Dims.of(dims)
    if isinstance(sequences, np.ndarray):
        if sequences.ndim == 2:
            sequences = [sequences]
        elif sequences.ndim == 3:
            sequences = list(sequences)
        else:
            raise CalibrationError(f"{what} have shape {sequences.shape}, need [T, {d.input_dim}] or "
                                   f"[N, T, {d.input_dim}]")
    out = []
    for i, s in enumerate(sequences):
        a = np.asarray(s)
        if a.ndim != 2 or a.shape[1] != d.input_dim:
            raise CalibrationError(f"{what}: sequence {i} has shape {a.shape}, the model needs [T, {d.input_dim}]")
        if a.dtype.kind not in "fiu":
            raise CalibrationError(f"{what}: dtype {a.dtype}, need float frames")
        with np.errstate(over="ignore"):
            a = a.astype(np.float32)
        bad = ~np.isfinite(a)
        if bad.any():
            t, c = (int(j) for j in np.argwhere(bad)[0])
            raise CalibrationError(f"{what}: sequence {i} frame {t} value {c} is {a[t, c]} as float32 "
                                   f"({int(bad.sum())} non-finite in all): calibrate on finite frames")
        if len(a):
            out.append(a)
    if not out:
        raise CalibrationError(f"{what}: no frames: calibration needs at least one")
    return out


def _forward_ranges(w, d, frames, window):
    """The float model (float64) over one sequence: per-activation max |.|."""
    x = frames.astype(F64)
    N, HKV, HD, G = x.shape[0], d.n_kv_heads, d.head_dim, d.group
    W = min(window, N)
    mx = {"x": [float(np.abs(x).max())], "q": [], "k": [], "v": [], "o": []}
    for layer in range(d.n_layers):
        p = f"layers.{layer}."
        q, k, v = x @ w[p + "wq"], x @ w[p + "wk"], x @ w[p + "wv"]
        o = np.empty((N, d.q_dim))
        for t0, t1, s0, mask in blocks(N, W):
            T, S = t1 - t0, t1 - s0
            qh = q[t0:t1].reshape(T, HKV, G, HD)
            kh = k[s0:t1].reshape(S, HKV, HD)
            vh = v[s0:t1].reshape(S, HKV, HD)
            sc = np.einsum("tgid,sgd->gits", qh, kh) / math.sqrt(HD)
            sc = np.where(mask, sc, -np.inf)
            e = np.exp(sc - sc.max(axis=-1, keepdims=True))
            a = e / e.sum(axis=-1, keepdims=True)
            o[t0:t1] = np.einsum("gits,sgd->tgid", a, vh).reshape(T, d.q_dim)
        x = x + o @ w[p + "wo"]
        for name, val in (("q", q), ("k", k), ("v", v), ("o", o), ("x", x)):
            mx[name].append(float(np.abs(val).max()))
    return mx


def calibrate(arrays, dims, sequences, window=DEFAULT_WINDOW):
    """Ranges of the float model over the calibration sequences."""
    d = check_weights(arrays, dims)
    W = _check_window(window)
    seqs = check_frames(sequences, d)
    w = {k: np.asarray(v, dtype=F64) for k, v in arrays.items()}
    total = {"x": [0.0] * (d.n_layers + 1), "q": [0.0] * d.n_layers, "k": [0.0] * d.n_layers,
             "v": [0.0] * d.n_layers, "o": [0.0] * d.n_layers}
    with np.errstate(over="ignore", invalid="ignore"):
        for s in seqs:
            mx = _forward_ranges(w, d, s, W)
            for n in "xqkvo":
                total[n] = [max(a, b) for a, b in zip(total[n], mx[n])]
    r = Ranges(total["x"], total["q"], total["k"], total["v"], total["o"], list(total["x"]))
    values = [("x (the input)", None, r.x[0])]
    values += [(n, l, getattr(r, n)[l]) for l in range(d.n_layers) for n in "qkvo"]
    values += [("x (the residual stream)", l, r.x[l + 1]) for l in range(d.n_layers)]
    for name, layer, v in values:
        where = "" if layer is None else f" of layer {layer}"
        if not math.isfinite(v):
            raise CalibrationError(f"{name}{where} overflows on the calibration frames (max |.| {v}): "
                                   "the float model itself is out of range there")
        if v == 0:
            raise ZeroRangeError(f"{name}{where} is 0 on every calibration frame: no int8 scale maps it; "
                                 "calibrate on frames that exercise it, or drop the layer")
    return r


def multiplier(M, what, zero_ok=False):
    """(mult, shift) with mult * 2^-shift = M to 31 bits: frexp's fraction
    rounded to 31 bits, the exponent into the shift. Outside what the rules
    allow: ScaleRangeError, or for a factor that only ever multiplies 0 (an
    all-zero weight column) the nearest allowed pair."""
    frac, e = math.frexp(M) if M > 0 and math.isfinite(M) else (0.5, 0)
    m = int(round(frac * 2 ** 31))
    if m == 1 << 31:        # the fraction rounded up to 1.0
        m, e = 1 << 30, e + 1
    shift = 31 - e
    if not (M > 0 and math.isfinite(M)) or not SHIFT_MIN <= shift <= SHIFT_MAX:
        if zero_ok:
            return (MULT_MIN, SHIFT_MAX) if shift > SHIFT_MAX or not M > 0 else (MULT_MAX, SHIFT_MIN)
        raise ScaleRangeError(f"{what}: factor {M!r} is outside [2^-32, 2^15), which (mult, shift) with shift in "
                              "[16, 62] holds; the model's activations and weights are too far apart in scale")
    assert MULT_MIN <= m <= MULT_MAX
    return m, shift


def _channel_scales(w):
    """Per-output-channel scales (columns of an in x out matrix) and the
    int8 weights: a zero column gets scale 1 and zeros."""
    amax = np.abs(w).max(axis=0)
    scale = np.where(amax > 0, amax / 127.0, 1.0)
    qw = np.clip(round_half_away(w / scale), -127, 127).astype(np.int8)
    return scale, qw, amax == 0


def exp_table(unit=SCORE_UNIT):
    i = np.arange(INT8_EXP_LEN, dtype=F64)
    return round_half_away(ONE * np.exp(-i * unit)).astype(np.int64)


def _check_scale(value, what):
    if not (math.isfinite(value) and SCALE_MIN <= value <= SCALE_MAX):
        raise ScaleRangeError(f"{what} is {value!r}, outside [2^-40, 2^40]: the model's scale is out of range")


def build(arrays, dims, ranges):
    """The Int8Model for float weights `arrays` and calibration `ranges`."""
    d = check_weights(arrays, dims)
    check_int8_dims(d)
    w = {k: np.asarray(v, dtype=F64) for k, v in arrays.items()}
    L = d.n_layers
    if len(ranges.x) != L + 1:
        raise ValueError(f"ranges.x has {len(ranges.x)} ranges, dims {d} need L + 1 = {L + 1}")
    s_x = [r / 127.0 for r in ranges.x]         # s_0 (the input's) .. s_L
    x_scale = np.float32(s_x[0])
    in_scale_inv = np.float32(1.0 / float(x_scale))
    _check_scale(float(x_scale), "x_scale (s_0)")
    _check_scale(float(in_scale_inv), "in_scale_inv (1/s_0)")
    sizes = rq_sizes(d)
    rq = {n: (np.zeros((L, sizes[n]), np.int64), np.zeros((L, sizes[n]), np.int64)) for n in sizes}
    qweights, exp = {}, np.zeros((L, INT8_EXP_LEN), np.int64)

    def put(name, layer, factors, zero_cols):
        for c, (M, z) in enumerate(zip(factors, zero_cols)):
            rq[name][0][layer, c], rq[name][1][layer, c] = multiplier(
                float(M), f"rq_{name} layer {layer} index {c}", zero_ok=bool(z))

    for layer in range(L):
        p = f"layers.{layer}."
        s_q, s_k, s_v, s_o = (getattr(ranges, n)[layer] / 127.0 for n in "qkvo")
        for name, s_out in (("q", s_q), ("k", s_k), ("v", s_v)):
            sw, qw, zero = _channel_scales(w[p + "w" + name])
            qweights[p + "w" + name] = qw
            put(name, layer, s_x[layer] * sw / s_out, zero)
        put("s", layer, [s_q * s_k / (math.sqrt(d.head_dim) * SCORE_UNIT)], [False])
        put("o", layer, [s_v / (ONE * s_o)], [False])
        sw, qw, zero = _channel_scales(w[p + "wo"])
        qweights[p + "wo"] = qw
        put("wo", layer, s_o * sw / s_x[layer + 1], zero)
        put("x", layer, [s_x[layer] / s_x[layer + 1]], [False])
        exp[layer] = exp_table()
    sw, qw, zero = _channel_scales(w["wc"])
    qweights["wc"] = qw
    logit_scale = (s_x[L] * sw).astype(np.float32)
    for c, v in enumerate(logit_scale):
        _check_scale(float(v), f"logit_scale[{c}]")
    model = Int8Model(d, in_scale_inv, x_scale, rq, logit_scale, exp, qweights)
    return model.validate()


def quantize(arrays, dims, sequences, window=DEFAULT_WINDOW, x_range="search"):
    """(Int8Model, Ranges): calibrate on `sequences`, then build. x_range
    "max": s_l = max |x_l| / 127; "search" (default): x's ranges chosen
    among X_SEARCH's clips by how well the model agrees with the float one
    on the calibration frames (argmax agreement, then mean logit error):
    one clip for all, then each range in turn from the input on."""
    ranges = calibrate(arrays, dims, sequences, window)
    if x_range == "max":
        return build(arrays, dims, ranges), ranges
    if x_range != "search":
        raise ValueError(f"x_range {x_range!r}: 'search' or 'max'")
    seqs = check_frames(sequences, dims)
    with np.errstate(all="ignore"):
        ref = np.concatenate([forward_batch(arrays, dims, s, window) for s in seqs]).astype(F64)
    tried, first_error = {}, []

    def score(factors):
        if factors not in tried:
            r = ranges._replace(x=[m * f for m, f in zip(ranges.x_max, factors)])
            try:
                model = build(arrays, dims, r)
            except ScaleRangeError as exc:
                first_error.append(exc)
                tried[factors] = None
            else:
                got = np.concatenate([model.float_logits(model.forward(s, window)) for s in seqs]).astype(F64)
                key = (float((got.argmax(axis=1) == ref.argmax(axis=1)).mean()), -float(np.abs(got - ref).mean()))
                tried[factors] = (key, model, r)
        return tried[factors]

    def best_of(candidates):
        found = [b for b in map(score, candidates) if b is not None]
        return max(found, key=lambda b: b[0]) if found else None

    n = len(ranges.x_max)
    best = best_of([(f,) * n for f in X_SEARCH])
    if best is None:
        raise first_error[0]
    factors = tuple(x / m for x, m in zip(best[2].x, ranges.x_max))
    for i in range(n):
        best = best_of([factors[:i] + (f,) + factors[i + 1:] for f in X_SEARCH])
        factors = tuple(x / m for x, m in zip(best[2].x, ranges.x_max))
    return best[1], best[2]


def compare(model, arrays, sequences, window=DEFAULT_WINDOW):
    """The int8 model against the float model (rvne.model.reference, FP32)
    over `sequences`: argmax agreement, and logit error (max |int8 - float|,
    also relative to the float logits' range)."""
    d = model.dims
    seqs = check_frames(sequences, d, "evaluation frames")
    ref, got = [], []
    with np.errstate(all="ignore"):
        for s in seqs:
            ref.append(forward_batch(arrays, d, s, window).astype(F64))
            got.append(model.float_logits(model.forward(s, window)).astype(F64))
    ref, got = np.concatenate(ref), np.concatenate(got)
    agree = float((ref.argmax(axis=1) == got.argmax(axis=1)).mean())
    err = float(np.abs(got - ref).max())
    span = float(ref.max() - ref.min())
    return {"frames": int(ref.shape[0]), "argmax_agreement": agree, "max_abs_error": err,
            "logit_range": span, "relative_error": err / span if span > 0 else None}
