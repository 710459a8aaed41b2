"""Device verification: does the device hold this blob, and does it compute
what rvne.reference computes from it?

    report = run_check(Device(url), blob_bytes, vectors=4, seed=0)
    print(render(report)); sys.exit(0 if report.passed else 1)

The device's INFO must name the blob's CRC, dims and dtype; then N seeded
random sequences a little longer than W (so the window slides) are streamed
through RUN/PUSH and every logit is judged by the agreement contract of
docs/model.md (reference.ATOL, reference.RTOL).
"""

import time
from dataclasses import asdict, dataclass, field
from typing import List, Optional

import numpy as np

from . import blob as blobmod
from . import reference
from .device import Device, Info


@dataclass
class Worst:
    """The logit furthest out of (or closest to) tolerance."""

    vector: int
    frame: int
    klass: int
    device: float
    reference: float


@dataclass
class CheckReport:
    url: str
    blob_crc: int
    blob_dims: tuple
    blob_dtype: str
    info: Optional[dict] = None          # INFO's fields as the device sent them
    window: int = 0
    vectors: int = 0
    length: int = 0                       # frames per sequence
    seed: int = 0
    problems: List[str] = field(default_factory=list)   # INFO disagreements
    logits: int = 0                       # logits compared
    bad: int = 0                          # out of tolerance
    max_abs: float = 0.0
    max_rel: float = 0.0
    max_ratio: float = 0.0                # worst |a-b| / (atol + rtol|b|); <= 1 passes
    argmax_agree: int = 0
    frames: int = 0
    seconds: float = 0.0                  # wall time of the streaming requests
    device_push: Optional[float] = None   # device's own mean time per push, from STATS
    clock: str = "none"
    # Device push time in instructions, on an emulated core run with -icount
    # (set by the caller that knows the calibration: rvne.targets.qemu).
    instructions_per_push: Optional[float] = None
    resends: int = 0
    worst: Optional[Worst] = None
    atol: float = reference.ATOL
    rtol: float = reference.RTOL

    @property
    def frames_per_s(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    @property
    def passed(self) -> bool:
        return not self.problems and self.logits > 0 and self.bad == 0

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(passed=self.passed, frames_per_s=self.frames_per_s,
                 blob_crc=f"{self.blob_crc:08X}", blob_dims=",".join(map(str, self.blob_dims)))
        return d


def default_length(window: int) -> int:
    """Frames per sequence: past W by a few steps so the ring wraps and the
    oldest position is evicted more than once; short, because an emulated
    core is ~100x slower."""
    return window + max(2, min(window, 10))


def compare_info(info: Info, header, crc: int) -> List[str]:
    """INFO against the blob, one sentence per disagreement."""
    problems = []
    if not info.loaded:
        # Nothing else to compare: the CRC, dims and dtype of no blob.
        return [f"device has no model loaded (status={info.status} reason={info.reason}); "
                "flash the blob or start the target with it"]
    if info.crc != crc:
        got = "none" if info.crc is None else f"{info.crc:08X}"
        problems.append(f"blob CRC differs: device {got}, file {crc:08X}; the device holds another blob: "
                        "write this one with `rvne flash BLOB --port/--image`, or check the blob it holds")
    dims = tuple(header.dims)
    if info.dims != dims:
        got = "none" if info.dims is None else ",".join(map(str, info.dims))
        problems.append(f"dims differ: device {got}, file {','.join(map(str, dims))}")
    if info.dtype != header.dtype:
        problems.append(f"dtype differs: device {info.dtype or 'none'}, file {header.dtype}")
    return problems


def run_check(device: Device, blob_bytes, vectors: int = 4, seed: int = 0,
              window: Optional[int] = None, length: Optional[int] = None) -> CheckReport:
    """Verify `device` against the blob in `blob_bytes` (raises a BlobError
    when the file itself is not a loadable blob)."""
    if vectors < 1:
        raise ValueError(f"vectors must be >= 1, got {vectors}")
    parsed = blobmod.parse_loadable(blob_bytes)
    header = parsed.header
    report = CheckReport(url=device.url, blob_crc=parsed.crc_stored, blob_dims=tuple(header.dims),
                         blob_dtype=header.dtype, vectors=vectors, seed=seed)
    if window is not None:
        device.window(window)
    info = device.info()
    report.info = dict(info.fields)
    report.window = info.window
    report.problems = compare_info(info, header, parsed.crc_stored)
    if report.problems:
        return report

    weights = parsed.tensors()
    dims = header.dims
    report.length = length or default_length(info.window)
    rng = np.random.default_rng(seed)
    stats_before = device.stats()
    pushes_before = stats_before.get("pushes", 0)
    worst_ratio = -1.0
    for v in range(vectors):
        frames = rng.standard_normal((report.length, dims.input_dim)).astype(np.float32)
        t0 = time.perf_counter()
        got = device.run(frames)
        report.seconds += time.perf_counter() - t0
        report.frames += len(frames)
        want = reference.forward_batch(weights, dims, frames, info.window)
        verdict = reference.compare(got, want)
        report.logits += verdict["n"]
        report.bad += verdict["n_bad"]
        report.max_abs = max(report.max_abs, verdict["max_abs"])
        report.max_rel = max(report.max_rel, verdict["max_rel"])
        report.argmax_agree += int(round(verdict["argmax_agree"] * verdict["rows"]))
        if verdict["max_ratio"] > worst_ratio:
            worst_ratio = verdict["max_ratio"]
            report.worst = _worst(v, got, want)
        # LOGITS must repeat the last frame's logits bit for bit.
        last = device.logits()
        if not np.array_equal(last.view(np.uint32), got[-1].view(np.uint32)):
            report.problems.append(f"LOGITS after sequence {v} differs from the last PUSH reply")
    report.max_ratio = max(worst_ratio, 0.0)
    report.resends = device.resends
    stats = device.stats()
    report.clock = str(stats.get("clock", "none"))
    pushed = stats.get("pushes", 0) - pushes_before
    if report.clock != "none" and pushed > 0:
        spent = stats.get("push_total", 0) - stats_before.get("push_total", 0)
        report.device_push = spent / pushed
    if pushed != report.frames:
        report.problems.append(f"STATS counted {pushed} pushes for the {report.frames} frames sent")
    return report


def _worst(vector, got, want) -> Worst:
    a = got.astype(np.float64)
    b = want.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        ratio = np.abs(a - b) / (reference.ATOL + reference.RTOL * np.abs(b))
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    t, c = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    return Worst(vector, int(t), int(c), float(got[t, c]), float(want[t, c]))


def render(r: CheckReport) -> str:
    """The human report: one fact per line, verdict last."""
    lines = [
        f"device     {r.url}",
        f"blob       crc {r.blob_crc:08X}  dims {','.join(map(str, r.blob_dims))}  {r.blob_dtype}",
    ]
    if r.info:
        i = r.info
        lines.append(f"firmware   rvne/{i.get('fw', '?')} {i.get('port', '?')}  status {i.get('status', '?')} "
                     f"({i.get('reason', '?')})  crc {i.get('crc', '?')}  dims {i.get('dims', '?')}  "
                     f"{i.get('dtype', '?')}  W {i.get('window', '?')}  arena {i.get('arena', '?')} B")
    for p in r.problems:
        lines.append(f"MISMATCH   {p}")
    if r.logits:
        lines += [
            f"streamed   {r.vectors} sequences x {r.length} frames (seed {r.seed}, W {r.window}), "
            f"{r.logits} logits",
            f"tolerance  |a-b| <= {r.atol:g} + {r.rtol:g}*|b|: {r.logits - r.bad}/{r.logits} within, "
            f"worst at {r.max_ratio:.3g} of tolerance",
            f"max error  abs {r.max_abs:.3g}  rel {r.max_rel:.3g}",
            f"argmax     {r.argmax_agree}/{r.frames} frames agree",
            f"speed      {r.frames_per_s:.1f} frames/s over the link"
            + (f", {r.device_push:.0f} {r.clock}/push on the device" if r.device_push is not None else "")
            + (f", {r.resends} resends" if r.resends else ""),
        ]
        if r.instructions_per_push is not None:
            lines.append(f"icount     {r.instructions_per_push:,.0f} instructions/push on the emulated "
                         f"{(r.info or {}).get('port', '?')} core (QEMU -icount, mean of the pushes; "
                         "not ESP32-S3 cycles)")
        if r.worst is not None and r.bad:
            w = r.worst
            lines.append(f"worst      sequence {w.vector} frame {w.frame} class {w.klass}: "
                         f"device {w.device!r} reference {w.reference!r}")
    lines.append("PASS" if r.passed else "FAIL")
    return "\n".join(lines)
