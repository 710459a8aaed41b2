"""The agreement rule of docs/model.md ("Agreement contract"): a device's logit
agrees with the reference when both are finite, its bound is finite and
|device - reference| <= bound; a non-finite reference agrees only with the
identical value (+inf with +inf; NaN never, NaN equals nothing). The bound
is rvne.model.bounds' per-logit error bound, or atol + rtol*|reference| when the
user states their own contract.

    v = judge(device_logits, ref64, bound)      # any shapes, all equal
    v["ok"], v["n_bad"], v["max_ratio"], v["worst"]
"""

import numpy as np


def tolerance(ref, atol, rtol):
    """The user's contract as a per-logit bound: atol + rtol*|ref|."""
    atol, rtol = float(atol), float(rtol)
    if not (np.isfinite(atol) and np.isfinite(rtol) and atol >= 0 and rtol >= 0):
        raise ValueError(f"atol {atol:g} and rtol {rtol:g} must be finite and >= 0")
    with np.errstate(over="ignore", invalid="ignore"):
        return atol + rtol * np.abs(np.asarray(ref, dtype=np.float64))


def ratios(device, ref, bound):
    """|device - ref| / bound per logit: <= 1 where the logit agrees, inf
    where it cannot (a non-finite side or bound, unless both sides are the
    same infinity, which gives 0)."""
    a = np.asarray(device, dtype=np.float64)
    b = np.asarray(ref, dtype=np.float64)
    e = np.asarray(bound, dtype=np.float64)
    if a.shape != b.shape or e.shape != b.shape:
        raise ValueError(f"device logits have shape {a.shape}, reference {b.shape}, bound {e.shape}")
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs(a - b)
        finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(e)
        r = np.where(diff == 0, 0.0, diff / e)
    same_inf = ~np.isfinite(b) & (a == b)
    return np.where(finite, r, np.where(same_inf, 0.0, np.inf))


def judge(device, ref, bound):
    """Every logit of `device` against `ref` under `bound` (same shapes;
    [N, C], [C] or [V, N, C]). Returns a dict: ok, n, n_bad, max_ratio
    (worst |a-b|/bound, <= 1 passes), worst (index tuple of that logit),
    max_abs, max_rel (|a-b|/|b| over b != 0; inf where a side is not
    finite), rows, argmax_agree (fraction of rows whose argmax agree)."""
    a = np.asarray(device, dtype=np.float64)
    b = np.asarray(ref, dtype=np.float64)
    r = ratios(a, b, bound)
    bad = ~(r <= 1.0)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.where(np.isfinite(a) & np.isfinite(b), np.abs(a - b), np.where(a == b, 0.0, np.inf))
        rel = np.where(diff == 0, 0.0, diff / np.abs(b))
    rows = int(np.prod(a.shape[:-1])) if a.ndim > 1 else 1
    flat_a, flat_b = a.reshape(rows, -1), b.reshape(rows, -1)
    agree = float(np.mean(np.argmax(flat_a, -1) == np.argmax(flat_b, -1))) if rows and flat_a.shape[1] else 1.0
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(r)), r.shape)) if r.size else None
    return {
        "ok": not bool(bad.any()),
        "n": int(r.size),
        "n_bad": int(bad.sum()),
        "max_ratio": float(r.max()) if r.size else 0.0,
        "worst": worst,
        "max_abs": float(diff.max()) if diff.size else 0.0,
        "max_rel": float(np.nan_to_num(rel, nan=np.inf).max()) if rel.size else 0.0,
        "rows": rows,
        "argmax_agree": agree,
    }
