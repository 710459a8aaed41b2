"""CBOR (RFC 8949) from untrusted files, bounded: size, nesting depth and
item count capped, no recursion (an explicit stack, so depth 100000 is a
named refusal, not a RecursionError), declared lengths checked against the
bytes left before anything is built, and refused where a general decoder
would guess: trailing bytes, duplicate map keys (two readers could keep
different values), invalid UTF-8 in text strings.

Returns Python objects: int, float, bytes, str, list, dict, bool, None;
tags as `Tagged(tag, value)`, other simple values as `Simple(n)`."""

import struct

MAX_BYTES = 100 << 20
MAX_DEPTH = 128
MAX_ITEMS = 1 << 22

_BREAK = object()   # the 0xFF stop code, only meaningful inside an indefinite item
_PUSHED = object()  # a container was opened: its value comes later


class CborError(ValueError):
    """`kind`: 'size', 'depth', 'items', 'truncated', 'syntax', 'utf8',
    'duplicate', 'key' or 'trailing'; `offset` is where it was found.
    For 'duplicate', `path` names the map (keys from the root)."""

    def __init__(self, kind, reason, offset=0, path=()):
        super().__init__(f"{reason} (byte {offset})")
        self.kind = kind
        self.offset = offset
        self.path = tuple(path)


class Tagged:
    """A tagged item: rvne interprets no tag, it keeps the number and value."""

    __slots__ = ("tag", "value")

    def __init__(self, tag, value):
        self.tag = tag
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Tagged) and (self.tag, self.value) == (other.tag, other.value)

    def __hash__(self):
        return hash((self.tag, self.value))

    def __repr__(self):
        return f"Tagged({self.tag}, {self.value!r})"


class Simple:
    """A simple value other than false/true/null (23 is `undefined`)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Simple) and self.value == other.value

    def __hash__(self):
        return hash(("simple", self.value))

    def __repr__(self):
        return f"Simple({self.value})"


class _Frame:
    """An open array, map, tag or indefinite string on the stack."""

    __slots__ = ("kind", "left", "items", "key", "has_key", "tag", "start")

    def __init__(self, kind, left, start, tag=None):
        self.kind = kind        # 'array', 'map', 'tag', 'bytes' or 'text'
        self.left = left        # items still expected; None = indefinite
        self.items = {} if kind == "map" else []
        self.key = None
        self.has_key = False
        self.tag = tag
        self.start = start


def loads(data, *, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH, max_items=MAX_ITEMS):
    """Decode exactly one CBOR item filling `data`; raises CborError."""
    data = bytes(data)
    if len(data) > max_bytes:
        raise CborError("size", f"{len(data)} bytes of CBOR exceed the cap of {max_bytes}")
    return _Decoder(data, max_depth, max_items).run()


class _Decoder:
    def __init__(self, data, max_depth, max_items):
        self.data = data
        self.pos = 0
        self.stack = []
        self.max_depth = max_depth
        self.max_items = max_items
        self.items = 0

    def fail(self, kind, reason, at=None):
        raise CborError(kind, reason, self.pos if at is None else at)

    def take(self, n):
        if n > len(self.data) - self.pos:
            self.fail("truncated", f"needs {n} bytes, {len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def run(self):
        done = False
        while not done:
            done, result = self.deliver(self.item())
        if self.pos != len(self.data):
            self.fail("trailing", f"{len(self.data) - self.pos} bytes after the CBOR item")
        return result

    def head(self):
        at = self.pos
        ib = self.take(1)[0]
        major, ai = ib >> 5, ib & 31
        if ai < 24:
            return at, major, ai, ai
        if ai <= 27:
            return at, major, ai, int.from_bytes(self.take(1 << (ai - 24)), "big")
        if ai == 31:
            return at, major, ai, None
        self.fail("syntax", f"reserved additional information {ai}", at)

    def item(self):
        """The next complete item, _PUSHED after opening a container, or _BREAK."""
        at, major, ai, arg = self.head()
        top = self.stack[-1] if self.stack else None
        if top is not None and top.kind in ("bytes", "text"):
            want = 2 if top.kind == "bytes" else 3
            if not (major == 7 and ai == 31) and (major != want or arg is None):
                self.fail("syntax", "an indefinite string may hold only definite chunks of its own type", at)
        if major == 7 and ai == 31:
            return _BREAK
        if arg is None and major in (0, 1, 6, 7):
            self.fail("syntax", f"major type {major} cannot be indefinite", at)
        if major == 0:
            return arg
        if major == 1:
            return -1 - arg
        if major in (2, 3):
            if arg is None:
                return self.push("bytes" if major == 2 else "text", None, at)
            return self.string(major, self.take(arg), at)
        if major in (4, 5):
            if arg is not None:
                # every item takes at least one byte: refuse before building anything
                need = arg * (2 if major == 5 else 1)
                if need > len(self.data) - self.pos:
                    self.fail("truncated", f"declares {arg} items, only {len(self.data) - self.pos} bytes left", at)
                if arg == 0:
                    return [] if major == 4 else {}
            return self.push("array" if major == 4 else "map", arg, at)
        if major == 6:
            return self.push("tag", 1, at, tag=arg)
        return self.simple(ai, arg, at)

    def string(self, major, raw, at):
        if major == 2:
            return raw
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.fail("utf8", f"text string is not UTF-8 at its byte {exc.start}", at)

    def simple(self, ai, arg, at):
        if ai == 25:
            return struct.unpack(">e", arg.to_bytes(2, "big"))[0]
        if ai == 26:
            return struct.unpack(">f", arg.to_bytes(4, "big"))[0]
        if ai == 27:
            return struct.unpack(">d", arg.to_bytes(8, "big"))[0]
        if ai == 24 and arg < 32:
            self.fail("syntax", f"simple value {arg} must be encoded in one byte", at)
        return {20: False, 21: True, 22: None}.get(arg, Simple(arg))

    def push(self, kind, left, at, tag=None):
        if len(self.stack) >= self.max_depth:
            self.fail("depth", f"nesting deeper than the cap of {self.max_depth}", at)
        self.stack.append(_Frame(kind, left, at, tag))
        return _PUSHED

    def deliver(self, value):
        """Hand a finished item to the open containers, closing every one
        it completes. (True, root) once the outermost item is complete."""
        if value is _PUSHED:
            return False, None
        if value is _BREAK:
            value = self.close_indefinite()
        while True:
            self.items += 1
            if self.items > self.max_items:
                self.fail("items", f"more than {self.max_items} data items")
            if not self.stack:
                return True, value
            top = self.stack[-1]
            if not self.add(top, value):
                return False, None
            self.stack.pop()
            value = self.finish(top)

    def add(self, top, value):
        """Put value into top; True when top is now complete."""
        if top.kind == "map":
            if not top.has_key:
                try:
                    hash(value)
                except TypeError:
                    self.fail("key", f"a {type(value).__name__} cannot be a map key here")
                top.key, top.has_key = value, True
                return False
            if top.key in top.items:
                raise CborError("duplicate", f"map key {top.key!r} appears twice", self.pos,
                                self.path() + (top.key,))
            top.items[top.key] = value
            top.has_key = False
        else:
            top.items.append(value)
        if top.left is None:
            return False
        top.left -= 1
        return top.left == 0

    def path(self):
        """Keys leading to the innermost map (for naming duplicates)."""
        return tuple(f.key for f in self.stack[:-1] if f.kind == "map")

    def close_indefinite(self):
        top = self.stack[-1] if self.stack else None
        if top is None or top.left is not None or top.kind == "tag":
            self.fail("syntax", "a break code outside an indefinite-length item", self.pos - 1)
        if top.kind == "map" and top.has_key:
            self.fail("syntax", "a break code between a map key and its value", self.pos - 1)
        self.stack.pop()
        return self.finish(top)

    def finish(self, frame):
        if frame.kind == "tag":
            return Tagged(frame.tag, frame.items[0])
        if frame.kind == "bytes":
            return b"".join(frame.items)
        if frame.kind == "text":
            return "".join(frame.items)
        return frame.items

