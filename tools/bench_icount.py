#!/usr/bin/env python3
"""Instructions per push on the emulated cores, today's kernels beside this tree's in one run.

Whole push (issue 24): the emulated esp32-class core (target qemu: LX6
code, windowed ABI, FPU, LLVM) with its assembly kernels, for the default
head 16,4,1,32,2,4 at W = 100 (the goals' case: at most 1.6 instructions
per MAC FP32, 1.7 FP16), at W = 32 and W = 256, and for a 128,8,2,16,2,8
head, FP32 and FP16: instructions per push and per MAC, with each phase's
instructions per unit of its work (projections, attention and classifier
per MAC, softmax per exponential), FP16 expanded to FP32 at load (the
boards' and the app's default where the weights fit) and decoded at every
push, and the same heads on the ESP32-S3's core where they fit its bare
bench (below), beside the BASELINE: the same lx6 runs on
the firmware of commit BASELINE_REV (main before issue 24's kernels),
exported from this clone's git and built in build/bench/baseline-<commit>/
(kept for the next run). Without git or that commit (an exported or shallow
copy) one line says so and the table has today's counts alone.

Then, for the default head: the same core with the core's C kernels only
(build/lx6-c) and the emulated LX106 (target qemu-lx106: soft-float, gcc),
all QEMU -icount shift=0, beside the host build's callgrind count for the
same blob and frames; where the lx6 instructions go, from a profiling
build of the same core (`make lx6-phases`, firmware/ports/lx6/bench/
phases.c: the core's phase markers, rvne/profile.h, read CCOUNT) under
semihosting, for both kernel sets; and an ESP32-S3 ESTIMATE for this head
at 50 frames/s, as percent of one 240 MHz core, assuming one instruction
per cycle and no cache stalls (neither holds exactly: taken branches,
load-use and flash-cache misses cost more; not a measurement).

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
on PATH), else from the lx6 ones.

rvne plan's numbers: `--record` writes host/rvne/icount.json (rvne.icount)
from this run: the S3 core's GCC counts and the lx6 board's, each split by
phase, for the default head, with the commit and git tree ids of the
firmware measured and the toolchain; plan scales them phase by phase to
any head and window (the whole-push table's 'plan est' column shows how
close that scaling comes on the lx6 core). Every run ends with one line
saying whether that record still matches the firmware.

These are instruction counts on emulated cores, not ESP32-S3 cycles.
Prints numbers and ratios; asserts nothing.

    python3 tools/bench_icount.py [--steps 100] [--baseline REV | --no-baseline] [--default-head-only]
                                  [--no-callgrind] [--no-lx106] [--no-s3] [--record]
"""

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections import namedtuple
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "host"))

import numpy as np  # noqa: E402

from rvne import icount, plan  # noqa: E402
from rvne.errors import RvneError  # noqa: E402
from rvne.io import blob as blobmod, upstream_init  # noqa: E402
from rvne.io.atomic import write_atomic  # noqa: E402
from rvne.link.device import Device  # noqa: E402
from rvne.model import verdict  # noqa: E402
from rvne.model.contract import Dims, expected_weights_len  # noqa: E402
from rvne.targets import build, qemu  # noqa: E402

DIMS = (16, 4, 1, 32, 2, 4)
WINDOW = 100
# Multiply-accumulates of one push at a full window for DIMS (docs/model.md's
# forward pass: projections, scores and weighted sums over W, output head).
MACS = 61_504
# The heads and windows of the whole-push table (issue 24): the default head
# at W = 100 first (the goals' case), then other windows and a wider head.
CONFIGS = ((DIMS, WINDOW), (DIMS, 32), (DIMS, 256), ((128, 8, 2, 16, 2, 8), WINDOW))
# How a push runs the weights (rvne.icount.DTYPES): FP32; FP16 expanded to
# FP32 at load (the boards' default when they fit); FP16 decoded at every
# push (when they do not).
MODES = ("fp32", "fp16", "fp16_decode")
# The baseline (before the expansion) decoded FP16 at every push, its only way.
BASELINE_MODE = {"fp16_decode": "fp16"}
# The S3 bench's counts rvne plan takes (label in S3_BUILDS, in
# S3_PROFILES, kernels in the record).
RECORD_S3 = (("gcc asm", "asm", "asm"), ("gcc C", "C", "c"))
# push_icount.c says how it ran FP16 weights: "weights expanded|decoded|fp32".
S3_WEIGHTS_LINE = re.compile(r"^weights (expanded|decoded|fp32)$", re.M)
# What the S3 bench's heap takes (rom_boot.ld leaves about 330 KB of SRAM
# for data; its code, stacks and buffers take the rest): measured, with a
# margin: 253 KB failed, 212 KB ran.
S3_BENCH_RAM = 224 * 1024
# Whole-push goals at the first config, instructions per MAC on the lx6 core.
GOALS = {"fp32": 1.6, "fp16": 1.7}
# Today's kernels: main as it was before issue 24's kernel work, measured in
# the same run from its own sources (baseline_tree).
BASELINE_REV = "07c68f360ef65eb31d57a1c12d19887bb914ccfb"
BASELINE_WHAT = "main before issue 24's kernels"
# The bench harnesses: they run the pushes, their own code is not counted.
HARNESSES = ("firmware/ports/lx6/bench", "firmware/ports/esp32s3-bare/bench", "firmware/xtensa/bench")
# What a push's instruction count depends on: --record names their git tree
# ids, and the bench says when they changed since (stale_sources).
MEASURED_SOURCES = ("firmware/core", "firmware/kernels", "firmware/ports/lx6", "firmware/xtensa/rt",
                    "firmware/xtensa/board", "firmware/xtensa/windowed", "firmware/xtensa/libc",
                    "firmware/xtensa/semihost", "firmware/ports/esp32s3-bare")
BOARDS = ("qemu", "qemu-lx106")
PHASES = icount.PHASES   # attention = scores + wsum
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
    (rvne.icount.phase_units): q/k/v/o projections, scores + weighted sums,
    classifier."""
    units = icount.phase_units(dims, window)
    return {p: units[p] for p in ("proj", "attention", "classifier")}


PHASE_MACS = phase_macs()
S3_CC = "xtensa-esp32s3-elf-gcc"
S3_ICOUNT_LINE = re.compile(r"^icount loop_a=(\d+) insns_a=(\d+) loop_b=(\d+) insns_b=(\d+) read=(\d+)$", re.M)
S3_PUSH_LINE = re.compile(r"^push fill=(\d+) steps=(\d+) insns=(\d+) min=(\d+) max=(\d+)$", re.M)
S3_LOGITS_LINE = re.compile(r"^logits((?: [0-9a-f]{8})+)$", re.M)
HOST_SRC = os.path.join(ROOT, "tools", "bench_icount_host.c")
HOST_BIN = os.path.join(ROOT, "build", "bench", "bench_icount_host")


class BenchError(Exception):
    pass


class Unavailable(BenchError):
    """The baseline cannot be built here (no git, the commit not in this clone)."""


@dataclass(frozen=True)
class Tree:
    """A source tree whose lx6 firmware the bench builds and runs: this
    checkout, or the baseline exported from git (firmware/, host/ and
    partitions.csv under `root`, products under `build`)."""
    label: str
    root: str
    build: str

    @classmethod
    def current(cls):
        return cls("this tree", ROOT, os.path.join(ROOT, "build"))

    def make(self, *goals):
        return ["make", "-C", os.path.join(self.root, "firmware"), "-j2", f"BUILD={self.build}",
                f"RVNE_HOST={os.path.join(self.root, 'host')}", f"PYTHON={sys.executable}", *goals]

    @property
    def image(self):
        """The `qemu` board's flash image, or None for this checkout (then
        rvne.targets.qemu builds and finds it as for any check)."""
        return None if self.root == ROOT else os.path.join(self.build, "lx6", "flash.img")


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True)


def baseline_tree(rev):
    """The Tree of commit `rev`: its firmware, host package and partition
    table exported from this clone's git into build/bench/baseline-<rev>/ and
    its lx6 firmware and profiling build made there, both kept for the next
    run (a commit does not change). Unavailable when git or the commit is
    missing (an exported or shallow copy), BenchError when it does not build."""
    if shutil.which("git") is None:
        raise Unavailable("git is not installed")
    found = git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if found.returncode != 0:
        raise Unavailable(f"commit {rev[:12]} is not in this clone's history (not a git checkout, or a shallow "
                          "clone: `git fetch --unshallow`)")
    full = found.stdout.decode().strip()
    base = os.path.join(ROOT, "build", "bench", f"baseline-{full[:12]}")
    src, done_mark = os.path.join(base, "src"), os.path.join(base, "src", ".exported")
    if not os.path.isfile(done_mark):
        shutil.rmtree(src, ignore_errors=True)
        os.makedirs(src)
        archive = git("archive", "--format=tar", full, "firmware", "host", "partitions.csv")
        if archive.returncode != 0:
            raise Unavailable(f"git archive {full[:12]} failed: {archive.stderr.decode().strip()[-200:]}")
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            # Our own history, but a tar is still not trusted with paths outside src.
            tar.extractall(src, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        open(done_mark, "w").close()
    tree = Tree(f"commit {full[:12]}", src, os.path.join(base, "build"))
    print(f"bench_icount: building the baseline's lx6 firmware in {os.path.relpath(base, ROOT)} "
          "(once per commit)", file=sys.stderr)
    done = subprocess.run(tree.make("lx6", "lx6-phases"), capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"building {tree.label} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    return tree


def build_host():
    core = os.path.join(ROOT, "firmware", "core")
    srcs = sorted(os.path.join(core, "src", f) for f in os.listdir(os.path.join(core, "src")) if f.endswith(".c"))
    if not build.is_stale(HOST_BIN, srcs + [HOST_SRC]):
        return
    os.makedirs(os.path.dirname(HOST_BIN), exist_ok=True)
    cc = os.environ.get("CC", "cc")
    # -O2 like the lx106 firmware build.
    cmd = [cc, "-std=c99", "-O2", "-g", "-Wall", "-Wextra", "-I", os.path.join(core, "include"),
           "-I", os.path.join(ROOT, "firmware", "kernels"), HOST_SRC, *srcs, "-lm", "-o", HOST_BIN]
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


def emulated(blob, frames, fill, steps, board, window=WINDOW, image=None, info=None):
    """(insns/push over the first `fill` pushes, insns/push in a full window,
    insns per CCOUNT tick, logits) on emulated `board` at W = `window`,
    booting `image` (default: this tree's build). `info`, a dict, gets the
    board's INFO fields (arena bytes, weights)."""
    with qemu.start(blob, icount=True, board=board, window=window, image=image) as dev:
        cal = dev.calibration
        if cal is None:
            raise BenchError(f"the {board} firmware printed no calibration line; rebuild it")
        per_tick = cal[0] / cal[1]
        with Device(dev.url, timeout=120.0) as d:
            got_info = d.info()
            if not got_info.loaded or got_info.window != window:
                raise BenchError(f"the emulated board did not load the blob at W={window}: {got_info.reason}")
            if info is not None:
                info.update(got_info.to_json(), fields=got_info.fields)
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


def parse_phases(text, split=False):
    """phases.c's two lines -> (instructions per push of each phase of
    PHASES, instructions per marker, markers per push); `split`: the
    phases as the markers name them (scores, softmax and wsum apart). Raises
    BenchError if they are not there."""
    head, ticks = PHASE_LINE.search(text), PHASE_TICKS.search(text)
    if not head or not ticks:
        raise BenchError(f"the phase profile printed no counts: {text.strip()[-200:]!r}")
    loop_insns, loop_ticks, marker_ticks, markers, steps = map(int, head.groups())
    if loop_ticks <= 0 or steps <= 0:
        raise BenchError(f"the phase profile's calibration is unusable: {head.group(0)!r}")
    per_tick = loop_insns / loop_ticks
    raw = {k: int(v) for k, v in (kv.split("=") for kv in ticks.group(1).split())}
    try:
        t = dict(raw) if split else {"proj": raw["proj"], "attention": raw["scores"] + raw["wsum"], "softmax": raw["softmax"],
             "classifier": raw["classifier"], "rest": raw["rest"]}
    except KeyError as exc:
        raise BenchError(f"the phase profile has no {exc} count") from None
    return {k: v * per_tick / steps for k, v in t.items()}, marker_ticks * per_tick / 1000, markers / steps


def unmarked(profile):
    """A push's instructions from its profile (parse_phases) without the
    markers' own: what the firmware itself runs, within a few."""
    phases, marker, per_push = profile
    return sum(phases.values()) - marker * per_push


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


def s3_run(blob, frames, fill, steps, image, qemu_esp, window=WINDOW, fp16_expand=1):
    """The output of one S3 bench image (build/esp32s3-bare/bench/IMAGE.img)
    on this blob and these frames at W = `window`, FP16 weights expanded to
    FP32 at load as the app does (`fp16_expand` 1) or decoded (0)."""
    inputs = os.path.join(ROOT, "build", "bench", "s3")     # push_icount.c reads them (semihosting)
    os.makedirs(inputs, exist_ok=True)
    with open(os.path.join(inputs, "model.rvne"), "wb") as f:
        f.write(blob)
    frames[:fill + steps].astype("<f4").tofile(os.path.join(inputs, "frames.f32"))
    with open(os.path.join(inputs, "params.txt"), "w") as f:
        f.write(f"{window} {fill} {steps} {fp16_expand}\n")
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


def phase_profile(blob, frames, fill, steps, kernels, window=WINDOW, tree=None, fp16_expand=1, split=False):
    """parse_phases of the lx6 profiling build with `kernels` ("ae32" or
    "c") of `tree` (default: this checkout) on this blob and these frames;
    FP16 weights expanded to FP32 at load as the boards do by default
    (`fp16_expand` 1) or decoded at every push (0; a tree older than the
    expansion always decodes)."""
    tree = tree or Tree.current()
    out = os.path.join(tree.build, "lx6" if kernels == "ae32" else "lx6-c", "prof", "phases.elf")
    cmd = tree.make("lx6-phases", f"LX6_KERNELS={kernels}")
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not os.path.isfile(out):
        raise BenchError(f"`make lx6-phases LX6_KERNELS={kernels}` in {tree.label} failed: "
                         f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    # phases.c reads its inputs from its build directory (semihosting).
    inputs = os.path.join(tree.build, "bench", "phases")
    os.makedirs(inputs, exist_ok=True)
    with open(os.path.join(inputs, "model.rvne"), "wb") as f:
        f.write(blob)
    frames[:fill + steps].astype("<f4").tofile(os.path.join(inputs, "frames.f32"))
    with open(os.path.join(inputs, "params.txt"), "w") as f:
        f.write(f"{window} {fill} {steps} {fp16_expand}\n")
    cmd = [qemu.QEMU, "-M", "lx60", "-cpu", "de233_fpu", "-semihosting", "-nographic", "-monitor", "none",
           "-serial", "none", "-icount", "shift=0", "-kernel", out]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise BenchError(f"the phase profile exited {done.returncode}: {done.stdout.strip()[-200:]!r}")
    return parse_phases(done.stdout, split)


def print_phases(profiles, totals):
    """profiles[(dtype, kernels)] = parse_phases(...); totals[(dtype,
    kernels)] = the firmware's instructions per push."""
    print("where an lx6 push goes (profiling build, same blob and frames; % of its sum; "
          "attention = scores + weighted sums):")
    print(f"{'dtype':6} {'kernels':8} {'sum':>9} " + " ".join(f"{p:>17}" for p in PHASES)
          + f" {'firmware':>9}")
    for (dtype, kernels), (ph, _, _) in profiles.items():
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


def head_name(dims):
    return ",".join(map(str, dims))


def run_frames(dims, window, steps):
    """The frames of one run: a window's worth to fill it, then `steps`
    counted pushes (for the default head the frames every run used)."""
    return np.random.default_rng(4).standard_normal((window + steps, dims[0])).astype(np.float32)


# One lx6 measurement: instructions per push in a full window, parse_phases
# of the profiling build, the verdict on the board's logits (None: no board
# run), the board's instructions per CCOUNT tick.
Run = namedtuple("Run", "push profile ok per_tick")


def lx6_config(tree, dims, window, mode, steps):
    """The Run of `tree`'s lx6 assembly kernels for head `dims` at W =
    `window` in `mode` (MODES): the board's own count, or for FP16 decoded
    at every push, which the boards do only when the expansion does not
    fit, the profiling build's without its markers."""
    blob = upstream_init.init_blob(dims=dims, fp16=mode != "fp32")
    frames = run_frames(dims, window, steps)
    profile = phase_profile(blob, frames, window, steps, "ae32", window, tree, fp16_expand=int(mode != "fp16_decode"))
    if mode == "fp16_decode":
        return Run(unmarked(profile), profile, None, None)
    _, push, per_tick, got = emulated(blob, frames, window, steps, "qemu", window, tree.image)
    return Run(push, profile, verdict.against_blob(got, blobmod.parse(blob), frames, window)["ok"], per_tick)


def s3_fits(dims, window, mode, steps=100):
    """Whether the S3 bench's heap holds this head: the blob and frames it
    reads, the arena and any expanded weights (rvne.plan's formulas)."""
    fp16 = mode != "fp32"
    need = plan.blob_bytes(dims, fp16) + plan.arena_bytes(dims, window) + 4 * (window + steps) * dims[0]
    expanded = 2 * expected_weights_len(Dims.of(dims), True) if mode == "fp16" else 0
    return need + expanded <= S3_BENCH_RAM


def s3_config(dims, window, mode, steps, qemu_esp):
    """(instructions per push in a full window, the verdict on its logits)
    on the S3 core, the app's GCC build with its assembly kernels, or None
    when the head does not fit the bench's RAM (s3_fits) or the bench
    cannot run the mode."""
    if not s3_fits(dims, window, mode, steps):
        return None
    blob = upstream_init.init_blob(dims=dims, fp16=mode != "fp32")
    frames = run_frames(dims, window, steps)
    text = s3_run(blob, frames, window, steps, "gcc-asm", qemu_esp, window, int(mode != "fp16_decode"))
    if mode == "fp16" and s3_weights(text) is None:
        return None         # a bench older than the expansion: it can only decode
    want = {"fp32": {"fp32", None}, "fp16": {"expanded"}, "fp16_decode": {"decoded", None}}[mode]
    if s3_weights(text) not in want:
        raise BenchError(f"the S3 bench ran {mode} weights {s3_weights(text) or '(not said)'}: rebuild it "
                         "(make -C firmware s3-bench)")
    push, _, _, got = parse_s3(text)
    return push, verdict.against_blob(got, blobmod.parse(blob), frames, window)["ok"]


def per_unit(phases, dims, window):
    """Each phase's instructions per unit of its work (icount.phase_units:
    per MAC, per exponential, per activation element)."""
    units = icount.phase_units(dims, window)
    return {p: phases[p] / units[p] for p in PHASES}


def goal_status(mode, per_mac, s3_per_mac=None):
    goal = GOALS[mode]
    out = f"<= {goal}: {'met' if per_mac <= goal else 'NOT MET'}"
    if s3_per_mac is not None:
        out += f", S3 {'met' if s3_per_mac <= goal else 'NOT MET'}"
    return out


def lx6_record(runs, key):
    """The icount record of one lx6 measurement at the first config, for
    icount.estimate."""
    dims, window = CONFIGS[0]
    return {"dims": list(dims), "window": window,
            "counts": {"lx6": {"asm": {m: {"push": runs[(key, dims, window, m)].push,
                                            "phases": runs[(key, dims, window, m)].profile[0]}
                                        for m in MODES if (key, dims, window, m) in runs}}}}


def print_whole(runs, base, base_missing):
    """The whole-push table: runs[(tree key, dims, window, mode)] =
    lx6_config(...), tree key "now" or "base" (the baseline has one FP16
    mode: it decoded at every push)."""
    print("whole push on the lx6 core, the assembly kernels: the board's own count per push in a full window "
          "(-icount), per MAC; fp16 = FP16 weights expanded to FP32 at load (the boards' default where they "
          "fit), fp16_decode = decoded at every push (*: the profiling build's count less its markers'); "
          "now/base < 1 is fewer instructions; 'plan est' is rvne.icount.estimate from this run's first rows "
          "over the count (how rvne plan scales a measurement to other heads and windows)")
    print(f"baseline: {base.label} ({BASELINE_WHAT}), built from its own sources in the same run" if base else
          f"baseline ({BASELINE_WHAT}) not measured: {base_missing}")
    print("S3 = the same head on the ESP32-S3's core (the app's GCC build, its assembly kernels, ICOUNT; "
          "-: not measured, or the head does not fit the bare-metal bench's RAM)")
    print(f"{'head':16} {'W':>4} {'dtype':11} {'MACs':>7} {'baseline':>9} {'insn/MAC':>8} {'now':>10} "
          f"{'insn/MAC':>8} {'now/base':>8} {'plan est':>8} {'S3':>9} {'insn/MAC':>8}  {'goal (lx6, S3)':28} "
          f"{'agree':>5}")
    plan_rec = lx6_record(runs, "now")
    for dims, window in CONFIGS:
        macs = icount.macs(dims, window)
        for mode in MODES:
            now = runs.get(("now", dims, window, mode))
            if now is None:
                continue
            old = runs.get(("base", dims, window, BASELINE_MODE.get(mode, mode)))
            est = icount.estimate(plan_rec, dims, window, mode, core="lx6")
            old_s = f"{old.push:9.0f} {old.push / macs:8.2f}" if old else f"{'-':>9} {'-':>8}"
            ratio = f"{now.push / old.push:8.3f}" if old else f"{'-':>8}"
            s3 = runs.get(("s3", dims, window, mode))
            s3_s = f"{s3[0]:9.0f} {s3[0] / macs:8.2f}" if s3 else f"{'-':>9} {'-':>8}"
            goal = (goal_status(mode, now.push / macs, s3[0] / macs if s3 else None)
                    if (dims, window) == CONFIGS[0] and mode in GOALS else "")
            oks = [r for r in (now.ok, old.ok if old else None, s3[1] if s3 else None) if r is not None]
            agree = "-" if not oks else "yes" if all(oks) else "NO"
            count = f"{now.push:9.0f}{'*' if now.ok is None else ' '}"
            print(f"{head_name(dims):16} {window:4} {mode:11} {macs:7} {old_s} {count} "
                  f"{now.push / macs:8.2f} {ratio} {est / now.push:8.3f} {s3_s}  {goal:28} {agree:>5}")
    print("per phase (profiling builds, markers inside): proj, attention (scores + weighted sums) and classifier "
          "instructions per MAC, softmax per exponential (max, exp, sum, scale), rest per activation element; "
          "baseline -> now")
    print(f"{'head':16} {'W':>4} {'dtype':11} " + " ".join(f"{p:>15}" for p in PHASES))
    for dims, window in CONFIGS:
        for mode in MODES:
            now = runs.get(("now", dims, window, mode))
            if now is None:
                continue
            old = runs.get(("base", dims, window, BASELINE_MODE.get(mode, mode)))
            new_u = per_unit(now.profile[0], dims, window)
            old_u = per_unit(old.profile[0], dims, window) if old else None
            cells = " ".join(f"{(f'{old_u[p]:.2f}' if old_u else '-'):>6} -> {new_u[p]:5.2f}" for p in PHASES)
            print(f"{head_name(dims):16} {window:4} {mode:11} {cells}")


def measure_decode(runs, frames, steps, qemu_esp):
    """FP16 decoded at every push (what a port does when the expansion does
    not fit), default head: {(core, kernels): (instructions per push,
    phases)}, printed beside the expanded counts. The lx6 figures come
    from its profiling builds, the S3's from its bench images asked to
    decode (S3_WEIGHTS_LINE says they did)."""
    blob = upstream_init.init_blob(dims=DIMS, fp16=True)
    fast = runs[("now", DIMS, WINDOW, "fp16_decode")]
    slow = phase_profile(blob, frames, WINDOW, steps, "c", fp16_expand=0)
    out = {("lx6", "asm"): (fast.push, fast.profile[0]), ("lx6", "c"): (unmarked(slow), slow[0])}
    ok = True
    for (label, image), (_, plabel, kernels) in zip(S3_BUILDS[:2], RECORD_S3) if qemu_esp else ():
        text = s3_run(blob, frames, WINDOW, steps, image, qemu_esp, fp16_expand=0)
        if s3_weights(text) not in ("decoded", None):     # None: a bench older than the expansion decodes
            raise BenchError(f"the S3 bench {image} did not decode the FP16 weights when asked (weights "
                             f"{s3_weights(text) or 'not reported'}): rebuild it (make -C firmware s3-bench)")
        per_push, _, _, got = parse_s3(text)
        ok = ok and verdict.against_blob(got, blobmod.parse(blob), frames, WINDOW)["ok"]
        prof = dict(S3_PROFILES)[plabel]
        out[("esp32s3", kernels)] = (per_push, parse_s3_phases(
            s3_run(blob, frames, WINDOW, steps, prof, qemu_esp, fp16_expand=0)))
    print("FP16 weights decoded at every push (where the expansion does not fit; fp16 above: expanded at load), "
          f"default head, W={WINDOW}:")
    for (core, kernels), (push, _) in out.items():
        print(f"  {core:8} {kernels:4} {push:9.0f} ({push / MACS:.2f} per MAC)")
    if qemu_esp:
        print(f"  S3 logits {'agree' if ok else 'DO NOT AGREE'} with the float64 reference (docs/model.md)")
    return out


def s3_weights(text):
    """How an S3 bench run says it ran the weights, or None (a bench older
    than the FP16 expansion, which always decoded)."""
    m = S3_WEIGHTS_LINE.search(text)
    return m.group(1) if m else None


def tool_version(cmd):
    """The first line `cmd --version` prints, or "" when it does not run."""
    try:
        done = subprocess.run([cmd, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout or done.stderr).strip().splitlines()[0] if done.returncode == 0 else ""


def provenance():
    """(commit, date, sources) for the record: the last commit that changed
    firmware/ outside the bench harnesses, and its date, and the git tree id of each directory of
    MEASURED_SOURCES (they survive a rebase; a change under one gives it a
    new id). BenchError unless this is a git checkout with firmware/
    committed: the record names what it measured."""
    head = git("rev-parse", "HEAD") if shutil.which("git") else None
    if head is None or head.returncode != 0:
        raise BenchError("--record needs a git checkout: the record names the commit it measured")
    if git("status", "--porcelain", "--", "firmware").stdout.strip():
        raise BenchError("--record measures committed firmware only: commit (or stash) the changes under "
                         "firmware/ first")
    # The bench harnesses (bench/ under the ports) run the pushes but are not measured.
    last = git("log", "-1", "--format=%H %cI", "--", "firmware", *(f":(exclude){p}" for p in HARNESSES))
    return *last.stdout.decode().split(), source_trees("HEAD")


def source_trees(rev):
    """{directory: git tree id at `rev`} of MEASURED_SOURCES."""
    trees = {}
    for path in MEASURED_SOURCES:
        got = git("rev-parse", f"{rev}:{path}")
        if got.returncode != 0:
            raise BenchError(f"{path} is not in commit {rev}")
        trees[path] = got.stdout.decode().strip()
    return trees


def stale_sources(record):
    """The directories of MEASURED_SOURCES whose committed content differs
    from what `record` measured (empty when it is current), or None when
    git cannot tell."""
    if shutil.which("git") is None or git("rev-parse", "HEAD").returncode != 0:
        return None
    try:
        now = source_trees("HEAD")
    except BenchError:
        return None
    return sorted(p for p in now if record.get("sources", {}).get(p) != now[p])


def make_record(runs, lx6_c, s3, decode, commit, date, sources, steps):
    """The icount.json record (rvne.icount) of this run's first config: the
    S3 core's GCC counts (plan's source) and the lx6 board's, FP32, FP16
    expanded at load and (`decode`: measure_decode) FP16 decoded at every
    push."""
    dims, window = CONFIGS[0]
    counts = {"esp32s3": {}, "lx6": {}}
    for label, plabel, kernels in RECORD_S3:
        counts["esp32s3"][kernels] = {dt: (s3[(dt, label)][0], s3[(dt, "phases", plabel)]) for dt in ("fp32", "fp16")}
    counts["lx6"]["asm"] = {dt: (runs[("now", dims, window, dt)].push, runs[("now", dims, window, dt)].profile[0])
                            for dt in ("fp32", "fp16")}
    counts["lx6"]["c"] = {dt: (lx6_c[dt][0], lx6_c[dt][1][0]) for dt in ("fp32", "fp16")}
    for (core, kernels), measured in decode.items():
        counts[core][kernels]["fp16_decode"] = measured
    for core in counts.values():
        for by_dtype in core.values():
            for dt, (push, phases) in by_dtype.items():
                by_dtype[dt] = {"push": round(push), "phases": {p: round(v, 1) for p, v in phases.items()}}
    record = {"schema": icount.SCHEMA, "written_by": "tools/bench_icount.py --record", "commit": commit,
              "date": date, "sources": sources, "dims": list(dims), "window": window, "macs": icount.macs(dims, window),
              "fill": window, "steps": steps,
              "toolchain": {"esp32s3": tool_version(S3_CC), "qemu_esp32s3": tool_version(os.environ["RVNE_QEMU_ESP"]),
                            "lx6": tool_version("llc-22"), "qemu_lx6": tool_version(qemu.QEMU)},
              "counts": counts}
    record["sha256"] = icount.digest(record)
    return icount.check(record)


def recorded_s3():
    """The S3 counts as recorded, labelled as such: this run did not measure them."""
    try:
        record = icount.load()
    except RvneError as exc:
        return f"  no recorded S3 counts: {exc}"
    asm = record["counts"]["esp32s3"]["asm"]
    cells = ", ".join(f"{k} {v['push']:,} ({v['push'] / record['macs']:.2f}/MAC)" for k, v in sorted(asm.items()))
    return (f"  RECORDED, not measured in this run: the S3 core's counts per push with the assembly kernels, "
            f"{cells}, measured at commit {record['commit'][:12]} on {record['date'][:10]} "
            f"({os.path.relpath(icount.PATH, ROOT)}; README, \"What was verified where\")")


def record_status():
    """One line on icount.json (rvne plan's numbers) against this tree."""
    name = os.path.relpath(icount.PATH, ROOT)
    try:
        record = icount.load()
    except RvneError as exc:
        return f"{name} is unusable: {exc}"
    stale = stale_sources(record)
    state = ("git cannot tell whether it is current" if stale is None else
             f"STALE: {', '.join(stale)} changed since; rerun with --record" if stale else "current")
    return f"not recorded (--record rewrites it); {name} measured the firmware as of {record['commit'][:12]}: {state}"


def write_record(record, path=None):
    path = path or icount.PATH
    write_atomic(path, (json.dumps(record, indent=1, sort_keys=True) + "\n").encode(), prefix=".icount-")
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=f"The baseline is commit {BASELINE_REV[:12]} ({BASELINE_WHAT}), exported from this clone's git "
               "into build/bench/baseline-<commit>/ and built there (kept for the next run); without git or that "
               "commit (an exported or shallow copy) the bench says so in one line and prints today's counts alone.")
    ap.add_argument("--steps", type=int, default=100, help="pushes measured in a full window (default 100)")
    ap.add_argument("--baseline", metavar="REV", default=BASELINE_REV,
                    help=f"the commit to measure beside this tree (default {BASELINE_REV[:12]}, {BASELINE_WHAT})")
    ap.add_argument("--no-baseline", action="store_true", help="skip the baseline")
    ap.add_argument("--default-head-only", action="store_true",
                    help=f"only dims {head_name(DIMS)} at W={WINDOW}, not the other windows and heads")
    ap.add_argument("--no-callgrind", action="store_true", help="skip the host count")
    ap.add_argument("--no-lx106", action="store_true", help="skip the soft-float LX106 board")
    ap.add_argument("--no-s3", action="store_true", help="skip the ESP32-S3 core (Espressif's QEMU)")
    ap.add_argument("--record", action="store_true",
                    help=f"write host/rvne/{icount.PATH.name} (rvne plan's numbers) from this run: needs the S3 "
                         "core, a git checkout and committed firmware sources")
    args = ap.parse_args(argv)
    if args.steps < 1:
        ap.error("--steps must be >= 1")
    if args.record and args.no_s3:
        ap.error("--record takes rvne plan's numbers from the ESP32-S3 core: drop --no-s3")
    configs = CONFIGS[:1] if args.default_head_only else CONFIGS
    fill = WINDOW
    try:
        qemu.check_tools("qemu")
        qemu.check_tools(qemu.C_KERNELS)
        if not args.no_lx106:
            qemu.check_tools("qemu-lx106")
        commit, date, sources = provenance() if args.record else (None, None, None)
        callgrind = not args.no_callgrind and shutil.which("valgrind") is not None
        if callgrind:
            build_host()
        qemu_esp, s3_missing = (None, "--no-s3") if args.no_s3 else s3_tools()
        if args.record and not qemu_esp:
            raise BenchError(f"--record needs the ESP32-S3 core: {s3_missing}")
        if qemu_esp:
            build_s3()
        base, base_missing = None, "--no-baseline"
        if not args.no_baseline:
            try:
                base = baseline_tree(args.baseline)
            except BenchError as exc:          # not there, or it does not build: today's counts alone
                base_missing = str(exc)
        now = Tree.current()
        runs = {}
        for dims, window in configs:
            for mode in MODES:
                runs[("now", dims, window, mode)] = lx6_config(now, dims, window, mode, args.steps)
                if qemu_esp:
                    runs[("s3", dims, window, mode)] = s3_config(dims, window, mode, args.steps, qemu_esp)
                if base is not None and mode not in BASELINE_MODE:
                    runs[("base", dims, window, mode)] = lx6_config(base, dims, window, mode, args.steps)
        print_whole(runs, base, base_missing)
        print()

        frames = run_frames(DIMS, WINDOW, args.steps)
        print(f"dims {head_name(DIMS)}  W={WINDOW}  fill={fill} steps={args.steps}")
        print("emulated: QEMU lx60 with -icount shift=0; lx6 = code for the ESP32's LX6 (windowed, FPU, "
              "llc-22) on de233_fpu, asm = the port's assembly kernels, C = the core's C kernels only "
              "(same core, same run); lx106 = soft-float (gcc); instruction counts, NOT ESP32-S3 cycles")
        print(f"{MACS} MACs per push at a full window")
        print(f"{'dtype':6} {'lx6 asm':>9} {'insn/MAC':>9} {'lx6 C':>9} {'insn/MAC':>9} {'C/asm':>6} "
              f"{'lx106':>10} {'insn/MAC':>9} {'host':>9} {'agree':>6}")
        totals, profiles, cal, s3, s3_cal, lx6_c = {}, {}, {}, {}, set(), {}
        with tempfile.TemporaryDirectory() as tmp:
            frames_path = os.path.join(tmp, "frames.f32")
            frames.astype("<f4").tofile(frames_path)
            for fp16 in (False, True):
                dtype = "fp16" if fp16 else "fp32"
                blob = upstream_init.init_blob(dims=DIMS, fp16=fp16)
                blob_path = os.path.join(tmp, "m.rvne")
                with open(blob_path, "wb") as f:
                    f.write(blob)
                fast_run = runs[("now", DIMS, WINDOW, dtype)]
                totals[(dtype, "asm")], profiles[(dtype, "asm")] = fast_run.push, fast_run.profile
                ok, cal["asm"] = fast_run.ok, fast_run.per_tick
                boards = [("C", qemu.C_KERNELS)] + ([] if args.no_lx106 else [("lx106", "qemu-lx106")])
                for label, board in boards:
                    _, steady_i, per_tick, got = emulated(blob, frames, fill, args.steps, board)
                    totals[(dtype, label)] = steady_i
                    cal[label] = per_tick
                    ok = ok and verdict.against_blob(got, blobmod.parse(blob), frames, WINDOW)["ok"]
                profiles[(dtype, "C")] = phase_profile(blob, frames, fill, args.steps, "c")
                lx6_c[dtype] = (totals[(dtype, "C")], profiles[(dtype, "C")])
                s3_ok = True
                for label, image in S3_BUILDS if qemu_esp else ():
                    text = s3_run(blob, frames, fill, args.steps, image, qemu_esp)
                    per_push, spread, extra, got = parse_s3(text)
                    s3[(dtype, label)] = (per_push, spread)
                    s3[(dtype, "weights", label)] = s3_weights(text)
                    s3_cal.add(extra)
                    s3_ok = s3_ok and verdict.against_blob(got, blobmod.parse(blob), frames, WINDOW)["ok"]
                s3[(dtype, "agree")] = s3_ok
                for label, image in S3_PROFILES if qemu_esp else ():
                    s3[(dtype, "phases", label)] = parse_s3_phases(
                        s3_run(blob, frames, fill, args.steps, image, qemu_esp))
                host = host_instructions(blob_path, frames_path, fill, args.steps, tmp) if callgrind else None
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
            print(f"ESP32-S3 core not run: {s3_missing} (README: Install)")
            print(recorded_s3())
        print()
        print_phases(profiles, totals)
        print()
        decode = measure_decode(runs, frames, args.steps, qemu_esp)
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
        print()
        if args.record:
            how = {s3[("fp16", "weights", label)] for label, _, _ in RECORD_S3}
            if how != {"expanded"}:
                raise BenchError(f"not recorded: the S3 bench ran the FP16 weights {'/'.join(map(str, how))}, not "
                                 "expanded at load as the app does: rebuild it (make -C firmware s3-bench)")
            path = write_record(make_record(runs, lx6_c, s3, decode, commit, date, sources, args.steps))
            print(f"recorded: {os.path.relpath(path, ROOT)} (firmware as of {commit[:12]}), rvne plan's numbers "
                  "from now on: commit it")
        else:
            print(record_status())
    except (BenchError, RvneError) as exc:
        print(f"bench_icount: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
