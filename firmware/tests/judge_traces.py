"""Judges the traces test_head.c wrote (NAME.trace-TAG beside each golden
case) step by step: rvne.model.steps, the rule of docs/model.md ("Step by step")
that `rvne check` applies to a device.

    python3 judge_traces.py GOLDEN_DIR TAG

Exit 1 when a value is outside its step's allowance or a trace is missing
or short; one line per case otherwise.
"""

import os
import sys

import numpy as np

from rvne.io import blob
from rvne.model import steps


def main(argv):
    if len(argv) != 3:
        print("usage: judge_traces.py GOLDEN_DIR TAG", file=sys.stderr)
        return 2
    gdir, tag = argv[1], argv[2]
    failed = 0
    with open(os.path.join(gdir, "index.txt")) as f:
        cases = [line.split() for line in f if line.strip()]
    for name, window, n in cases:
        window, n = int(window), int(n)
        parsed = blob.parse_loadable(open(os.path.join(gdir, name + ".blob"), "rb").read())
        d = parsed.header.dims
        frames = np.fromfile(os.path.join(gdir, name + ".frames"), "<f4").reshape(n, d.input_dim)
        path = os.path.join(gdir, f"{name}.trace-{tag}")
        traces = np.fromfile(path, "<f4") if os.path.exists(path) else np.zeros(0, np.float32)
        # A float head traces the scores too (W a query head: docs/protocol.md, TRACE).
        floats = steps.trace_floats(d, window)
        if traces.size != n * floats:
            print(f"{name}: {path} holds {traces.size} floats, need {n} pushes x {floats}", file=sys.stderr)
            failed += 1
            continue
        res = steps.StepJudge.of_blob(parsed, window, scores=True).sequence(frames, traces.reshape(n, -1))
        line = (f"{name} ({tag}): {res.values} traced values, {res.bad} outside their step's allowance, "
                f"worst at {res.max_ratio:.3g} of it")
        if res.first is not None:
            line += "; first: " + steps.first_wrong_text(res.first)
        print(line, file=sys.stderr if res.bad else sys.stdout)
        failed += res.bad > 0 or res.unjudged > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
