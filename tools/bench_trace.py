#!/usr/bin/env python3
"""What step-by-step checking (docs/model.md, "Step by step") costs.

1. The virtual device (sim), upstream example head (16,4,1,32,2,4), W = 100,
   `rvne check`'s 4 sequences (102 to 110 frames, seed 0) with --trace off
   and --trace all in the same run: frames/s over the link, and the host's
   time judging the traces against the link time of the same pushes
   (link-bound while judging is the smaller).
2. The same device behind a link paced at 115200 baud (8N1: 11,520 bytes/s
   each way, tools/paced_link.py between a new pty and the device's), as
   a real board's UART would be: the whole check's wall time with
   --trace off, sample and all, and their ratios to off (the sample is
   sized for at most 2x: rvne.check.sample_plan).

With --baseline-exe (another build of the virtual device, e.g. main's
before a change to the trace), part 1 runs on it too, in the same run,
and prints the ratios: the trace's cost before and after.

Prints numbers; asserts nothing.

    python3 tools/bench_trace.py [--dims 16,4,1,32,2,4] [--baud 115200] [--no-paced] [--paced-all]
                                 [--baseline-exe PATH]
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))

from rvne import check  # noqa: E402
from rvne.io import blob, upstream_init  # noqa: E402
from rvne.link.device import Device  # noqa: E402
from rvne.model import steps  # noqa: E402
from rvne.model.contract import Dims  # noqa: E402
from rvne.targets import sim  # noqa: E402

from paced_link import PacedLink, open_pty  # noqa: E402


def timed_check(url, data, trace, timeout=60):
    with Device(url, timeout=timeout) as dev:
        t0 = time.perf_counter()
        r = check.run_check(dev, data, vectors=4, seed=0, trace=trace)
        return r, time.perf_counter() - t0


def judge_time(data, r_frames, window=100):
    """Host seconds to judge one traced sequence of the check's length."""
    import numpy as np

    parsed = blob.parse_loadable(data)
    d = parsed.header.dims
    judge = steps.StepJudge.of_blob(parsed, window, scores=True)
    f = np.random.default_rng(0).standard_normal((r_frames, d.input_dim)).astype(np.float32)
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import trace_emulator
    tr = trace_emulator.traces(parsed.tensors(), d, f, window)
    t0 = time.perf_counter()
    res = judge.sequence(f, tr)
    return time.perf_counter() - t0, res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dims", default=None, help="D,HQ,HKV,HD,L,C (default: the upstream example)")
    ap.add_argument("--baud", type=int, default=115200)
    ap.add_argument("--no-paced", action="store_true", help="skip the paced-link part")
    ap.add_argument("--baseline-exe", default=None, metavar="PATH",
                    help="also run part 1 on this rvne-vdev (a baseline build) and print the ratios")
    ap.add_argument("--paced-all", action="store_true",
                    help="also --trace all over the paced link (minutes at 115200 baud)")
    args = ap.parse_args(argv)
    if args.dims:
        import numpy as np
        from rvne.model import contract

        d = Dims.parse(args.dims)
        rng = np.random.default_rng(0)
        data = blob.from_arrays({s.name: (rng.standard_normal(s.shape) / np.sqrt(s.shape[0])).astype(np.float32)
                                 for s in contract.tensor_specs(d)}, d, False)
    else:
        data = upstream_init.init_blob()
        d = upstream_init.DIMS
    lengths = check.sequence_lengths(4, check.default_length(100), 100, seed=0)
    print(f"dims {d}  W 100  4 sequences of {min(lengths)} to {max(lengths)} frames ({sum(lengths)} pushes); "
          f"trace {steps.trace_floats(d, 100)} floats ({4 * steps.trace_floats(d, 100)} B of arena) per push")
    best = {}
    for name, exe in (("baseline", args.baseline_exe), ("this tree", None)):
        if name == "baseline" and not exe:
            continue
        with sim.start(data, window=100, exe=exe) as t:
            for mode in ("off", "all", "off", "all"):
                r, wall = timed_check(t.url, data, mode)
                best[(name, mode)] = max(best.get((name, mode), 0.0), r.frames_per_s)
                print(f"sim  {name:<9} --trace {mode:6} {r.frames_per_s:8.0f} frames/s over the link  check "
                      f"{wall:5.2f} s  {'PASS' if r.passed else 'FAIL'}  traced {r.traced}, {r.step_values} values")
    if args.baseline_exe:
        for mode in ("off", "all"):
            print(f"sim  --trace {mode}: this tree {best[('this tree', mode)]:.0f} frames/s, baseline "
                  f"{best[('baseline', mode)]:.0f} ({best[('this tree', mode)] / best[('baseline', mode)]:.2f}x; "
                  "best of two each)")
    with sim.start(data, window=100) as t:
        secs, res = judge_time(data, check.default_length(100))
        per_push = secs / res.pushes
        print(f"host judging: {per_push * 1e6:.0f} us per push ({1 / per_push:.0f} pushes/s) against the traced "
              f"link's {1e6 / max(r.frames_per_s, 1e-9):.0f} us per push: "
              f"{'link-bound' if per_push < 1 / max(r.frames_per_s, 1e-9) else 'HOST-BOUND'}")
        if args.no_paced:
            return 0
        walls, carried = {}, {}
        modes = ("off", "sample", "off", "sample") + (("all",) if args.paced_all else ())
        for mode in modes:
            dev_fd = open_pty(t.url)
            try:
                with PacedLink(dev_fd, args.baud) as link:
                    r, wall = timed_check(link.path, data, mode, timeout=120)
            finally:
                os.close(dev_fd)
            walls.setdefault(mode, wall)
            carried.setdefault(mode, link.carried)
            print(f"{args.baud} baud --trace {mode:6} check {wall:6.1f} s ({wall / walls['off']:.2f}x the first off), "
                  f"streaming {r.seconds:6.1f} s, {link.carried:,} bytes on the link "
                  f"({link.carried / carried['off']:.2f}x off)  traced {r.traced} of {r.frames} pushes  "
                  f"{'PASS' if r.passed else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
