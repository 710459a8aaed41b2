#!/usr/bin/env python3
"""Instructions per push on the emulated esp32-class core (target qemu:
LX6 code, windowed ABI, FPU, LLVM) and on the emulated LX106 (target
qemu-lx106: soft-float, gcc), both QEMU -icount shift=0, for dims
16/4/1/32/2/4 at W = 100, FP32 and FP16, beside the host build's callgrind
count for the same blob and frames, and per multiply-accumulate (MACS per
push at a full window).

How the emulated count is made (docs/flash-layout.md): STATS reports push
time in CCOUNT cycles; under -icount shift=0 each instruction is 1 ns of
virtual time and CCOUNT runs at the core's configured clock against it, so
cycles are scaled, not real. The firmware times a loop of exactly 2*n
instructions at boot and prints (loop_insns, ccount); instructions =
cycles * loop_insns / ccount.

These are instruction counts on emulated cores, not ESP32-S3 cycles.
Prints numbers and ratios; asserts nothing.

    python3 tools/bench_icount.py [--fill 100] [--steps 100] [--no-callgrind]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))

import numpy as np  # noqa: E402

from rvne import blob as blobmod, upstream_init, verdict  # noqa: E402
from rvne.device import Device  # noqa: E402
from rvne.errors import RvneError  # noqa: E402
from rvne.targets import build, qemu  # noqa: E402

DIMS = (16, 4, 1, 32, 2, 4)
WINDOW = 100
# Multiply-accumulates of one push at a full window for DIMS (docs/model.md's
# forward pass: projections, scores and weighted sums over W, output head).
MACS = 61_504
BOARDS = ("qemu", "qemu-lx106")
HOST_SRC = os.path.join(ROOT, "tools", "bench_icount_host.c")
HOST_BIN = os.path.join(ROOT, "build", "bench", "bench_icount_host")


class BenchError(Exception):
    pass


def build_host():
    core = os.path.join(ROOT, "firmware", "core")
    srcs = sorted(os.path.join(core, "src", f) for f in os.listdir(os.path.join(core, "src")) if f.endswith(".c"))
    if not build.is_stale(HOST_BIN, srcs + [HOST_SRC]):
        return
    os.makedirs(os.path.dirname(HOST_BIN), exist_ok=True)
    cc = os.environ.get("CC", "cc")
    # -O2 like the lx106 firmware build.
    cmd = [cc, "-std=c99", "-O2", "-g", "-Wall", "-Wextra", "-I", os.path.join(core, "include"),
           HOST_SRC, *srcs, "-lm", "-o", HOST_BIN]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"building the host bench failed: {done.stderr.strip().splitlines()[-1:]}")


def host_instructions(blob_path, frames_path, fill, steps, tmp):
    """callgrind Ir per push over `steps` pushes into a full window."""
    out = os.path.join(tmp, "callgrind.out")
    cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=steady_pushes", f"--callgrind-out-file={out}",
           HOST_BIN, blob_path, frames_path, str(WINDOW), str(fill), str(steps)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"callgrind run failed: {done.stderr.strip().splitlines()[-1:]}")
    with open(out) as f:
        text = f.read()
    m = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
    if not m:
        raise BenchError("no instruction total in callgrind's output")
    return int(m.group(1)) / steps


def emulated(blob, frames, fill, steps, board):
    """(insns/push over the first `fill` pushes, insns/push in a full window,
    insns per CCOUNT tick, logits) on emulated `board`."""
    with qemu.start(blob, icount=True, board=board) as dev:
        cal = dev.calibration
        if cal is None:
            raise BenchError(f"the {board} firmware printed no calibration line; rebuild it")
        per_tick = cal[0] / cal[1]
        with Device(dev.url, timeout=120.0) as d:
            info = d.info()
            if not info.loaded or info.window != WINDOW:
                raise BenchError(f"the emulated board did not load the blob: {info.reason}")
            got_fill = d.run(frames[:fill])
            s1 = d.stats()
            got_steady = d.push(frames[fill:fill + steps])
            s2 = d.stats()
    if s1["clock"] != "cycles":
        raise BenchError(f"the firmware's STATS clock is {s1['clock']}, expected cycles")
    fill_cycles = s1["push_total"] / fill
    steady_cycles = (s2["push_total"] - s1["push_total"]) / steps
    got = np.concatenate([got_fill, got_steady])
    return fill_cycles * per_tick, steady_cycles * per_tick, per_tick, got


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fill", type=int, default=WINDOW, help="pushes that fill the window (default W)")
    ap.add_argument("--steps", type=int, default=100, help="pushes measured in a full window")
    ap.add_argument("--no-callgrind", action="store_true", help="skip the host count")
    args = ap.parse_args(argv)
    if args.fill < 1 or args.steps < 1:
        ap.error("--fill and --steps must be >= 1")
    try:
        for board in BOARDS:
            qemu.check_tools(board)
        callgrind = not args.no_callgrind and shutil.which("valgrind") is not None
        if callgrind:
            build_host()
        frames = np.random.default_rng(4).standard_normal((args.fill + args.steps, DIMS[0])).astype(np.float32)
        print(f"dims {','.join(map(str, DIMS))}  W={WINDOW}  fill={args.fill} steps={args.steps}")
        print("emulated: QEMU lx60 with -icount shift=0; lx6 = code for the ESP32's LX6 (windowed, FPU, "
              "llc-22) on de233_fpu, lx106 = soft-float (gcc); instruction counts, NOT ESP32-S3 cycles")
        print(f"{MACS} MACs per push at a full window")
        print(f"{'dtype':6} {'lx6 insn/push':>14} {'insn/MAC':>9} {'(fill avg)':>11} {'lx106 insn/push':>16} "
              f"{'insn/MAC':>9} {'host insn/push':>15} {'lx106/lx6':>10} {'lx6/host':>9} {'agree':>6}")
        with tempfile.TemporaryDirectory() as tmp:
            frames_path = os.path.join(tmp, "frames.f32")
            frames.astype("<f4").tofile(frames_path)
            for fp16 in (False, True):
                blob = upstream_init.init_blob(dims=DIMS, fp16=fp16)
                blob_path = os.path.join(tmp, "m.rvne")
                with open(blob_path, "wb") as f:
                    f.write(blob)
                runs, ok = {}, True
                for board in BOARDS:
                    fill_i, steady_i, per_tick, got = emulated(blob, frames, args.fill, args.steps, board)
                    runs[board] = (fill_i, steady_i, per_tick)
                    ok = ok and verdict.against_blob(got, blobmod.parse(blob), frames, WINDOW)["ok"]
                host = host_instructions(blob_path, frames_path, args.fill, args.steps, tmp) if callgrind else None
                lx6, lx106 = runs["qemu"][1], runs["qemu-lx106"][1]
                host_s = f"{host:15.0f}" if host else f"{'-':>15}"
                ratio = f"{lx6 / host:9.1f}" if host else f"{'-':>9}"
                print(f"{'fp16' if fp16 else 'fp32':6} {lx6:14.0f} {lx6 / MACS:9.1f} {runs['qemu'][0]:11.0f} "
                      f"{lx106:16.0f} {lx106 / MACS:9.1f} {host_s} {lx106 / lx6:10.1f} {ratio} "
                      f"{'yes' if ok else 'NO':>6}")
        print("calibration: " + ", ".join(f"{b} {runs[b][2]:.3f}" for b in BOARDS)
              + " instructions per CCOUNT tick under -icount shift=0")
        if not callgrind:
            print("host column skipped (--no-callgrind or valgrind missing: apt-get install valgrind)")
    except (BenchError, RvneError) as exc:
        print(f"bench_icount: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
