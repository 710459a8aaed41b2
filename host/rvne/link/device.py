"""Client of docs/protocol.md over any pyserial URL: a pty path,
socket://host:port, rfc2217://host:port or a serial device like /dev/ttyUSB0.

    with Device("socket://127.0.0.1:3333") as dev:
        print(dev.info().dims)
        logits = dev.run(frames)      # (N, C) float32

One request is outstanding at a time. A request is resent with the same SEQ
after a timeout, a reply whose CRC is bad, or an E_CRC reply (our line was
damaged); the device replays instead of executing twice (docs/protocol.md).
"""

import collections
import errno
import os
import random
import time
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import numpy as np
import serial

from .. import numbers
from ..errors import DeviceError, ProtocolError
from . import protocol

try:
    import termios
    # pyserial's flush() is tcdrain(): on a port whose device vanished (a
    # killed virtual device's pty) it raises termios.error, not an OSError.
    _LINK_ERRORS = (serial.SerialException, OSError, termios.error)
except ImportError:         # not POSIX
    _LINK_ERRORS = (serial.SerialException, OSError)

DEFAULT_TIMEOUT = 2.0
DEFAULT_RETRIES = 2
_MAX_PENDING = 1 << 20      # bytes of a line without LF before we give up on it
_READ_CHUNK = 65536
_POLL = 0.05                # seconds per blocking read, bounds reaction time
U32_MAX = 0xFFFFFFFF
ARENA_MAX = 1 << 30         # bytes; more than any port's RAM (docs/files.md)


@dataclass
class Info:
    """INFO's fields, typed. Absent values (`-`) are None."""

    fw: str
    port: str
    status: str
    reason: str
    dims: Optional[Tuple[int, ...]]
    dtype: Optional[str]
    crc: Optional[int]
    blob_len: Optional[int]
    window: int
    arena: int
    line_max: int
    clock: str
    fields: Dict[str, str] = field(default_factory=dict)
    proto: int = 1                      # protocol version; firmware before TRACE does not say (1)

    @property
    def loaded(self) -> bool:
        return self.status == "loaded"

    def to_json(self) -> dict:
        """INFO in the typed JSON shape of docs/cli.md: numbers as numbers,
        dims a list, an absent value null; fields this client does not know
        keep the device's text."""
        known = {"fw": self.fw, "port": self.port, "status": self.status, "reason": self.reason,
                 "dims": list(self.dims) if self.dims is not None else None, "dtype": self.dtype,
                 "crc": self.crc, "blob_len": self.blob_len, "window": self.window, "arena": self.arena,
                 "line_max": self.line_max, "clock": self.clock, "proto": self.proto}
        # The model slots' fields (docs/protocol.md), typed where the device sends them.
        for key in ("layout", "slot", "update"):
            if key in self.fields:
                known[key] = None if self.fields[key] == "-" else self.fields[key]
        if "seq" in self.fields:
            known["seq"] = None if self.fields["seq"] == "-" else _to_int("seq", self.fields["seq"])
        return {**known, **{k: v for k, v in self.fields.items() if k not in known}}

    @classmethod
    def from_reply(cls, reply: protocol.Reply) -> "Info":
        f = reply.field

        def opt_int(key, base=10):
            v = f(key)
            return None if v == "-" else _to_int(key, v, base)

        dims_s = f("dims")
        if dims_s == "-":
            dims = None
        else:
            parts = dims_s.split(",")
            if len(parts) != 6:
                raise protocol.MalformedReplyError(
                    f"INFO dims={dims_s!r} is not D,HQ,HKV,HD,L,C; check the firmware version")
            dims = tuple(_to_int("dims", p) for p in parts)
        info = cls(
            fw=f("fw"), port=f("port"), status=f("status"), reason=f("reason"),
            dims=dims, dtype=None if f("dtype") == "-" else f("dtype"),
            crc=opt_int("crc", 16), blob_len=opt_int("blob_len"),
            window=_to_int("window", f("window")), arena=_to_int("arena", f("arena")),
            line_max=_to_int("line_max", f("line_max")), clock=f("clock"),
            fields=dict(reply.fields),
            proto=_to_int("proto", reply.fields.get("proto", "1")),
        )
        info.validate()
        return info

    def validate(self):
        """Every number in the ranges docs/protocol.md gives it, and a window
        the reported arena can hold: a lying or broken device is refused
        here, before its values size a loop or an allocation."""
        def bad(what):
            return protocol.MalformedReplyError(f"INFO {what}; the device is broken or not rvne firmware")
        for key, value, lo, hi in (("window", self.window, 1, U32_MAX), ("arena", self.arena, 0, ARENA_MAX),
                                   ("line_max", self.line_max, protocol.LINE_MAX_MIN, protocol.LINE_MAX_MAX),
                                   ("blob_len", self.blob_len, 0, U32_MAX), ("crc", self.crc, 0, U32_MAX)):
            if value is not None and not lo <= value <= hi:
                raise bad(f"{key}={value} is outside {lo} ... {hi}")
        if self.dims is not None and not all(1 <= d <= 0xFFFF for d in self.dims):
            raise bad(f"dims={','.join(map(str, self.dims))} are not all 1 ... 65535")
        if self.loaded and self.dims is not None:
            # K and V of every layer for every frame of the window, at least
            # one byte per value, live in the arena.
            per_frame = 2 * self.dims[4] * self.dims[2] * self.dims[3]
            if self.window * per_frame > self.arena:
                raise bad(f"window={self.window} cannot fit its arena={self.arena} bytes "
                          f"(at least {per_frame} bytes per frame)")


def _to_int(key, text, base=10):
    """A reply's number as docs/protocol.md writes it: ASCII decimal, or
    (base 16, a CRC) exactly 8 hex digits; "+8" or "0_8" is not one."""
    value = numbers.decimal(text) if base == 10 else numbers.hex_digits(text, 8)
    if value is None:
        raise protocol.MalformedReplyError(
            f"field {key}={text!r} is not a {'decimal number' if base == 10 else '8-digit hex CRC'}; "
            "check the firmware version")
    return value


class Device:
    """A device speaking docs/protocol.md on `url`. `link` may be an already
    open pyserial object (e.g. pytest-embedded's), then `url` only names it."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT, retries: int = DEFAULT_RETRIES,
                 baudrate: int = 115200, link=None, seq: Optional[int] = None):
        if timeout <= 0 or retries < 0:
            raise ValueError(f"timeout must be > 0 and retries >= 0, got {timeout}, {retries}")
        self.url = url
        self.timeout = timeout
        self.retries = retries
        # A random start keeps a fresh client from colliding with the SEQ of
        # the previous client's last request, which the device would replay.
        self._seq = seq if seq is not None else random.randint(1, 1 << 30)
        self._buf = bytearray()
        self.log = collections.deque(maxlen=200)   # device lines that are not replies
        self.resends = 0                            # requests sent again, for reports
        self.bytes_out = self.bytes_in = 0          # bytes on the line each way, for reports
        self._info: Optional[Info] = None
        self._owns_link = link is None
        if link is not None:
            self._link = link
        else:
            self._link = open_link(url, baudrate, _POLL, timeout)

    # -- lifetime ------------------------------------------------------------
    def close(self):
        if self._owns_link and self._link is not None:
            try:
                self._link.close()
            except (serial.SerialException, OSError):
                pass
        self._link = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- transport -----------------------------------------------------------
    def _next_seq(self) -> int:
        self._seq = self._seq + 1 if self._seq < protocol.SEQ_MAX else 1
        return self._seq

    def _lost(self, exc) -> DeviceError:
        return DeviceError(
            f"lost the connection to {self.url} ({_reason(exc)}); check the cable or that the "
            "device (or virtual device) is still running"
        )

    def write_raw(self, data: bytes):
        """Send bytes as they are (tests send garbage this way)."""
        if self._link is None:
            raise DeviceError(f"{self.url} is closed; open a new Device")
        try:
            self._link.write(data)
            self._link.flush()
        except _LINK_ERRORS as exc:
            raise self._lost(exc) from None
        self.bytes_out += len(data)

    def read_line(self, deadline: float) -> Optional[bytes]:
        """Next complete line (LF stripped) before `deadline` (time.monotonic),
        or None on timeout. Lines of log text are returned as well."""
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[:nl + 1]
                return line[:-1] if line.endswith(b"\r") else line
            if len(self._buf) > _MAX_PENDING:
                self._buf.clear()   # a runaway line: nothing after it can be a reply to it
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if self._link is None:
                raise DeviceError(f"{self.url} is closed; open a new Device")
            try:
                # One byte blocking, then whatever else is there: socket://'s
                # in_waiting only says 0 or 1, so it cannot size the read.
                self._link.timeout = min(_POLL, left)
                chunk = self._link.read(1)
                if chunk:
                    self._link.timeout = 0
                    chunk += self._link.read(_READ_CHUNK)
            except (serial.SerialException, OSError) as exc:
                raise self._lost(exc) from None
            self.bytes_in += len(chunk)
            self._buf += chunk

    def _drain(self):
        """Log and forget what arrived before a new request: with one request
        outstanding at a time it can only be logs or answers to the past (a
        stale SEQ-0 error must not be taken for the next request's reply)."""
        try:
            if self._link is not None:
                self._link.timeout = 0
                chunk = self._link.read(_READ_CHUNK)
                self.bytes_in += len(chunk)
                self._buf += chunk
        except (serial.SerialException, OSError) as exc:
            raise self._lost(exc) from None
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                return
            line = bytes(self._buf[:nl]).rstrip(b"\r")
            del self._buf[:nl + 1]
            if line and not line.startswith(b"<"):
                self.log.append(line.decode("utf-8", "replace"))

    def read_reply(self, seq: int, deadline: float) -> Optional[protocol.Reply]:
        """The reply to `seq` (or a SEQ-0 reply about our line), skipping log
        lines and stale replies. None on timeout; ReplyCrcError on a damaged
        reply, which the caller answers by resending."""
        while True:
            line = self.read_line(deadline)
            if line is None:
                return None
            if not line.startswith(b"<"):
                if line:
                    self.log.append(line.decode("utf-8", "replace"))
                continue
            try:
                reply = protocol.parse_reply(line)
            except protocol.ReplyCrcError:
                raise
            except protocol.MalformedReplyError:
                self.log.append(line.decode("utf-8", "replace"))
                continue
            # SEQ 0 is the device's answer to a line it could not trust: an
            # error, never an OK that could pass for any request's answer.
            if reply.seq == seq or (reply.seq == 0 and not reply.ok):
                return reply
            if reply.seq == 0:
                self.log.append(line.decode("utf-8", "replace"))
            # An older reply (a replay of a request we resent): not ours.

    def request(self, cmd: str, *args) -> protocol.Reply:
        """Send one request, return its OK reply; ProtocolError on ERR."""
        seq = self._next_seq()
        # The leading LF ends whatever junk sits in the device's line buffer
        # (the device ignores empty lines), so it is not joined to our line.
        line = b"\n" + protocol.build_request(seq, cmd, *args)
        last = "no reply"
        self._drain()
        for attempt in range(self.retries + 1):
            if attempt:
                self.resends += 1
            self.write_raw(line)
            try:
                reply = self.read_reply(seq, time.monotonic() + self.timeout)
            except protocol.ReplyCrcError as exc:
                last = f"damaged reply ({exc})"
                continue
            if reply is None:
                last = f"no reply within {self.timeout:g} s"
                continue
            if not reply.ok and reply.seq == 0:
                # About a line, not our request: junk left in the device's
                # line buffer (a terminal's keystrokes, noise) was joined to
                # it, or it was damaged on the way. Resent as it is.
                last = f"the device saw a damaged request ({reply.code})"
                continue
            if not reply.ok:
                raise ProtocolError(reply.code, reply.message or "(no message)")
            return reply
        raise DeviceError(
            f"{cmd} to {self.url} failed after {self.retries + 1} "
            f"{'try' if self.retries == 0 else 'tries'}: {last}; check that the "
            "device runs rvne firmware, the port and baud rate are right, and the link is clean"
        )

    # -- commands --------------------------------------------------------------
    def ping(self):
        self.request("PING")

    def info(self) -> Info:
        self._info = Info.from_reply(self.request("INFO"))
        return self._info

    def reset(self):
        self.request("RESET")

    def window(self, window: int) -> Tuple[int, int]:
        """Set W (the device resets); returns (window, arena bytes)."""
        r = self.request("WINDOW", int(window))
        got = _to_int("window", r.field("window"))
        if got != int(window):
            raise protocol.MalformedReplyError(f"WINDOW {window} answered window={got}")
        if self._info is not None:
            self._info.window = got
        return got, _to_int("arena", r.field("arena"))

    def logits(self) -> np.ndarray:
        _, n_classes = self._dims()
        return protocol.decode_f32(self.request("LOGITS").field("logits"), n_classes)

    def stats(self) -> Dict[str, object]:
        r = self.request("STATS")
        return {k: (v if k == "clock" else _to_int(k, v)) for k, v in r.fields.items()}

    # -- tracing (docs/protocol.md, TRACE) ---------------------------------------
    def trace_on(self) -> int:
        """Turn tracing on; returns the floats of one push's trace. A device
        without room answers E_TOO_LARGE (ProtocolError), firmware before
        protocol 2 E_UNKNOWN_CMD."""
        r = self.request("TRACE", "ON")
        return _to_int("floats", r.field("floats"))

    def trace_off(self):
        self.request("TRACE", "OFF")

    def trace(self, floats: int) -> Tuple[int, np.ndarray]:
        """(push count, values) of the latest push's trace, fetched in as
        many pieces as line_max needs."""
        out = np.empty(floats, dtype=np.float32)
        push, off = None, 0
        while off < floats:
            r = self.request("TRACE", off)
            got_off, n = _to_int("offset", r.field("offset")), _to_int("n", r.field("n"))
            p, total = _to_int("push", r.field("push")), _to_int("floats", r.field("floats"))
            if got_off != off or total != floats or not 1 <= n <= floats - off or push not in (None, p):
                raise protocol.MalformedReplyError(
                    f"TRACE {off} answered offset={got_off} n={n} floats={total} push={p} "
                    f"(expected offset {off} of {floats} floats, push {push if push is not None else p})")
            out[off:off + n] = protocol.decode_f32(r.field("data"), n)
            push, off = p, off + n
        return push, out

    def stream_traced(self, frames, traced, floats: int, first: str = "RUN"):
        """Push frames (N, D) like run()/push(), the first `traced` of them
        (or those whose indices `traced` lists, increasing) one per request
        with the trace fetched after each; the rest in as few requests as
        line_max allows. Returns (logits [N, C], traces [pushes traced,
        floats])."""
        arr = np.asarray(frames, dtype=np.float32)
        if np.ndim(traced) == 0:
            traced = range(max(0, min(int(traced), len(arr))))
        which = [int(i) for i in traced if 0 <= int(i) < len(arr)]
        logits = np.empty((len(arr), self._dims()[1]), dtype=np.float32)
        traces = np.empty((len(which), floats), dtype=np.float32)
        cmd, at = first, 0
        for n, i in enumerate(which):
            if i > at:
                logits[at:i] = self._stream(arr[at:i], first=cmd)
                cmd = "PUSH"
            logits[i] = self._stream(arr[i:i + 1], first=cmd)[0]
            _, traces[n] = self.trace(floats)
            cmd, at = "PUSH", i + 1
        if at < len(arr) or not len(arr):
            logits[at:] = self._stream(arr[at:], first=cmd)
        return logits, traces

    def push(self, frames) -> np.ndarray:
        """Push frames (N, D) or one frame (D,); returns the logits after each
        frame, (N, C). Split into as many PUSH requests as line_max needs."""
        return self._stream(frames, first="PUSH")

    def run(self, frames) -> np.ndarray:
        """RESET then push; the reset travels in the first request (RUN)."""
        return self._stream(frames, first="RUN")

    def frames_per_request(self) -> int:
        dim, n_classes = self._dims()
        return protocol.frames_per_push(self._info.line_max, dim, n_classes)

    def _dims(self) -> Tuple[int, int]:
        info = self._info or self.info()
        if info.dims is None or not info.loaded:
            raise ProtocolError("E_NO_MODEL", f"the device has no model loaded ({info.reason})")
        return info.dims[0], info.dims[5]

    def _stream(self, frames, first: str) -> np.ndarray:
        dim, n_classes = self._dims()
        arr = np.asarray(frames, dtype=np.float32)
        if arr.ndim == 1:
            arr = arr.reshape(1, -1)
        if arr.ndim != 2 or arr.shape[1] != dim:
            raise ValueError(f"frames must be (N, {dim}), got shape {arr.shape}")
        if arr.shape[0] == 0 and first == "RUN":
            self.reset()
        out = np.empty((arr.shape[0], n_classes), dtype=np.float32)
        cmd = first
        for rows in protocol.chunks(arr.shape[0], self.frames_per_request()):
            r = self.request(cmd, len(rows), protocol.encode_f32(arr[rows.start:rows.stop]))
            n = _to_int("n", r.field("n"))
            if n != len(rows):
                raise protocol.MalformedReplyError(f"{cmd} of {len(rows)} frames answered n={n}")
            out[rows.start:rows.stop] = protocol.decode_f32(
                r.field("logits"), len(rows) * n_classes).reshape(len(rows), n_classes)
            cmd = "PUSH"
        return out


def open_link(url: str, baudrate: int, timeout: float, write_timeout: Optional[float] = None):
    """A pyserial link to `url`, opened exclusively (flock, as esptool opens
    a port): a second rvne on the same port would interleave its requests
    with ours and the check would blame the device. A held port is one line,
    "port busy"."""
    _check_url(url)
    # pyserial's RFC 2217 client refuses any write timeout (NotImplementedError);
    # its writes go to a socket, which a dead peer ends with an error instead.
    extra = {} if url.startswith("rfc2217://") else {"write_timeout": write_timeout}
    if url.startswith("rfc2217://") and not rfc2217_client_works():
        raise DeviceError(
            f"{url}: this Python's serial module is pyserial {serial.__version__}, whose RFC 2217 client "
            "gets no reply through ser2net; labgrid's fork has one that does: "
            "pip install --force-reinstall --no-deps pyserial-labgrid (docs/farm.md)")
    try:
        return serial.serial_for_url(url, baudrate=baudrate, timeout=timeout, exclusive=True, **extra)
    except (serial.SerialException, OSError, ValueError, OverflowError) as exc:
        if getattr(exc, "errno", None) in (errno.EAGAIN, errno.EWOULDBLOCK):
            raise DeviceError(f"{url}: port busy: another program has it open (another rvne, idf.py monitor, "
                              "esptool, a terminal); close it and retry") from None
        raise DeviceError(
            f"cannot open {url}: {_reason(exc)}; check the port name or URL, that the "
            "device is plugged in or running, and that nothing else holds the port"
        ) from None


def rfc2217_client_works() -> bool:
    """Whether `serial` is labgrid's fork (versions of four parts, 3.5.0.2),
    not upstream pyserial (3.5): both install that module, pip keeps the last
    written, and only the fork's RFC 2217 client talks to ser2net (a check
    through a labgrid place got no reply with upstream 3.5)."""
    return len(str(serial.__version__).split(".")) >= 4


def _check_url(url: str):
    """A network URL needs HOST:PORT; pyserial's own complaint about a missing
    or out-of-range port does not say so."""
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("socket", "rfc2217"):
        return
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None or port == 0:
        raise DeviceError(f"cannot open {url}: a {parts.scheme}:// URL needs a host and a port 1..65535, "
                          f"e.g. {parts.scheme}://127.0.0.1:3333")


def _reason(exc) -> str:
    if isinstance(exc, OSError) and isinstance(exc.errno, int) and exc.errno > 0:
        # pyserial nests the OS error in its own text ("[Errno 2] could not
        # open port X: [Errno 2] No such file ..."); the OS's words suffice.
        return os.strerror(exc.errno)
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
