"""rvne.model.bounds: the float64 reference and its per-logit error bound
(docs/model.md, "Error bound"). Correct FP32 implementations land inside
the bound; implementations with a defect land outside; the first-order
sensitivities are the float64 forward's true derivatives."""

import numpy as np
import pytest

from rvne.model import bounds, contract, reference, verdict
from rvne.model.contract import Dims

DEFAULT = Dims(16, 4, 1, 32, 2, 4)
WIDE = Dims(128, 8, 2, 16, 2, 8)       # 128-wide, two kv heads


def weights_for(dims, seed=0, gain=1.0):
    rng = np.random.default_rng(seed)
    return {s.name: (rng.standard_normal(s.shape) * gain / np.sqrt(s.shape[0])).astype(np.float32)
            for s in contract.tensor_specs(dims)}


def frames_for(dims, n, seed=1):
    return np.random.default_rng(seed).standard_normal((n, dims.input_dim)).astype(np.float32)


@pytest.mark.parametrize("dims,gain,window,n", [
    (DEFAULT, 1.0, 100, 104), (DEFAULT, 10.0, 5, 12), (WIDE, 1.0, 6, 12), (WIDE, 10.0, 6, 12),
    (Dims(24, 6, 3, 8, 3, 5), 1.0, 4, 14)], ids=str)
def test_fp32_implementations_are_inside_the_bound(dims, gain, window, n):
    """The numpy batch form and the streaming form are two correct FP32
    implementations with different summation orders."""
    w = weights_for(dims, gain=gain)
    x = frames_for(dims, n)
    ref, bound = bounds.Truth(w, dims).forward(x, window)
    assert ref.dtype == np.float64 and np.isfinite(bound).all() and (bound > 0).all()
    for impl in (reference.forward_batch(w, dims, x, window), reference.Stream(w, dims, window).push_many(x)):
        v = verdict.judge(impl, ref, bound)
        assert v["ok"], v
        assert v["max_ratio"] < 0.1          # with room: the bound is not grazed


def test_fp16_weights_are_decoded_exactly():
    from rvne.io import blob

    w = weights_for(DEFAULT)
    parsed = blob.parse_loadable(blob.from_arrays(w, DEFAULT, fp16=True))
    x = frames_for(DEFAULT, 8)
    ref, bound = bounds.Truth.of_blob(parsed).forward(x, 4)
    w16 = {k: v.astype(np.float16).astype(np.float64) for k, v in w.items()}
    ref_exact, _ = bounds.Truth(w16, DEFAULT).forward(x, 4)
    np.testing.assert_array_equal(ref, ref_exact)
    assert verdict.judge(reference.forward_blob(parsed, x, 4), ref, bound)["ok"]


def _kv_swapped(w, dims):
    """The weights a kernel with query heads on the wrong kv head computes
    with: h -> h % n_kv_heads instead of h // G, as a permutation of Wq/Wo."""
    G, HKV, HD = dims.group, dims.n_kv_heads, dims.head_dim
    perm = []
    for g in range(HKV):          # heads the right mapping gives kv head g, in the wrong order
        perm += [h for h in range(dims.n_q_heads) if h % HKV == g]
    cols = np.concatenate([np.arange(h * HD, (h + 1) * HD) for h in perm])
    out = dict(w)
    for layer in range(dims.n_layers):
        p = f"layers.{layer}."
        out[p + "wq"] = w[p + "wq"][:, cols]
        out[p + "wo"] = w[p + "wo"][cols, :]
    return out


@pytest.mark.parametrize("dims", [DEFAULT, WIDE], ids=str)
def test_defects_fall_outside_the_bound(dims):
    """A window one short, and (with several kv heads) query heads on the
    wrong kv head, as a Python model of those firmware defects."""
    w = weights_for(dims)
    window = 6
    x = frames_for(dims, window + 6)
    ref, bound = bounds.Truth(w, dims).forward(x, window)
    short = reference.forward_batch(w, dims, x, window - 1)
    v = verdict.judge(short[window:], ref[window:], bound[window:])
    assert not v["ok"] and v["max_ratio"] > 10, v
    np.testing.assert_array_equal(short[:window - 1], reference.forward_batch(w, dims, x, window)[:window - 1])
    if dims.n_kv_heads > 1:
        swapped = reference.forward_batch(_kv_swapped(w, dims), dims, x, window)
        v = verdict.judge(swapped, ref, bound)
        assert not v["ok"] and v["max_ratio"] > 10, v


def test_window_short_is_caught_at_w100_default_dims():
    w = weights_for(DEFAULT)
    x = frames_for(DEFAULT, 104)
    ref, bound = bounds.Truth(w, DEFAULT).forward(x, 100)
    v = verdict.judge(reference.forward_batch(w, DEFAULT, x, 99), ref, bound)
    assert not v["ok"] and v["max_ratio"] > 2, v


def test_sensitivities_are_the_true_derivatives():
    """The first-order pass's gradient with respect to the frames equals a
    central difference of the float64 forward."""
    d, W, N = Dims(6, 4, 2, 3, 2, 3), 4, 9
    w = {k: v.astype(np.float64) for k, v in weights_for(d, seed=3).items()}
    x = frames_for(d, N, seed=4).astype(np.float64)
    truth = bounds.Truth(w, d)
    trace = []
    real_layer = bounds._Layer
    try:
        bounds._Layer = lambda *a: trace.append(real_layer(*a)) or trace[-1]
        truth.forward(x, W)
    finally:
        bounds._Layer = real_layer
    G = np.zeros((N * d.n_classes, N, d.input_dim), np.float32)
    for t in range(N):
        G[t * d.n_classes:(t + 1) * d.n_classes, t] = truth.wc.w.T
    acc = np.zeros(N * d.n_classes)
    for layer in reversed(range(d.n_layers)):
        G = bounds._Local(d, truth.layers[layer], trace[layer], W).backward(G, acc, 0, N, 0)
    h = 2.0 ** -10
    for p, i in [(0, 0), (3, 2), (8, 5), (5, 1)]:
        up, down = x.copy(), x.copy()
        up[p, i] += h
        down[p, i] -= h
        num = (truth.forward(up, W)[0] - truth.forward(down, W)[0]) / (2 * h)
        np.testing.assert_allclose(G[:, p, i].reshape(N, -1), num, rtol=1e-4, atol=1e-5)


def test_leaving_fp32_range_gives_infinite_bounds_from_there_on():
    w = weights_for(DEFAULT)
    x = frames_for(DEFAULT, 12)
    x[5] = 1e20
    ref, bound = bounds.Truth(w, DEFAULT).forward(x, 4)
    assert np.isfinite(bound[:5]).all() and np.isfinite(ref).all()
    assert np.isinf(bound[5:9]).all()      # frame 5 is in the window of frames 5..8


@pytest.mark.parametrize("lazy", [False, True], ids=["first-order", "lazy"])
def test_a_huge_finite_frame_value_takes_only_the_bounds_it_reaches(lazy, monkeypatch):
    """3e38 (finite, within a factor 2 of FP32's largest) at frame 5 of 12:
    with W = 3 and two layers it reaches rows 5..9 (5 + 2 * (3 - 1)); rows
    0..4 and 10..11 keep the bound they have without it (the first-order
    pass once took 0 * inf = NaN from it for every row)."""
    dims = DEFAULT
    w = weights_for(dims)
    x = frames_for(dims, 12)
    clean = x.copy()
    x[5, 3] = 3e38
    if lazy:
        monkeypatch.setattr(bounds, "ADJOINT_FLOPS", 0)
    truth = bounds.Truth(w, dims)
    kw = lambda f: {"device": reference.forward_batch(w, dims, f, 3)} if lazy else {}   # noqa: E731
    ref, bound = truth.forward(x, 3, **kw(x))
    ref_c, bound_c = truth.forward(clean, 3, **kw(clean))
    assert truth.method == ("lazy" if lazy else "first-order")
    reach = np.zeros(12, dtype=bool)
    reach[5:10] = True
    assert np.isinf(bound[reach]).all()
    assert np.isfinite(bound[~reach]).all() and (bound[~reach] > 0).all()
    np.testing.assert_array_equal(ref[~reach], ref_c[~reach])
    np.testing.assert_allclose(bound[~reach], bound_c[~reach], rtol=1e-3)


def test_where_the_first_order_pass_overflows_the_forward_bound_stands(monkeypatch):
    """The first-order pass computes its derivatives in FP32: in a model
    whose values and derivatives together span more than FP32's range (4x
    weights, 8 layers, a Cauchy outlier) they overflow to inf or NaN. Such a
    row keeps the rigorous forward bound, not an infinite one (which failed
    correct devices with "the model leaves the FP32 range")."""
    w = weights_for(DEFAULT)
    x = frames_for(DEFAULT, 12)
    truth = bounds.Truth(w, DEFAULT)
    monkeypatch.setattr(bounds, "ADJOINT_FLOPS", 0)
    _, forward_only = truth.forward(x, 4)
    assert truth.method == "forward" and np.isfinite(forward_only).all()
    monkeypatch.undo()
    _, full = truth.forward(x, 4)
    assert truth.method == "first-order" and (full < forward_only).all()
    real = bounds.Truth._adjoint

    def overflowed(self, *a):
        out = real(self, *a)
        out[3:7] = np.nan
        out[8] = np.inf
        return out
    monkeypatch.setattr(bounds.Truth, "_adjoint", overflowed)
    _, bound = truth.forward(x, 4)
    np.testing.assert_array_equal(bound[3:9][[0, 1, 2, 3, 5]], forward_only[3:9][[0, 1, 2, 3, 5]])
    np.testing.assert_array_equal(bound[[0, 1, 2, 7, 9, 10, 11]], full[[0, 1, 2, 7, 9, 10, 11]])


def test_a_sum_whose_terms_leave_the_range_has_no_bound():
    """x = (2e38, -2e38, ...): x . w may be small, but a partial sum in some
    order is 2e38 * |w| + ...: beyond FMAX / 2, so no FP32 result there is
    vouched for even where every float64 value stays in range."""
    dims = Dims(2, 1, 1, 2, 1, 2)
    eye = np.eye(2, dtype=np.float32)
    w = {"layers.0.wq": eye * 0, "layers.0.wk": eye * 0, "layers.0.wv": eye * 0, "layers.0.wo": eye * 0,
         "wc": np.array([[1.0, 0.5], [1.0, 0.5]], dtype=np.float32)}
    x = np.array([[1.0, -1.0], [1.5e38, -1.5e38], [2.0, 1.0]], dtype=np.float32)
    ref, bound = bounds.Truth(w, dims).forward(x, 1)
    assert ref[1].tolist() == [0.0, 0.0]
    assert np.isinf(bound[1]).all() and np.isfinite(bound[[0, 2]]).all()


def test_verdict_rule_on_non_finite_values():
    ref = np.array([1.0, np.inf, -np.inf, np.nan, 2.0])
    bound = np.array([0.1, 0.1, 0.1, 0.1, np.inf])
    dev = np.array([1.05, np.inf, np.inf, np.nan, 2.0])
    r = verdict.ratios(dev, ref, bound)
    assert r[0] == pytest.approx(0.5) and r[1] == 0.0     # the same infinity agrees
    assert np.isinf(r[2]) and np.isinf(r[3])              # the other infinity, and NaN, never
    assert np.isinf(r[4])                                 # an infinite bound vouches for nothing
    assert verdict.judge(dev, ref, bound)["n_bad"] == 3


@pytest.mark.parametrize("dims", [Dims(24, 6, 3, 8, 3, 5), WIDE], ids=str)
def test_lazy_bound_decides_every_logit_as_the_full_one(dims, monkeypatch):
    """Beyond the whole-model budget the first-order bound is decided per
    logit against the device (docs/model.md, "Deciding lazily"): a device
    off by 0.5, 0.97, 1.03 or 3 times the full bound at each logit gets
    exactly the full bound's verdict; with no work allowed for the exact
    per-logit passes the ones the cheap bounds cannot settle are left
    undecided, never passed."""
    w = weights_for(dims)
    x = frames_for(dims, 24)
    window = 6
    truth = bounds.Truth(w, dims)
    ref, full = truth.forward(x, window)
    assert truth.method == "first-order"
    rng = np.random.default_rng(5)
    factor = rng.choice([0.5, 0.97, 1.03, 3.0], size=ref.shape)
    device = ref + factor * full * rng.choice([-1.0, 1.0], size=ref.shape)
    want = np.abs(device - ref) <= full
    assert want.any() and not want.all()

    monkeypatch.setattr(bounds, "ADJOINT_FLOPS", 0)
    _, lazy = truth.forward(x, window, device=device)
    assert truth.method == "lazy" and not truth.undecided.any()
    assert truth.lazy_stats["computed"] > 0            # the cheap bounds alone did not settle it
    np.testing.assert_array_equal(np.abs(device - ref) <= lazy, want)

    # The correct FP32 implementation passes on the cheap bounds alone.
    ref32 = reference.forward_batch(w, dims, x, window)
    _, lazy = truth.forward(x, window, device=ref32)
    assert verdict.judge(ref32, ref, lazy)["ok"] and truth.lazy_stats["candidates"] == 0

    monkeypatch.setattr(bounds, "LAZY_FLOPS", 0)
    _, lazy = truth.forward(x, window, device=device)
    und = truth.undecided
    assert und.any() and truth.lazy_stats["computed"] == 0
    assert (np.abs(device - ref)[und] > lazy[und]).all()          # judged alone, never a pass
    np.testing.assert_array_equal((np.abs(device - ref) <= lazy)[~und], want[~und])
    assert want[und].any()             # among them logits the full bound passes: undecided, not failed
