"""The numpy reference: batch == streaming, both == a literal float64
transcription of docs/model.md's pseudocode, and compare()'s verdicts."""

import math

import numpy as np
import pytest

from rvne.io import blob, upstream_init
from rvne.model import contract, reference
from rvne.model.contract import Dims

# Upstream's dims, and a GQA case with several kv heads (G = 2) so a wrong
# query-head -> kv-head mapping shows.
CASES = [Dims(16, 4, 1, 32, 2, 4), Dims(8, 6, 3, 4, 2, 3)]


def weights_for(dims, seed=0, gain=1.0):
    """Gaussian weights scaled by 1/sqrt(fan_in), as a trained head's are
    (keeps logits O(1), where the agreement contract is meant to bite)."""
    rng = np.random.default_rng(seed)
    return {
        s.name: (rng.standard_normal(s.shape) * gain / np.sqrt(s.shape[0])).astype(np.float32)
        for s in contract.tensor_specs(dims)
    }


def literal_forward(weights, d, frames, window):
    """docs/model.md's push(), line by line, in float64 with Python loops."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    G, HD = d.n_q_heads // d.n_kv_heads, d.head_dim
    caches = [[] for _ in range(d.n_layers)]
    out = []
    for f in np.asarray(frames, dtype=np.float64):
        x = f.copy()
        for layer in range(d.n_layers):
            p = f"layers.{layer}."
            q, k, v = x @ w[p + "wq"], x @ w[p + "wk"], x @ w[p + "wv"]
            caches[layer].append((k, v))
            del caches[layer][:-window]
            heads = []
            for h in range(d.n_q_heads):
                g = h // G
                qh = q[h * HD:(h + 1) * HD]
                s = [float(qh @ kj[g * HD:(g + 1) * HD]) / math.sqrt(HD) for kj, _ in caches[layer]]
                m = max(s)
                e = [math.exp(si - m) for si in s]
                a = [ei / sum(e) for ei in e]
                heads.append(sum(aj * vj[g * HD:(g + 1) * HD] for aj, (_, vj) in zip(a, caches[layer])))
            x = x + np.concatenate(heads) @ w[p + "wo"]
        out.append(x @ w["wc"])
    return np.array(out)


@pytest.mark.parametrize("dims", CASES, ids=str)
@pytest.mark.parametrize("window", [1, 7, 100])
def test_stream_equals_batch(dims, window):
    w = weights_for(dims)
    n = 130 if window == 100 else 40  # always longer than the window
    frames = np.random.default_rng(window).standard_normal((n, dims.input_dim)).astype(np.float32)
    batch = reference.forward_batch(w, dims, frames, window)
    assert batch.shape == (n, dims.n_classes) and batch.dtype == np.float32
    stream = reference.Stream(w, dims, window)
    streamed = stream.push_many(frames)
    # Same arithmetic in another order: far inside the agreement contract.
    np.testing.assert_allclose(streamed, batch, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(stream.logits(), streamed[-1])


@pytest.mark.parametrize("dims", CASES, ids=str)
@pytest.mark.parametrize("window", [1, 3, 100])
def test_batch_matches_literal_pseudocode(dims, window):
    w = weights_for(dims, seed=5)
    frames = np.random.default_rng(9).standard_normal((12, dims.input_dim)).astype(np.float32)
    want = literal_forward(w, dims, frames, window)
    got = reference.forward_batch(w, dims, frames, window)
    report = reference.compare(got, want)
    assert report["ok"], report
    assert report["max_abs"] < 1e-5


def test_window_matters():
    d = CASES[1]
    w = weights_for(d, gain=3.0)
    frames = np.random.default_rng(2).standard_normal((20, d.input_dim)).astype(np.float32)
    a = reference.forward_batch(w, d, frames, 3)
    b = reference.forward_batch(w, d, frames, 100)
    np.testing.assert_array_equal(a[:3], b[:3])  # identical until the window fills
    assert np.abs(a[3:] - b[3:]).max() > 1e-3


def test_long_sequence_crosses_blocks():
    d = CASES[0]
    w = weights_for(d)
    frames = np.random.default_rng(3).standard_normal((reference.BLOCK * 2 + 50, d.input_dim)).astype(np.float32)
    batch = reference.forward_batch(w, d, frames, 40)
    tail = reference.Stream(w, d, 40).push_many(frames)[-60:]
    np.testing.assert_allclose(tail, batch[-60:], rtol=1e-5, atol=1e-6)


def test_reset_restarts_the_sequence():
    d = CASES[1]
    w = weights_for(d)
    frames = np.random.default_rng(4).standard_normal((10, d.input_dim)).astype(np.float32)
    s = reference.Stream(w, d, 4)
    first = s.push_many(frames)
    s.reset()
    assert s.logits() is None
    np.testing.assert_array_equal(s.push_many(frames), first)


def test_fp16_blob_uses_decoded_weights():
    data = upstream_init.init_blob(fp16=True)
    b = blob.parse(data)
    frames = np.random.default_rng(0).standard_normal((5, 16)).astype(np.float32)
    got = reference.forward_blob(b, frames, 100)
    w16 = {k: v.astype(np.float16).astype(np.float32) for k, v in upstream_init.init_arrays().items()}
    np.testing.assert_array_equal(got, reference.forward_batch(w16, b.header.dims, frames, 100))


def test_bad_inputs_refused():
    d = CASES[0]
    w = weights_for(d)
    with pytest.raises(ValueError, match="window"):
        reference.forward_batch(w, d, np.zeros((2, 16), np.float32), 0)
    with pytest.raises(ValueError, match=r"\[N, 16\]"):
        reference.forward_batch(w, d, np.zeros((2, 15), np.float32), 5)
    with pytest.raises(ValueError):
        reference.Stream(w, d, 5).push(np.zeros(3, np.float32))


def test_compare_contract():
    assert reference.ATOL == 1e-4 and reference.RTOL == 1e-4
    ref = np.array([[1.0, -2.0, 0.0], [0.5, 0.25, 3.0]], np.float32)
    ok = reference.compare(ref + np.float32(9e-5), ref)
    assert ok["ok"] and ok["n_bad"] == 0 and ok["argmax_agree"] == 1.0
    # |a-b| <= 1e-4 + 1e-4*|b|: at b = -2 the bound is 3e-4
    edge = ref.astype(np.float64).copy()
    edge[0, 1] += 2.9e-4
    assert reference.compare(edge, ref)["ok"]
    edge[0, 1] += 0.2e-4
    r = reference.compare(edge, ref)
    assert not r["ok"] and r["n_bad"] == 1 and r["max_ratio"] > 1
    swapped = ref.copy()
    swapped[0] = swapped[0, ::-1]
    r = reference.compare(swapped, ref)
    assert r["argmax_agree"] == 0.5 and r["n_bad"] > 0
    nan = ref.copy()
    nan[1, 2] = np.nan
    r = reference.compare(nan, ref)
    assert r["n_bad"] == 1 and not r["ok"]
    with pytest.raises(ValueError, match="shape"):
        reference.compare(ref[:1], ref)


def test_compare_never_passes_a_non_finite_comparison():
    """Issue 16 item 1: |0 - inf| = inf <= atol + rtol*inf = inf passed, and
    NaN == NaN passed through `same`."""
    inf = np.full((2, 3), np.inf, np.float32)
    assert not reference.compare(np.zeros((2, 3), np.float32), inf)["ok"]
    assert reference.compare(np.zeros((2, 3), np.float32), inf)["n_bad"] == 6
    nan = np.full((2, 3), np.nan, np.float32)
    assert reference.compare(nan, nan)["n_bad"] == 6
    assert reference.compare(inf, inf)["ok"]                   # the same infinity is the same value
    assert not reference.compare(-inf, inf)["ok"]


def test_batch_form_is_causal_under_overflow():
    """Issue 16 item 5: a finite 1e20 frame at t = 5 made the batch form
    NaN for frames 0-4 (0 * inf inside a masked block)."""
    d = CASES[0]
    w = weights_for(d)
    frames = np.random.default_rng(7).standard_normal((12, d.input_dim)).astype(np.float32)
    frames[5] = 1e20
    batch = reference.forward_batch(w, d, frames, 100)
    stream = reference.Stream(w, d, 100).push_many(frames)
    assert np.isfinite(batch[:5]).all()
    np.testing.assert_allclose(batch[:5], stream[:5], rtol=1e-5, atol=1e-6)
