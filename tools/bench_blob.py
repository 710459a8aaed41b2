#!/usr/bin/env python3
"""Blob throughput and memory, against floors measured in the same run.

    python tools/bench_blob.py            # a 64 MiB FP32 blob
    python tools/bench_blob.py --quick    # a 4 MiB blob, a few seconds

Prints numbers and ratios; asserts nothing about time. Targets: parse+verify
within 1.5x of the zlib.crc32 floor over the same bytes, and a parse that
copies no weights (extra memory far below the weights' size)."""

import argparse
import os
import sys
import tempfile
import time
import tracemalloc
import zlib

import numpy as np

try:
    from rvne.io import blob
    from rvne.model import contract
except ImportError:  # run from a checkout without the editable install
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "host"))
    from rvne.io import blob
    from rvne.model import contract

MIB = 1 << 20
# FP32 weights of (4 layers x 4 D^2) + 2D = 64 MiB + 8 KiB at D = 1024.
FULL_DIMS = contract.Dims(1024, 16, 16, 64, 4, 2)
QUICK_DIMS = contract.Dims(256, 4, 4, 64, 4, 2)


def best_of(fn, repeat):
    """Best wall time of `repeat` calls (the floor least disturbed by the
    other processes sharing the machine) and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def rss_anon():
    """Anonymous resident memory in bytes (Linux): grows with copies, not
    with the file pages an mmap touches. None where /proc is absent."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def line(label, seconds, nbytes, floor=None):
    rate = nbytes / seconds / (1 << 30)
    text = f"{label:<34} {seconds * 1e3:9.2f} ms  {rate:7.2f} GiB/s"
    if floor is not None:
        text += f"  ratio {seconds / floor:5.2f}x"
    print(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4 MiB blob, fewer repeats (a smoke run)")
    ap.add_argument("--repeat", type=int, default=None, help="repeats per measurement (best is kept)")
    args = ap.parse_args(argv)
    dims = QUICK_DIMS if args.quick else FULL_DIMS
    repeat = args.repeat or (3 if args.quick else 5)

    rng = np.random.default_rng(0)
    arrays = {s.name: rng.standard_normal(s.shape, dtype=np.float32) for s in contract.tensor_specs(dims)}
    data = blob.from_arrays(arrays, dims)
    n = len(data)
    wlen = n - blob.MIN_LEN
    print(f"blob: {n / MIB:.2f} MiB ({n} bytes), fp32, dims {dims}, repeats {repeat} (best kept)")

    # -- floors ---------------------------------------------------------------------
    t_crc, _ = best_of(lambda: zlib.crc32(data), repeat)
    t_view, _ = best_of(lambda: np.frombuffer(data, np.float32, count=wlen // 4, offset=24), repeat)
    t_copy, _ = best_of(lambda: bytearray(data), repeat)
    line("floor zlib.crc32 (same bytes)", t_crc, n)
    line("floor np.frombuffer (a view)", t_view, n)
    line("floor memcpy (bytearray copy)", t_copy, n)

    # -- parse + verify --------------------------------------------------------------
    t_parse, parsed = best_of(lambda: blob.parse_loadable(data), repeat)
    line("parse+verify (bytes)", t_parse, n, t_crc)
    t_tensors, tensors = best_of(parsed.tensors, repeat)
    print(f"{'named tensors from a parsed blob':<34} {t_tensors * 1e6:9.1f} us  (views, {len(tensors)} tensors)")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.rvne")
        with open(path, "wb") as f:
            f.write(data)
        t_file, _ = best_of(lambda: blob.read_file(path).check_contract(), repeat)
        line("parse+verify (mmap of a file)", t_file, n, t_crc)

        # Extra memory of one parse of the file: anonymous RSS grows only with copies.
        before = rss_anon()
        mapped = blob.read_file(path)
        views = mapped.tensors()
        after = rss_anon()
        rss_delta = None if before is None else after - before
        copied = not all(np.shares_memory(v, np.frombuffer(mapped.raw, np.uint8)) for v in views.values())
        del views, mapped

    tracemalloc.start()
    blob.parse_loadable(data).tensors()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{'parse extra memory (tracemalloc)':<34} {peak} bytes peak  ({peak / wlen:.2e} of the {wlen}-byte weights)")
    if rss_delta is not None:
        print(f"{'parse extra memory (RssAnon delta)':<34} {rss_delta} bytes  (mmap of the file)")
    print(f"{'weights copied by parse':<34} {'yes' if copied else 'no'}")

    # -- pack -------------------------------------------------------------------------
    t_pack, packed = best_of(lambda: blob.from_arrays(arrays, dims), repeat)
    line("pack (named arrays -> blob)", t_pack, n, t_crc)
    t_ser, _ = best_of(lambda: blob.serialize(parsed.header, parsed.weights), repeat)
    line("serialize (header + weights)", t_ser, n, t_crc)
    if packed != data:
        print("pack: output differs from the first pack (non-deterministic!)")
        return 1

    ratio = t_parse / t_crc
    print(
        f"summary: parse+verify/crc32 = {ratio:.2f}x (target <= 1.5x: {'met' if ratio <= 1.5 else 'NOT met'}), "
        f"pack/(crc32+memcpy) = {t_pack / (t_crc + t_copy):.2f}x, weights copied by parse: {'yes' if copied else 'no'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
