#!/usr/bin/env python3
"""Issue 3 §5: per-push cost of the streaming head on the host build, for
W = 16, 64 and 256, against a baseline measured in the same run that
recomputes the whole window at every step. Prints wall time and callgrind
instruction counts per step, and their ratios; prints the arena bytes for
dims 16/4/1/32/2/4 at W = 100. Prints numbers only: nothing here asserts
anything about time.

    python3 tools/bench_kernel.py [--windows 16,64,256] [--dtype fp32|fp16] [--no-callgrind]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRMWARE = os.path.join(ROOT, "firmware")
BENCH = os.path.join(ROOT, "build", "bench", "bench_kernel")


class BenchError(Exception):
    pass


def build():
    proc = subprocess.run(["make", "-C", FIRMWARE, "-s", "bench"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BenchError(f"make -C firmware bench failed: {proc.stderr.strip().splitlines()[-1:]}")


def run_bench(args, prefix=()):
    proc = subprocess.run([*prefix, BENCH, *map(str, args)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BenchError(f"bench_kernel {' '.join(map(str, args))} failed: {proc.stderr.strip()}")
    return proc


def wall_ns_per_step(mode, window, steps, dtype):
    out = run_bench([mode, window, steps, dtype]).stdout
    m = re.search(r"ns_per_step=([0-9.]+)", out)
    if not m:
        raise BenchError(f"unexpected bench_kernel output: {out.strip()}")
    return float(m.group(1))


def instructions(mode, window, steps, dtype, tmp):
    """Total instructions callgrind counts for a whole run."""
    out_file = os.path.join(tmp, "callgrind.out")
    proc = run_bench(
        [mode, window, steps, dtype],
        prefix=("valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}"),
    )
    m = re.search(r"Collected\s*:\s*([0-9]+)", proc.stderr)
    if not m:
        raise BenchError("callgrind printed no 'Collected :' line")
    return int(m.group(1))


def instructions_per_step(mode, window, lo, hi, dtype, tmp):
    # Two runs differing only in their step count: the difference is the
    # steps' own cost, free of process start-up, blob building and warm-up.
    a = instructions(mode, window, lo, dtype, tmp)
    b = instructions(mode, window, hi, dtype, tmp)
    return (b - a) / (hi - lo)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", default="16,64,256")
    ap.add_argument("--dtype", choices=("fp32", "fp16"), default="fp32")
    ap.add_argument("--no-callgrind", action="store_true", help="wall time only")
    args = ap.parse_args(argv)
    try:
        windows = [int(w) for w in args.windows.split(",")]
        if any(w < 1 for w in windows):
            raise ValueError
    except ValueError:
        print(f"bench_kernel: --windows {args.windows!r} is not a list of integers >= 1", file=sys.stderr)
        return 2
    use_cg = not args.no_callgrind
    if use_cg and shutil.which("valgrind") is None:
        print("bench_kernel: valgrind not found (tools/bootstrap.sh installs it); wall time only", file=sys.stderr)
        use_cg = False

    try:
        build()
        print(f"kernel bench, dims 16,4,1,32,2,4, {args.dtype}; per step: stream = one push into a full window,")
        print("recompute = reset + push of the whole window (no KV cache). Numbers only, no assertions.")
        print()
        head = f"{'W':>5} {'stream ns':>11} {'recompute ns':>13} {'ratio':>7}"
        if use_cg:
            head += f" {'stream Ir':>11} {'recompute Ir':>13} {'ratio':>7}"
        print(head)
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for w in windows:
                # Enough steps for a few hundred ms of timing per number.
                s_steps = max(200, 400000 // w)
                r_steps = max(3, 40000 // (w * w) * 10)
                ts = wall_ns_per_step("stream", w, s_steps, args.dtype)
                tr = wall_ns_per_step("recompute", w, r_steps, args.dtype)
                line = f"{w:>5} {ts:>11.0f} {tr:>13.0f} {tr / ts:>6.1f}x"
                row = {"w": w, "ts": ts, "tr": tr}
                if use_cg:
                    ist = instructions_per_step("stream", w, 50, 250, args.dtype, tmp)
                    irc = instructions_per_step("recompute", w, 1, 3, args.dtype, tmp)
                    line += f" {ist:>11.0f} {irc:>13.0f} {irc / ist:>6.1f}x"
                    row.update(ist=ist, irc=irc)
                rows.append(row)
                print(line, flush=True)
        if len(rows) > 1:
            # Linear in W means a constant cost per cached position: the
            # slope between successive windows stays the same.
            key, unit = ("ist", "Ir") if use_cg else ("ts", "ns")
            print()
            print(f"streaming cost per extra cached position ({unit}), between successive windows:")
            for a, b in zip(rows, rows[1:]):
                slope = (b[key] - a[key]) / (b["w"] - a["w"])
                print(f"  W {a['w']} -> {b['w']}: {slope:.1f} per position (fixed part at W {a['w']}: {a[key] - slope * a['w']:.0f})")
        print()
        print(run_bench(["arena", 100]).stdout.strip())
    except BenchError as exc:
        print(f"bench_kernel: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
