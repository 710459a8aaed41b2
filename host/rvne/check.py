"""Device verification: does the device hold this blob, and does it compute
what rvne.model.reference computes from it?

    report = run_check(Device(url), blob_bytes, vectors=4, seed=0)
    print(render(report)); sys.exit(0 if report.passed else 1)

The device's INFO must name the blob's CRC, dims and dtype; then N seeded
random sequences (docs/model.md, "What `rvne check` streams": lengths past
W that differ and are not multiples of W, some heavy-tailed values), or the
user's own frames, are streamed through RUN/PUSH and every logit is judged
by the agreement contract of docs/model.md: within rvne.model.bounds' error bound
of the float64 reference, or within the user's atol + rtol*|ref| (rule of
rvne.model.verdict either way).

Step by step as well (docs/model.md, "Step by step"): with tracing, the
device reports its values at every trace point of a push (TRACE,
docs/protocol.md) and rvne.model.steps judges each from the device's own inputs
to that step. `trace`: "all" pushes, a "sample" (the first and the last
pushes of each sequence, as many as keep the link traffic within twice the
untraced check's: sample_plan), or "off". Both verdicts are reported; a
check passes when both pass. A device that cannot trace (older protocol, no
room) is said so in one line and in the verdict, and the end-to-end verdict
decides alone (`strict`: a trace asked for and not had fails).

The outcome (docs/cli.md): PASS, FAIL, or UNDECIDED where nothing shows
the device wrong but some logits could not be decided (the bound's work
cap, or a model that leaves the FP32 range on these frames). Beside it the
precision figure (rvne.model.precision): above its level a warning, a
failure with `strict`.
"""

import time
from dataclasses import asdict, dataclass, field
from typing import List, Optional

import numpy as np

from .errors import ProtocolError
from .io import blob as blobmod
from .link import protocol
from .link.device import Device, Info
from .model import bounds, reference, steps, verdict
from .model.precision import LEVEL as PRECISION_LEVEL, Tally, warned

CLOCK_INSNS = "insns"       # STATS push times in instructions (docs/protocol.md)
RULE_BOUND = "bound"
RULE_TOLERANCE = "tolerance"
RULE_EXACT = "exact"                # an int8 blob: every value equal to the integer reference
TRACE_MODES = ("all", "sample", "off")
PASS, FAIL, UNDECIDED = "PASS", "FAIL", "UNDECIDED"
EXIT = {PASS: 0, FAIL: 1, UNDECIDED: 3}   # docs/cli.md
# Why a logit is undecided (--save's undecided_why; JSON's undecided_values).
WHY_CAP, WHY_RANGE, WHY_HOST = 1, 2, 3
WHY_TEXT = {WHY_CAP: "its exact error bound is beyond the work cap (bounds.LAZY_FLOPS)",
            WHY_RANGE: "the model leaves the FP32 range there: no FP32 result can be vouched for",
            WHY_HOST: "outside the bound, which the host's own FP32 reference also leaves on these frames"}
HOST_DEPARTS = 1e-3          # relative gap of the FP32 reference's x that names the layer where precision goes


@dataclass
class Worst:
    """The logit furthest out of (or closest to) tolerance."""

    vector: int
    frame: int
    klass: int
    device: float
    reference: float
    bound: float = 0.0                   # the rule's allowance for this logit
    ratio: float = 0.0                   # |device - reference| / bound


@dataclass
class CheckReport:
    url: str
    blob_crc: int
    blob_dims: tuple
    blob_dtype: str
    info: Optional[dict] = None          # INFO's fields as the device sent them
    window: int = 0
    vectors: int = 0
    length: int = 0                       # frames of the longest sequence
    lengths: List[int] = field(default_factory=list)   # frames of each sequence, in order
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
    bytes_out: int = 0                    # bytes on the line to the device while streaming (requests)
    bytes_in: int = 0                     # and back (replies, any log lines)
    device_push: Optional[float] = None   # device's own mean time per push, from STATS
    clock: str = "none"
    # Device push time in instructions: from STATS when the device counts
    # them (clock=insns), or on an emulated core run with -icount (set by the
    # caller that knows the calibration: rvne.targets.qemu).
    instructions_per_push: Optional[float] = None
    resends: int = 0
    worst: Optional[Worst] = None
    rule: str = RULE_BOUND               # "bound" (rvne.model.bounds) or "tolerance" (atol + rtol*|ref|)
    atol: Optional[float] = None
    rtol: Optional[float] = None
    frames_source: str = "random"         # "random" or the user's file
    host_gap: float = 0.0                 # worst |ref32 - ref64| / the rule's bound
    host_gap_abs: float = 0.0             # worst |ref32 - ref64|
    bound_max_rel: float = 0.0            # the rule's largest bound / |ref64| (how wide it is)
    bound_method: str = "first-order"     # "lazy": beyond the whole-model budget, decided per logit
    undecided: int = 0                    # logits left undecided (never a pass): the work cap, the FP32 range
    model_notes: List[str] = field(default_factory=list)   # the model itself out of range for FP32 on these frames
    host_worst: Optional[tuple] = field(default=None, repr=False)   # (row, class) of the host's largest gap
    strict: bool = False                  # a precision warning, or a trace asked for and not had, fails
    trace_mode: str = "off"               # "all", "sample" or "off" (what was asked)
    trace_note: str = ""                  # one line when the device could not trace
    traced: int = 0                       # pushes judged step by step
    step_values: int = 0                  # traced values judged
    step_bad: int = 0                     # of them outside their step's allowance
    step_unjudged: int = 0                # whose step leaves the FP32 range (the end-to-end rule decides)
    step_max_ratio: Optional[float] = None   # worst |device - step reference| / allowance; None: nothing traced
    step_by_quantity: dict = field(default_factory=dict)   # worst ratio per trace point (q, k, v, attention, x, logits)
    first_wrong: Optional[steps.FirstWrong] = None         # the first traced value out of its allowance
    trace_scores: Optional[bool] = None   # whether the trace held the scores (protocol 3); None: no trace
    # Per kind of step: {"values", "rms", "max"} of |device - step reference| over FP32 rounding's statistical size.
    precision: dict = field(default_factory=dict)
    precision_warning: List[str] = field(default_factory=list)   # steps whose rms is above rvne.model.precision.LEVEL
    precision_tally: Tally = field(default_factory=Tally, repr=False)   # not in to_dict
    arrays: Optional[dict] = field(default=None, repr=False)   # for --save/--plot; not in to_dict
    device_info: Optional[Info] = field(default=None, repr=False)   # INFO typed: to_dict's "info"
    # int8 only, with the user's float model: accuracy, never the verdict (absent from to_dict otherwise).
    float_model: Optional[dict] = None

    @property
    def frames_per_s(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    @property
    def end_to_end_passed(self) -> bool:
        return not self.problems and self.logits > 0 and self.bad == 0 and self.undecided == 0

    @property
    def step_passed(self) -> Optional[bool]:
        """The step verdict; None when nothing was traced."""
        return None if not self.traced else self.step_bad == 0

    @property
    def trace_missing(self) -> bool:
        """A trace was asked for and the device gave none."""
        return self.trace_mode != "off" and not self.traced and self.logits > 0

    @property
    def outcome(self) -> str:
        """PASS, FAIL or UNDECIDED (nothing wrong shown, some logits not decided)."""
        if self.problems or self.logits == 0 or self.bad or self.step_passed is False:
            return FAIL
        if self.strict and (self.precision_warning or self.trace_missing):
            return FAIL
        return UNDECIDED if self.undecided else PASS

    @property
    def passed(self) -> bool:
        return self.outcome == PASS

    @property
    def exit_code(self) -> int:
        return EXIT[self.outcome]

    def to_dict(self) -> dict:
        """The report in the typed JSON shape of docs/cli.md (`check --json`)."""
        d = asdict(self)
        d.pop("arrays", None)
        d.pop("device_info", None)
        d.pop("precision_tally", None)
        d.pop("host_worst", None)
        if self.float_model is None:
            d.pop("float_model")          # the FP32/FP16 report's shape is unchanged
        d.update(passed=self.passed, outcome=self.outcome, end_to_end_passed=self.end_to_end_passed,
                 step_passed=self.step_passed, trace_missing=self.trace_missing,
                 frames_per_s=self.frames_per_s, blob_dims=list(self.blob_dims),
                 info=self.device_info.to_json() if self.device_info is not None else None,
                 undecided_values=self.undecided_values())
        return d

    def undecided_values(self) -> List[dict]:
        """Each undecided logit: {sequence, frame, class, why}."""
        why = (self.arrays or {}).get("undecided_why")
        if why is None:
            return []
        return [{"sequence": int(v), "frame": int(t), "class": int(c), "why": WHY_TEXT[int(why[v, t, c])]}
                for v, t, c in np.argwhere(why > 0)]


HEAVY_SHARE = 0.125      # share of a heavy sequence's values drawn from Student's t
HEAVY_DF = 3             # its degrees of freedom


def default_length(window: int) -> int:
    """Frames of the longest sequence: past W by a few steps so the ring
    wraps and the oldest position is evicted more than once, not a multiple
    of W; short, because an emulated core is ~100x slower."""
    n = window + max(2, min(window, 10))
    return n - 1 if window > 1 and n % window == 0 else n


def sequence_lengths(vectors: int, length: int, window: int, seed: int = 0) -> List[int]:
    """Frames of each generated sequence (docs/model.md, "What `rvne check`
    streams"): the first `length`, the others shorter by up to a few frames,
    past W where `length` is, different from each other while there are
    lengths to take, none a multiple of W, and none bringing the frames
    streamed so far to a multiple of W, so that a ring write index a RESET
    forgot to rewind is never back at 0 by chance."""
    rng = np.random.default_rng([seed, 1])
    off = lambda total: window == 1 or total % window != 0        # noqa: E731
    lo = max(window + 1 if length > window else 1, length - max(2, min(window, 10)))
    pool = [n for n in range(lo, length) if window == 1 or n % window]
    out, used, total = [length], {length}, length
    for _ in range(1, vectors):
        order = [int(n) for n in rng.permutation(pool)] or [length]
        pick = next((n for n in order if n not in used and off(total + n)),
                    next((n for n in order if off(total + n)), order[0]))
        out.append(pick)
        used.add(pick)
        total += pick
    return out


def generated_frames(vectors: int, length: int, window: int, input_dim: int, seed: int = 0) -> List[np.ndarray]:
    """The sequences `rvne check` streams by default, deterministic from
    the seed: lengths from sequence_lengths(), values N(0, 1), and in every
    second sequence (1, 3, ...) a share HEAVY_SHARE of them replaced by
    Student's t draws with HEAVY_DF degrees of freedom: outliers in the tens,
    which N(0, 1) never gives (docs/model.md says why not heavier, and why
    not in every sequence)."""
    rng = np.random.default_rng(seed)
    out = []
    for v, n in enumerate(sequence_lengths(vectors, length, window, seed)):
        x = rng.standard_normal((n, input_dim))
        if v % 2:
            heavy = rng.random((n, input_dim)) < HEAVY_SHARE
            x[heavy] = rng.standard_t(HEAVY_DF, int(heavy.sum()))
        out.append(x.astype(np.float32))
    return out


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


SAMPLE_SHARE = 0.85     # of the untraced check's link bytes the sample may add (2x with room to spare)


def sample_plan(dims, line_max: int, lengths, request_cost: int = 32, window=None) -> List[np.ndarray]:
    """Pushes to trace in each sequence (`lengths` frames each), as
    increasing indices, so that the link carries at most twice the bytes of
    the untraced check: the traced pushes' extra bytes (one PUSH per frame,
    the TRACE requests and replies, `request_cost` bytes per extra request
    for the round trip) fit within SAMPLE_SHARE of the untraced check's own.
    Handed out one push per sequence in turn, every sequence getting one
    before any gets more: in each round, alternately by sequence, one of its
    first pushes (where a RESET that leaves state behind shows) or one of
    its last, after the ring has wrapped (where a defect that begins once
    the window is full shows), so that two traced pushes already cover
    both; at least those two even where the share holds fewer. `window`:
    the trace holds the scores (W per query head and layer)."""
    d = dims
    per = protocol.frames_per_push(line_max, d.input_dim, d.n_classes)
    budget = 0
    for n in lengths:
        for rows in protocol.chunks(n, per):
            budget += protocol.push_request_len(len(rows), d.input_dim) + protocol.push_reply_len(len(rows), d.n_classes)
    floats = steps.trace_floats(d, window)
    piece = max(1, (line_max - 80) // 4 * 3 // 4)          # floats per TRACE reply (rvne_proto.c's sizing)
    pieces = -(-floats // piece)
    one = (protocol.push_request_len(1, d.input_dim) + protocol.push_reply_len(1, d.n_classes)
           + pieces * (40 + 80 + request_cost) + protocol.b64_len(4 * floats) + request_cost)
    batched = protocol.b64_len(4 * d.input_dim) + protocol.b64_len(4 * d.n_classes)
    extra = max(1, one - batched)
    head, tail, left = [0] * len(lengths), [0] * len(lengths), budget * SAMPLE_SHARE
    rnd = 0
    while left >= extra and any(h + t < n for h, t, n in zip(head, tail, lengths)):
        for i, n in enumerate(lengths):
            if head[i] + tail[i] < n and left >= extra:
                (head if (i + rnd) % 2 == 0 else tail)[i] += 1
                left -= extra
        rnd += 1
    # A check too short for the share still traces one first push and one
    # last: a device that can trace is never reported as one that did not.
    if lengths and sum(head) == 0:
        head[0] = 1
    if lengths and sum(tail) == 0:
        j = len(lengths) - 1
        if head[j] + tail[j] < lengths[j]:
            tail[j] = 1
    return [np.concatenate([np.arange(h), np.arange(n - t, n)]).astype(np.int64)
            for h, t, n in zip(head, tail, lengths)]


def _start_trace(device: Device, info: Info, report: CheckReport, exact: bool):
    """Turn tracing on: (the floats of one push's trace, the trace's window
    for rvne.model.steps: W when it holds the scores, else None), or (0,
    None) with report.trace_note saying in one line why the device cannot
    trace. Protocol 2 traces without the scores; 3 a float model's with."""
    if info.proto < 2 or info.proto > protocol.VERSION:
        report.trace_note = (f"tracing unsupported: the firmware speaks protocol {info.proto}, this rvne "
                             f"2 to {protocol.VERSION}; checked end to end only (update the firmware or rvne to trace)")
        return 0, None
    try:
        floats = device.trace_on()
    except ProtocolError as exc:
        why = "the firmware does not know TRACE" if exc.code == "E_UNKNOWN_CMD" else str(exc)
        report.trace_note = f"tracing unsupported: {why}; checked end to end only"
        return 0, None
    window = info.window if not exact and info.proto >= protocol.TRACE_SCORES else None
    if floats != steps.trace_floats(info.dims, window):
        device.trace_off()
        report.trace_note = (f"tracing unsupported: the device's trace has {floats} floats, "
                             f"rvne expects {steps.trace_floats(info.dims, window)} for protocol {info.proto}; "
                             "checked end to end only")
        return 0, None
    report.trace_scores = window is not None
    return floats, window


def run_check(device: Device, blob_bytes, vectors: int = 4, seed: int = 0,
              window: Optional[int] = None, length: Optional[int] = None, frames=None,
              atol: Optional[float] = None, rtol: Optional[float] = None,
              trace: Optional[str] = None, float_model=None, strict: bool = False) -> CheckReport:
    """Verify `device` against the blob in `blob_bytes` (raises a BlobError
    when the file itself is not a loadable blob). `frames` [N, T, D]: the
    sequences to stream instead of N seeded random ones (generated_frames;
    `length`: the longest of them). `atol`/`rtol`
    (either or both; the other is 0) replace the error bound by the
    user's tolerance. `trace`: "all", "sample" or "off" (module doc); None:
    "all", or "off" with the user's own tolerance (a device they accept as
    approximate would fail the step rule, which knows only correct FP32).

    An int8 blob is judged exactly (docs/model.md, "Integer model"): every
    logit and traced value must equal rvne.model.int8's; no tolerance
    applies. `float_model` (name, float arrays): the float model it was
    quantised from, compared for accuracy only (report.float_model).
    `strict`: a precision warning, or a trace asked for that the device did
    not give, fails the check."""
    if vectors < 1:
        raise ValueError(f"vectors must be >= 1, got {vectors}")
    if trace is None:
        trace = "off" if atol is not None or rtol is not None else "all"
    if trace not in TRACE_MODES:
        raise ValueError(f"trace must be one of {', '.join(TRACE_MODES)}, got {trace!r}")
    parsed = blobmod.parse_loadable(blob_bytes)
    header = parsed.header
    exact = header.dtype == "int8"
    if exact and (atol is not None or rtol is not None):
        raise ValueError("an int8 blob is judged exactly (docs/model.md, \"Integer model\"): "
                         "--atol/--rtol do not apply")
    if float_model is not None and not exact:
        raise ValueError("a float model is compared only with an int8 blob's device")
    report = CheckReport(url=device.url, blob_crc=parsed.crc_stored, blob_dims=tuple(header.dims),
                         blob_dtype=header.dtype, vectors=vectors, seed=seed, trace_mode=trace, strict=strict)
    if exact:
        report.rule = RULE_EXACT
    if atol is not None or rtol is not None:
        report.rule, report.atol, report.rtol = RULE_TOLERANCE, float(atol or 0.0), float(rtol or 0.0)
        verdict.tolerance(0.0, report.atol, report.rtol)          # refuses a negative or non-finite one
    if frames is not None:
        frames = np.asarray(frames, dtype=np.float32)
        if frames.ndim != 3 or frames.shape[2] != header.input_dim or frames.shape[1] < 1:
            raise ValueError(f"frames have shape {frames.shape}, need [N, T, {header.input_dim}] with T >= 1")
        report.vectors, report.frames_source = frames.shape[0], "file"
    if window is not None:
        device.window(window)
    info = device.info()
    report.info = dict(info.fields)
    report.device_info = info
    report.window = info.window
    report.problems = compare_info(info, header, parsed.crc_stored)
    if report.problems:
        return report

    dims = header.dims
    if exact:
        int8_model = parsed.int8_model()
        weights = truth = None
    else:
        weights = parsed.tensors()
        truth = bounds.Truth(weights, dims)
    if frames is None:
        frames = generated_frames(vectors, length or default_length(info.window), info.window,
                                  dims.input_dim, seed)
    report.lengths = [len(seq) for seq in frames]
    report.length = max(report.lengths)
    floats, trace_window = _start_trace(device, info, report, exact) if trace != "off" else (0, None)
    lengths = report.lengths
    none = [np.zeros(0, dtype=np.int64)] * len(lengths)
    plan = ([np.arange(n) for n in lengths] if trace == "all"
            else sample_plan(dims, info.line_max, lengths, window=trace_window)) if floats else none
    judge = None
    if floats:
        judge = (steps.ExactStepJudge(int8_model, info.window) if exact
                 else steps.StepJudge(weights, dims, info.window, scores=trace_window is not None))
    got_all, ref_all, ref32_all, bound_all, err_all, undecided_all = [], [], [], [], [], []
    ranges, xs64 = [], []          # per sequence: where the float64 forward leaves the FP32 range; its x per layer
    traces_all = []
    stats_before = device.stats()
    pushes_before = stats_before.get("pushes", 0)
    for v, seq in enumerate(frames):
        t0, out0, in0 = time.perf_counter(), getattr(device, "bytes_out", 0), getattr(device, "bytes_in", 0)
        if len(plan[v]):
            got, traces = device.stream_traced(seq, plan[v], floats)
        else:
            got = device.run(seq)
        report.seconds += time.perf_counter() - t0
        report.bytes_out += getattr(device, "bytes_out", 0) - out0
        report.bytes_in += getattr(device, "bytes_in", 0) - in0
        report.frames += len(seq)
        if len(plan[v]):
            _judge_steps(report, judge, v, seq, traces, got, plan[v])
            traces_all.append(traces)
        if exact:
            # The int64 reference from the frames alone; allowance 0 everywhere.
            ref64 = int8_model.forward(seq, info.window).astype(np.float64)
            ref32, allowed, err_bound = ref64.astype(np.float32), np.zeros_like(ref64), np.zeros_like(ref64)
            got_all.append(got)
            ref_all.append(ref64)
            ref32_all.append(ref32)
            bound_all.append(allowed)
            err_all.append(err_bound)
            undecided_all.append(np.zeros(got.shape, dtype=bool))
            _logits_repeat(device, got, v, report)
            continue
        ref32 = reference.forward_batch(weights, dims, seq, info.window)
        if report.rule == RULE_BOUND:
            ref64, err_bound = truth.forward(seq, info.window, device=got, host=ref32)
            allowed = err_bound
        else:
            ref64, err_bound = truth.forward(seq, info.window)
            allowed = verdict.tolerance(ref64, report.atol, report.rtol)
        ranges.append(getattr(truth, "range_first", None))
        xs64.append(getattr(truth, "xs", None))
        if truth.method != "first-order":
            report.bound_method = truth.method
        got_all.append(got)
        ref_all.append(ref64)
        ref32_all.append(ref32)
        bound_all.append(allowed)
        err_all.append(err_bound)
        undecided_all.append(truth.undecided if report.rule == RULE_BOUND else np.zeros(got.shape, dtype=bool))
        _logits_repeat(device, got, v, report)
    # Judged as one run of frames [sum of lengths, C]; report.worst gets its sequence back.
    cat = lambda arrs: np.concatenate(arrs, axis=0)    # noqa: E731
    why = _judge(report, cat(got_all), cat(ref_all), cat(ref32_all), cat(bound_all), cat(err_all),
                 cat(undecided_all))
    if not exact:
        _model_notes(report, ranges, xs64, weights, frames, info.window, why)
    if exact:
        report.bound_max_rel = 0.0            # 0/|ref|: the allowance is 0 wherever ref is
        if float_model is not None:
            report.float_model = _against_float(int8_model, float_model, frames, got_all, info.window)
    why = _padded(np.split(why, np.cumsum(report.lengths)[:-1]), 0)
    report.arrays = {"frames": _padded(frames), "device": _padded(got_all), "reference": _padded(ref_all),
                     "reference32": _padded(ref32_all), "bound": _padded(bound_all),
                     "undecided": why > 0, "undecided_why": why, "lengths": np.array(report.lengths),
                     "traced": np.array([len(p) for p in plan[:len(frames)]], dtype=np.int64)}
    if traces_all:
        # [V, most traced, F], NaN where a sequence had fewer pushes traced;
        # trace_pushes [V, most traced]: which push each is, -1 beyond.
        most = max(len(p) for p in plan)
        padded = np.full((len(frames), most, floats), np.nan, dtype=np.float32)
        which = np.full((len(frames), most), -1, dtype=np.int64)
        it = iter(traces_all)
        for v, p in enumerate(plan[:len(frames)]):
            if len(p):
                padded[v, :len(p)] = next(it)
                which[v, :len(p)] = p
        report.arrays["traces"] = padded
        report.arrays["trace_pushes"] = which
    report.precision = report.precision_tally.summary(steps.POINTS) if traces_all else {}
    report.precision_warning = warned(report.precision)
    if floats:
        device.trace_off()            # give the device its arena back
    report.resends = device.resends
    stats = device.stats()
    report.clock = str(stats.get("clock", "none"))
    pushed = stats.get("pushes", 0) - pushes_before
    if report.clock != "none" and pushed > 0:
        spent = stats.get("push_total", 0) - stats_before.get("push_total", 0)
        report.device_push = spent / pushed
        if report.clock == CLOCK_INSNS:      # counted by the device's own core: nothing to convert
            report.instructions_per_push = report.device_push
    if pushed != report.frames:
        report.problems.append(f"STATS counted {pushed} pushes for the {report.frames} frames sent")
    return report


def _logits_repeat(device, got, v, report):
    """LOGITS must repeat the last frame's logits bit for bit."""
    last = device.logits()
    if not np.array_equal(last.view(np.uint32), got[-1].view(np.uint32)):
        report.problems.append(f"LOGITS after sequence {v} differs from the last PUSH reply")


def _against_float(model, float_model, frames, got_all, window) -> dict:
    """The device's int8 logits (accumulators x logit_scale) against the FP32
    reference of the float model they were quantised from: accuracy of the
    quantisation, never part of the verdict."""
    name, arrays = float_model
    ref, got = [], []
    with np.errstate(all="ignore"):
        for seq, acc in zip(frames, got_all):
            ref.append(reference.forward_batch(arrays, model.dims, seq, window).astype(np.float64))
            got.append(model.float_logits(acc).astype(np.float64))
    ref, got = np.concatenate(ref), np.concatenate(got)
    err = float(np.abs(got - ref).max())
    span = float(ref.max() - ref.min())
    return {"model": str(name), "frames": int(ref.shape[0]),
            "argmax_agree": int((ref.argmax(axis=1) == got.argmax(axis=1)).sum()),
            "max_abs_error": err, "logit_range": span, "relative_error": err / span if span > 0 else None}


def _judge_steps(report, judge, v, frames, traces, got, pushes):
    """One sequence's traced pushes (`pushes`, indices into frames and the
    logits `got`) under the step rule, into the report."""
    res = judge.sequence(frames, traces, seq_index=v, pushes=pushes)
    got = np.asarray(got)[pushes]
    report.precision_tally.merge(res.precision)
    report.traced += res.pushes
    report.step_values += res.values
    report.step_bad += res.bad
    report.step_unjudged += res.unjudged
    report.step_max_ratio = max(report.step_max_ratio or 0.0, res.max_ratio)
    for k, r in res.by_point.items():
        report.step_by_quantity[k] = max(report.step_by_quantity.get(k, 0.0), r)
    if report.first_wrong is None and res.first is not None:
        report.first_wrong = res.first
    # The trace's logits are the ones the PUSH reply carried, bit for bit.
    _, logits = steps.split(traces, judge.dims, getattr(judge, "trace_window", None))
    if not np.array_equal(logits.view(np.uint32), np.asarray(got, np.float32).view(np.uint32)):
        t = int(pushes[np.argmax((logits.view(np.uint32) != np.asarray(got, np.float32).view(np.uint32)).any(axis=1))])
        report.problems.append(f"the trace of sequence {v} frame {t} holds other logits than its PUSH reply: "
                               "the device reports a stale or wrong trace")


def _padded(seqs, fill=np.nan):
    """Sequences [T_i, ...] as one [V, max T_i, ...] array, `fill` past each one's end."""
    longest = max(len(q) for q in seqs)
    out = np.full((len(seqs), longest) + seqs[0].shape[1:], fill, dtype=seqs[0].dtype)
    for i, q in enumerate(seqs):
        out[i, :len(q)] = q
    return out


def _judge(report, got, ref, ref32, allowed, err_bound, undecided=None):
    """Fill the report's verdict numbers from [F, C] arrays, the frames of
    every sequence one after another (report.lengths) (`allowed`:
    the rule's allowance; `err_bound`: rvne.model.bounds', infinite where the
    model leaves the FP32 range; `undecided`: logits the lazy bound could
    not decide, counted apart and never passed). Returns why each logit is
    undecided [F, C] (0: it is not; WHY_*): where the model leaves the FP32
    range no FP32 result can be vouched for, so a logit there is undecided
    unless the device gives the reference's infinity; where the host's own
    FP32 reference is outside the bound (a correct implementation), the
    bound does not hold on these frames, so a logit outside it is
    undecided, not failed."""
    why = np.zeros(np.shape(got), dtype=np.int8)
    if undecided is not None:
        why[undecided] = WHY_CAP
    with np.errstate(invalid="ignore"):
        out = (~np.isfinite(ref) | ~np.isfinite(err_bound)) & ~(np.isinf(ref) & (got == ref))
    why[out] = WHY_RANGE
    in_range = why != WHY_RANGE
    host = verdict.ratios(ref32, ref, allowed)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        gap = np.abs(ref32.astype(np.float64) - ref)
        rel = allowed / np.abs(ref)
        report.host_gap = float(np.nan_to_num(host[in_range], nan=np.inf).max()) if in_range.any() else 0.0
        report.host_gap_abs = float(np.nan_to_num(gap[in_range], nan=np.inf).max()) if in_range.any() else 0.0
        report.bound_max_rel = float(np.nan_to_num(rel, nan=np.inf).max()) if rel.size else 0.0
        if report.rule == RULE_BOUND and report.host_gap > 1:
            why[(why == 0) & ~(np.abs(got - ref) <= allowed)] = WHY_HOST
    undecided = why > 0
    # The undecided logits are counted apart (the verdict's numbers are the decided ones').
    safe = np.where(np.isfinite(ref), ref, 0.0)
    v = verdict.judge(np.where(undecided, safe, got), np.where(undecided, safe, ref), np.where(undecided, 1.0, allowed))
    report.undecided = int(undecided.sum())
    report.logits = v["n"]
    report.bad = v["n_bad"]
    report.max_abs, report.max_rel, report.max_ratio = v["max_abs"], v["max_rel"], v["max_ratio"]
    report.argmax_agree = int(round(v["argmax_agree"] * v["rows"]))
    if v["worst"] is not None:
        i = v["worst"]
        seq, frame = _sequence_of(report, i[0])
        report.worst = Worst(seq, frame, i[1], float(got[i]), float(ref[i]), float(allowed[i]), v["max_ratio"])
    report.host_worst = (np.unravel_index(int(np.argmax(np.where(in_range, np.nan_to_num(host, nan=np.inf), -1))),
                                          host.shape) if in_range.any() and host.size else None)
    return why


HELP = ("what would help: smaller weights, shorter sequences (--length, or a smaller --window), "
        "or --frames the model was trained on")


def _model_notes(report, ranges, xs64, weights, frames, window, why):
    """Say, before any judgement of the device, where the model itself is
    out of range for FP32 on these frames: the float64 forward leaves the
    FP32 range (`ranges`: per sequence, Truth.range_first or None), or the
    host's own FP32 reference falls outside the allowance (`xs64`: per
    sequence, the float64 x entering each layer and the classifier, to name
    where FP32 departs from it)."""
    out = [(v, r) for v, r in enumerate(ranges) if r is not None]
    n = int((why == WHY_RANGE).sum())
    if out or n:
        where = ""
        if out:
            v, (frame, layer, qty) = out[0]
            where = f": first at sequence {v} frame {frame}, " + (f"layer {layer} {qty}" if layer is not None else qty)
        report.model_notes.append(
            f"the model leaves the FP32 range on these frames (a value of the float64 forward, or the sum of a "
            f"step's terms, comes within 2x of 3.4e38, or is not finite){where}; {n} logits undecided there; {HELP}")
    if report.rule != RULE_BOUND or report.host_gap <= 1 or report.host_worst is None:
        return
    row, klass = (int(i) for i in report.host_worst)
    seq, frame = _sequence_of(report, row)
    depart = ""
    if xs64 and xs64[seq]:
        xs32 = []
        reference.forward_batch(weights, report.blob_dims, frames[seq], window, xs=xs32)
        for layer, (a, b) in enumerate(zip(xs32, xs64[seq])):
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                rel = float(np.linalg.norm(a[frame].astype(np.float64) - b[frame]) / np.linalg.norm(b[frame]))
            if rel > HOST_DEPARTS:
                what = "the classifier's input" if layer == len(xs32) - 1 else f"x entering layer {layer}"
                depart = (f"; its FP32 values depart from float64 by {rel:.3g} relative first at {what} there "
                          f"(the output of layer {layer - 1})")
                break
    report.model_notes.append(
        f"the host's own FP32 reference is at {report.host_gap:.3g}x the allowance against float64 (sequence {seq} "
        f"frame {frame} class {klass}): the model is out of range for FP32 on these frames, the bound does not hold "
        f"there, and {int((why == WHY_HOST).sum())} logits outside it are undecided, not failed{depart}; {HELP}")


def _sequence_of(report, row):
    """(sequence, frame) of row `row` of the sequences' frames one after another."""
    ends = np.cumsum(report.lengths or [report.length] * report.vectors)
    seq = int(np.searchsorted(ends, row, side="right"))
    return seq, int(row - (ends[seq - 1] if seq else 0))


def rule_text(r: CheckReport) -> str:
    if r.rule == RULE_EXACT:
        return "exact (tolerance 0, docs/model.md)"
    if r.rule == RULE_TOLERANCE:
        return f"|a-b| <= {r.atol:g} + {r.rtol:g}*|b| (--atol/--rtol)"
    if r.bound_method == "forward":
        return (f"|a-b| <= error bound (docs/model.md, safety {bounds.SAFETY:g}; rigorous forward only: "
                "the model is beyond the first-order budget, so the bound is loose)")
    if r.bound_method == "lazy":
        return (f"|a-b| <= error bound (docs/model.md, safety {bounds.SAFETY:g}; first-order, decided "
                "per logit: the model is beyond the whole-model budget)")
    return f"|a-b| <= error bound (docs/model.md, safety {bounds.SAFETY:g})"


def _step_lines(r: CheckReport) -> List[str]:
    if r.trace_note:
        return [f"steps      {r.trace_note}"]
    if not r.traced:
        return ["steps      not traced (--trace off)"] if r.trace_mode == "off" else []
    how = "every push" if r.trace_mode == "all" else "a sample: the first and the last pushes of each sequence"
    if r.trace_scores is False and r.rule != RULE_EXACT:
        how += "; protocol 2: no scores traced, the attention judged from q, k, v"
    if r.rule == RULE_EXACT:
        differ = [k for k in steps.POINTS if r.step_by_quantity.get(k, 0.0) > 0]
        return [f"steps      {r.traced} pushes traced ({how}), each value against its own step from the device's "
                f"inputs (docs/model.md): {r.step_values - r.step_bad}/{r.step_values} equal"
                + (f", differing in {', '.join(differ)}" if differ else "")]
    worst = "  ".join(f"{k} {r.step_by_quantity[k]:.3g}" for k in steps.POINTS if k in r.step_by_quantity)
    line = (f"steps      {r.traced} pushes traced ({how}), each value against its own step from the device's "
            f"inputs (docs/model.md): {r.step_values - r.step_bad}/{r.step_values} within, worst at "
            f"{r.step_max_ratio:.3g} of it ({worst})")
    if r.step_unjudged:
        line += f"; {r.step_unjudged} beyond the FP32 range, left to the end-to-end rule"
    return [line] + _precision_lines(r)


def _precision_lines(r: CheckReport) -> List[str]:
    """The precision figure, and its warning (docs/model.md, "Precision below FP32")."""
    if not r.precision:
        return []
    fig = "  ".join(f"{k} {v['rms']:.3g}/{v['max']:.3g}" for k, v in r.precision.items())
    lines = [f"precision  |device - step reference| in units of FP32 rounding's statistical size "
             f"u*sqrt(n*sum t^2), rms/largest (docs/model.md): {fig}"]
    if r.precision_warning:
        worst = max(r.precision[k]["rms"] for k in r.precision_warning)
        lines.append(f"WARNING    precision below FP32 at {', '.join(r.precision_warning)}: rms up to {worst:.3g}, "
                     f"above {PRECISION_LEVEL:g}, which no correct build reaches on rvne's generated frames; "
                     "statistical evidence, not proof (--strict fails it)"
                     + ("; your --frames may be correlated, which makes correct rounding add up: the warning "
                        "is less reliable on them" if r.frames_source == "file" else ""))
    return lines


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
    for p in r.model_notes:
        lines.append(f"MODEL      {p}")
    if r.logits:
        source = "from the frames file" if r.frames_source == "file" else f"(seed {r.seed}, W {r.window})"
        if r.frames_source == "file":
            source += f", W {r.window}"
        sizes = (f"x {r.length} frames" if len(set(r.lengths or [r.length])) == 1
                 else f"of {min(r.lengths)} to {r.length} frames")
        if r.rule == RULE_EXACT:
            lines += _exact_lines(r, sizes, source)
            return _render_tail(r, lines)
        lines += [
            f"streamed   {r.vectors} sequences {sizes} {source}, {r.logits} logits",
            f"tolerance  {rule_text(r)}: {r.logits - r.bad - r.undecided}/{r.logits} within, "
            f"worst at {r.max_ratio:.3g} of it"
            + (f", {r.undecided} undecided" if r.undecided else ""),
            f"max error  abs {r.max_abs:.3g}  rel {r.max_rel:.3g}  (bound up to {r.bound_max_rel:.3g} of |ref|)",
            f"host       numpy FP32 reference vs float64: {r.host_gap:.3g} of the allowance "
            f"(abs {r.host_gap_abs:.3g})",
            f"argmax     {r.argmax_agree}/{r.frames} frames agree",
            _speed_line(r),
        ]
        lines += _step_lines(r) + _icount_lines(r)
        if r.worst is not None:
            w = r.worst
            lines.append(f"worst      sequence {w.vector} frame {w.frame} class {w.klass}: "
                         f"device {w.device!r} reference {w.reference!r} allowed {w.bound:.3g} "
                         f"(ratio {w.ratio:.3g})")
    return _render_tail(r, lines)


def _speed_line(r: CheckReport) -> str:
    return (f"speed      {r.frames_per_s:.1f} frames/s over the link"
            + (f" ({(r.bytes_out + r.bytes_in) / r.seconds / 1000:.1f} kB/s: {r.bytes_out / r.frames:.0f} B/frame "
               f"out, {r.bytes_in / r.frames:.0f} back)" if r.bytes_out and r.seconds > 0 else "")
            # An emulated core's clock ticks at no chip's rate: its cost is the icount line.
            + (f", {r.device_push:.0f} {r.clock}/push on the device"
               if r.device_push is not None and r.instructions_per_push is None else "")
            + (f", {r.resends} resends" if r.resends else ""))


def _icount_lines(r: CheckReport) -> List[str]:
    if r.instructions_per_push is None:
        return []
    how = "its ICOUNT register" if r.clock == CLOCK_INSNS else "QEMU -icount"
    return [f"icount     {r.instructions_per_push:,.0f} instructions/push on the emulated "
            f"{(r.info or {}).get('port', '?')} core ({how}, mean of the pushes; not ESP32-S3 cycles)"]


def _exact_lines(r: CheckReport, sizes, source) -> List[str]:
    """An int8 report's body: equality, not a bound; the float model's
    accuracy (when given) said apart from the verdict."""
    lines = [
        f"streamed   {r.vectors} sequences {sizes} {source}, {r.logits} logits",
        f"tolerance  {rule_text(r)}: {r.logits - r.bad}/{r.logits} equal"
        + (f", max |difference| {r.max_abs:.9g}" if r.bad else ""),
        "reference  rvne.model.int8 from the frames alone (int64 numpy); logits are the int32 accumulators",
        f"argmax     {r.argmax_agree}/{r.frames} frames agree",
        _speed_line(r),
    ]
    lines += _step_lines(r) + _icount_lines(r)
    f = r.float_model
    if f is not None:
        rel = "-" if f["relative_error"] is None else f"{100 * f['relative_error']:.2f}%"
        lines.append(f"float      accuracy, not the verdict: int8 logits (x logit_scale) vs the FP32 reference of "
                     f"{f['model']}: argmax {f['argmax_agree']}/{f['frames']} frames agree, max error "
                     f"{f['max_abs_error']:.4g} ({rel} of the logit range {f['logit_range']:.4g})")
    if r.worst is not None and r.bad:
        w = r.worst
        lines.append(f"first      differing logit: sequence {w.vector} frame {w.frame} class {w.klass}: "
                     f"device {w.device!r} reference {w.reference!r}")
    return lines


def _render_tail(r: CheckReport, lines) -> str:
    if r.undecided:
        why = r.arrays.get("undecided_why") if r.arrays else None
        counts = {k: int((why == k).sum()) for k in WHY_TEXT} if why is not None else {WHY_CAP: r.undecided}
        said = "; ".join(f"{n} {WHY_TEXT[k].split(':')[0]}" for k, n in counts.items() if n)
        lines.append(f"UNDECIDED  {r.undecided} logits ({said}){' and some logit already fails' if r.bad else ''}; "
                     "nothing there shows the device wrong: check fewer or shorter sequences (--vectors, --length), "
                     "the MODEL lines above, or state a tolerance (--atol/--rtol)")
    if r.first_wrong is not None:
        lines.append(f"FIRST WRONG {steps.first_wrong_text(r.first_wrong)}")
    if r.logits and r.step_passed is not None:
        e2e = PASS if r.end_to_end_passed else (UNDECIDED if r.undecided and not r.bad and not r.problems else FAIL)
        lines.append(f"verdicts   end to end {e2e}, "
                     f"step by step {'PASS' if r.step_passed else 'FAIL'}")
    lines.append(verdict_line(r))
    return "\n".join(lines)


def verdict_line(r: CheckReport) -> str:
    """The last line: the outcome, and what it rests on where that is less than asked."""
    out = r.outcome
    why = []
    if out == FAIL and not (r.strict and (r.trace_missing or r.precision_warning)):
        return out
    if r.trace_missing:
        why.append(f"end to end only: --trace {r.trace_mode} asked, the device did not trace"
                   + (", and --strict fails that" if r.strict else ""))
    if r.precision_warning:
        why.append(f"precision below FP32 at {', '.join(r.precision_warning)}"
                   + (", and --strict fails that" if r.strict else ": a warning"))
    return out + (f" ({'; '.join(why)})" if why else "")
