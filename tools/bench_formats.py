"""Inspecting a weight file must not scale with its data (docs/formats.md,
"Benchmark"). For each foreign format: a sparse 1 MiB and a sparse 1 GiB
file (headers written, data left as holes, so the disk stays empty), then
the headers-only read `rvne inspect` does. Prints time (best of 5), the
bytes the reader asked for (Source.bytes_read), the pages the process
faulted in during the read, and the 1 GiB / 1 MiB ratios - the baseline
measured in the same run. A full-data pass (CRC-32 of the 1 GiB file) is
timed once for scale. With --hostile, the cases of issue 16 too: a
100 MB safetensors header of '[' (refused at the depth cap) and `rvne
inspect --json` on files of 10k and 1M tensors, each in a fresh process:
wall time and peak RSS, per tensor against the 10k baseline. Numbers
only; nothing is asserted.

    python tools/bench_formats.py [--keep DIR] [--hostile]
"""

import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))  # the fixture writers

from fmt_fixtures import burnpack, cnn2, lwt, milblob, safetensors  # noqa: E402

from rvne.io import blob  # noqa: E402
from rvne.io.formats import Source, detect  # noqa: E402

MiB, GiB = 1 << 20, 1 << 30


def make(fmt, path, total):
    if fmt == "lwt":
        return lwt.write_sparse(path, lwt.sparse_shapes(total), crc=False)
    if fmt == "cnn2":
        return cnn2.write_sparse(path, total)
    if fmt == "safetensors":
        return safetensors.write_sparse(path, safetensors.sparse_shapes(total))
    if fmt == "burnpack":
        return burnpack.write_sparse(path, burnpack.sparse_shapes(total))
    if fmt == "milblob":
        return milblob.write_sparse(path, total)
    raise ValueError(fmt)


def measure(path, repeat=5):
    best, nbytes, faults, ntensors = float("inf"), 0, 0, 0
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        src = Source(blob.map_file(path), path)
        mod = detect(src)
        report = mod.read(src, data=False)
        dt = time.perf_counter() - t0
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
        best, nbytes, ntensors = min(best, dt), src.bytes_read, len(report.tensors)
        # A sparse lwt file carries no CRC (hashing a GiB of zeros is not the
        # point here); its only failing rule is the skipped data check.
        assert report.error is None or report.error.code == "E_LWT_CRC", report.error
    return best, nbytes, faults, ntensors


def crc_pass(path):
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(4 * MiB), b""):
            zlib.crc32(chunk)
    return time.perf_counter() - t0


def many_tensors(path, n):
    """A safetensors file of n one-element F32 tensors."""
    with open(path, "wb") as f:
        parts = [json.dumps({f"t{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]}})[1:-1]
                 for i in range(n)]
        head = ("{" + ",".join(parts) + "}").encode()
        head += b" " * (-len(head) % 8)
        f.write(struct.pack("<Q", len(head)) + head)
        f.truncate(8 + len(head) + 4 * n)


def bracket_header(path, n=100_000_000):
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", n) + b"{" + b"[" * (n - 1))


def run_cli(*argv):
    """(seconds, peak RSS in MiB, exit code) of `rvne ARGV` in a fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rvne.cli", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - t0, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def hostile(root):
    print(f"\n{'issue 16 case':34} {'time s':>8} {'peak MiB':>9} {'exit':>4}")
    path = os.path.join(root, "brackets.safetensors")
    bracket_header(path)
    dt, rss, rc = run_cli("verify", path)
    print(f"{'100 MB [ header: verify':34} {dt:>8.2f} {rss:>9.0f} {rc:>4}")
    os.remove(path)
    rows = {}
    for n in (10_000, 1_000_000):
        path = os.path.join(root, f"many-{n}.safetensors")
        many_tensors(path, n)
        rows[n] = run_cli("inspect", "--json", path)
        dt, rss, rc = rows[n]
        print(f"{f'{n:,} tensors: inspect --json':34} {dt:>8.2f} {rss:>9.0f} {rc:>4}")
        os.remove(path)
    (t1, m1, _), (t2, m2, _) = rows[10_000], rows[1_000_000]
    print(f"{'':34} 1M / 10k: time {t2 / t1:.1f}x, peak RSS {m2 / m1:.1f}x (tensors grew 100x)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", metavar="DIR", help="write the files here and keep them")
    ap.add_argument("--hostile", action="store_true", help="also the issue-16 cases (about a minute, 1 GB of RAM)")
    args = ap.parse_args()
    tmp = None if args.keep else tempfile.TemporaryDirectory(prefix="rvne-bench-")
    root = args.keep or tmp.name
    os.makedirs(root, exist_ok=True)
    print(f"{'format':12} {'file':>12} {'tensors':>7} {'time ms':>9} {'bytes read':>11} {'pages':>6}")
    big_path = None
    for fmt in ("lwt", "burnpack", "milblob", "cnn2", "safetensors"):
        rows = []
        for total in (MiB, GiB):
            path = os.path.join(root, f"{fmt}-{total}.bin")
            size = make(fmt, path, total)
            dt, nbytes, faults, n = measure(path)
            rows.append((dt, nbytes, faults))
            print(f"{fmt:12} {size:>12,} {n:>7} {dt * 1e3:>9.3f} {nbytes:>11,} {faults:>6}")
            big_path = path
        (t1, b1, _), (t2, b2, _) = rows
        print(f"{'':12} 1 GiB / 1 MiB: time {t2 / t1:.2f}x, bytes read {b2 / max(b1, 1):.2f}x "
              f"(data grew {GiB // MiB}x)")
    dt = crc_pass(big_path)
    print(f"for scale: one CRC-32 pass over {os.path.getsize(big_path):,} bytes took {dt * 1e3:.0f} ms")
    if args.hostile:
        hostile(root)
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
