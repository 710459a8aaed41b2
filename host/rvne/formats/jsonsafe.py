"""JSON metadata from untrusted files, bounded: size and nesting capped
before parsing (Python's json recurses, so depth 100000 would be a
RecursionError), duplicate object keys refused (json.loads would keep the
last one silently, so two readers could disagree about which tensor a name
means), NaN/Infinity refused (not JSON)."""

import json
import re

import numpy as np

MAX_BYTES = 100_000_000  # the cap of safetensors' own reader (tensor.rs), a sane default for any JSON header
MAX_DEPTH = 64


class JsonError(ValueError):
    """`reason` is one line; `kind` is 'size', 'depth', 'utf8', 'syntax' or 'duplicate'."""

    def __init__(self, kind, reason):
        super().__init__(reason)
        self.kind = kind


# A string literal once its escapes are gone, skipped whole (brackets inside
# it do not nest); an unterminated one runs to the end (json.loads then names
# the syntax error).
_STRING = re.compile(rb'"[^"]*"?')
_NOT_BRACKET = bytes(sorted(set(range(256)) - set(b"[]{}")))
_CHUNK = 1 << 20


def _too_deep(data, max_depth):
    """True when brackets outside strings nest deeper than `max_depth`.
    Every pass over the bytes is in C (regex, translate, numpy) and the
    chunk loop stops at the first chunk past the cap: a header of 100 MB of
    '[' once took 25 s in a Python loop per character (issue 16). UTF-8
    never puts an ASCII byte inside a multi-byte character, so bytes will do."""
    data = bytes(data)
    if b'"' in data:
        # Escaped backslashes first, so that in \\" the quote still ends the string.
        data = _STRING.sub(b"", data.replace(b"\\\\", b"").replace(b'\\"', b""))
    brackets = data.translate(None, _NOT_BRACKET)
    depth = 0
    for at in range(0, len(brackets), _CHUNK):
        chunk = np.frombuffer(brackets, np.uint8, count=min(_CHUNK, len(brackets) - at), offset=at)
        run = depth + np.cumsum(np.where((chunk == 0x5B) | (chunk == 0x7B), 1, -1), dtype=np.int64)
        if run.max() > max_depth:
            return True
        depth = int(run[-1])
    return False


def _pairs(pairs):
    out = dict(pairs)     # in C; the slow search only when a key was lost
    if len(out) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise JsonError("duplicate", f"duplicate key {k!r}")
            seen.add(k)
    return out


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
    if _too_deep(data, max_depth):
        raise JsonError("depth", f"nesting deeper than the cap of {max_depth}")
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except JsonError:
        raise
    except ValueError as exc:
        raise JsonError("syntax", f"invalid JSON: {exc}") from None
