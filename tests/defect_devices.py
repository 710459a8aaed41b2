"""The scenarios behind tests/test_defects.py and tools/bench_verdict.py:
virtual devices with one deliberate defect compiled in
(firmware/tests/defects.mk) and correct ones, each checked by `rvne check`'s
verdict. Each returns the worst |device - reference| / bound."""

import contextlib
import hashlib
from pathlib import Path

import numpy as np

from rvne import check
from rvne.io import blob
from rvne.link.device import Device
from rvne.model import bounds, contract
from rvne.model.contract import Dims
from rvne.targets import build, sim

ROOT = Path(__file__).resolve().parents[1]
DEFECTS = ("window_short", "kv_map", "no_residual", "stale_slot", "fp16_ftz")    # issue 12's, at W = 6
VARIANTS = ("reversed", "fma", "double", "online", "ftz")     # correct: firmware/tests/variants/
# int8 (issue 35): each defect and the trace point(s) where the exact step
# verdict must first see it; window_short and reset_ring are the float
# builds', whose ring is the int8 pass's too. The correct variants: reversed
# (every int8 sum back to front, firmware/tests/variants/kernels_i8.c) and
# i8_exp_copy (the exp tables copied at load).
INT8_DEFECTS = {
    "i8_acc16": ("q", "k", "v", "x", "logits"),       # every integer product (matvec_i8)
    "i8_half_up": ("q", "k", "v", "attention", "x"),  # every rq
    "i8_rq_neighbour": ("q", "k", "v"),               # requant_i8's channel 1
    "i8_no_sat": ("q", "k", "v"),                     # requant_i8's sat8
    "i8_exp_shift": ("attention",),
    "reset_ring": ("attention",),
    "window_short": ("attention",),
}
INT8_VARIANTS = ("reversed", "i8_exp_copy")
INT8_DIMS = (Dims(16, 4, 1, 32, 2, 4), Dims(24, 6, 2, 8, 2, 5))
# Issue 20's sensitivity table: these defects must fail, and the variants
# pass, at every size under `rvne check`'s defaults.
TABLE_DEFECTS = ("logits_fp16", "acts_fp16", "exp_err", "scale_off", "reset_ring", "window_short", "stale_slot")
# Issue 30's: v stored in FP16 only once the ring is full (a `--trace sample` must see it).
LATE_DEFECTS = ("v_fp16_full",)
BUILDS = tuple(dict.fromkeys(DEFECTS + TABLE_DEFECTS + LATE_DEFECTS + VARIANTS + tuple(INT8_DEFECTS)
                             + INT8_VARIANTS))     # firmware/tests/defects.mk
TABLE_DIMS = (Dims(16, 4, 1, 32, 2, 4), Dims(64, 8, 2, 16, 3, 6), Dims(128, 8, 4, 32, 4, 8),
              Dims(256, 8, 2, 32, 8, 8), Dims(512, 16, 4, 32, 8, 16))
TABLE_GAINS = (1.0, 4.0)                    # weights' std, times 1/sqrt(fan_in)
DEFAULT = Dims(16, 4, 1, 32, 2, 4)          # the upstream example's dims
DEFAULT_GQA = Dims(16, 4, 2, 32, 2, 4)      # the same with two kv heads, for kv_map
WIDE = Dims(128, 8, 2, 16, 2, 8)            # 128-wide
BIG = Dims(512, 16, 4, 32, 8, 16)           # the largest the correct device is checked at
DEFECT_WINDOW = 6                           # short: the check streams W + 4 frames


def defect_exe(name) -> Path:
    """A defect build, or a correct variant's (VARIANTS)."""
    return ROOT / "build" / ("variants" if name in VARIANTS + INT8_VARIANTS else "defects") / name / "rvne-vdev"


def build_defects():
    """`make defects` when any defect or variant build is missing or stale."""
    sources = [ROOT / "firmware" / "Makefile", ROOT / "firmware" / "core", ROOT / "firmware" / "ports" / "posix",
               ROOT / "firmware" / "tests" / "defects.mk", ROOT / "firmware" / "tests" / "variants"]
    exes = [defect_exe(d) for d in BUILDS]
    stale = lambda: any(build.is_stale(e, sources) for e in exes)   # noqa: E731
    if stale():
        build.run_make(ROOT, "defects", exes, stale, "the defect and variant builds", 600)


def weights_for(dims, seed=0, gain=1.0, subnormal=False):
    """Gaussian weights, std gain/sqrt(fan_in). With `subnormal`, nine in ten
    weights are replaced by FP16 subnormals (|w| < 2^-14, random sign), as
    in a heavily pruned model: what the fp16_ftz defect flushes. (With one
    in two, flushing moves logits by only 1-2 bounds: such small weights
    barely count.)"""
    rng = np.random.default_rng(seed)
    out = {}
    for s in contract.tensor_specs(dims):
        w = rng.standard_normal(s.shape) * gain / np.sqrt(s.shape[0])
        if subnormal:
            tiny = rng.integers(1, 1024, s.shape) * 2.0 ** -24 * rng.choice([-1.0, 1.0], s.shape)
            w = np.where(rng.random(s.shape) < 0.9, tiny, w)
        out[s.name] = w.astype(np.float32)
    return out


def blob_for(dims, fp16, **kw):
    return blob.from_arrays(weights_for(dims, **kw), dims, fp16)


def run(blob_bytes, window, length, exe=None, vectors=1, seed=0):
    """The check report of a virtual device (a defect build with `exe`)."""
    with sim.start(blob_bytes, window=window, exe=exe) as target, Device(target.url, timeout=60) as dev:
        return check.run_check(dev, blob_bytes, vectors=vectors, seed=seed, length=length)


def run_defaults(blob_bytes, name=None):
    """`rvne check`'s defaults (W 100, 4 generated sequences, seed 0) on the
    virtual device, or on the build `name` (a defect or a variant)."""
    exe = defect_exe(name) if name else None
    with sim.start(blob_bytes, window=100, exe=exe) as target, Device(target.url, timeout=600) as dev:
        return check.run_check(dev, blob_bytes)


@contextlib.contextmanager
def truth_reused(memo=None):
    """Within it, rvne.model.bounds.Truth.forward computes the float64 reference
    and its first-order bound once per weights, frames and window: they do
    not depend on the device, and the table checks a dozen builds on each.
    (The lazy bound, which does, is computed every time.) `memo`: a dict
    to keep them in across uses."""
    memo = {} if memo is None else memo
    real = bounds.Truth.forward
    real_cls = bounds.Truth

    def truth(weights, dims):
        """One Truth per weights: its set-up (spectral norms) is not free either."""
        h = hashlib.sha1(str(tuple(dims)).encode())
        for name in sorted(weights):
            h.update(np.ascontiguousarray(weights[name]).tobytes())
        key = ("truth", h.hexdigest())
        if key not in memo:
            memo[key] = real_cls(weights, dims)
        return memo[key]

    def forward(self, frames, window=100, device=None, host=None):
        if not hasattr(self, "_weights_digest"):
            h = hashlib.sha1(self.wc.w.tobytes())
            for lw in self.layers:
                for name in ("wq", "wk", "wv", "wo"):
                    h.update(lw[name].w.tobytes())
            self._weights_digest = h.hexdigest()
        key = (self._weights_digest, np.asarray(frames).tobytes(), window)
        if self._adjoint_cost(len(frames), min(window, max(len(frames), 1))) > bounds.ADJOINT_FLOPS:
            return real(self, frames, window, device, host)
        if key not in memo:
            out = real(self, frames, window)
            memo[key] = (out, self.first_order, self.method, self.undecided.copy(), self.lazy_stats)
        out, self.first_order, self.method, und, self.lazy_stats = memo[key]
        self.undecided = und.copy()
        return out[0].copy(), out[1].copy()

    bounds.Truth.forward = forward
    bounds.Truth = truth
    try:
        yield
    finally:
        bounds.Truth = real_cls
        real_cls.forward = real


def defect_cases():
    """(defect, dims, fp16): every defect at the default and 128-wide dims,
    FP32 and FP16 (fp16_ftz only where there are FP16 weights; kv_map with
    two kv heads at the default size, since with one it is no defect)."""
    for name in DEFECTS:
        for dims in (DEFAULT_GQA if name == "kv_map" else DEFAULT, WIDE):
            for fp16 in ((True,) if name == "fp16_ftz" else (False, True)):
                yield name, dims, fp16


def run_defect(name, dims, fp16):
    data = blob_for(dims, fp16, subnormal=(name == "fp16_ftz"))
    return run(data, DEFECT_WINDOW, DEFECT_WINDOW + 4, exe=defect_exe(name))


def correct_cases(every=False):
    """(dims, fp16, gain, window, length) a correct device must pass: at
    W = 100 (so the ring wraps), FP32 and FP16, weights of std
    1/sqrt(fan_in) and ten times that. The test suite takes every
    combination at the largest dims and two at the smaller ones."""
    for dims, length in ((DEFAULT, 102), (WIDE, 102), (BIG, 101)):
        for fp16 in (False, True):
            for gain in (1.0, 10.0):
                if every or dims == BIG or (gain == 10.0) == fp16:
                    yield dims, fp16, gain, 100, length


def run_correct(dims, fp16, gain, window, length):
    return run(blob_for(dims, fp16, gain=gain), window, length)


# -- int8 (issue 35) ----------------------------------------------------------------------------
INT8_WINDOW = 6
INT8_LENGTH = 14            # past W, so the ring wraps


def int8_blob(dims, kind="plain", seed=0):
    """An int8 blob quantised from weights_for(dims) on generated frames, made
    to exercise a defect (`kind`): "plain"; "pow2", every factor M a power
    of two, so rq meets exact halves (negative ones included) often;
    "loud", the input scale 8x finer (x_scale 8x coarser, the product still
    1), so x saturates and projection sums reach far past 16 bits; "boost",
    q's factors doubled, so q saturates often."""
    from rvne.model import int8, quantize as qz

    cal = check.generated_frames(4, 20, 16, dims.input_dim, seed + 5)
    m, _ = qz.quantize(weights_for(dims, seed=seed), dims, cal, 16)
    rq, inv, xs = dict(m.rq), m.in_scale_inv, m.x_scale
    if kind == "pow2":
        for n, (mu, s) in m.rq.items():
            k = np.round(-np.log2(mu * np.exp2(-s.astype(float)))).astype(np.int64)
            rq[n] = (np.full_like(mu, 1 << 30), 30 + k)
    elif kind == "loud":
        inv, xs = np.float32(inv * 8), np.float32(xs / 8)
    elif kind == "boost":
        rq["q"] = (rq["q"][0], rq["q"][1] - 1)
    return blob.from_int8(int8.Int8Model(dims, inv, xs, rq, m.logit_scale, m.exp, m.weights).validate())


INT8_KIND = {"i8_half_up": "pow2", "i8_acc16": "loud", "i8_no_sat": "boost"}


def run_int8(name, dims, kind=None, window=INT8_WINDOW, length=INT8_LENGTH, vectors=4):
    """The check report of build `name` (None: the core) on the int8 blob
    that exercises it."""
    data = int8_blob(dims, kind or INT8_KIND.get(name, "plain"))
    return run(data, window, length, exe=defect_exe(name) if name else None, vectors=vectors)
