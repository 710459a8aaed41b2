#!/usr/bin/env python3
"""Instructions per multiply-accumulate of the int8 projection on the emulated esp32-class core.

Issue 35, part 7: the int8 projection kernel (firmware/ports/lx6/dsp/
matvec_i8_mac16.S, MAC16 mula.dd.*.ldinc over prepared int16 weights,
requantization included) beside its C twin on the same prepared weights
and the plain C reference (rvne_matvec_i8_c + rvne_requant_i8_c on the
blob's layout), all built like the firmware (clang-22 / llc-22 -O2,
-mcpu=esp32) and run on QEMU's lx60 de233_fpu under -icount shift=0
(firmware/ports/lx6/bench/kernel_i8.c, `make lx6-bench-i8`). Counts are
net of the call: a call that does nothing costs what each kernel call's
own overhead does, and is subtracted. Calibrated like bench_icount.py
(a loop of known length against CCOUNT).

Beside them, the issue's floor for MAC16 with MULA.DD.*.LDINC over int16
data without requantization, the ratio to it (goal: at most 1.25, with
requantization), and figures quoted for peers on this core (quoted, not
measured here). Prints numbers; asserts nothing.

    python3 tools/bench_int8.py
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_icount import BenchError, Tree, qemu  # noqa: E402

# Issue 35's floor (instructions per MAC, no requantization) per n_in x n_out.
FLOOR = {(256, 64): 1.04, (128, 128): 1.08, (128, 16): 1.08, (64, 64): 1.16, (32, 32): 1.32, (16, 128): 1.63}
GOAL_RATIO = 1.25
# Quoted in issue 35 for this core (per MAC, ranges over these shapes); not measured by this tool.
PEERS = (("ESP-NN generic int8 fully connected", "12.5-19.5"), ("TFLite Micro reference", "11.6-21"),
         ("plain C (issue's)", "10.4-16.8"))
CALIB = re.compile(r"^calib loop_insns=(\d+) loop_ticks=(\d+)$", re.M)
KERNEL = re.compile(r"^kernel n_in=(\d+) n_out=(\d+) name=([\w+]+) calls=(\d+) reps=(\d+) ticks=(\d+)$", re.M)
BAND = re.compile(r"^band n_in=(\d+) n_out=(\d+) outputs=(\d+)$", re.M)


def run():
    """kernel_i8.c's output from this checkout's lx6 (ae32) build."""
    tree = Tree.current()
    elf = os.path.join(tree.build, "lx6", "bench", "kernel_i8.elf")
    done = subprocess.run(tree.make("lx6-bench-i8"), capture_output=True, text=True)
    if done.returncode != 0 or not os.path.isfile(elf):
        raise BenchError(f"`make lx6-bench-i8` failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    cmd = [qemu.QEMU, "-M", "lx60", "-cpu", "de233_fpu", "-semihosting", "-nographic", "-monitor", "none",
           "-serial", "none", "-icount", "shift=0", "-kernel", elf]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise BenchError(f"kernel_i8 exited {done.returncode}: {done.stdout.strip()[-200:]!r}")
    return done.stdout


def parse(text):
    """-> ({(n_in, n_out): {name: instructions per call, net of the call}}, {(n_in, n_out): band outputs})."""
    cal = CALIB.search(text)
    if not cal:
        raise BenchError("kernel_i8 printed no calibration line")
    per_tick = int(cal.group(1)) / int(cal.group(2))
    raw = {}
    for n_in, n_out, name, calls, reps, ticks in KERNEL.findall(text):
        raw.setdefault((int(n_in), int(n_out)), {})[name] = (int(calls), int(ticks) * per_tick / int(reps))
    out = {}
    for shape, runs in raw.items():
        empty = runs["empty"][1]
        out[shape] = {name: insns - calls * empty for name, (calls, insns) in runs.items() if name != "empty"}
    band = {(int(a), int(b)): int(n) for a, b, n in BAND.findall(text)}
    return out, band


def main():
    try:
        counts, band = parse(run())
    except BenchError as e:
        print(f"bench_int8: {e}", file=sys.stderr)
        return 1
    print("int8 projection on the emulated LX6 (QEMU lx60 de233_fpu, -icount shift=0), instructions per MAC "
          "net of the call; asm = matvec_i8_mac16.S with requantization; +x16 adds widening x (rvne_x16_i8_c, "
          "once per input vector: q, k and v share it); twin = rvne_proj_i8_c; plain = rvne_matvec_i8_c + "
          "rvne_requant_i8_c (C, llc -O2 -mcpu=esp32)")
    head = f"{'n_in x n_out':>12} {'asm':>6} {'floor':>6} {'ratio':>6} {'goal':>5} {'+x16':>6} {'twin':>6} " \
           f"{'plain':>6} {'plain/asm':>9} {'band':>5}"
    print(head)
    for shape, floor in FLOOR.items():
        c = counts.get(shape)
        if c is None or "asm" not in c:
            print(f"{shape[0]:>5} x {shape[1]:<4} not measured (no assembly kernel in this build)")
            continue
        macs = shape[0] * shape[1]
        asm = c["asm"] / macs
        ratio = asm / floor
        print(f"{shape[0]:>5} x {shape[1]:<4} {asm:6.3f} {floor:6.2f} {ratio:6.3f} "
              f"{'ok' if ratio <= GOAL_RATIO else 'MISS':>5} {c['asm+x16'] / macs:6.3f} {c['twin'] / macs:6.2f} "
              f"{c['plain'] / macs:6.2f} {c['plain'] / c['asm']:9.1f} {band.get(shape, 0):>5}")
    print(f"goal: asm within {GOAL_RATIO}x of the floor (the floor has no requantization; asm includes it). "
          "band = outputs of one call the float estimate left to the exact C path.")
    print("peers on this core, per MAC, as quoted in issue 35 (not measured by this tool): "
          + "; ".join(f"{name} {fig}" for name, fig in PEERS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
