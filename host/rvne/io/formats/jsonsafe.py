"""JSON metadata from untrusted files, bounded: size and nesting capped
before parsing (Python's json recurses, so depth 100000 would be a
RecursionError), duplicate object keys refused (json.loads would keep the
last one silently, so two readers could disagree about which tensor a name
means), NaN/Infinity refused (not JSON)."""

import json
import json.scanner
import re

import numpy as np

MAX_BYTES = 100_000_000  # the cap of safetensors' own reader (tensor.rs), a sane default for any JSON header
MAX_DEPTH = 64


class JsonError(ValueError):
    """`reason` is one line; `kind` is 'size', 'depth', 'utf8', 'syntax' or 'duplicate'."""

    def __init__(self, kind, reason):
        super().__init__(reason)
        self.kind = kind


_NOT_BRACKET = bytes(sorted(set(range(256)) - set(b"[]{}")))
_CHUNK = 1 << 20


def _too_deep(data, max_depth):
    """True when brackets outside strings nest deeper than `max_depth`.
    The bytes are taken 1 MiB at a time and every pass over a chunk is in C
    (replace, split, translate, numpy); the scan stops at the first chunk
    past the cap. So a header of 100 MB of '[' costs one chunk, not a Python
    step per byte (issue 16: it took 25 s), and memory stays a few chunks,
    whatever the header. UTF-8 never puts an ASCII byte inside a multi-byte
    character, so bytes will do."""
    view = memoryview(data).cast("B")
    depth, in_string, at = 0, False, 0
    while at < len(view):
        chunk = bytes(view[at:at + _CHUNK])
        run = len(chunk) - len(chunk.rstrip(b"\\"))
        if run % 2 and at + len(chunk) < len(view):
            chunk += bytes(view[at + len(chunk):at + len(chunk) + 1])   # never cut an escape in two
        at += len(chunk)
        # Escaped backslashes first, so that in \\" the quote still ends the string.
        pieces = chunk.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')
        outside = b"".join(pieces[1 if in_string else 0::2])
        in_string ^= len(pieces) % 2 == 0
        steps = np.frombuffer(outside.translate(None, _NOT_BRACKET), np.uint8)
        if not steps.size:
            continue
        levels = depth + np.cumsum(np.where((steps == 0x5B) | (steps == 0x7B), 1, -1).astype(np.int32))
        if levels.max() > max_depth:
            return True
        depth = int(levels[-1])
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


def _text(data, max_bytes, max_depth):
    """`data` as text once the size, UTF-8 and depth rules hold; raises JsonError."""
    if len(data) > max_bytes:
        raise JsonError("size", f"{len(data)} bytes of JSON exceed the cap of {max_bytes}")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonError("utf8", f"not UTF-8 at byte {exc.start}") from None
    if _too_deep(data, max_depth):
        raise JsonError("depth", f"nesting deeper than the cap of {max_depth}")
    return text


def loads(data, *, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH):
    """Parse `data` (bytes) as strict UTF-8 JSON within the caps; raises JsonError."""
    text = _text(data, max_bytes, max_depth)
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except JsonError:
        raise
    except ValueError as exc:
        raise JsonError("syntax", f"invalid JSON: {exc}") from None


_SPACE = re.compile(r"[ \t\n\r]*")
_SCAN = json.scanner.make_scanner(json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant))


def _value(text, at):
    """(value, end) of the JSON value at `at`, parsed by json's C scanner."""
    try:
        return _SCAN(text, at)
    except StopIteration as exc:
        raise JsonError("syntax", f"invalid JSON: expecting a value at char {exc.value}") from None
    except JsonError:
        raise
    except ValueError as exc:
        raise JsonError("syntax", f"invalid JSON: {exc}") from None


def _expect(text, at, chars, what):
    at = _SPACE.match(text, at).end()
    if text[at:at + 1] not in chars or at >= len(text):
        raise JsonError("syntax", f"invalid JSON: expecting {what} at char {at}")
    return at


def object_items(data, *, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH):
    """(key, value) of every member of `data`, a JSON text that must be one
    object, in file order, each value parsed by json's C scanner only when
    reached: the whole document never exists at once (issue 16: a header of
    a million tensors). A generator: the same caps and strictness as loads,
    size, UTF-8 and depth checked before the first item, syntax and
    duplicate keys as it goes, so a JsonError can come after some items;
    the caller keeps what it needs of each item and trusts none of it
    until the iteration ends. A text that is not an object is a "syntax"
    error."""
    text = _text(data, max_bytes, max_depth)
    at = _expect(text, 0, "{", "'{'") + 1
    keys = set()
    if text[_SPACE.match(text, at).end():][:1] == "}":
        at = _SPACE.match(text, at).end() + 1
    else:
        while True:
            at = _expect(text, at, '"', "a string key")
            key, at = _value(text, at)
            at = _expect(text, at, ":", "':'") + 1
            value, at = _value(text, _SPACE.match(text, at).end())
            if key in keys:
                raise JsonError("duplicate", f"duplicate key {key!r}")
            keys.add(key)
            yield key, value
            at = _expect(text, at, ",}", "',' or '}'") + 1
            if text[at - 1] == "}":
                break
    if _SPACE.match(text, at).end() != len(text):
        raise JsonError("syntax", f"invalid JSON: extra data at char {_SPACE.match(text, at).end()}")
