"""Golden vectors for test_head.c, written by the numpy reference.

    python3 gen_golden.py OUTDIR

For each case NAME: NAME.blob (the blob), NAME.frames (N x D little-endian
f32), NAME.logits (N x C little-endian f64: the float64 reference's logits
after each frame of a stream reset before frame 0, rvne.model.bounds) and
NAME.bound (N x C little-endian f64: each logit's error bound). The kernel
passes when |logit - reference| <= bound for every logit: the verdict of
docs/model.md. index.txt lists one case a line as `NAME WINDOW N`. Every
sequence is longer than its window, so the firmware's ring wraps and the
window slides.
"""

import os
import sys

import numpy as np

from rvne.io import blob, upstream_init
from rvne.model import bounds
from rvne.model.contract import Dims, tensor_specs

# (name, dims, fp16, window, frames, weight source)
UPSTREAM = upstream_init.DIMS
CASES = [
    ("up_fp32_w1", UPSTREAM, False, 1, 12, "upstream"),
    ("up_fp32_w7", UPSTREAM, False, 7, 40, "upstream"),
    ("up_fp32_w100", UPSTREAM, False, 100, 230, "upstream"),
    ("up_fp16_w1", UPSTREAM, True, 1, 12, "upstream"),
    ("up_fp16_w7", UPSTREAM, True, 7, 40, "upstream"),
    ("up_fp16_w100", UPSTREAM, True, 100, 230, "upstream"),
    # Several kv heads each serving several query heads, three layers, and
    # weights of a trained layer's scale (std 1/sqrt(fan_in), ten times the
    # upstream init's), so the attention is far from uniform.
    ("gqa_fp32_w7", Dims(12, 6, 3, 4, 3, 5), False, 7, 40, "random"),
    ("gqa_fp16_w7", Dims(12, 6, 3, 4, 3, 5), True, 7, 40, "random"),
    ("gqa_fp32_w100", Dims(12, 6, 3, 4, 3, 5), False, 100, 160, "random"),
    ("gqa_fp16_w1", Dims(12, 6, 3, 4, 3, 5), True, 1, 9, "random"),
    # 128-wide, two kv heads: where a fixed tolerance would not fit.
    ("wide_fp32_w8", Dims(128, 8, 2, 16, 2, 8), False, 8, 14, "random"),
    ("wide_fp16_w8", Dims(128, 8, 2, 16, 2, 8), True, 8, 14, "random"),
]


def arrays_for(dims, source, rng):
    if source == "upstream":
        return upstream_init.init_arrays(dims)
    return {
        s.name: rng.normal(0.0, 1.0 / np.sqrt(s.shape[0]), s.shape).astype(np.float32)
        for s in tensor_specs(dims)
    }


def write_case(outdir, name, dims, fp16, window, n, source, rng):
    raw = blob.from_arrays(arrays_for(dims, source, rng), dims, fp16)
    parsed = blob.parse_loadable(raw)
    frames = rng.normal(0.0, 1.0, (n, dims.input_dim)).astype(np.float32)
    # The reference decodes FP16 weights exactly as the firmware must, so the
    # expected logits are those of the weights the blob really holds.
    logits, bound = bounds.Truth.of_blob(parsed).forward(frames, window)
    with open(os.path.join(outdir, name + ".blob"), "wb") as f:
        f.write(raw)
    with open(os.path.join(outdir, name + ".frames"), "wb") as f:
        f.write(frames.astype("<f4").tobytes())
    with open(os.path.join(outdir, name + ".logits"), "wb") as f:
        f.write(np.asarray(logits, dtype="<f8").tobytes())
    with open(os.path.join(outdir, name + ".bound"), "wb") as f:
        f.write(np.asarray(bound, dtype="<f8").tobytes())


def main(argv):
    if len(argv) != 2:
        print("usage: gen_golden.py OUTDIR", file=sys.stderr)
        return 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(20240603)
    lines = []
    for name, dims, fp16, window, n, source in CASES:
        assert n > window, f"{name}: the sequence must be longer than the window"
        write_case(outdir, name, dims, fp16, window, n, source, rng)
        lines.append(f"{name} {window} {n}\n")
    with open(os.path.join(outdir, "index.txt"), "w") as f:
        f.writelines(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
