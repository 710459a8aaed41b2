"""The precision figure beside the step verdict (docs/model.md, "Precision
below FP32"): each traced value's deviation from its step reference in
units of the statistical size of correct FP32 rounding, u*sqrt(n*sum t_i^2)
for a sum of n terms t_i (what the error of such a sum is when its
roundings are independent, whatever n; its rms counterpart for the
attention step), summarised per kind of step over a run as the rms and the
largest.

Statistical evidence, not proof: a correct device's rounding can add up
(correlated inputs, an averaging model), so a figure above LEVEL is a
warning, and a failure only under `rvne check --strict`.

    tally = Tally(); tally.add("q", device, reference, size, judged)
    tally.summary()     # {"q": {"values": n, "rms": r, "max": m}, ...}
    warned(tally.summary())   # the steps whose rms is above LEVEL
"""

from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np

from .bounds import U

# The rms of a step kind's deviations, in units of its statistical size,
# above which the report warns "precision below FP32" (docs/model.md states
# what correct builds reach on rvne's generated frames and the margin).
LEVEL = 8.0


def dot_size(sum_sq, n):
    """u*sqrt(n*sum t_i^2) from sum t_i^2 of an n-term sum."""
    with np.errstate(over="ignore", invalid="ignore"):
        return U * np.sqrt(n * np.asarray(sum_sq, dtype=np.float64))


@dataclass
class Tally:
    """Per step kind: [values, sum of squared ratios, largest ratio]."""

    by_point: Dict[str, List[float]] = field(default_factory=dict)

    def add(self, point, device, reference, size, judged):
        """The judged values with a finite device value and a size > 0."""
        dev = np.asarray(device, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            r = np.abs(dev - reference) / size
        r = np.where(dev == reference, 0.0, r)
        keep = judged & np.isfinite(r) & (size > 0)
        if not keep.any():
            return
        r = r[keep]
        acc = self.by_point.setdefault(point, [0, 0.0, 0.0])
        acc[0] += int(r.size)
        acc[1] += float(np.square(r).sum())
        acc[2] = max(acc[2], float(r.max()))

    def merge(self, other: "Tally"):
        for p, (n, sq, mx) in other.by_point.items():
            acc = self.by_point.setdefault(p, [0, 0.0, 0.0])
            acc[0] += n
            acc[1] += sq
            acc[2] = max(acc[2], mx)

    def summary(self, order=None) -> Dict[str, dict]:
        points = [p for p in (order or self.by_point) if p in self.by_point]
        return {p: {"values": self.by_point[p][0], "rms": float(np.sqrt(self.by_point[p][1] / self.by_point[p][0])),
                    "max": self.by_point[p][2]} for p in points}


def warned(summary, level=LEVEL) -> List[str]:
    """The step kinds whose rms is above `level`."""
    return [p for p, s in summary.items() if s["rms"] > level]
