"""`rvne inspect` output for a base.Report: text, and JSON streamed one
tensor per line (a file of a million tensors must not need the whole
document in memory, nor Python's indenting encoder)."""

import json

from .base import FAIL, OK, SKIPPED, WARN

_MARK = {OK: "ok  ", FAIL: "FAIL", WARN: "warn", SKIPPED: "skip"}


def _shape(t):
    return "x".join(str(n) for n in t.shape) if t.shape is not None else f"({t.size} bytes)"


def render_text(path, report, stats=None):
    r = report
    version = f", version {r.version}" if r.version is not None else ""
    lines = [f"{path}: {r.title}{version}, {r.size} bytes"]
    for k, v in r.fields.items():
        # JSON keeps numbers as numbers (docs/cli.md); people read magics and CRCs in hex.
        shown = f"0x{v:08X}" if isinstance(v, int) and k in ("magic", "crc_stored") else v
        lines.append(f"  {k}: {shown}")
    for note in r.readings:
        lines.append(f"  reading: {note}")
    lines.append(f"tensors: {len(r.tensors)}")
    for t in r.tensors:
        align = f" align {t.align}" if t.align else ""
        extra = "".join(f" {k}={v}" for k, v in t.extra.items() if k != "key")
        lines.append(f"  {t.label}: {t.dtype} {_shape(t)} @ {t.offset} +{t.size}{align}{extra}")
        s = (stats or {}).get(t.index)
        if s:
            lines.append("      " + " ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                                             for k, v in s.items()))
    lines.append("checks:")
    for c in r.checks:
        lines.append(f"  {_MARK[c.status]} {c.code}: {c.detail}")
    if r.holes:
        lines.append("holes: " + ", ".join(f"[{a}, {b})" for a, b in r.holes[:8])
                     + (f" and {len(r.holes) - 8} more" if len(r.holes) > 8 else ""))
    err = r.error
    lines.append(f"result: invalid ({err.code})" if err else "result: valid")
    return "\n".join(lines)


def write_json(out, head, tensors, tail):
    """One JSON object to `out`: the keys of `head`, then "tensors" as a
    list written one compact object per line from the iterable `tensors`,
    then the keys of `tail`. Small parts indented as json.dump(indent=2)."""
    out.write("{\n")
    for k, v in head.items():
        out.write(f"  {json.dumps(k)}: {_indented(v)},\n")
    out.write('  "tensors": [')
    sep = "\n    "
    for t in tensors:
        out.write(sep + json.dumps(t, separators=(", ", ": ")))
        sep = ",\n    "
    out.write("\n  ]" if sep != "\n    " else "]")
    for k, v in tail.items():
        out.write(f",\n  {json.dumps(k)}: {_indented(v)}")
    out.write("\n}\n")


def _indented(v):
    return json.dumps(v, indent=2).replace("\n", "\n  ")
