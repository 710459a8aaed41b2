"""The verdict `rvne check` applies (docs/model.md, "Agreement contract"):
a device's logits against the float64 reference of a blob and its
per-logit error bound (rvne.model.bounds), judged by the agreement rule of
rvne.model.agreement, whose tolerance, ratios and judge are importable from
here as well.

    v = against_blob(device_logits, parsed_blob, frames, window)
    v["ok"], v["n_bad"], v["max_ratio"], v["worst"]
"""

from .agreement import judge, ratios, tolerance  # noqa: F401 (the rule, under the names callers know)
from .bounds import Truth


def against_blob(device, parsed_blob, frames, window):
    """judge() of `device` logits [N, C] for `frames` [N, D] streamed after a
    reset, against the float64 reference of a parsed blob and its error
    bound: the verdict `rvne check` applies, for tests and tools. (A logit
    the bound leaves undecided beyond the whole-model budget counts as out.)"""
    ref, bound = Truth.of_blob(parsed_blob).forward(frames, window, device=device)
    return judge(device, ref, bound)
