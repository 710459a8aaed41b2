"""Batched forward of rvne.torch.TemporalHead on the CPU beside the numpy FP32
reference's streaming push, measured in the same run (frames per second).
Prints numbers and ratios; asserts nothing.

    python tools/bench_torch.py [--batch 32] [--length 256] [--window 100] [--dims 16,4,1,32,2,4] [--threads=1]
"""

import argparse
import os
import sys
import time

# One thread each, torch and numpy's BLAS, unless told otherwise: on a shared
# 2-core machine spinning worker threads make every number noise. Set before
# numpy and torch load their thread pools.
THREADS = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--threads=")), "1")
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, THREADS)

import numpy as np      # noqa: E402
import torch            # noqa: E402

from rvne.model import reference
from rvne.model.contract import Dims
from rvne.torch import TemporalHead


def best_of(fn, repeats):
    """Fastest of `repeats` calls after one warm-up call: on a shared machine
    the minimum is the least disturbed measurement."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--length", type=int, default=256)
    p.add_argument("--window", type=int, default=100)
    p.add_argument("--dims", default="16,4,1,32,2,4")
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--threads", default=THREADS, help="threads for torch and BLAS (--threads=N; default 1)")
    p.add_argument("--stream-frames", type=int, default=512, help="frames pushed through the numpy stream")
    args = p.parse_args()
    d = Dims.parse(args.dims).check()
    torch.set_num_threads(int(args.threads))
    B, T, W = args.batch, args.length, args.window

    torch.manual_seed(0)
    head = TemporalHead(d).eval()
    frames = torch.randn(B, T, d.input_dim)
    print(f"dims {d}  B {B}  T {T}  W {W}  torch {torch.__version__} ({torch.get_num_threads()} threads)")

    with torch.no_grad():
        t_fwd = best_of(lambda: head(frames, W), args.repeats)
    train_frames = frames.clone()

    def step():
        head.zero_grad()
        head(train_frames, W).square().mean().backward()

    t_train = best_of(step, args.repeats)

    weights = head.arrays()
    stream = reference.Stream(weights, d, W)
    one = np.random.default_rng(0).standard_normal((args.stream_frames, d.input_dim)).astype(np.float32)

    def push_all():
        stream.reset()
        stream.push_many(one)

    t_stream = best_of(push_all, max(1, args.repeats // 2))
    t_batch = best_of(lambda: [reference.forward_batch(weights, d, f, W) for f in frames.numpy()],
                      max(1, args.repeats // 2))

    n = B * T
    rate = {
        "torch forward, batched (no grad)": n / t_fwd,
        "torch forward + backward": n / t_train,
        "numpy FP32 reference, streaming push": args.stream_frames / t_stream,
        "numpy FP32 reference, batch form per sequence": n / t_batch,
    }
    base = rate["numpy FP32 reference, streaming push"]
    width = max(map(len, rate))
    for name, r in rate.items():
        print(f"{name:<{width}}  {r:12,.0f} frames/s  {r / base:8.1f}x the streaming reference")


if __name__ == "__main__":
    main()
