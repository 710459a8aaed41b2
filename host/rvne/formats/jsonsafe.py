"""JSON metadata from untrusted files, bounded: size and nesting capped
before parsing (Python's json recurses, so depth 100000 would be a
RecursionError), duplicate object keys refused (json.loads would keep the
last one silently, so two readers could disagree about which tensor a name
means), NaN/Infinity refused (not JSON)."""

import json

MAX_BYTES = 100_000_000  # the cap of safetensors' own reader (tensor.rs), a sane default for any JSON header
MAX_DEPTH = 64


class JsonError(ValueError):
    """`reason` is one line; `kind` is 'size', 'depth', 'utf8', 'syntax' or 'duplicate'."""

    def __init__(self, kind, reason):
        super().__init__(reason)
        self.kind = kind


def _depth(text):
    depth = worst = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            worst = max(worst, depth)
        elif ch in "]}":
            depth -= 1
    return worst


def _pairs(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise JsonError("duplicate", f"duplicate key {k!r}")
        seen[k] = v
    return seen


def _constant(name):
    raise JsonError("syntax", f"{name} is not JSON")


def loads(data, *, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH):
    """Parse `data` (bytes) as strict UTF-8 JSON within the caps; raises JsonError."""
    if len(data) > max_bytes:
        raise JsonError("size", f"{len(data)} bytes of JSON exceed the cap of {max_bytes}")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonError("utf8", f"not UTF-8 at byte {exc.start}") from None
    depth = _depth(text)
    if depth > max_depth:
        raise JsonError("depth", f"nesting depth {depth} exceeds the cap of {max_depth}")
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except JsonError:
        raise
    except ValueError as exc:
        raise JsonError("syntax", f"invalid JSON: {exc}") from None
