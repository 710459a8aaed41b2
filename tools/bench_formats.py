"""Inspecting a weight file must not scale with its data (docs/formats.md,
"Benchmark"). For each foreign format: a sparse 1 MiB and a sparse 1 GiB
file (headers written, data left as holes, so the disk stays empty), then
the headers-only read `rvne inspect` does. Prints time (best of 5), the
bytes the reader asked for (Source.bytes_read), the pages the process
faulted in during the read, and the 1 GiB / 1 MiB ratios - the baseline
measured in the same run. A full-data pass (CRC-32 of the 1 GiB file) is
timed once for scale. Numbers only; nothing is asserted.

    python tools/bench_formats.py [--keep DIR]
"""

import argparse
import os
import resource
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))  # the fixture writers

from fmt_fixtures import burnpack, cnn2, lwt, milblob, safetensors  # noqa: E402

from rvne import blob  # noqa: E402
from rvne.formats import Source, detect  # noqa: E402

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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", metavar="DIR", help="write the files here and keep them")
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
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
