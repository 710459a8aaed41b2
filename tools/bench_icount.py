#!/usr/bin/env python3
"""Instructions per push on the emulated esp32-class core (target qemu:
LX6 code, windowed ABI, FPU, LLVM), with its assembly kernels and with the
core's C kernels only (the same core, build/lx6-c), and on the emulated
LX106 (target qemu-lx106: soft-float, gcc), all QEMU -icount shift=0, for
dims 16/4/1/32/2/4 at W = 100, FP32 and FP16, beside the host build's
callgrind count for the same blob and frames, and per multiply-accumulate
(MACS per push at a full window).

Where the lx6 instructions go: a profiling build of the same core
(`make lx6-phases`, firmware/ports/lx6/bench/phases.c: the core's phase
markers, rvne/profile.h, read CCOUNT) runs the same blob and frames under
semihosting and splits a push into projections, attention (scores and
weighted sums), softmax/exp, the classifier and the rest, for both kernel
sets. From the assembly kernels' count: an ESP32-S3 ESTIMATE for this head
at W = 100 and 50 frames/s, as percent of one 240 MHz core, assuming one
instruction per cycle and no cache stalls (neither holds exactly: taken
branches, load-use and flash-cache misses cost more; not a measurement).

How the emulated count is made (docs/flash-layout.md): STATS reports push
time in CCOUNT cycles; under -icount shift=0 each instruction is 1 ns of
virtual time and CCOUNT runs at the core's configured clock against it, so
cycles are scaled, not real. The firmware times a loop of exactly 2*n
instructions at boot and prints (loop_insns, ccount); instructions =
cycles * loop_insns / ccount.

On the ESP32-S3's own core (Espressif's QEMU, -machine esp32s3, booted
by the chip's ROM; `make -C firmware s3-bench`, firmware/ports/esp32s3-bare/
bench/push_icount.c): the same blob and frames, each push counted exactly
by the core's ICOUNT register (no -icount), for the core as the ESP-IDF app
builds it (the S3's GCC, -O2) with the assembly kernels and with the C
twins, and for the `qemu` board's LLVM objects (beside that board's
-icount figure: two ways of counting the same code). Each run first checks
ICOUNT on a loop of known length. The ESP32-S3 estimate comes from the
GCC counts when the S3 tools are there (RVNE_QEMU_ESP, xtensa-esp32s3-elf-gcc
on PATH), else from the lx6 ones; rvne plan's numbers (host/rvne/plan.py
MEASURED_INSNS) are the GCC ones.

These are instruction counts on emulated cores, not ESP32-S3 cycles.
Prints numbers and ratios; asserts nothing.

    python3 tools/bench_icount.py [--fill 100] [--steps 100] [--no-callgrind] [--no-lx106] [--no-s3]
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
PHASES = ("proj", "attention", "softmax", "classifier", "rest")   # attention = scores + wsum
S3_HZ = 240e6
S3_FPS = 50
PHASE_LINE = re.compile(r"^phases loop_insns=(\d+) loop_ticks=(\d+) marker_ticks=(\d+) markers=(\d+) steps=(\d+)$", re.M)
PHASE_TICKS = re.compile(r"^phase((?: \w+=\d+)+)$", re.M)
# The S3 bench's builds (label, image under build/esp32s3-bare/bench/), and
# the same GCC builds with the core's phase markers.
S3_BUILDS = (("gcc asm", "gcc-asm"), ("gcc C", "gcc-c"), ("llvm asm", "llvm-asm"))
S3_PROFILES = (("asm", "gcc-asm-prof"), ("C", "gcc-c-prof"))
S3_PHASE_LINE = re.compile(r"^phase((?: \w+=\d+)+)$", re.M)
# Each kernel alone at the default head's shapes (bench/kernel_icount.c),
# with the assembly kernels and with the C twins.
S3_KERNEL_IMAGES = (("asm", "kernels-asm"), ("C", "kernels-c"))
S3_KERNEL_LINE = re.compile(r"^kernel name=(\w+) macs=(\d+) insns=(\d+)$", re.M)


def phase_macs(dims=DIMS, window=WINDOW):
    """Multiply-accumulates of one push per phase at a full window
    (docs/model.md): q/k/v/o projections, scores + weighted sums, classifier."""
    d, nq, nkv, hd, nl, nc = dims
    return {"proj": nl * (2 * d * nq * hd + 2 * d * nkv * hd), "attention": nl * 2 * nq * window * hd,
            "classifier": d * nc}


PHASE_MACS = phase_macs()
S3_CC = "xtensa-esp32s3-elf-gcc"
S3_ICOUNT_LINE = re.compile(r"^icount loop_a=(\d+) insns_a=(\d+) loop_b=(\d+) insns_b=(\d+) read=(\d+)$", re.M)
S3_PUSH_LINE = re.compile(r"^push fill=(\d+) steps=(\d+) insns=(\d+) min=(\d+) max=(\d+)$", re.M)
S3_LOGITS_LINE = re.compile(r"^logits((?: [0-9a-f]{8})+)$", re.M)
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


def parse_phases(text):
    """phases.c's two lines -> (instructions per push of each phase of
    PHASES, instructions per marker). Raises BenchError if they are not there."""
    head, ticks = PHASE_LINE.search(text), PHASE_TICKS.search(text)
    if not head or not ticks:
        raise BenchError(f"the phase profile printed no counts: {text.strip()[-200:]!r}")
    loop_insns, loop_ticks, marker_ticks, _markers, steps = map(int, head.groups())
    if loop_ticks <= 0 or steps <= 0:
        raise BenchError(f"the phase profile's calibration is unusable: {head.group(0)!r}")
    per_tick = loop_insns / loop_ticks
    raw = {k: int(v) for k, v in (kv.split("=") for kv in ticks.group(1).split())}
    try:
        t = {"proj": raw["proj"], "attention": raw["scores"] + raw["wsum"], "softmax": raw["softmax"],
             "classifier": raw["classifier"], "rest": raw["rest"]}
    except KeyError as exc:
        raise BenchError(f"the phase profile has no {exc} count") from None
    return {k: v * per_tick / steps for k, v in t.items()}, marker_ticks * per_tick / 1000


def s3_tools():
    """Espressif's QEMU from $RVNE_QEMU_ESP, or None (with the reason) when
    the S3 part cannot run here."""
    qemu_esp = os.environ.get("RVNE_QEMU_ESP", "")
    if not qemu_esp or not os.access(qemu_esp, os.X_OK):
        return None, "RVNE_QEMU_ESP does not name Espressif's qemu-system-xtensa"
    if shutil.which(S3_CC) is None:
        return None, f"{S3_CC} is not on PATH"
    return qemu_esp, None


def build_s3():
    cmd = ["make", "-C", os.path.join(ROOT, "firmware"), "-j2", "s3-bench"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"`make s3-bench` failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")


def parse_s3(text):
    """push_icount.c's output -> (instructions per push over the counted
    pushes, (min, max), what ICOUNT added to the 2n of a known loop, logits
    of every push as an array). Raises BenchError when a line is missing or
    ICOUNT did not count the known loop exactly."""
    cal, push = S3_ICOUNT_LINE.search(text), S3_PUSH_LINE.search(text)
    if not cal or not push:
        raise BenchError(f"the S3 bench printed no counts: {text.strip()[-200:]!r}")
    loop_a, insns_a, loop_b, insns_b, _read = map(int, cal.groups())
    if loop_b <= loop_a or insns_b - insns_a != 2 * (loop_b - loop_a):
        raise BenchError(f"ICOUNT did not count a loop of known length exactly: {cal.group(0)!r} "
                         f"(expected insns_b - insns_a = {2 * (loop_b - loop_a)})")
    fill, steps, total, lo, hi = map(int, push.groups())
    if steps <= 0:
        raise BenchError(f"the S3 bench counted no push: {push.group(0)!r}")
    rows = [[int(w, 16) for w in m.group(1).split()] for m in S3_LOGITS_LINE.finditer(text)]
    if len(rows) != fill + steps:
        raise BenchError(f"the S3 bench printed {len(rows)} logit lines for {fill + steps} pushes")
    logits = np.array(rows, dtype=np.uint32).view(np.float32)
    return total / steps, (lo, hi), insns_a - 2 * loop_a, logits


def parse_s3_phases(text):
    """A profiling S3 run's phase line -> instructions per counted push of
    each phase of PHASES (markers inside). Raises BenchError if absent."""
    line, push = S3_PHASE_LINE.search(text), S3_PUSH_LINE.search(text)
    if not line or not push:
        raise BenchError(f"the S3 phase profile printed no counts: {text.strip()[-200:]!r}")
    steps = int(push.group(2))
    raw = {k: int(v) for k, v in (kv.split("=") for kv in line.group(1).split())}
    try:
        t = {"proj": raw["proj"], "attention": raw["scores"] + raw["wsum"], "softmax": raw["softmax"],
             "classifier": raw["classifier"], "rest": raw["rest"]}
    except KeyError as exc:
        raise BenchError(f"the S3 phase profile has no {exc} count") from None
    if steps <= 0:
        raise BenchError(f"the S3 phase profile counted no push: {push.group(0)!r}")
    return {k: v / steps for k, v in t.items()}


def s3_run(blob, frames, fill, steps, image, qemu_esp):
    """The output of one S3 bench image (build/esp32s3-bare/bench/IMAGE.img)
    on this blob and these frames."""
    inputs = os.path.join(ROOT, "build", "bench", "s3")     # push_icount.c reads them (semihosting)
    os.makedirs(inputs, exist_ok=True)
    with open(os.path.join(inputs, "model.rvne"), "wb") as f:
        f.write(blob)
    frames[:fill + steps].astype("<f4").tofile(os.path.join(inputs, "frames.f32"))
    with open(os.path.join(inputs, "params.txt"), "w") as f:
        f.write(f"{WINDOW} {fill} {steps}\n")
    return s3_qemu(image, qemu_esp)


def s3_qemu(image, qemu_esp):
    """The output of S3 bench image build/esp32s3-bare/bench/IMAGE.img."""
    img = os.path.join(ROOT, "build", "esp32s3-bare", "bench", image + ".img")
    cmd = [qemu_esp, "-nographic", "-machine", "esp32s3", "-no-reboot", "-semihosting", "-monitor", "none",
           "-serial", "none", "-drive", f"file={img},if=mtd,format=raw,snapshot=on",
           "-global", "driver=timer.esp32s3.timg,property=wdt_disable,value=true"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise BenchError(f"the S3 bench {image} did not finish within 600 s") from None
    if done.returncode != 0:
        raise BenchError(f"the S3 bench {image} exited {done.returncode}: {done.stdout.strip()[-200:]!r}")
    return done.stdout


def s3_kernels(qemu_esp):
    """{(label, kernel): (MACs, instructions)} of one call of each kernel
    (kernel_icount.c), for each of S3_KERNEL_IMAGES."""
    out = {}
    for label, image in S3_KERNEL_IMAGES:
        for name, counts in parse_s3_kernels(s3_qemu(image, qemu_esp)).items():
            out[(label, name)] = counts
    return out


def parse_s3_kernels(text):
    """kernel_icount.c's output -> {kernel: (MACs, instructions)}. Raises
    BenchError when it printed none."""
    rows = S3_KERNEL_LINE.findall(text)
    if not rows:
        raise BenchError(f"the S3 kernel bench printed no counts: {text.strip()[-200:]!r}")
    return {name: (int(macs), int(insns)) for name, macs, insns in rows}


def print_s3_kernels(kernels):
    """kernels = s3_kernels(...): one line per kernel, asm beside C."""
    print("each kernel alone on the S3 core (gcc; the default head's shapes, weights 8 bytes past a 16-byte "
          "boundary as in a blob, activations and caches 16-byte aligned; ICOUNT per call):")
    print(f"{'kernel':16} {'MACs':>6} {'asm':>8} {'insn/MAC':>9} {'C':>8} {'insn/MAC':>9} {'C/asm':>6}")
    for (label, name), (macs, fast) in kernels.items():
        if label != "asm":
            continue
        slow = kernels[("C", name)][1]
        per = (lambda n: f"{n / macs:9.3f}") if macs else (lambda n: f"{'-':>9}")
        print(f"{name:16} {macs:6d} {fast:8d} {per(fast)} {slow:8d} {per(slow)} {slow / fast:6.2f}")


def s3_emulated(blob, frames, fill, steps, image, qemu_esp):
    """parse_s3 of one S3 bench image on this blob and these frames."""
    return parse_s3(s3_run(blob, frames, fill, steps, image, qemu_esp))


def s3_percent(insns_per_push, fps=S3_FPS, hz=S3_HZ):
    """Percent of one core at `hz` that `insns_per_push` at `fps` pushes per
    second takes, at one instruction per cycle."""
    return 100.0 * insns_per_push * fps / hz


def phase_profile(blob, frames, fill, steps, kernels):
    """parse_phases of the lx6 profiling build with `kernels` ("ae32" or
    "c") on this blob and these frames."""
    out = os.path.join(ROOT, "build", "lx6" if kernels == "ae32" else "lx6-c", "prof", "phases.elf")
    cmd = ["make", "-C", os.path.join(ROOT, "firmware"), "-j2", "lx6-phases", f"LX6_KERNELS={kernels}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not os.path.isfile(out):
        raise BenchError(f"`{' '.join(cmd[3:])}` failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    # phases.c reads its inputs from the build directory (semihosting).
    inputs = os.path.join(ROOT, "build", "bench", "phases")
    os.makedirs(inputs, exist_ok=True)
    with open(os.path.join(inputs, "model.rvne"), "wb") as f:
        f.write(blob)
    frames[:fill + steps].astype("<f4").tofile(os.path.join(inputs, "frames.f32"))
    with open(os.path.join(inputs, "params.txt"), "w") as f:
        f.write(f"{WINDOW} {fill} {steps}\n")
    cmd = [qemu.QEMU, "-M", "lx60", "-cpu", "de233_fpu", "-semihosting", "-nographic", "-monitor", "none",
           "-serial", "none", "-icount", "shift=0", "-kernel", out]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise BenchError(f"the phase profile exited {done.returncode}: {done.stdout.strip()[-200:]!r}")
    return parse_phases(done.stdout)


def print_phases(profiles, totals):
    """profiles[(dtype, kernels)] = parse_phases(...); totals[(dtype,
    kernels)] = the firmware's instructions per push."""
    print("where an lx6 push goes (profiling build, same blob and frames; % of its sum; "
          "attention = scores + weighted sums):")
    print(f"{'dtype':6} {'kernels':8} {'sum':>9} " + " ".join(f"{p:>17}" for p in PHASES)
          + f" {'firmware':>9}")
    for (dtype, kernels), (ph, marker) in profiles.items():
        total = sum(ph.values())
        cells = " ".join(f"{ph[p]:9.0f} ({100 * ph[p] / total:4.1f}%)" for p in PHASES)
        print(f"{dtype:6} {kernels:8} {total:9.0f} {cells} {totals[(dtype, kernels)]:9.0f}")
    for dtype in ("fp32", "fp16"):
        fast, slow = profiles.get((dtype, "asm")), profiles.get((dtype, "C"))
        if fast and slow:
            print(f"{dtype} C/asm per phase: " + ", ".join(
                f"{p} {slow[0][p] / fast[0][p]:.1f}x" if fast[0][p] else f"{p} -" for p in PHASES))
    marker = next(iter(profiles.values()))[1]
    print(f"(each phase marker costs about {marker:.0f} instructions, inside the figures; "
          "'firmware' is the board's own count per push, without markers)")


def print_s3(s3, totals, s3_cal):
    """s3[(dtype, label)] = (instructions per push, (min, max)) for each of
    S3_BUILDS, s3[(dtype, "agree")] = the verdict on all their logits."""
    extra = "/".join(str(e) for e in sorted(s3_cal))
    print("ESP32-S3 core: Espressif's QEMU -machine esp32s3 booted by the chip's ROM, each push counted by the "
          f"core's ICOUNT register (exact, no -icount; checked: a loop of 2n instructions reads 2n+{extra}); "
          "gcc = the S3's GCC -O2 as the ESP-IDF app builds it (asm: the .S kernels through GNU as), "
          "llvm = the qemu board's LLVM objects")
    print(f"{'dtype':6} {'gcc asm':>9} {'insn/MAC':>9} {'gcc C':>9} {'insn/MAC':>9} {'C/asm':>6} "
          f"{'llvm asm':>9} {'/lx6 asm':>9} {'min..max gcc asm':>18} {'agree':>6}")
    for dtype in ("fp32", "fp16"):
        fast, spread = s3[(dtype, "gcc asm")]
        slow, llvm = s3[(dtype, "gcc C")][0], s3[(dtype, "llvm asm")][0]
        print(f"{dtype:6} {fast:9.0f} {fast / MACS:9.2f} {slow:9.0f} {slow / MACS:9.2f} {slow / fast:6.2f} "
              f"{llvm:9.0f} {llvm / totals[(dtype, 'asm')]:9.4f} {f'{spread[0]}..{spread[1]}':>18} "
              f"{'yes' if s3[(dtype, 'agree')] else 'NO':>6}")
    print_s3_kernels(s3_kernels(s3_tools()[0]))
    print("where a push goes on the S3 core (gcc builds with the core's phase markers, ICOUNT; markers' own "
          "instructions inside; per MAC where the phase has MACs):")
    print(f"{'dtype':6} {'kernels':8} " + " ".join(f"{p:>19}" for p in PHASES))
    for dtype in ("fp32", "fp16"):
        for label, _ in S3_PROFILES:
            ph = s3[(dtype, "phases", label)]
            cells = " ".join(f"{ph[p]:9.0f} ({ph[p] / PHASE_MACS[p]:5.2f}/MAC)" if p in PHASE_MACS
                             else f"{ph[p]:9.0f}{'':10}" for p in PHASES)
            print(f"{dtype:6} {label:8} {cells}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fill", type=int, default=WINDOW, help="pushes that fill the window (default W)")
    ap.add_argument("--steps", type=int, default=100, help="pushes measured in a full window")
    ap.add_argument("--no-callgrind", action="store_true", help="skip the host count")
    ap.add_argument("--no-lx106", action="store_true", help="skip the soft-float LX106 board")
    ap.add_argument("--no-s3", action="store_true", help="skip the ESP32-S3 core (Espressif's QEMU)")
    args = ap.parse_args(argv)
    if args.fill < 1 or args.steps < 1:
        ap.error("--fill and --steps must be >= 1")
    # (label, board): the lx6 board with its assembly kernels and with the C twins only.
    lx6 = (("asm", "qemu"), ("C", qemu.C_KERNELS))
    try:
        for _, board in lx6:
            qemu.check_tools(board)
        if not args.no_lx106:
            qemu.check_tools("qemu-lx106")
        callgrind = not args.no_callgrind and shutil.which("valgrind") is not None
        if callgrind:
            build_host()
        qemu_esp, s3_missing = (None, "--no-s3") if args.no_s3 else s3_tools()
        if qemu_esp:
            build_s3()
        frames = np.random.default_rng(4).standard_normal((args.fill + args.steps, DIMS[0])).astype(np.float32)
        print(f"dims {','.join(map(str, DIMS))}  W={WINDOW}  fill={args.fill} steps={args.steps}")
        print("emulated: QEMU lx60 with -icount shift=0; lx6 = code for the ESP32's LX6 (windowed, FPU, "
              "llc-22) on de233_fpu, asm = the port's assembly kernels, C = the core's C kernels only "
              "(same core, same run); lx106 = soft-float (gcc); instruction counts, NOT ESP32-S3 cycles")
        print(f"{MACS} MACs per push at a full window")
        print(f"{'dtype':6} {'lx6 asm':>9} {'insn/MAC':>9} {'lx6 C':>9} {'insn/MAC':>9} {'C/asm':>6} "
              f"{'lx106':>10} {'insn/MAC':>9} {'host':>9} {'agree':>6}")
        totals, profiles, cal, s3, s3_cal = {}, {}, {}, {}, set()
        with tempfile.TemporaryDirectory() as tmp:
            frames_path = os.path.join(tmp, "frames.f32")
            frames.astype("<f4").tofile(frames_path)
            for fp16 in (False, True):
                dtype = "fp16" if fp16 else "fp32"
                blob = upstream_init.init_blob(dims=DIMS, fp16=fp16)
                blob_path = os.path.join(tmp, "m.rvne")
                with open(blob_path, "wb") as f:
                    f.write(blob)
                ok = True
                boards = list(lx6) + ([] if args.no_lx106 else [("lx106", "qemu-lx106")])
                for label, board in boards:
                    _, steady_i, per_tick, got = emulated(blob, frames, args.fill, args.steps, board)
                    totals[(dtype, label)] = steady_i
                    cal[label] = per_tick
                    ok = ok and verdict.against_blob(got, blobmod.parse(blob), frames, WINDOW)["ok"]
                for label, kernels in (("asm", "ae32"), ("C", "c")):
                    profiles[(dtype, label)] = phase_profile(blob, frames, args.fill, args.steps, kernels)
                s3_ok = True
                for label, image in S3_BUILDS if qemu_esp else ():
                    per_push, spread, extra, got = s3_emulated(blob, frames, args.fill, args.steps, image, qemu_esp)
                    s3[(dtype, label)] = (per_push, spread)
                    s3_cal.add(extra)
                    s3_ok = s3_ok and verdict.against_blob(got, blobmod.parse(blob), frames, WINDOW)["ok"]
                s3[(dtype, "agree")] = s3_ok
                for label, image in S3_PROFILES if qemu_esp else ():
                    s3[(dtype, "phases", label)] = parse_s3_phases(
                        s3_run(blob, frames, args.fill, args.steps, image, qemu_esp))
                host = host_instructions(blob_path, frames_path, args.fill, args.steps, tmp) if callgrind else None
                fast, slow = totals[(dtype, "asm")], totals[(dtype, "C")]
                lx106 = totals.get((dtype, "lx106"))
                lx106_s = f"{lx106:10.0f} {lx106 / MACS:9.1f}" if lx106 else f"{'-':>10} {'-':>9}"
                host_s = f"{host:9.0f}" if host else f"{'-':>9}"
                print(f"{dtype:6} {fast:9.0f} {fast / MACS:9.2f} {slow:9.0f} {slow / MACS:9.2f} "
                      f"{slow / fast:6.2f} {lx106_s} {host_s} {'yes' if ok else 'NO':>6}")
        print("calibration: " + ", ".join(f"{b} {v:.3f}" for b, v in cal.items())
              + " instructions per CCOUNT tick under -icount shift=0")
        if not callgrind:
            print("host column skipped (--no-callgrind or valgrind missing: apt-get install valgrind)")
        print()
        if qemu_esp:
            print_s3(s3, totals, s3_cal)
        else:
            print(f"ESP32-S3 core skipped: {s3_missing} (README: Install)")
        print()
        print_phases(profiles, totals)
        print()
        source = "the S3 core's GCC counts above" if qemu_esp else "the lx6 counts above"
        print(f"ESP32-S3 ESTIMATE, this head at W={WINDOW} and {S3_FPS} frames/s on one {S3_HZ / 1e6:.0f} MHz "
              f"core: {source} taken as cycles, assuming ONE INSTRUCTION PER CYCLE AND NO CACHE "
              "STALLS (not a measurement)")
        for dtype in ("fp32", "fp16"):
            if qemu_esp:
                fast, slow = s3[(dtype, "gcc asm")][0], s3[(dtype, "gcc C")][0]
            else:
                fast, slow = totals[(dtype, "asm")], totals[(dtype, "C")]
            print(f"  {dtype}: {s3_percent(fast):.1f}% of the core with the assembly kernels "
                  f"({s3_percent(slow):.1f}% with the C kernels)")
    except (BenchError, RvneError) as exc:
        print(f"bench_icount: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
