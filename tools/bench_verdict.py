#!/usr/bin/env python3
"""Issue 12: what the verdict costs and how much room it has. Prints numbers
only; asserts nothing about time.

1. Time per frame of the float64 reference with its error bounds
   (rvne.bounds) beside the numpy FP32 reference, in the same run, for the
   default head and for dims 256,8,2,32,8,8, at W = 100 (a `rvne check`
   sequence: W + 10 frames), and which bound ran.
1b. Beyond the whole-model budget (dims 512,16,4,32,8,16, W = 100): time
   and margins of the bound decided per logit against a correct device and
   numpy models of two defects.
2. Margins on the virtual device: worst |device - ref64| / bound for correct
   devices (FP32 and FP16, 1/sqrt(fan_in) weights and 10x, dims up to
   512,16,4,32,8,16, W = 100), and for each deliberate defect build the
   smallest violation ratio over the default and 128-wide dims, FP32 and
   FP16 (> 1 means caught), and each build under `rvne check`'s defaults.

    python3 tools/bench_verdict.py [--skip-margins] [--repeat N]
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import numpy as np  # noqa: E402

import defect_devices as dd  # noqa: E402
from rvne import bounds, reference, verdict  # noqa: E402
from rvne.contract import Dims  # noqa: E402


def timing(repeat):
    print("== reference cost per frame, W = 100, 110 frames (one `rvne check` sequence)")
    print(f"{'dims':<22} {'fp32 ms/frame':>14} {'float64+bound ms/frame':>24} {'ratio':>7}  bound")
    for dims in (dd.DEFAULT, Dims(256, 8, 2, 32, 8, 8)):
        w = dd.weights_for(dims)
        x = np.random.default_rng(1).standard_normal((110, dims.input_dim)).astype(np.float32)
        t0 = time.perf_counter()
        truth = bounds.Truth(w, dims)
        setup = time.perf_counter() - t0
        best32 = best64 = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            reference.forward_batch(w, dims, x, 100)
            best32 = min(best32, time.perf_counter() - t0)
            t0 = time.perf_counter()
            truth.forward(x, 100)
            best64 = min(best64, time.perf_counter() - t0)
        method = "first-order" if truth.first_order else "forward only"
        print(f"{str(dims):<22} {best32 / len(x) * 1e3:>14.3f} {best64 / len(x) * 1e3:>24.3f} "
              f"{best64 / best32:>6.1f}x  {method} (setup {setup * 1e3:.0f} ms once per blob)")


def lazy(dims=dd.BIG, window=100, length=110):
    """Beyond the whole-model budget: the bound decided per logit against a
    device (docs/model.md, "Deciding lazily"), timed once per device model.
    Devices: the FP32 numpy reference (correct) and numpy models of two
    defects (window one short; layer 0's residual dropped)."""
    print(f"== beyond the budget: bound decided per logit, {dims}, W = {window}, {length} frames (one sequence)")
    w = dd.weights_for(dims)
    x = np.random.default_rng(1).standard_normal((length, dims.input_dim)).astype(np.float32)
    truth = bounds.Truth(w, dims)
    t0 = time.perf_counter()
    ref32 = reference.forward_batch(w, dims, x, window)
    t32 = time.perf_counter() - t0
    t0 = time.perf_counter()
    truth.forward(x, window)
    tf = time.perf_counter() - t0
    print(f"  FP32 reference {t32 * 1e3:.0f} ms; float64 + forward bound alone {tf * 1e3:.0f} ms")
    devices = {"correct (FP32 numpy)": ref32,
               "window one short": reference.forward_batch(w, dims, x, window - 1),
               "residual dropped in layer 0": _no_residual(w, dims, x, window)}
    for name, dev in devices.items():
        t0 = time.perf_counter()
        ref, bound = truth.forward(x, window, device=dev, host=ref32)
        took = time.perf_counter() - t0
        v = verdict.judge(np.where(truth.undecided, ref, dev), ref, bound)
        st = truth.lazy_stats
        print(f"  {name:<28} {took:6.2f} s  worst {v['max_ratio']:.3g}, {v['n_bad']}/{v['n']} out, "
              f"{st['undecided']} undecided; {st['candidates']} left to the exact pass, {st['computed']} "
              f"computed ({st['flops'] / 1e9:.0f} GFLOP)  "
              f"{'PASS' if v['ok'] and not st['undecided'] else 'FAIL'}")


def _no_residual(w, dims, x, window):
    """The numpy model of the no_residual defect: layer 0 outputs o.Wo alone."""
    d = dims
    h = x.astype(np.float32)
    for layer in range(d.n_layers):
        p = f"layers.{layer}."
        one = {k.replace(p, "layers.0."): v for k, v in w.items() if k.startswith(p)}
        one["wc"] = np.eye(d.input_dim, dtype=np.float32)
        y = reference.forward_batch(one, d._replace(n_layers=1, n_classes=d.input_dim), h, window)
        h = (y - h) if layer == 0 else y        # forward_batch adds the residual: take it back out
    return h @ w["wc"]


def margins():
    dd.build_defects()
    print("== correct virtual device: worst |device - ref64| / bound (<= 1 passes)")
    for dims, fp16, gain, window, length in dd.correct_cases(every=True):
        r = dd.run_correct(dims, fp16, gain, window, length)
        print(f"{str(dims):<22} {'fp16' if fp16 else 'fp32'}  weights {gain:>4g}/sqrt(fan_in)  W {window}: "
              f"{r.max_ratio:.3g}  {'PASS' if r.passed else 'FAIL'}  (FP32 numpy reference: {r.host_gap:.3g})")
    print(f"== defect builds (W {dd.DEFECT_WINDOW}): smallest violation ratio (> 1 is caught)")
    worst = {}
    for name, dims, fp16 in dd.defect_cases():
        r = dd.run_defect(name, dims, fp16)
        where = f"{dims} {'fp16' if fp16 else 'fp32'}"
        print(f"  {name:<13} {where:<28} {r.max_ratio:10.3g}  {'FAIL (caught)' if not r.passed else 'PASS (missed)'}")
        if name not in worst or r.max_ratio < worst[name][0]:
            worst[name] = (r.max_ratio, where)
    for name, (ratio, where) in worst.items():
        print(f"{name:<13} smallest {ratio:.3g} at {where}")
    print(f"== beyond the budget (bound decided per logit): defect builds at {dd.BIG}, W 100, 110 frames")
    for name in ("window_short", "no_residual"):
        t0 = time.perf_counter()
        r = dd.run(dd.blob_for(dd.BIG, False), 100, 110, exe=dd.defect_exe(name))
        print(f"  {name:<13} worst {r.max_ratio:.3g}, {r.bad}/{r.logits} out, {r.undecided} undecided "
              f"({time.perf_counter() - t0:.1f} s)  {'FAIL (caught)' if not r.passed else 'PASS (missed)'}")
    print("== the same builds as `rvne check` runs by default (W 100, 4 x 110 frames), default dims")
    for name in dd.DEFECTS:
        dims = dd.DEFAULT_GQA if name == "kv_map" else dd.DEFAULT
        fp16 = name == "fp16_ftz"
        r = dd.run(dd.blob_for(dims, fp16, subnormal=fp16), 100, 110, exe=dd.defect_exe(name), vectors=4)
        print(f"  {name:<13} {str(dims):<16} {'fp16' if fp16 else 'fp32'}: worst {r.max_ratio:.3g}, "
              f"{r.bad}/{r.logits} logits out  {'FAIL (caught)' if not r.passed else 'PASS (missed)'}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--skip-margins", action="store_true", help="only the timing part")
    p.add_argument("--repeat", type=int, default=3, help="timing runs per case (best kept)")
    args = p.parse_args(argv)
    timing(args.repeat)
    lazy()
    if not args.skip_margins:
        margins()
    return 0


if __name__ == "__main__":
    sys.exit(main())
