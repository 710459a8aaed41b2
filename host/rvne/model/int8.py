"""The integer temporal head of docs/model.md ("Integer model"): an int8
blob's parameters (parsed, validated, serialised) and the int64 numpy
reference of its forward pass, streaming and batch, plus the four steps a
traced device is judged by, recomputed from the device's own inputs.

Every integer is held in an int64 array: each product and sum of the model
is exact there, so the result does not depend on the order of any sum, and a
correct device (int32 accumulators) gives the same bits."""

from dataclasses import dataclass
from typing import Dict, Tuple

import numpy as np

from ..errors import QParamError
from .contract import INT8_EXP_LEN, Dims, check_weights_len, int8_sections, tensor_specs
from .reference import DEFAULT_WINDOW, _check_window, blocks

I64 = np.int64
MULT_MIN, MULT_MAX = 1 << 30, (1 << 31) - 1
SHIFT_MIN, SHIFT_MAX = 16, 62
SCALE_MIN, SCALE_MAX = 2.0 ** -40, 2.0 ** 40
SCALE_PRODUCT_RTOL = 1e-3
ONE = 32768                     # p_j's unit: attention weights are p_j / 32768
EXP_MAX = ONE
# The (mult, shift) groups of a layer, in the parameter block's order.
RQ_NAMES = ("q", "k", "v", "s", "o", "wo", "x")
WEIGHT_NAMES = ("wq", "wk", "wv", "wo")


def rq_sizes(dims):
    d = Dims.of(dims)
    return {"q": d.q_dim, "k": d.kv_dim, "v": d.kv_dim, "s": 1, "o": 1, "wo": d.input_dim, "x": 1}


def trace_len(dims):
    d = Dims.of(dims)
    return d.n_layers * (2 * d.q_dim + 2 * d.kv_dim + d.input_dim) + d.n_classes


# -- the arithmetic --------------------------------------------------------------------
def sat8(v):
    return np.clip(v, -128, 127)


INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def sat32(v):
    """Saturated to int32, as int64: what the firmware's rvne_rq returns
    when acc*m*2^-s does not fit 32 bits."""
    return np.clip(np.asarray(v, dtype=I64), INT32_MIN, INT32_MAX)


def rq(acc, mult, shift):
    """Requantise: round(acc * mult / 2^shift), one rounding, half away from
    zero, saturated to int32. The product is exact in int64 (|acc| < 2^31,
    mult < 2^31), and so is the nudge (shift <= 62)."""
    p = np.asarray(acc, dtype=I64) * np.asarray(mult, dtype=I64)
    shift = np.asarray(shift, dtype=I64)
    mag = (np.abs(p) + np.left_shift(I64(1), shift - 1)) >> shift
    return sat32(np.where(p < 0, -mag, mag))


def round_half_away(v):
    """Nearest integer, ties away from zero, of float values (exact for
    float32 inputs: |v| + 0.5 is exact in float64 wherever it matters)."""
    a = np.abs(np.asarray(v, dtype=np.float64))
    return np.copysign(np.floor(a + 0.5), v)


def quantize_input(frames, in_scale_inv):
    """x0 = sat8(round_half_away(fp32(f * in_scale_inv))): one binary32
    multiply (numpy float32, round to nearest even), NaN -> 0, +-inf
    saturated."""
    f = np.asarray(frames, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        v = f * np.float32(in_scale_inv)
        r = np.clip(round_half_away(v), -128, 127)
    return np.where(np.isnan(v), 0, r).astype(I64)


# -- the model -----------------------------------------------------------------------------
def _fmt(layer):
    return "-" if layer is None else str(layer)


def _refuse(param, layer, index, value, need):
    raise QParamError(f"{param} layer {_fmt(layer)} index {index} is {value}: {need}")


@dataclass(frozen=True, eq=False)
class Int8Model:
    """An int8 blob's contents (docs/format.md "int8 weights").

    dims          Dims
    in_scale_inv  float32: 1/s_0, what the device quantises frames with
    x_scale       float32: s_0, the input's scale (layer l's residual
                  stream has its own s_l, implied by rq_x and rq_wo)
    rq            {"q", "k", "v", "s", "o", "wo", "x"} -> (mult, shift),
                  int64 arrays [L, n] (n = Q, K, K, 1, 1, D, 1)
    logit_scale   float32 [C]: float logit = accumulator * logit_scale
    exp           int64 [L, 256]: EXP_l (u16 values)
    weights       {"layers.{l}.wq", ..., "wc"} -> int8 (in x out) arrays,
                  docs/model.md's names and shapes
    """

    dims: Dims
    in_scale_inv: np.float32
    x_scale: np.float32
    rq: Dict[str, Tuple[np.ndarray, np.ndarray]]
    logit_scale: np.ndarray
    exp: np.ndarray
    weights: Dict[str, np.ndarray]

    def __post_init__(self):
        d = self.dims
        # int64 copies the forward pass uses; q, k and v are one product.
        w64 = {k: np.asarray(v, dtype=I64) for k, v in self.weights.items()}
        qkv = []
        for layer in range(d.n_layers):
            p = f"layers.{layer}."
            w = np.concatenate([w64[p + "wq"], w64[p + "wk"], w64[p + "wv"]], axis=1)
            m = np.concatenate([self.rq[n][0][layer] for n in ("q", "k", "v")])
            s = np.concatenate([self.rq[n][1][layer] for n in ("q", "k", "v")])
            qkv.append((w, m, s))
        object.__setattr__(self, "_w64", w64)
        object.__setattr__(self, "_qkv", qkv)

    # -- bytes ----------------------------------------------------------------------------
    @classmethod
    def from_weights(cls, weights, dims):
        """Parse and validate an int8 blob's weights (exactly weights_len
        bytes): rule 14's length (E_CONTRACT), then every parameter rule in
        docs/format.md's order (E_QPARAM). Returns an Int8Model."""
        d = Dims.of(dims)
        buf = memoryview(weights).cast("B")
        check_weights_len(d, "int8", buf.nbytes)
        P, T, _ = int8_sections(d)
        words = P // 4
        f32 = np.frombuffer(buf, dtype="<f4", count=words)
        i32 = np.frombuffer(buf, dtype="<i4", count=words).astype(I64)
        sizes = rq_sizes(d)
        L = d.n_layers
        rq_ = {n: (np.empty((L, sizes[n]), I64), np.empty((L, sizes[n]), I64)) for n in RQ_NAMES}
        pos = 2
        for layer in range(L):
            for n in RQ_NAMES:
                pairs = i32[pos:pos + 2 * sizes[n]].reshape(-1, 2)
                rq_[n][0][layer], rq_[n][1][layer] = pairs[:, 0], pairs[:, 1]
                pos += 2 * sizes[n]
        logit_scale = f32[pos:pos + d.n_classes].astype(np.float32)
        exp = np.frombuffer(buf, dtype="<u2", count=L * INT8_EXP_LEN, offset=P).reshape(L, INT8_EXP_LEN).astype(I64)
        flat = np.frombuffer(buf, dtype=np.int8, offset=P + T)
        weights = {}
        for s in tensor_specs(d):
            a = flat[s.offset:s.offset + s.size].reshape(s.shape)
            a.flags.writeable = False
            weights[s.name] = a
        model = cls(d, np.float32(f32[0]), np.float32(f32[1]), rq_, logit_scale, exp, weights)
        return model.validate()

    def validate(self):
        """docs/format.md's int8 parameter rules, in their order; the first
        failure raises QParamError naming parameter, layer, index, value."""
        d = self.dims
        scales = [("in_scale_inv", 0, self.in_scale_inv), ("x_scale", 0, self.x_scale)]
        scales += [("logit_scale", c, v) for c, v in enumerate(np.asarray(self.logit_scale, np.float32))]
        for name, i, v in scales:
            x = float(v)
            if not (np.isfinite(x) and SCALE_MIN <= x <= SCALE_MAX):
                _refuse(name, None, i, repr(x), "need a finite scale in [2^-40, 2^40]")
        product = float(self.in_scale_inv) * float(self.x_scale)
        if not abs(product - 1.0) <= SCALE_PRODUCT_RTOL:
            _refuse("in_scale_inv", None, 0, repr(float(self.in_scale_inv)),
                    f"in_scale_inv * x_scale = {product!r}, need 1 within 1e-3 (x_scale {float(self.x_scale)!r})")
        for layer in range(d.n_layers):
            for n in RQ_NAMES:
                mult, shift = self.rq[n][0][layer], self.rq[n][1][layer]
                bad_m = (mult < MULT_MIN) | (mult > MULT_MAX)
                bad_s = (shift < SHIFT_MIN) | (shift > SHIFT_MAX)
                if bad_m.any() or bad_s.any():
                    # The first bad word in blob order: a pair's mult before its shift.
                    i_m = int(np.argmax(bad_m)) if bad_m.any() else len(mult)
                    i_s = int(np.argmax(bad_s)) if bad_s.any() else len(shift)
                    if i_m <= i_s:
                        _refuse(f"rq_{n}.mult", layer, i_m, int(mult[i_m]), "need 2^30 <= mult <= 2^31-1")
                    _refuse(f"rq_{n}.shift", layer, i_s, int(shift[i_s]), "need 16 <= shift <= 62")
        for layer in range(d.n_layers):
            e = self.exp[layer]
            if not 1 <= e[0] <= EXP_MAX:
                _refuse("exp", layer, 0, int(e[0]), "need 1 <= EXP[0] <= 32768")
            up = e[1:] > e[:-1]
            if up.any():
                i = int(np.argmax(up)) + 1
                _refuse("exp", layer, i, int(e[i]), f"EXP must not increase: EXP[{i - 1}] is {int(e[i - 1])}")
        for s in tensor_specs(d):
            a = np.asarray(self.weights[s.name])
            if a.shape != s.shape:
                raise QParamError(f"{s.name} has shape {a.shape}, dims {d} need {s.shape}")
            low = a == -128
            if low.any():
                flat = int(np.argmax(low.reshape(-1)))
                layer = int(s.name.split(".")[1]) if s.name.startswith("layers.") else None
                _refuse(s.name.rsplit(".", 1)[-1], layer, flat, -128,
                        f"int8 weights are symmetric in [-127, 127] (row {flat // s.shape[1]}, column {flat % s.shape[1]})")
        return self

    def param_bytes(self):
        d = self.dims
        words = [np.array([self.in_scale_inv, self.x_scale], dtype="<f4").view("<i4")]
        for layer in range(d.n_layers):
            for n in RQ_NAMES:
                pairs = np.stack([self.rq[n][0][layer], self.rq[n][1][layer]], axis=1)
                words.append(pairs.astype("<i4").reshape(-1))
        words.append(np.asarray(self.logit_scale, dtype="<f4").view("<i4"))
        return np.concatenate(words).astype("<i4").tobytes()

    def weight_chunks(self):
        """The int8 blob's weights as byte chunks in blob order: parameter
        block, exp tables, int8 weights."""
        exp = np.asarray(self.exp)
        if exp.min() < 0 or exp.max() > 0xFFFF:
            raise QParamError(f"exp tables hold {int(exp.min())}..{int(exp.max())}, outside u16")
        chunks = [self.param_bytes(), exp.astype("<u2").tobytes()]
        for s in tensor_specs(self.dims):
            a = np.asarray(self.weights[s.name])
            if a.min() < -128 or a.max() > 127:
                raise QParamError(f"{s.name} holds {int(a.min())}..{int(a.max())}, outside int8")
            chunks.append(np.ascontiguousarray(a, dtype=np.int8).tobytes())
        return chunks

    def to_weights(self):
        return b"".join(self.weight_chunks())

    def residual_scales(self):
        """s_0 .. s_L (float64): x's scale entering each layer, then the
        logits' input; s_{l+1} = s_l / M, M layer l's rq_x factor."""
        s = [float(self.x_scale)]
        for layer in range(self.dims.n_layers):
            s.append(s[-1] * 2.0 ** float(self.rq["x"][1][layer, 0]) / float(self.rq["x"][0][layer, 0]))
        return s

    # -- the four steps (docs/model.md "Integer model"), from given inputs -------------------
    def quantize_input(self, frames):
        return quantize_input(frames, self.in_scale_inv)

    def project(self, layer, x):
        """x [..., D] int -> (q [..., Q], k [..., K], v [..., K]) int8 values."""
        d = self.dims
        w, m, s = self._qkv[layer]
        qkv = sat8(rq(np.asarray(x, dtype=I64) @ w, m, s))
        Q, K = d.q_dim, d.kv_dim
        return qkv[..., :Q], qkv[..., Q:Q + K], qkv[..., Q + K:]

    def attention(self, layer, q, k_cache, v_cache):
        """One push's attention output o [Q] from its q [Q] and the k, v
        [n, K] of the n cached positions (this push's included), in any
        order: every step of the integer softmax is order-free."""
        k = np.asarray(k_cache, dtype=I64).reshape(-1, self.dims.kv_dim)
        v = np.asarray(v_cache, dtype=I64).reshape(-1, self.dims.kv_dim)
        mask = np.ones((1, k.shape[0]), dtype=bool)
        return self._attend(layer, np.asarray(q, dtype=I64).reshape(1, -1), k, v, mask)[0]

    def residual(self, layer, x, o):
        """x after layer `layer`'s residual, at the next layer's scale:
        sat8(rq(x, rq_x) + rq(o . Wo, rq_wo)), the sum exact (int64)."""
        acc = np.asarray(o, dtype=I64) @ self._w64[f"layers.{layer}.wo"]
        m, s = self.rq["wo"][0][layer], self.rq["wo"][1][layer]
        mx, sx = self.rq["x"][0][layer, 0], self.rq["x"][1][layer, 0]
        return sat8(rq(np.asarray(x, dtype=I64), mx, sx) + rq(acc, m, s))

    def logits(self, x):
        """The int32 logit accumulators x . Wc (exact: |acc| < 2^24)."""
        return np.asarray(x, dtype=I64) @ self._w64["wc"]

    def float_logits(self, acc):
        """acc * logit_scale in float32: what `rvne infer` prints."""
        return np.asarray(acc, dtype=np.float32) * np.asarray(self.logit_scale, dtype=np.float32)

    def _attend(self, layer, q, k, v, mask):
        """q [T, Q]; k, v [S, K]; mask [T, S] True where query t sees position s
        (every row sees at least one). Returns o [T, Q]."""
        d = self.dims
        T, S = q.shape[0], k.shape[0]
        HQ, HKV, HD, G = d.n_q_heads, d.n_kv_heads, d.head_dim, d.group
        qh = q.reshape(T, HKV, G, HD).transpose(1, 2, 0, 3).reshape(HKV, G * T, HD)
        kh = k.reshape(S, HKV, HD).transpose(1, 2, 0)                   # [HKV, HD, S]
        vh = v.reshape(S, HKV, HD).transpose(1, 0, 2)                   # [HKV, S, HD]
        sc = rq(np.matmul(qh, kh), self.rq["s"][0][layer, 0], self.rq["s"][1][layer, 0])
        sc = sc.reshape(HKV, G, T, S)
        allowed = np.broadcast_to(mask, sc.shape)
        # mx - sc is exact in int64 (two int32 apart by up to 2^32); masked
        # positions are clipped only to keep the index valid, then dropped.
        mx = np.where(allowed, sc, np.iinfo(I64).min).max(axis=-1, keepdims=True)
        e = np.where(allowed, self.exp[layer][np.clip(mx - sc, 0, INT8_EXP_LEN - 1)], 0)
        total = e.sum(axis=-1, keepdims=True)
        p = (e * ONE + total // 2) // total
        acc = np.matmul(p.reshape(HKV, G * T, S), vh)                   # [HKV, G*T, HD]
        o = sat8(rq(acc, self.rq["o"][0][layer, 0], self.rq["o"][1][layer, 0]))
        return o.reshape(HKV, G, T, HD).transpose(2, 0, 1, 3).reshape(T, HQ * HD)

    # -- whole forward passes ----------------------------------------------------------------
    def forward(self, frames, window=DEFAULT_WINDOW, trace=False):
        """Logit accumulators [N, C] (int64) for frames [N, D] from a reset
        state: row t is what a stream reports after frames 0..t. With
        `trace`, also the trace [N, F] of docs/protocol.md (int64)."""
        d = self.dims
        W = _check_window(window)
        f = np.asarray(frames)
        if f.ndim != 2 or f.shape[1] != d.input_dim:
            raise ValueError(f"frames have shape {f.shape}, need [N, {d.input_dim}]")
        N = f.shape[0]
        x = self.quantize_input(f)
        parts = []
        for layer in range(d.n_layers):
            q, k, v = self.project(layer, x)
            o = np.empty((N, d.q_dim), dtype=I64)
            for t0, t1, s0, mask in blocks(N, min(W, max(N, 1))):
                o[t0:t1] = self._attend(layer, q[t0:t1], k[s0:t1], v[s0:t1], mask)
            x = self.residual(layer, x, o)
            if trace:
                parts += [q, k, v, o, x]
        acc = self.logits(x)
        if trace:
            return acc, np.concatenate(parts + [acc], axis=1)
        return acc


def forward(model, frames, window=DEFAULT_WINDOW, trace=False):
    """Int8Model.forward over one sequence [N, D]."""
    return model.forward(frames, window, trace)


def forward_sequences(model, sequences, window=DEFAULT_WINDOW):
    """Accumulators for each sequence (a list of [T, D], or [N, T, D]), each
    from a reset state."""
    return [model.forward(s, window) for s in sequences]


class Int8Stream:
    """The streaming integer head: push one frame at a time, like a device.
    After each push `trace` holds its F trace values (int64, protocol order)."""

    def __init__(self, model, window=DEFAULT_WINDOW):
        self.model = model
        self.window = _check_window(window)
        d = model.dims
        shape = (d.n_layers, self.window, d.kv_dim)
        self._k = np.zeros(shape, dtype=I64)
        self._v = np.zeros(shape, dtype=I64)
        self.reset()

    def reset(self):
        self._cached = 0
        self._next = 0
        self.pushes = 0
        self.trace = None
        self._acc = None

    def push(self, frame):
        """Push one FP32 frame [D]; returns its logit accumulators [C] (int64)."""
        m, d = self.model, self.model.dims
        f = np.asarray(frame).reshape(-1)
        if f.shape[0] != d.input_dim:
            raise ValueError(f"frame has {f.shape[0]} values, need {d.input_dim}")
        x = m.quantize_input(f)
        slot, cached = self._next, min(self._cached + 1, self.window)
        parts = []
        for layer in range(d.n_layers):
            q, k, v = m.project(layer, x)
            self._k[layer, slot], self._v[layer, slot] = k, v
            o = m.attention(layer, q, self._k[layer, :cached], self._v[layer, :cached])
            x = m.residual(layer, x, o)
            parts += [q, k, v, o, x]
        acc = m.logits(x)
        self._cached, self._next = cached, (slot + 1) % self.window
        self.pushes += 1
        self.trace = np.concatenate(parts + [acc])
        self._acc = acc
        return acc.copy()

    def push_many(self, frames):
        f = np.asarray(frames)
        if not len(f):
            return np.zeros((0, self.model.dims.n_classes), dtype=I64)
        return np.stack([self.push(x) for x in f])

    def logits(self):
        """Accumulators of the latest push; None before any push since reset."""
        return None if self._acc is None else self._acc.copy()
