"""The instruction counts a push measured on the emulated cores, as
tools/bench_icount.py --record wrote them into icount.json beside this
module: the one source of `rvne plan`'s compute estimate (and of the counts
README quotes). Nothing here measures; this reads, checks and scales.

The file holds, for one head (dims, W, a full window), the instructions per
push and their split into phases (projections, attention = scores and
weighted sums, softmax, classifier, the rest) for each core ("esp32s3": the
S3's core as the app builds it; "lx6": the `qemu` board's), kernel set
("asm", "c") and dtype, with where they came from (commit, toolchain) and a
digest of all that, so a number edited by hand reads as corrupt, not as a
measurement.
"""

import hashlib
import json
from pathlib import Path

from .errors import RvneError
from .model.contract import Dims

PATH = Path(__file__).resolve().parent / "icount.json"
SCHEMA = 1
PHASES = ("proj", "attention", "softmax", "classifier", "rest")
CORES = ("esp32s3", "lx6")
KERNELS = ("asm", "c")
# How a push runs its weights: FP32; FP16 expanded to FP32 at load (the
# app's default when they fit: RVNE_FP16_EXPAND); FP16 decoded at every push
# (when they do not). The last is optional in a record.
DTYPES = ("fp32", "fp16", "fp16_decode")
REQUIRED = ("fp32", "fp16")
# Instructions per MAC a push can plausibly take on these cores: the FP32
# matrix-vector floor is about 2 per MAC, the soft-float LX106's 200 are
# not recorded. Outside this range the file was not written by the bench.
PER_MAC_RANGE = (0.5, 100.0)


def phase_units(dims, window: int) -> dict:
    """What each phase's work scales with, for one push at a full window
    (docs/model.md's forward pass): multiply-adds for the projections (q, k,
    v, o), the attention (scores and weighted sums over W) and the
    classifier; exponentials for the softmax; activation elements per layer
    for the rest (residuals, the k/v ring, copies)."""
    d = Dims.of(dims)
    return {"proj": d.n_layers * (2 * d.input_dim * d.q_dim + 2 * d.input_dim * d.kv_dim),
            "attention": d.n_layers * 2 * d.n_q_heads * window * d.head_dim,
            "softmax": d.n_layers * d.n_q_heads * window,
            "classifier": d.input_dim * d.n_classes,
            "rest": d.n_layers * d.input_dim}


def macs(dims, window: int) -> int:
    """Multiply-adds of one push at a full window."""
    u = phase_units(dims, window)
    return u["proj"] + u["attention"] + u["classifier"]


def digest(record: dict) -> str:
    """sha256 of the record without its own digest, as canonical JSON."""
    body = {k: v for k, v in record.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def is_hash(text) -> bool:
    return isinstance(text, str) and len(text) == 40 and all(c in "0123456789abcdef" for c in text)


def check(record: dict) -> dict:
    """`record` when it is a whole, self-consistent icount.json; else
    RvneError naming the first thing wrong."""
    def need(ok, what):
        if not ok:
            raise RvneError(f"{PATH.name}: {what}; rerun `python tools/bench_icount.py --record` in a checkout")
    need(isinstance(record, dict) and record.get("schema") == SCHEMA, f"not schema {SCHEMA}")
    need(record.get("sha256") == digest(record), "its digest does not match its numbers (edited by hand?)")
    for key in ("commit", "date", "sources", "toolchain", "dims", "window", "macs", "counts"):
        need(key in record, f"no {key!r}")
    need(is_hash(record["commit"]), "commit is not a 40-digit hash")
    need(isinstance(record["sources"], dict) and record["sources"] and all(map(is_hash, record["sources"].values())),
         "sources are not git tree ids")
    dims, window = record["dims"], record["window"]
    need(isinstance(dims, list) and len(dims) == 6 and all(isinstance(v, int) and v > 0 for v in dims),
         "dims are not six positive integers")
    need(isinstance(window, int) and window > 0, "window is not a positive integer")
    need(record["macs"] == macs(dims, window), f"macs {record['macs']} is not dims {dims} at W={window}'s")
    counts = record["counts"]
    need(isinstance(counts, dict) and "esp32s3" in counts, "no esp32s3 counts (plan's source)")
    for core, by_kernels in counts.items():
        need(core in CORES and isinstance(by_kernels, dict), f"unknown core {core!r}")
        for kernels in KERNELS:
            for dtype in DTYPES:
                where = f"{core} {kernels} {dtype}"
                c = by_kernels.get(kernels, {}).get(dtype)
                if c is None and dtype not in REQUIRED:
                    continue
                need(isinstance(c, dict) and isinstance(c.get("push"), int), f"no {where} count")
                ph = c.get("phases")
                need(isinstance(ph, dict) and set(ph) == set(PHASES)
                     and all(isinstance(v, (int, float)) and v >= 0 for v in ph.values()),
                     f"{where} phases are not {', '.join(PHASES)}")
                lo, hi = PER_MAC_RANGE
                need(lo <= c["push"] / record["macs"] <= hi, f"{where}: {c['push']} instructions per push is "
                     f"{c['push'] / record['macs']:.2f} per MAC, outside {lo}..{hi}")
                # The phase profile is a separate build with markers inside:
                # its sum is the push within a few percent, never far off.
                need(abs(sum(ph.values()) / c["push"] - 1) < 0.05, f"{where} phases do not add up to its push")
        for dtype in REQUIRED:
            need(by_kernels["c"][dtype]["push"] > by_kernels["asm"][dtype]["push"],
                 f"{core} {dtype}: the C kernels count no more instructions than the assembly")
    return record


def load(path=None) -> dict:
    """The checked record of icount.json (RvneError when missing or corrupt)."""
    path = PATH if path is None else path
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise RvneError(f"cannot read {Path(path).name}: {exc.strerror}; reinstall rvne") from None
    try:
        record = json.loads(text)
    except ValueError as exc:
        raise RvneError(f"{Path(path).name} is not JSON ({exc}); rerun `python tools/bench_icount.py --record`") \
            from None
    return check(record)


def estimate(record: dict, dims, window: int, dtype: str, core="esp32s3", kernels="asm"):
    """Instructions per push of a head `dims` at W = `window`: each phase of
    the measured push scaled by its own work (phase_units), the phases
    rescaled to add up to the measured push (the profile's markers out).
    None when the record has no such count."""
    c = record["counts"].get(core, {}).get(kernels, {}).get(dtype)
    if c is None:
        return None
    ph = c["phases"]
    scale = c["push"] / sum(ph.values())
    have, want = phase_units(record["dims"], record["window"]), phase_units(dims, window)
    return round(scale * sum(ph[p] * want[p] / have[p] for p in PHASES if have[p]))
