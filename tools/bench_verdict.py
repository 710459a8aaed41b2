#!/usr/bin/env python3
"""What the verdict costs and how sensitive it is (issues 12 and 20).
Prints numbers only; asserts nothing about time.

1. Time per frame of the float64 reference with its error bounds
   (rvne.model.bounds) beside the numpy FP32 reference, in the same run, for the
   default head and for dims 256,8,2,32,8,8, at W = 100 (a `rvne check`
   sequence: W + 10 frames), and which bound ran.
2. Issue 20's table: for dims 16,4,1,32,2,4 / 64,8,2,16,3,6 /
   128,8,4,32,4,8 / 256,8,2,32,8,8 / 512,16,4,32,8,16, FP32 and FP16,
   weights of std 1/sqrt(fan_in) and 4x that, `rvne check`'s defaults on
   the virtual device (W 100, 4 generated sequences, seed 0): the worst
   |device - reference| / allowance of the correct build, of each defect
   build (firmware/tests/defects.mk; goal: >= 10, caught by 10x) and of each
   correct variant (goal: <= 0.1), end to end and, where the check reports
   it, step by step (issue 20 item 1); then the smallest (defects) and
   largest (variants) ratio of each build over the table, and where.
3. (--issue12) Issue 12's margins: the bound decided per logit beyond the
   whole-model budget, and the older defect builds at W = 6.

    python3 tools/bench_verdict.py [--dims 0,1] [--skip-timing] [--issue12] [--repeat N]
"""

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import numpy as np  # noqa: E402

import defect_devices as dd  # noqa: E402
from rvne.model import bounds, reference, verdict  # noqa: E402
from rvne.model.contract import Dims  # noqa: E402


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
    print("== the same builds as `rvne check` runs by default (W 100, 4 generated sequences), default dims")
    for name in dd.DEFECTS:
        dims = dd.DEFAULT_GQA if name == "kv_map" else dd.DEFAULT
        fp16 = name == "fp16_ftz"
        r = dd.run(dd.blob_for(dims, fp16, subnormal=fp16), 100, 110, exe=dd.defect_exe(name), vectors=4)
        print(f"  {name:<13} {str(dims):<16} {'fp16' if fp16 else 'fp32'}: worst {r.max_ratio:.3g}, "
              f"{r.bad}/{r.logits} logits out  {'FAIL (caught)' if not r.passed else 'PASS (missed)'}")


GOAL_DEFECT, GOAL_CORRECT = 10.0, 0.1


def _step_ratio(r):
    """The step-by-step verdict's worst ratio when the check reports one."""
    v = getattr(r, "step_max_ratio", None)
    return None if v is None else float(v)


def _fmt(v):
    return "-" if v is None else f"{v:.3g}"


def table(dims_list, gains=dd.TABLE_GAINS):
    """Issue 20's table (see the module's doc). The float64 reference and
    its first-order bound are computed once per blob and reused for every
    build (they do not depend on the device); beyond the whole-model budget
    the bound is decided per logit against each build."""
    dd.build_defects()
    builds = (None,) + dd.TABLE_DEFECTS + dd.VARIANTS
    print("== issue 20: `rvne check` defaults (W 100, 4 sequences, seed 0) on the virtual device; "
          "worst |device - reference| / allowance, end to end (e2e) and step by step (step, '-': not reported)")
    print(f"{'dims':<20} {'dtype':<5} {'gain':>4}  {'build':<13} {'e2e':>10} {'step':>10}  verdict   seconds")
    rows = []
    memo = {}
    for dims in dims_list:
        for fp16 in (False, True):
            for gain in gains:
                data = dd.blob_for(dims, fp16, gain=gain)
                with dd.truth_reused(memo):
                    for name in builds:
                        t0 = time.perf_counter()
                        r = dd.run_defaults(data, name)
                        took = time.perf_counter() - t0
                        kind = "core" if name is None else ("defect" if name in dd.TABLE_DEFECTS else "variant")
                        row = {"dims": ",".join(map(str, dims)), "dtype": "fp16" if fp16 else "fp32", "gain": gain,
                               "build": name or "core", "kind": kind, "e2e": r.max_ratio, "step": _step_ratio(r),
                               "passed": r.passed, "undecided": r.undecided, "method": r.bound_method}
                        rows.append(row)
                        print(f"{row['dims']:<20} {row['dtype']:<5} {gain:>3g}x  {row['build']:<13} "
                              f"{r.max_ratio:>10.3g} {_fmt(row['step']):>10}  {'PASS' if r.passed else 'FAIL'}"
                              f"{' (' + str(r.undecided) + ' undecided)' if r.undecided else ''}"
                              f"{'  [lazy]' if r.bound_method == 'lazy' else ''}   {took:6.1f}", flush=True)
                memo.clear()
    _summary(rows)
    return rows


def _summary(rows):
    print("== summary over the table: defects, smallest ratio (goal >= 10); variants, largest (goal <= 0.1)")
    print(f"{'build':<13} {'e2e':>10}  {'where':<30} {'step':>10}  {'where':<30} cases short of the goal (e2e / step)")
    for name in dd.TABLE_DEFECTS + dd.VARIANTS + ("core",):
        mine = [r for r in rows if r["build"] == name]
        if not mine:
            continue
        defect = mine[0]["kind"] == "defect"
        pick = min if defect else max
        where = lambda r: f"{r['dims']} {r['dtype']} {r['gain']:g}x"    # noqa: E731
        e = pick(mine, key=lambda r: r["e2e"])
        steps = [r for r in mine if r["step"] is not None]
        s = pick(steps, key=lambda r: r["step"]) if steps else None
        short = (lambda v: v < GOAL_DEFECT) if defect else (lambda v: v > GOAL_CORRECT)
        n_e = sum(short(r["e2e"]) for r in mine)
        n_s = sum(short(r["step"]) for r in steps) if steps else None
        print(f"{name:<13} {e['e2e']:>10.3g}  {where(e):<30} {_fmt(s and s['step']):>10}  "
              f"{where(s) if s else '-':<30} {n_e}/{len(mine)} / {'-' if n_s is None else f'{n_s}/{len(steps)}'}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default=None,
                   help="indices into the table's dims (0: 16,4,1,32,2,4 ... 4: 512,16,4,32,8,16), e.g. 0,1")
    p.add_argument("--gains", default=None, help="weights' std times 1/sqrt(fan_in), e.g. 4 (default: 1,4)")
    p.add_argument("--skip-timing", action="store_true", help="no reference-cost part")
    p.add_argument("--issue12", action="store_true", help="also issue 12's margins (lazy bound, W = 6 defects)")
    p.add_argument("--json", metavar="FILE", help="also write the table's rows as JSON")
    p.add_argument("--repeat", type=int, default=3, help="timing runs per case (best kept)")
    args = p.parse_args(argv)
    if not args.skip_timing:
        timing(args.repeat)
    dims_list = (dd.TABLE_DIMS if args.dims is None
                 else [dd.TABLE_DIMS[int(i)] for i in args.dims.split(",")])
    gains = dd.TABLE_GAINS if args.gains is None else tuple(float(g) for g in args.gains.split(","))
    rows = table(dims_list, gains)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if args.issue12:
        lazy()
        margins()
    return 0


if __name__ == "__main__":
    sys.exit(main())
