"""What `rvne check` keeps of a run: `--save FILE.npz` (the arrays) and
`--plot FILE.png` (per class: device and reference logits over time, and
each logit's error as a fraction of its allowance).

npz keys (V sequences, T frames of the longest, D inputs, C classes):
  lengths [V] int              frames of each sequence; past its end every array holds NaN (undecided: False)
  frames [V, T, D] float32     what was streamed
  device [V, T, C] float32     the device's logits
  reference [V, T, C] float64  the float64 reference (rvne.model.bounds)
  reference32 [V, T, C] float32  the numpy FP32 reference (rvne infer's)
  bound [V, T, C] float64      the applied rule's allowance per logit
  rule, window, blob_crc       0-d: "bound", "tolerance atol=A rtol=R" or "exact" (an int8 blob:
                               reference the int64 integer reference, bound 0); W; CRC hex
  undecided [V, T, C] bool     logits left undecided (never a pass)
  undecided_why [V, T, C] int8 why: 0 decided, 1 the bound's work cap, 2 the model leaves the FP32
                               range there, 3 the host's own FP32 reference also leaves the bound
                               (rvne.check.WHY_TEXT); outcome 0-d: PASS, FAIL or UNDECIDED
  traced [V] int64             pushes traced in each sequence (0: none)
  traces [V, S, F] float32     with tracing: each traced push's trace (docs/protocol.md, TRACE),
                               S = the most traced in a sequence, NaN beyond a sequence's own
  trace_pushes [V, S] int64    which push of its sequence each trace is (-1 beyond)
  steps                        0-d JSON: the step verdict (rvne.check's step_* fields and
                               first_wrong: sequence, frame, layer, quantity, index, device,
                               reference, allowance, ratio, kernel; exact: allowance 0, ratio inf;
                               precision: {step: {values, rms, max}} and precision_warning);
                               "null" when nothing was traced
"""

import dataclasses
import json

import io

import numpy as np

from .check import RULE_EXACT, RULE_TOLERANCE, CheckReport, rule_text
from .io.atomic import write_atomic
from .model.steps import first_wrong_text


def _need_arrays(report: CheckReport, what):
    if not report.arrays:
        raise ValueError(f"nothing to {what}: the check streamed no frames ({'; '.join(report.problems)})")
    return report.arrays


def step_summary(report: CheckReport):
    """The step verdict as plain values (None when nothing was traced)."""
    if not report.traced:
        return None
    fw = report.first_wrong
    return {"traced": report.traced, "values": report.step_values, "bad": report.step_bad,
            "unjudged": report.step_unjudged, "max_ratio": report.step_max_ratio,
            "by_quantity": report.step_by_quantity, "passed": report.step_passed,
            "first_wrong": dataclasses.asdict(fw) if fw is not None else None,
            "scores": report.trace_scores, "precision": report.precision,
            "precision_warning": report.precision_warning}


def save_npz(report: CheckReport, path):
    a = _need_arrays(report, "save")
    rule = (f"tolerance atol={report.atol:g} rtol={report.rtol:g}" if report.rule == RULE_TOLERANCE
            else RULE_EXACT if report.rule == RULE_EXACT else "bound")
    buf = io.BytesIO()
    extra = {"traced": a.get("traced", np.zeros(len(a["frames"]), np.int64))}
    for key in ("traces", "trace_pushes", "undecided_why"):
        if key in a:
            extra[key] = a[key]
    np.savez(buf, frames=a["frames"], device=a["device"], reference=a["reference"],
             reference32=a["reference32"], bound=a["bound"], undecided=a["undecided"], lengths=a["lengths"],
             rule=np.array(rule), outcome=np.array(report.outcome),
             window=np.array(report.window), blob_crc=np.array(f"{report.blob_crc:08X}"),
             steps=np.array(json.dumps(step_summary(report))), **extra)
    write_atomic(path, buf.getvalue())


def plot_png(report: CheckReport, path):
    """One row per class: logits (left), |device - reference| / allowance
    (right, log scale, the pass line at 1). Sequences follow each other on
    the time axis, separated by dotted lines."""
    import matplotlib

    matplotlib.use("Agg")             # files only, no display needed
    import matplotlib.pyplot as plt

    a = _need_arrays(report, "plot")
    dev, ref, bound = a["device"], a["reference"], a["bound"]
    V, T, C = ref.shape
    t = np.arange(V * T)
    exact = report.rule == RULE_EXACT
    with np.errstate(divide="ignore", invalid="ignore"):
        # Exact: the difference itself (integers, so any is >= 1 and fails).
        frac = np.abs(dev.astype(np.float64) - ref) / (1.0 if exact else bound)
    frac = np.where(np.isfinite(frac), frac, np.nan)
    floor = 0.1 if exact else 1e-6
    fig, axes = plt.subplots(C, 2, figsize=(12, 1.9 * C + 1.2), sharex=True, squeeze=False)
    for c in range(C):
        left, right = axes[c]
        left.plot(t, ref[:, :, c].reshape(-1), color="tab:blue", lw=1.6,
                  label="reference (int64 integers)" if exact else "reference (float64)")
        left.plot(t, dev[:, :, c].reshape(-1), color="tab:orange", lw=0.9, ls="--", label="device")
        left.set_ylabel(f"class {c}")
        right.semilogy(t, np.maximum(frac[:, :, c].reshape(-1), floor), color="tab:green", lw=0.9)
        right.axhline(1.0, color="tab:red", lw=1.0, label="an integer apart" if exact else "allowance")
        bad = frac[:, :, c].reshape(-1) > (0 if exact else 1)
        if bad.any():
            right.plot(t[bad], frac[:, :, c].reshape(-1)[bad], "x", color="tab:red", ms=4)
        right.set_ylim(floor, max(10.0, np.nanmax(frac) * 3 if np.isfinite(np.nanmax(frac)) else 10.0))
        for ax in (left, right):
            for v in range(1, V):
                ax.axvline(v * T - 0.5, color="grey", lw=0.6, ls=":")
    fw = report.first_wrong
    if fw is not None:
        # Where the first value out of its step's allowance is: every row.
        at = fw.sequence * T + fw.frame
        for ax in axes.reshape(-1):
            ax.axvline(at, color="tab:red", lw=1.2, ls="--")
        axes[0][0].annotate("first wrong step", (at, 1.0), xycoords=("data", "axes fraction"), color="tab:red",
                            fontsize=8, ha="left", va="top")
    axes[0][0].legend(loc="upper right", fontsize=8)
    axes[0][0].set_title("logits over time (sequences one after another)")
    axes[0][1].set_title("|device - reference| (0 passes: exact)" if exact
                         else "|device - reference| / allowance (<= 1 passes)")
    axes[-1][0].set_xlabel("frame")
    axes[-1][1].set_xlabel("frame")
    verdict = report.outcome
    title = (f"rvne check {verdict}: blob {report.blob_crc:08X} dims {','.join(map(str, report.blob_dims))} "
             f"{report.blob_dtype}, W {report.window}; {rule_text(report)}; "
             + (f"{report.logits - report.bad}/{report.logits} equal" if exact else f"worst {report.max_ratio:.3g}"))
    if report.traced and exact:
        title += f"\nstep by step: {report.traced} pushes traced, {report.step_values - report.step_bad}/" \
                 f"{report.step_values} equal"
        if fw is not None:
            title += "; first wrong: " + first_wrong_text(fw)
    elif report.traced:
        title += f"\nstep by step: {report.traced} pushes traced, worst {report.step_max_ratio:.3g} of the allowance"
        if fw is not None:
            title += "; first wrong: " + first_wrong_text(fw)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.95 if report.traced else 0.97))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    write_atomic(path, buf.getvalue())
