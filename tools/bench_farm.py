#!/usr/bin/env python3
"""How long checking N farm boards at once takes against one (issue 31's goal:
at most 1.3x, up to the machine's cores). Prints numbers only.

A labgrid farm on this machine (tools/farm_lab.py): a coordinator, two
exporters, N emulated boards of each kind spread over them (the virtual
device through ser2net, the emulated LX6 board as a raw TCP port). For each
kind: the wall time of `rvne check BLOB --place P` on one board, then of
`rvne check BLOB --place P1 ... --place PN` on N at once (each the median of
--repeat runs, the two interleaved; acquiring and releasing included), and
their ratio, with the CPU seconds rvne's processes took (the host's side:
the verdict; not the boards' own processes) and the machine's load average
(on a shared machine the ratio means little without it). Same
blob, same check (--vectors, the default trace) on every board.

    python3 tools/bench_farm.py [--boards N] [--kinds sim,qemu] [--repeat R] [--vectors V]
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "host"))
sys.path.insert(0, str(ROOT / "tools"))

import farm_lab  # noqa: E402


def timed_check(lab, blob, places, vectors):
    cmd = [sys.executable, "-m", "rvne", "check", str(blob), "-q", "--vectors", str(vectors)]
    for p in places:
        cmd += ["--place", p]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "host"), "LG_COORDINATOR": lab.address}
    start, cpu = time.monotonic(), _children_cpu()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    took, cpu = time.monotonic() - start, _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"bench_farm: rvne check on {', '.join(places)} failed: "
                         f"{(done.stderr or done.stdout).strip()[-500:]}")
    return took, cpu


def _children_cpu():
    """CPU seconds of the rvne processes this one waited for (its board processes included)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", type=int, default=os.cpu_count() or 2,
                    help="boards checked at once (default: the machine's cores)")
    ap.add_argument("--kinds", default="sim,qemu", help="emulated boards: sim, qemu (default both)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--vectors", type=int, default=4, help="rvne check --vectors (default 4, check's own)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="rvne-bench-farm-") as tmp:
        blob = Path(tmp) / "model.rvne"
        from rvne import cli

        cli.main(["init", str(blob), "-q"])
        with farm_lab.Lab(Path(tmp) / "lab") as lab:
            print(f"bench_farm: {os.cpu_count()} cores (load average {os.getloadavg()[0]:.1f} at the start), "
                  f"{args.boards} boards at once, median of {args.repeat} runs, rvne check --vectors {args.vectors} "
                  "(acquire and release included)")
            print(f"{'board':<6} {'one board s':>12} {f'{args.boards} at once s':>14} {'ratio':>7}   "
                  f"{'rvne CPU s, one':>15} {f'{args.boards} at once':>10}")
            for kind in args.kinds.split(","):
                groups = {"rack1": {}, "rack2": {}}
                names = []
                for i in range(args.boards):
                    target = lab.board(kind, blob.read_bytes())
                    rack = f"rack{i % 2 + 1}"
                    groups[rack][f"{kind}{i}"] = lab.serial(target)
                    names.append((f"{kind}-{i}", f"{kind}-{rack}/{kind}{i}/*"))
                for rack, g in groups.items():
                    if g:
                        lab.exporter(f"{kind}-{rack}", g)
                for name, match in names:
                    lab.place(name, [match])
                places = [n for n, _ in names]
                # Interleaved, so a change in the machine's load falls on both alike.
                ones, manys = [], []
                for _ in range(args.repeat):
                    ones.append(timed_check(lab, blob, places[:1], args.vectors))
                    manys.append(timed_check(lab, blob, places, args.vectors))
                one, many = (statistics.median(t for t, _ in ones), statistics.median(t for t, _ in manys))
                cpu1, cpun = (statistics.median(c for _, c in ones), statistics.median(c for _, c in manys))
                print(f"{kind:<6} {one:>12.2f} {many:>14.2f} {many / one:>6.2f}x   {cpu1:>15.2f} {cpun:>10.2f}   "
                      f"(load average {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
