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
4. (--separation, in place of 2) The oracle separation (docs/model.md,
   "What the verdict can and cannot catch"): on the same weights and
   frames (the first --vectors of `rvne check`'s sequences, every push
   traced), for logits_fp16, acts_fp16, exp_err and scale_off at each step
   where the defect acts, the defect build's largest deviation from the
   step reference over the largest of the product's and the correct
   variants', in three units (the step allowance; a statistical error size;
   the rms of the latter over the step's values). A rule can meet issue
   20's goals (defects >= 10x, correct <= 0.1x) on a statistic only where
   this is >= 100.

5. (--int8, in place of 2) Issue 35's int8 table: for the same dims, each
   int8 defect build and correct variant (tests/defect_devices.py,
   INT8_DEFECTS and INT8_VARIANTS) on the int8 blob that exercises it
   (defect_devices.int8_blob), --int8-vectors sequences of --int8-length
   frames at W --int8-window on the virtual device, every push traced:
   PASS or FAIL under the exact verdict, and the first wrong value's step.

    python3 tools/bench_verdict.py [--dims 0,1] [--skip-timing] [--issue12] [--repeat N]
    python3 tools/bench_verdict.py --int8 --skip-timing [--dims 0,1,2,3,4]
    python3 tools/bench_verdict.py --separation --skip-timing [--vectors 2] [--dims 3,4]
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
from rvne import check  # noqa: E402
from rvne.io import blob  # noqa: E402
from rvne.link.device import Device  # noqa: E402
from rvne.model import bounds, contract, precision, reference, steps, verdict  # noqa: E402
from rvne.model.contract import Dims  # noqa: E402
from rvne.targets import sim  # noqa: E402


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


# -- oracle separation (issue 20) ------------------------------------------------------------
# The step quantities where each defect's edit acts (firmware/tests/defects.mk): judged from the
# device's own inputs, every other step of a defect build is a correct step.
SEP_STEPS = {"logits_fp16": ("logits",), "acts_fp16": ("q", "k", "v", "x", "logits"),
             "exp_err": ("attention",), "scale_off": ("scores",)}
SEP_WINDOW = 100


def _traces(data, name, frames):
    """The virtual device's (or build `name`'s) trace of every push of each sequence, each after a RESET."""
    exe = dd.defect_exe(name) if name else None
    with sim.start(data, window=SEP_WINDOW, exe=exe) as target, Device(target.url, timeout=600) as dev:
        floats = dev.trace_on()
        return [dev.stream_traced(seq, len(seq), floats)[1] for seq in frames]


def deviations(judge, frames, traces):
    """{point: (|device - step reference| / step allowance, the same / statistical size, count)},
    flat over every judged value of every layer and sequence whose device value is finite; count:
    the judged values that are not (an FP16 rounding beyond 65,504 gives inf: any rule fails it)."""
    out = {p: ([], [], 0) for p in steps.POINTS}
    for seq, tr in zip(frames, traces):
        for layer, p, dev, ref, allow, judged, size in judge.steps(seq, tr):
            finite = judged & np.isfinite(dev)
            err = np.abs(dev - ref)
            a, b, over = out[p]
            out[p] = (a + [(err / allow)[finite]], b + [(err / size)[finite]],
                      over + int((judged & ~finite).sum()))
    return {p: (np.concatenate(a), np.concatenate(b), over) for p, (a, b, over) in out.items()}


def _rms(x):
    return float(np.sqrt(np.mean(np.square(x)))) if x.size else 0.0


def _stats(devs):
    return {p: (float(a.max()), float(b.max()), _rms(b), over) if a.size else None
            for p, (a, b, over) in devs.items()}


def step_stats(judge, frames, traces):
    """{point: (largest deviation / allowance, largest deviation / statistical size, rms of the latter,
    non-finite values)} of one device's traces of `frames` (a list of sequences, each after a
    RESET); None for a point with no finite value judged."""
    return _stats(deviations(judge, frames, traces))


def separate(defect, correct, point):
    """(A, S, R) separation at `point` over the finite values: the defect's statistic over the
    largest of the correct devices' (`correct`, a list of step_stats), and that largest; None
    where the defect has no finite value there."""
    worst = tuple(max(c[point][i] for c in correct if c[point]) for i in range(3))
    if defect[point] is None:
        return None, worst
    return tuple(defect[point][i] / worst[i] if worst[i] else np.inf for i in range(3)), worst


def separation_case(dims, fp16, gain, vectors):
    """One blob and one set of frames: per defect, at each step where it acts, the separation under
    three statistics of the deviations: the largest per value over the allowance (what the sound
    step rule tests), the largest per value over the statistical size, and the rms of the latter
    over all values of that step. Each: defect build / largest over the correct builds."""
    data = dd.blob_for(dims, fp16, gain=gain)
    parsed = blob.parse_loadable(data)
    weights, d = parsed.tensors(), parsed.header.dims
    judge = steps.StepJudge(weights, d, SEP_WINDOW, scores=True)
    frames = check.generated_frames(vectors, check.default_length(SEP_WINDOW), SEP_WINDOW, d.input_dim)
    stat, overflow = {}, {}
    for name in (None,) + dd.VARIANTS + tuple(SEP_STEPS):
        devs = deviations(judge, frames, _traces(data, name, frames))
        stat[name] = _stats(devs)
        overflow[name] = {p: over for p, (_, _, over) in devs.items()}
    correct = [stat[n] for n in (None,) + dd.VARIANTS]
    # The precision figure's statistic (rvne.model.precision): the rms per kind of step; the
    # correct builds' largest over every kind.
    correct_rms = max(c[p][2] for c in correct for p in c if c[p])
    rows = []
    for name, points in SEP_STEPS.items():
        for p in points:
            sep, worst = separate(stat[name], correct, p)
            rows.append({"dims": ",".join(map(str, dims)), "dtype": "fp16" if fp16 else "fp32", "gain": gain,
                         "build": name, "step": p, "defect": stat[name][p], "correct": worst, "sep": sep,
                         "over": overflow[name][p], "correct_rms": correct_rms})
    return rows


def correlated_case(dims):
    """The correct builds' step statistics (as step_stats) on inputs whose roundings add up
    instead of cancelling: an averaging model (every weight 1/fan_in, FP32) fed a constant frame
    (every value 0.1), one sequence of `rvne check`'s default length; and the same model with
    Wo = 0, which hands the frame itself to the classifier, so the logits step adds the same
    terms as the q step. Every sum adds equal terms, so its partial sums round the same way far
    more often than at random: inputs a statistical rule must also pass."""
    out = []
    for keep_wo in (True, False):
        w = {s.name: np.full(s.shape, 1.0 / s.shape[0] if keep_wo or not s.name.endswith("wo") else 0.0, np.float32)
             for s in contract.tensor_specs(dims)}
        data = blob.from_arrays(w, dims, False)
        parsed = blob.parse_loadable(data)
        weights, d = parsed.tensors(), parsed.header.dims
        judge = steps.StepJudge(weights, d, SEP_WINDOW, scores=True)
        frames = [np.full((check.default_length(SEP_WINDOW), d.input_dim), 0.1, np.float32)]
        out += [step_stats(judge, frames, _traces(data, n, frames)) for n in (None,) + dd.VARIANTS]
    return out


SEP_GOAL, SEP_FLOOR = 100.0, 10.0     # 10x the allowance times 10x margin; below 10 no threshold separates


def _sep_word(v):
    return "cannot separate" if v < SEP_FLOOR else ("both goals impossible" if v < SEP_GOAL else "room for both")


def _g(v):
    return "-" if v is None else f"{v:.3g}"


def separation(dims_list, gains, vectors):
    print(f"== oracle separation (issue 20): W {SEP_WINDOW}, the first {vectors} of `rvne check`'s generated "
          "sequences (seed 0), every push traced. Per defect, at each step where it acts: deviation = "
          "|device - step reference| over (A) the step allowance, (S) a statistical error size; defect = its "
          "largest, correct = the largest of the product and the variants (reversed, fma, double, online, ftz), "
          "sep = defect / correct; (R) the same for the rms of S over the step's values. Finite device values "
          "only; 'inf': judged values the defect made non-finite (FP16 overflow), which any rule fails")
    print(f"{'dims':<20} {'dtype':<5} {'gain':>4}  {'build':<12} {'step':<9} "
          f"{'A: defect':>10} {'correct':>9} {'sep':>8}  {'S: defect':>10} {'correct':>9} {'sep':>8}  "
          f"{'R: sep':>8} {'inf':>6}  seconds")
    rows, correlated = [], {}
    for dims in dims_list:
        for fp16 in (False, True):
            for gain in gains:
                t0 = time.perf_counter()
                case = separation_case(dims, fp16, gain, vectors)
                took = time.perf_counter() - t0
                for r in case:
                    dv, (ca, cs, _), sep = r["defect"], r["correct"], r["sep"]
                    da, ds, _, over = dv if dv else (None, None, None, r.get("over", 0))
                    sa, ss, sr = sep if sep else (None, None, None)
                    print(f"{r['dims']:<20} {r['dtype']:<5} {gain:>3g}x  {r['build']:<12} {r['step']:<9} "
                          f"{_g(da):>10} {ca:>9.3g} {_g(sa):>8}  {_g(ds):>10} {cs:>9.3g} {_g(ss):>8}  "
                          f"{_g(sr):>8} {over:>6}  {took:6.1f}", flush=True)
                rows.extend(case)
    print(f"== per size, over FP32/FP16 x weights {', '.join(f'{g:g}x' for g in gains)}: verdict = the defect's "
          "smallest step ratio (a case with an 'inf' counts as caught), correct = the correct builds' largest; "
          f"separations: the smallest (goal of issue 20 needs >= {SEP_GOAL:g}; < {SEP_FLOOR:g}: no threshold on "
          "that statistic separates at all), over the cases with finite values")
    print(f"{'dims':<20} {'build':<12} {'step':<9} {'verdict':>8} {'correct':>8} {'A sep':>8} {'S sep':>8} "
          f"{'R sep':>8}  cases  A's reading")
    for dims in dims_list:
        key = ",".join(map(str, dims))
        for name, points in SEP_STEPS.items():
            for p in points:
                mine = [r for r in rows if r["dims"] == key and r["build"] == name and r["step"] == p]
                caught = min(np.inf if r["over"] else (r["defect"][0] if r["defect"] else np.inf) for r in mine)
                correct = max(r["correct"][0] for r in mine)
                fin = [r for r in mine if r["sep"] is not None and not r["over"]]
                a, s_, rr = ((min(x["sep"][i] for x in fin) for i in range(3)) if fin else (None,) * 3)
                print(f"{key:<20} {name:<12} {p:<9} {caught:>8.3g} {correct:>8.3g} {_g(a):>8} {_g(s_):>8} "
                      f"{_g(rr):>8}  {len(fin)}/{len(mine)}    {'-' if a is None else _sep_word(a)}")
    print("== with correlated rounding: the correct builds on an averaging model fed a constant frame, "
          "and the same with Wo = 0 (correlated_case), beside their largest on the generated frames; sep = the defect's smallest "
          "largest deviation over the cases above with finite values / the correct builds' largest over "
          "both inputs (per value; R is left out: the constant input's values are all alike)")
    print(f"{'dims':<20} {'build':<12} {'step':<9} {'correct A: frames':>17} {'averaging':>9} "
          f"{'S: frames':>9} {'averaging':>9} {'A sep':>8} {'S sep':>8}  A, S reading")
    for dims in dims_list:
        key = ",".join(map(str, dims))
        t0 = time.perf_counter()
        corr = correlated_case(dims)
        for name, points in SEP_STEPS.items():
            for p in points:
                mine = [r for r in rows if r["dims"] == key and r["build"] == name and r["step"] == p]
                fin = [r for r in mine if r["defect"] is not None and not r["over"]]
                worst = [max(r["correct"][i] for r in mine) for i in range(2)]
                avg = [max(c[p][i] for c in corr if c[p]) for i in range(2)]
                sep = [min(r["defect"][i] for r in fin) / max(worst[i], avg[i]) if fin else None for i in range(2)]
                correlated[(key, name, p)] = {"avg": avg, "sep": sep}
                print(f"{key:<20} {name:<12} {p:<9} {worst[0]:>17.3g} {avg[0]:>9.3g} {worst[1]:>9.3g} "
                      f"{avg[1]:>9.3g} {_g(sep[0]):>8} {_g(sep[1]):>8}  "
                      f"{'-' if sep[0] is None else _sep_word(sep[0]) + ', ' + _sep_word(sep[1])}", flush=True)
        print(f"  ({time.perf_counter() - t0:.1f} s)")
        precision_rows(rows, key, corr)
    markdown_table(rows, correlated, dims_list)
    return rows


# docs/model.md's table: (defect, the step its row shows, the label).
TABLE_ROWS = (("logits_fp16", "logits", "logits_fp16 (logits)"), ("acts_fp16", "q", "acts_fp16 (q, its first)"),
              ("exp_err", "attention", "exp_err (attention)"), ("scale_off", "scores", "scale_off (scores)"))


def markdown_table(rows, correlated, dims_list):
    """docs/model.md's table ("What the verdict can and cannot catch"), as printed for it: per
    defect and width, the step verdict's smallest ratio over the cases (bold under 10), the
    separations A / S on the generated frames and with the correlated inputs; then the correct
    builds' largest step ratio on the frames and on the correlated inputs."""
    keys = [",".join(map(str, d)) for d in dims_list]
    print("== docs/model.md's table")
    print("| defect (step) | " + " | ".join(f"{d.input_dim} wide" if i == 0 else str(d.input_dim)
                                            for i, d in enumerate(dims_list)) + " |")
    print("|---|" + "---|" * len(dims_list))
    for name, p, label in TABLE_ROWS:
        cells = []
        for key in keys:
            mine = [r for r in rows if r["dims"] == key and r["build"] == name and r["step"] == p]
            if not mine:
                cells.append("-")
                continue
            caught = min(np.inf if r["over"] else (r["defect"][0] if r["defect"] else np.inf) for r in mine)
            fin = [r for r in mine if r["sep"] is not None and not r["over"]]
            a, s_ = ((min(x["sep"][i] for x in fin) for i in range(2)) if fin else (None, None))
            c = correlated.get((key, name, p), {"sep": [None, None]})["sep"]
            v = f"{caught:.3g}" if np.isfinite(caught) else "inf"
            cells.append(f"{'**' + v + '**' if caught < GOAL_DEFECT else v} \\| {_g(a)} / {_g(s_)} \\| "
                         f"{_g(c[0])} / {_g(c[1])}")
        print(f"| {label} | " + " | ".join(cells) + " |")
    cells = []
    for key in keys:
        mine = [r for r in rows if r["dims"] == key]
        avg = max((v["avg"][0] for (k, _, _), v in correlated.items() if k == key), default=None)
        cells.append(f"{max(r['correct'][0] for r in mine):.3g} \\| {_g(avg)}")
    print("| correct builds, largest step ratio (frames \\| correlated) | " + " | ".join(cells) + " |")


def precision_rows(rows, key, corr):
    """The precision figure against its level (rvne.model.precision.LEVEL): the correct builds'
    largest rms over every kind of step and case, on the generated frames and on the correlated
    inputs, and each defect's smallest rms at its step over the cases with finite values."""
    mine = [r for r in rows if r["dims"] == key]
    ok = max(r["correct_rms"] for r in mine)
    avg = max(c[p][2] for c in corr for p in c if c[p])
    print(f"{key:<20} precision (rms over each kind of step): correct builds up to {ok:.3g} on the frames "
          f"({precision.LEVEL / ok:.3g}x under the level {precision.LEVEL:g}), {avg:.3g} on the correlated inputs")
    for name, points in SEP_STEPS.items():
        fin = [r["defect"][2] for r in mine if r["build"] == name and r["defect"] is not None and not r["over"]]
        if fin:
            print(f"{key:<20}   {name:<12} at {'/'.join(points):<22} rms >= {min(fin):8.3g}  "
                  f"({min(fin) / precision.LEVEL:.3g}x the level: {'warned' if min(fin) > precision.LEVEL else 'NOT warned'})",
                  flush=True)


def step_table(dims_list, gains, vectors):
    """Issue 30's goals on the step verdict alone (no end-to-end bound, so the largest sizes take
    minutes, not hours): for every size, FP32 and FP16, each weight scale, the first `vectors` of
    `rvne check`'s sequences each after a RESET, every push traced, W 100: each defect build's
    largest step ratio and where (it fails when > 1; goal >= 10 where the separation allows) and
    each correct build's largest (goal <= 0.2)."""
    print(f"== the step verdict alone (issue 30's goals): W {SEP_WINDOW}, the first {vectors} of `rvne check`'s "
          "sequences, every push traced; defects: largest ratio (FAIL > 1) and its step; correct: largest ratio")
    builds = (None,) + dd.VARIANTS + dd.TABLE_DEFECTS
    rows = []
    for dims in dims_list:
        for fp16 in (False, True):
            for gain in gains:
                data = dd.blob_for(dims, fp16, gain=gain)
                parsed = blob.parse_loadable(data)
                judge = steps.StepJudge(parsed.tensors(), parsed.header.dims, SEP_WINDOW, scores=True)
                frames = check.generated_frames(vectors, check.default_length(SEP_WINDOW), SEP_WINDOW,
                                                dims.input_dim)
                t0 = time.perf_counter()
                for name in builds:
                    res = steps.StepResult()
                    for v, (f, tr) in enumerate(zip(frames, _traces(data, name, frames))):
                        res.merge(judge.sequence(f, tr, seq_index=v))
                    top = max(res.by_point, key=res.by_point.get)
                    rows.append({"dims": ",".join(map(str, dims)), "dtype": "fp16" if fp16 else "fp32",
                                 "gain": gain, "build": name or "core", "ratio": res.max_ratio, "step": top,
                                 "defect": name in dd.TABLE_DEFECTS, "unjudged": res.unjudged})
                print(f"{str(dims):<20} {'fp16' if fp16 else 'fp32'} {gain:g}x  " + "  ".join(
                    f"{r['build']} {r['ratio']:.3g}" + (f"@{r['step']}" if r["defect"] else "")
                    for r in rows[-len(builds):]) + f"  ({time.perf_counter() - t0:.0f} s)", flush=True)
    print("== per build over the cases: defects, smallest largest-ratio (goal >= 10; FAIL needs > 1); "
          "correct builds, largest (goal <= 0.2)")
    for name in tuple(dict.fromkeys(r["build"] for r in rows)):
        mine = [r for r in rows if r["build"] == name]
        pick = min if mine[0]["defect"] else max
        r = pick(mine, key=lambda x: x["ratio"])
        short = [x for x in mine if (x["ratio"] < 10 if x["defect"] else x["ratio"] > 0.2)]
        print(f"{name:<13} {r['ratio']:10.3g} at {r['dims']} {r['dtype']} {r['gain']:g}x ({r['step']})  "
              f"short of the goal: {len(short)}/{len(mine)}"
              + (": " + ", ".join(f"{x['dims']} {x['dtype']} {x['gain']:g}x {x['ratio']:.3g}" for x in short)
                 if short else ""), flush=True)
    return rows


def int8_table(dims_list, window, length, vectors):
    print(f"\n== int8 (issue 35): the exact verdict per build, W {window}, {vectors} sequences of up to {length} "
          "frames, every push traced")
    print(f"{'dims':<20} {'build':<16} {'blob':<6} {'verdict':<7} {'equal':>15}  {'first wrong':<44} {'s':>6}")
    rows = []
    builds = list(dd.INT8_DEFECTS) + list(dd.INT8_VARIANTS)
    for dims in dims_list:
        blobs = {}
        for name in builds:
            kind = dd.INT8_KIND.get(name, "plain")
            if kind not in blobs:
                blobs[kind] = dd.int8_blob(dims, kind)
            t0 = time.perf_counter()
            r = dd.run(blobs[kind], window, length, exe=dd.defect_exe(name), vectors=vectors)
            took = time.perf_counter() - t0
            fw = r.first_wrong
            where = "-" if fw is None else f"layer {fw.layer} {fw.quantity}[{fw.index}] ({fw.device:g} vs {fw.reference:g})" \
                if fw.layer is not None else f"{fw.quantity}[{fw.index}] ({fw.device:g} vs {fw.reference:g})"
            expect = "PASS" if name in dd.INT8_VARIANTS else "FAIL"
            verdict_ = "PASS" if r.passed else "FAIL"
            mark = "" if verdict_ == expect else "  <- unexpected"
            print(f"{str(dims):<20} {name:<16} {kind:<6} {verdict_:<7} "
                  f"{r.step_values - r.step_bad:>7}/{r.step_values:<7}  {where:<44} {took:>6.1f}{mark}", flush=True)
            rows.append({"dims": list(dims), "build": name, "blob": kind, "passed": r.passed,
                         "step_values": r.step_values, "step_bad": r.step_bad, "logits_bad": r.bad,
                         "first_wrong": None if fw is None else {"layer": fw.layer, "quantity": fw.quantity,
                                                                 "index": fw.index}, "seconds": took})
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default=None,
                   help="indices into the table's dims (0: 16,4,1,32,2,4 ... 4: 512,16,4,32,8,16), e.g. 0,1")
    p.add_argument("--gains", default=None, help="weights' std times 1/sqrt(fan_in), e.g. 4 (default: 1,4)")
    p.add_argument("--skip-timing", action="store_true", help="no reference-cost part")
    p.add_argument("--issue12", action="store_true", help="also issue 12's margins (lazy bound, W = 6 defects)")
    p.add_argument("--json", metavar="FILE", help="also write the table's rows as JSON")
    p.add_argument("--separation", action="store_true",
                   help="the oracle separation per step and size instead of the verdict table")
    p.add_argument("--vectors", type=int, default=2, help="sequences per case for --separation")
    p.add_argument("--repeat", type=int, default=3, help="timing runs per case (best kept)")
    p.add_argument("--int8", action="store_true", help="issue 35's int8 table instead of the float one")
    p.add_argument("--steps", action="store_true",
                   help="issue 30's goals on the step verdict alone (no end-to-end bound), every size in minutes")
    p.add_argument("--int8-window", type=int, default=8, help="W for --int8 (default 8)")
    p.add_argument("--int8-length", type=int, default=13, help="frames of the longest sequence for --int8")
    p.add_argument("--int8-vectors", type=int, default=2, help="sequences per case for --int8")
    args = p.parse_args(argv)
    if not args.skip_timing:
        timing(args.repeat)
    dims_list = (dd.TABLE_DIMS if args.dims is None
                 else [dd.TABLE_DIMS[int(i)] for i in args.dims.split(",")])
    gains = dd.TABLE_GAINS if args.gains is None else tuple(float(g) for g in args.gains.split(","))
    if args.separation:
        dd.build_defects()
        rows = separation(dims_list, gains, args.vectors)
    elif args.steps:
        dd.build_defects()
        rows = step_table(dims_list, gains, args.vectors)
    elif args.int8:
        dd.build_defects()
        rows = int8_table(dims_list, args.int8_window, args.int8_length, args.int8_vectors)
    else:
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
