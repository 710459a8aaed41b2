"""int8 blobs (docs/format.md, docs/model.md "Integer model"): the format's
round trip and every rule (E_BAD_FLAGS, E_CONTRACT, E_QPARAM) on CRC-valid
corrupt blobs; the int64 reference's exactness (a literal scalar
implementation of the spec summing in reverse order, a hand-computed
model, the rounding on exact negative halves, the input's one float32
multiply); streaming = batch = step by step; rvne quantize, infer,
inspect and verify."""

import json
import struct
import zlib

import numpy as np
import pytest

from rvne import check, errors
from rvne.cli import main
from rvne.io import blob, upstream_init, weights as weights_io
from rvne.model import contract, int8, quantize as qz
from rvne.model.contract import Dims

DIMS = Dims(8, 4, 2, 4, 2, 3)


def smooth_arrays(dims, seed=0, gain=0.5):
    rng = np.random.default_rng(seed)
    return {s.name: (gain * rng.standard_normal(s.shape) / np.sqrt(s.shape[0])).astype(np.float32)
            for s in contract.tensor_specs(dims)}


def frames(dims, n=3, length=40, seed=1):
    return [np.random.default_rng(seed + i).standard_normal((length, dims.input_dim)).astype(np.float32)
            for i in range(n)]


@pytest.fixture(scope="module")
def model():
    m, _ = qz.quantize(smooth_arrays(DIMS), DIMS, frames(DIMS), window=16)
    return m


@pytest.fixture(scope="module")
def data(model):
    return blob.from_int8(model)


def fix_crc(raw):
    raw = bytearray(raw)
    raw[-4:] = struct.pack("<I", zlib.crc32(bytes(raw[:-4])))
    return bytes(raw)


# -- format ------------------------------------------------------------------------------
def test_weights_len_is_the_spec_formula():
    D, Q, K, L, C = 8, 16, 8, 2, 3
    P = 4 * (2 + L * 2 * (Q + 2 * K + D + 3) + C)
    assert contract.expected_weights_len(DIMS, "int8") == P + 512 * L + L * (2 * D * Q + 2 * D * K) + D * C
    assert contract.int8_sections(DIMS) == (P, 512 * L, contract.n_params(DIMS))


def test_round_trip(model, data):
    parsed = blob.parse_loadable(data)
    h = parsed.header
    assert (h.flags, h.dtype, h.elem_size, h.int8, h.fp16) == (2, "int8", 1, True, False)
    assert h.weights_len == contract.expected_weights_len(DIMS, "int8") == len(data) - 28
    back = parsed.int8_model()
    assert back.to_weights() == model.to_weights() == bytes(parsed.weights)
    assert blob.from_int8(back) == data
    assert float(back.in_scale_inv) == float(model.in_scale_inv)
    for n in int8.RQ_NAMES:
        assert (back.rq[n][0] == model.rq[n][0]).all() and (back.rq[n][1] == model.rq[n][1]).all()
    with pytest.raises(errors.ContractError, match="int8"):
        parsed.tensors()


def test_float_blobs_unchanged():
    """FP32 and FP16 blobs are byte for byte what they were: upstream's example's CRC."""
    data = upstream_init.init_blob(upstream_init.DIMS)
    assert len(data) == 41244 and zlib.crc32(data[:-4]) == 0xDC807956
    assert blob.parse(data).header.dtype == "fp32"
    assert blob.parse(upstream_init.init_blob(upstream_init.DIMS, fp16=True)).header.dtype == "fp16"


def test_both_dtype_bits_refused(data):
    raw = bytearray(data)
    raw[6] = 0x03
    with pytest.raises(errors.BadFlagsError, match="both set"):
        blob.parse(fix_crc(raw))


def test_int8_input_dim_limit():
    d = Dims(1025, 1, 1, 1, 1, 2)
    with pytest.raises(errors.ContractError, match="1024"):
        blob.Header.for_dims(d, "int8")
    h = blob.Header(flags=2, **d._asdict())
    data = blob.serialize(h, bytes(contract.expected_weights_len(d, "int8")))
    parsed = blob.parse(data)           # container-valid
    with pytest.raises(errors.ContractError, match="1024"):
        parsed.check_contract()


# -- E_QPARAM, one rule at a time ------------------------------------------------------------
def param_offset(dims, layer, name, index, second=False):
    """Byte offset in the blob of a (mult, shift) word."""
    sizes = int8.rq_sizes(dims)
    word = 2
    for lay in range(dims.n_layers):
        for n in int8.RQ_NAMES:
            if (lay, n) == (layer, name):
                return 24 + 4 * (word + 2 * index + int(second))
            word += 2 * sizes[n]
    raise AssertionError


def logit_offset(dims, c):
    return 24 + 4 * (contract.int8_param_words(dims) - dims.n_classes + c)


def exp_offset(dims, layer, i):
    return 24 + contract.int8_sections(dims)[0] + 2 * (256 * layer + i)


def weight_offset(dims, name, row, col):
    P, T, _ = contract.int8_sections(dims)
    s = next(s for s in contract.tensor_specs(dims) if s.name == name)
    return 24 + P + T + s.offset + row * s.shape[1] + col


def put(data, offset, fmt, value):
    raw = bytearray(data)
    struct.pack_into(fmt, raw, offset, value)
    return fix_crc(raw)


def qparam(data, match):
    parsed = blob.parse(data)       # container-valid: the CRC was fixed
    with pytest.raises(errors.QParamError, match=match) as exc:
        parsed.check_contract()
    assert exc.value.code == "E_QPARAM"
    return str(exc.value)


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), float("inf"), 2.0 ** 41, 2.0 ** -41])
def test_scale_rules(data, value):
    qparam(put(data, 24, "<f", value), r"in_scale_inv layer - index 0 is ")
    qparam(put(data, 28, "<f", value), r"x_scale layer - index 0")
    qparam(put(data, logit_offset(DIMS, 2), "<f", value), r"logit_scale layer - index 2")


def test_scale_product_rule(model, data):
    inv = float(model.in_scale_inv)
    ok = put(data, 24, "<f", inv * (1 + 0.9e-3))
    blob.parse_loadable(ok)
    qparam(put(data, 24, "<f", inv * (1 + 1.2e-3)), r"in_scale_inv \* x_scale")


@pytest.mark.parametrize("name,layer,index", [("q", 0, 3), ("k", 1, 0), ("v", 0, 7), ("s", 1, 0), ("o", 0, 0),
                                              ("wo", 1, 5), ("x", 0, 0), ("x", 1, 0)])
def test_mult_and_shift_rules(data, name, layer, index):
    where = rf"rq_{name}\.mult layer {layer} index {index} is "
    off = param_offset(DIMS, layer, name, index)
    qparam(put(data, off, "<i", (1 << 30) - 1), where + str((1 << 30) - 1))
    qparam(put(data, off, "<i", -(1 << 31)), where)          # 2^31 as an i32
    qparam(put(data, off, "<i", 0), where)
    off_s = param_offset(DIMS, layer, name, index, second=True)
    qparam(put(data, off_s, "<i", 15), rf"rq_{name}\.shift layer {layer} index {index} is 15")
    qparam(put(data, off_s, "<i", 63), rf"rq_{name}\.shift layer {layer} index {index} is 63")
    for good in (1 << 30, (1 << 31) - 1):
        blob.parse_loadable(put(data, off, "<i", good))
    for good in (16, 62):
        blob.parse_loadable(put(data, off_s, "<i", good))


def test_exp_rules(data):
    qparam(put(data, exp_offset(DIMS, 1, 0), "<H", 0), r"exp layer 1 index 0 is 0")
    qparam(put(data, exp_offset(DIMS, 0, 0), "<H", 32769), r"exp layer 0 index 0 is 32769")
    qparam(put(data, exp_offset(DIMS, 1, 10), "<H", 40000), r"exp layer 1 index 10 is 40000")
    blob.parse_loadable(put(data, exp_offset(DIMS, 1, 255), "<H", 0))


def test_minus_128_weight_refused(data):
    msg = qparam(put(data, weight_offset(DIMS, "layers.1.wv", 2, 3), "<b", -128), r"wv layer 1 index 19 is -128")
    assert "row 2, column 3" in msg
    qparam(put(data, weight_offset(DIMS, "wc", 0, 0), "<b", -128), r"wc layer - index 0 is -128")
    blob.parse_loadable(put(data, weight_offset(DIMS, "wc", 0, 0), "<b", -127))


def test_rules_apply_in_order(data):
    """Two faults: the one written first in docs/format.md is the one named."""
    both = put(put(data, weight_offset(DIMS, "wc", 0, 0), "<b", -128), exp_offset(DIMS, 0, 0), "<H", 0)
    qparam(both, "exp layer 0")
    both = put(put(data, exp_offset(DIMS, 0, 0), "<H", 0), param_offset(DIMS, 1, "wo", 0), "<i", 0)
    qparam(both, "rq_wo.mult layer 1")
    # rq_x follows the layer's rq_wo and comes before the next layer's rq_q.
    both = put(put(data, param_offset(DIMS, 1, "q", 0), "<i", 0), param_offset(DIMS, 0, "x", 0), "<i", 0)
    qparam(both, "rq_x.mult layer 0")
    assert param_offset(DIMS, 0, "x", 0) == param_offset(DIMS, 0, "wo", DIMS.input_dim)
    assert param_offset(DIMS, 1, "q", 0) == param_offset(DIMS, 0, "x", 1)
    both = put(put(data, param_offset(DIMS, 0, "q", 2, second=True), "<i", 0), param_offset(DIMS, 0, "q", 3), "<i", 0)
    qparam(both, "rq_q.shift layer 0 index 2")
    both = put(put(data, param_offset(DIMS, 0, "q", 0), "<i", 0), 28, "<f", -1.0)
    qparam(both, "x_scale")


def test_writer_refuses_bad_params(model):
    bad = int8.Int8Model(model.dims, model.in_scale_inv, model.x_scale, model.rq, model.logit_scale,
                         model.exp * 0, model.weights)
    with pytest.raises(errors.QParamError):
        blob.from_int8(bad)


# -- the arithmetic --------------------------------------------------------------------------
def test_rq_rounds_exact_halves_away_from_zero():
    m, s = 1 << 30, 31                   # M = 1/2
    assert list(int8.rq(np.array([3, -3, 5, -5, 2, -2, 1, -1]), m, s)) == [2, -2, 3, -3, 1, -1, 1, -1]
    # Half-up (floor((p + 2^(s-1)) / 2^s)) gives -1 and -2 on the negative halves: the named defect.
    half_up = [((v * m) + (1 << (s - 1))) >> s for v in (-3, -5)]
    assert half_up == [-1, -2] and list(int8.rq(np.array([-3, -5]), m, s)) != half_up
    # One rounding: M = 3/4 on 2 is 1.5 -> 2, not round(round(...)).
    assert int(int8.rq(2, 3 << 29, 31)) == 2 and int(int8.rq(-2, 3 << 29, 31)) == -2


def test_rq_result_saturates_to_int32():
    # 2^20 * (2^31 - 1) * 2^-16 is about 2^35: the firmware's rvne_rq saturates, it does not wrap.
    big, mult = 1 << 20, (1 << 31) - 1
    assert int(int8.rq(big, mult, 16)) == 2 ** 31 - 1
    assert int(int8.rq(-big, mult, 16)) == -2 ** 31
    # Just inside: the exact value is kept.
    assert int(int8.rq(-(1 << 15), 1 << 30, 14)) == -2 ** 31
    assert int(int8.rq((1 << 15) - 1, 1 << 30, 14)) == 2 ** 31 - 2 ** 16


def test_input_quantisation():
    q = int8.quantize_input(np.array([2.5, -2.5, 0.49999997, -0.5, np.nan, np.inf, -np.inf, 1e30, -127.6, 126.5],
                                     dtype=np.float32), 1.0)
    assert list(q) == [3, -3, 0, -1, 0, 127, -128, 127, -128, 127]
    # One float32 multiply: a product whose exact value sits just below k + 0.5
    # rounds up to the half in binary32, and then away from zero.
    inv = np.float32(3.0)
    for k in range(1, 120):
        f = np.float32((k + 0.5) / 3)
        if float(f) * 3 < k + 0.5 and float(f * inv) == k + 0.5:
            break
    else:
        raise AssertionError("no such frame value")
    assert int(int8.quantize_input(np.array([f]), inv)[0]) == k + 1
    assert round(float(f) * 3) == k       # a float64 product would give k


def literal_forward(model, sequence, window, reverse=True, half_up=False):
    """docs/model.md's integer model as written, one value at a time in
    Python integers, every sum taken in reverse order; asserts the
    accumulators fit int32 as the overflow bounds promise."""
    d = model.dims
    Q, K, D, HD, G = d.q_dim, d.kv_dim, d.input_dim, d.head_dim, d.group
    w = {k: np.asarray(v).astype(int).tolist() for k, v in model.weights.items()}

    def rq1(acc, m, s):
        assert -2 ** 31 <= acc < 2 ** 31
        p = acc * int(m)
        if half_up:
            r = (p + (1 << (int(s) - 1))) >> int(s)
        else:
            r = (1 if p >= 0 else -1) * ((abs(p) + (1 << (int(s) - 1))) >> int(s))
        return min(2 ** 31 - 1, max(-2 ** 31, r))

    def sat(v):
        return min(127, max(-128, v))

    def dot(xs, col):
        order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
        acc = 0
        for i in order:
            acc += xs[i] * col[i]
        return acc

    cache = [[] for _ in range(d.n_layers)]
    out = []
    for f in sequence:
        x = [int(v) for v in int8.quantize_input(f, model.in_scale_inv)]
        for lay in range(d.n_layers):
            p = f"layers.{lay}."
            rows = {}
            for name, n in (("q", Q), ("k", K), ("v", K)):
                m, s = model.rq[name]
                rows[name] = [sat(rq1(dot(x, [w[p + "w" + name][i][c] for i in range(D)]), m[lay][c], s[lay][c]))
                              for c in range(n)]
            cache[lay] = (cache[lay] + [(rows["k"], rows["v"])])[-window:]
            o = []
            for h in range(d.n_q_heads):
                g = h // G
                qh = rows["q"][h * HD:(h + 1) * HD]
                sc = [rq1(dot(qh, k[g * HD:(g + 1) * HD]), model.rq["s"][0][lay][0], model.rq["s"][1][lay][0])
                      for k, _ in cache[lay]]
                mx = max(sc)
                e = [int(model.exp[lay][min(mx - s, 255)]) for s in sc]
                total = sum(reversed(e))
                pj = [(ej * 32768 + total // 2) // total for ej in e]
                for dd in range(HD):
                    acc = dot(pj, [v[g * HD + dd] for _, v in cache[lay]])
                    o.append(sat(rq1(acc, model.rq["o"][0][lay][0], model.rq["o"][1][lay][0])))
            m, s = model.rq["wo"]
            mx, sx = model.rq["x"][0][lay][0], model.rq["x"][1][lay][0]
            x = [sat(rq1(x[c], mx, sx) + rq1(dot(o, [w[p + "wo"][i][c] for i in range(Q)]), m[lay][c], s[lay][c]))
                 for c in range(D)]
        out.append([dot(x, [w["wc"][i][c] for i in range(D)]) for c in range(d.n_classes)])
    return np.array(out)


def power_of_two(model):
    """`model` with every factor M rounded to a power of two: (2^30, 30 + k),
    so exact halves (the rounding rule's edge) are frequent."""
    rq = {}
    for n, (m, s) in model.rq.items():
        k = np.round(-np.log2(m * np.exp2(-s.astype(float)))).astype(np.int64)
        rq[n] = (np.full_like(m, 1 << 30), 30 + k)
    return int8.Int8Model(model.dims, model.in_scale_inv, model.x_scale, rq, model.logit_scale, model.exp,
                          model.weights).validate()


@pytest.mark.parametrize("pow2", [False, True])
def test_reference_equals_the_literal_spec_in_any_order(model, pow2):
    m = power_of_two(model) if pow2 else model
    seq = np.concatenate([frames(DIMS, 1, 20, seed=5)[0] * 3, np.full((1, DIMS.input_dim), np.nan, np.float32)])
    got = m.forward(seq, window=6)
    assert (got == literal_forward(m, seq, 6, reverse=True)).all()
    assert (got == literal_forward(m, seq, 6, reverse=False)).all()
    if pow2:
        # Half-up rounding is a defect the comparison sees.
        assert (got != literal_forward(m, seq, 6, half_up=True)).any()


def hand_model(window_exp):
    d = Dims(1, 1, 1, 1, 1, 2)
    one = (np.array([[1 << 30]]), np.array([[30]]))         # M = 1
    rq = {"q": one, "k": one, "v": one, "s": one, "o": (np.array([[1 << 30]]), np.array([[45]])), "wo": one,
          "x": one}
    w = {"layers.0.wq": np.array([[1]], np.int8), "layers.0.wk": np.array([[1]], np.int8),
         "layers.0.wv": np.array([[1]], np.int8), "layers.0.wo": np.array([[1]], np.int8),
         "wc": np.array([[1, -1]], np.int8)}
    return int8.Int8Model(d, np.float32(1), np.float32(1), rq, np.array([0.5, 0.25], np.float32),
                          np.array([window_exp]), w).validate()


def test_hand_computed_model():
    """D = Q = K = 1, every M 1 but the attention output's (2^-15),
    EXP[i] = 32768 - 1000 i (down to 0). Frames 3.4, -2.5:
    push 0: x = 3, q = k = v = 3, score 9, p = 32768, o = 3*32768/2^15 = 3,
            x = 3 + 3 = 6, logits (6, -6).
    push 1: x = -3, q = k = v = -3; scores (-9, 9), e = (EXP[18], EXP[0]) =
            (14768, 32768), S = 47536, p = (10180, 22588) [floors of
            (e*32768 + 23768) / 47536], sum 10180*3 - 22588*3 = -37224,
            o = round(-1.136) = -1, x = -4, logits (-4, 4).
    With W = 1, push 1 sees itself only: o = -3, x = -6."""
    exp = np.maximum(32768 - 1000 * np.arange(256), 0)
    m = hand_model(exp)
    f = np.array([[3.4], [-2.5]], np.float32)
    acc, trace = m.forward(f, window=2, trace=True)
    assert acc.tolist() == [[6, -6], [-4, 4]]
    # q, k, v, o, x, logits of push 1
    assert trace[1].tolist() == [-3, -3, -3, -1, -4, -4, 4]
    assert m.forward(f, window=1).tolist() == [[6, -6], [-6, 6]]
    assert m.float_logits(acc[1]).tolist() == [-2.0, 1.0]
    s = int8.Int8Stream(m, 2)
    assert s.push(f[0]).tolist() == [6, -6] and s.push(f[1]).tolist() == [-4, 4]
    assert (m.attention(0, [-3], [[3], [-3]], [[3], [-3]]) == [-1]).all()


def test_stream_batch_and_steps_agree(model):
    W = 7
    seq = frames(DIMS, 1, 30, seed=9)[0] * 2
    acc, trace = model.forward(seq, W, trace=True)
    assert trace.shape == (30, int8.trace_len(DIMS))
    s = int8.Int8Stream(model, W)
    for _ in range(2):              # and again after a reset
        for t, f in enumerate(seq):
            assert (s.push(f) == acc[t]).all() and (s.trace == trace[t]).all()
        s.reset()
    # Step by step from the trace's own inputs (what the step verdict recomputes).
    d = model.dims
    Q, K, D = d.q_dim, d.kv_dim, d.input_dim
    per = 2 * Q + 2 * K + D
    t = 20
    x = model.quantize_input(seq[t])
    for lay in range(d.n_layers):
        seg = trace[:, lay * per:(lay + 1) * per]
        q, k, v = model.project(lay, x)
        assert (np.concatenate([q, k, v]) == seg[t, :Q + 2 * K]).all()
        ks, vs = seg[t - W + 1:t + 1, Q:Q + K], seg[t - W + 1:t + 1, Q + K:Q + 2 * K]
        o = model.attention(lay, q, ks[::-1], vs[::-1])       # any order of the cache
        assert (o == seg[t, Q + 2 * K:2 * Q + 2 * K]).all()
        x = model.residual(lay, x, o)
        assert (x == seg[t, 2 * Q + 2 * K:]).all()
    assert (model.logits(x) == acc[t]).all()


def test_stream_is_fast(model):
    s = int8.Int8Stream(model, 100)
    import time

    t0 = time.perf_counter()
    s.push_many(np.random.default_rng(0).standard_normal((2000, DIMS.input_dim)).astype(np.float32))
    assert time.perf_counter() - t0 < 20


# -- quantisation ----------------------------------------------------------------------------
def test_smooth_model_agrees():
    d = Dims(16, 4, 2, 8, 2, 4)
    arrays = smooth_arrays(d, seed=3)
    m, _ = qz.quantize(arrays, d, frames(d, 4, 120, seed=10), window=32)
    report = qz.compare(m, arrays, frames(d, 4, 120, seed=20), window=32)
    assert report["argmax_agreement"] >= 0.97, report
    assert report["relative_error"] < 0.08, report


def test_multiplier_range():
    assert qz.multiplier(1.0, "m") == (1 << 30, 30)
    assert qz.multiplier(2.0 ** -32, "m") == (1 << 30, 62)
    m, s = qz.multiplier(0.1, "m")
    assert abs(m * 2.0 ** -s - 0.1) < 1e-9 and 1 << 30 <= m < 1 << 31
    with pytest.raises(errors.ScaleRangeError, match="rq_x"):
        qz.multiplier(2.0 ** 15, "rq_x")
    with pytest.raises(errors.ScaleRangeError):
        qz.multiplier(2.0 ** -33, "rq_x")
    assert qz.multiplier(2.0 ** 20, "m", zero_ok=True) == ((1 << 31) - 1, 16)


def test_exp_table():
    e = qz.exp_table()
    assert e[0] == 32768 and (np.diff(e) <= 0).all() and e[16] == 16384


# -- the command line --------------------------------------------------------------------------
def run(capsys, *argv):
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def float_blob(tmp_path):
    path = tmp_path / "f.rvne"
    path.write_bytes(blob.from_arrays(smooth_arrays(DIMS), DIMS))
    return path


def test_quantize_cli(tmp_path, float_blob, capsys):
    out = tmp_path / "q.rvne"
    rc, text, err = run(capsys, "quantize", float_blob, out, "--window", 16)
    assert rc == 0, err
    assert "generated sequences" in text and "argmax agreement" in text and "not calibrated on" in text
    parsed = blob.read_file(out, contract=True)
    assert parsed.header.dtype == "int8"
    rc, text, _ = run(capsys, "quantize", float_blob, out, "--window", 16, "--json")
    report = json.loads(text)
    assert rc == 0 and report["dtype"] == "int8" and report["evaluation"]["seed"] == 1
    assert report["evaluation"]["argmax_agreement"] >= 0.9
    rc, text, err = run(capsys, "verify", out)
    assert rc == 0 and "int8" in text
    rc, text, _ = run(capsys, "inspect", out, "--json")
    info = json.loads(text)
    assert rc == 0 and info["int8"]["x_scale"] > 0 and info["checks"][-1]["code"] == "E_QPARAM"
    # From an .npz and with the user's calibration frames too.
    npz = tmp_path / "w.npz"
    weights_io.save(npz, smooth_arrays(DIMS), DIMS)
    cal = tmp_path / "cal.npy"
    np.save(cal, np.stack(frames(DIMS, 2, 30)))
    rc, text, err = run(capsys, "quantize", npz, tmp_path / "q2.rvne", "--calibration", cal)
    assert rc == 0 and str(cal) in text, err


def test_infer_int8(tmp_path, data, model, capsys):
    path = tmp_path / "q.rvne"
    path.write_bytes(data)
    seq = frames(DIMS, 1, 25)[0]
    np.save(tmp_path / "f.npy", seq)
    assert run(capsys, "infer", path, tmp_path / "f.npy", "--out", tmp_path / "l.npy")[0] == 0
    assert run(capsys, "infer", path, tmp_path / "f.npy", "--out", tmp_path / "a.npy", "--accumulators")[0] == 0
    acc = np.load(tmp_path / "a.npy")
    assert acc.dtype == np.int32 and (acc == model.forward(seq)).all()
    assert (np.load(tmp_path / "l.npy") == model.float_logits(acc)).all()
    fp = tmp_path / "fp.rvne"
    fp.write_bytes(blob.from_arrays(smooth_arrays(DIMS), DIMS))
    rc, _, err = run(capsys, "infer", fp, tmp_path / "f.npy", "--out", tmp_path / "x.npy", "--accumulators")
    assert rc == 1 and "int8" in err and not (tmp_path / "x.npy").exists()


def test_verify_refuses_bad_qparam(tmp_path, data, capsys):
    path = tmp_path / "bad.rvne"
    path.write_bytes(put(data, exp_offset(DIMS, 0, 0), "<H", 0))
    rc, _, err = run(capsys, "verify", path)
    assert rc == 1 and "E_QPARAM" in err and "exp layer 0 index 0" in err
    rc, text, _ = run(capsys, "inspect", path, "--json")
    assert rc == 1 and json.loads(text)["error"]["code"] == "E_QPARAM"


def bad_inputs(tmp_path):
    nan = smooth_arrays(DIMS)
    nan["layers.1.wk"][2, 1] = np.nan
    weights_io.save(tmp_path / "nan.npz", nan, DIMS)
    zero = smooth_arrays(DIMS)
    zero["layers.0.wv"][:] = 0
    weights_io.save(tmp_path / "zero.npz", zero, DIMS)
    np.save(tmp_path / "wide.npy", np.zeros((10, DIMS.input_dim + 1), np.float32))
    bad = np.ones((10, DIMS.input_dim), np.float32)
    bad[4, 2] = np.nan
    np.save(tmp_path / "nanframes.npy", bad)
    np.save(tmp_path / "empty.npy", np.zeros((0, DIMS.input_dim), np.float32))
    (tmp_path / "int8.rvne").write_bytes(blob.from_int8(qz.quantize(smooth_arrays(DIMS), DIMS, frames(DIMS))[0]))
    return {
        "nan weights": (["nan.npz"], "E_WEIGHTS"),
        "zero range": (["zero.npz"], "E_ZERO_RANGE"),
        "wide frames": (["f.rvne", "--calibration", "wide.npy"], "E_CALIBRATION"),
        "nan frames": (["f.rvne", "--calibration", "nanframes.npy"], "E_CALIBRATION"),
        "empty frames": (["f.rvne", "--calibration", "empty.npy"], "E_CALIBRATION"),
        "int8 model": (["int8.rvne"], "E_WEIGHTS"),
    }


@pytest.mark.parametrize("case", ["nan weights", "zero range", "wide frames", "nan frames", "empty frames",
                                  "int8 model"])
def test_quantize_bad_input(tmp_path, float_blob, capsys, case):
    (args, code) = bad_inputs(tmp_path)[case]
    out = tmp_path / "out.rvne"
    argv = [tmp_path / args[0], out, *[a if not a.endswith(".npy") else tmp_path / a for a in args[1:]]]
    rc, text, err = run(capsys, "quantize", *argv, "--json")
    assert rc == 1, (text, err)
    assert json.loads(text)["error"]["code"] == code, text
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_zero_range_names_the_layer():
    zero = smooth_arrays(DIMS)
    zero["layers.1.wq"][:] = 0
    with pytest.raises(errors.ZeroRangeError, match="q of layer 1"):
        qz.calibrate(zero, DIMS, frames(DIMS))


def test_generated_frames_are_the_default_calibration(tmp_path, float_blob, capsys):
    rc, text, _ = run(capsys, "quantize", float_blob, tmp_path / "q.rvne", "--seed", 4, "--json")
    report = json.loads(text)
    assert rc == 0 and report["calibration"]["seed"] == 4 and report["evaluation"]["seed"] == 5
    seqs = check.generated_frames(8, check.default_length(100), 100, DIMS.input_dim, 4)
    assert report["calibration"]["frames"] == sum(len(s) for s in seqs)


def test_each_residual_stream_has_its_own_scale():
    """s_0 from the input's range, s_{l+1} from layer l's stream's, as the
    rq_x factors carry them (x_range "max": no clipping)."""
    m, r = qz.quantize(smooth_arrays(DIMS), DIMS, frames(DIMS), window=16, x_range="max")
    assert len(r.x) == DIMS.n_layers + 1 and r.x == r.x_max
    np.testing.assert_allclose(m.residual_scales(), np.array(r.x) / 127, rtol=1e-6)
