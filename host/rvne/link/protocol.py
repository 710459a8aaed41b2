"""Line codec of docs/protocol.md: request and reply lines, their CRC, the
base64 f32 tensors, and how many frames fit one PUSH.

Pure functions over bytes; no I/O (that is rvne.link.device). Both directions are
here so a test peer can speak the device's side with the same code.
"""

import base64
import binascii
import re
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..errors import DeviceError

# The command set this host speaks (docs/protocol.md; INFO's proto=, 1 when
# absent): 2 TRACE, 3 a float model's trace holds the scores. Firmware's
# RVNE_PROTO_VERSION moves with it; rvne.check traces protocols 2 and 3.
VERSION = 3
TRACE_SCORES = 3             # the first protocol whose float trace holds the scores
SEQ_MAX = 0xFFFFFFFF
LINE_MAX_MIN = 1024          # every device accepts at least this much
LINE_MAX_MAX = 1 << 24       # and none claims more (rvne-vdev --line-max's top)
CRC_LEN = 8                  # hex digits after '*'
_SEQ_RE = re.compile(rb"[1-9][0-9]{0,9}|0")
_CRC_RE = re.compile(rb"[0-9A-Fa-f]{8}")
_CMD_RE = re.compile(rb"[A-Z][A-Z0-9_]*")


class MalformedReplyError(DeviceError):
    """A device line starting with '<' that does not parse as a reply."""

    code = "E_BAD_REPLY"


class ReplyCrcError(DeviceError):
    """A reply whose CRC does not match its bytes (line noise)."""

    code = "E_REPLY_CRC"


def line_crc(body: bytes) -> int:
    """CRC-32 of everything before the '*', sigil included."""
    return zlib.crc32(body) & 0xFFFFFFFF


def _seal(body: bytes) -> bytes:
    return body + b"*%08X\n" % line_crc(body)


def _token(arg) -> bytes:
    tok = arg if isinstance(arg, bytes) else str(arg).encode("ascii")
    if not tok or b" " in tok or b"\n" in tok or b"*" in tok:
        raise ValueError(f"protocol argument {tok!r} is empty or holds a space, '*' or newline")
    return tok


def _check_seq(seq: int) -> int:
    if not isinstance(seq, int) or not 1 <= seq <= SEQ_MAX:
        raise ValueError(f"SEQ {seq!r} is outside 1..{SEQ_MAX}")
    return seq


def build_request(seq: int, cmd: str, *args) -> bytes:
    """`>SEQ CMD ARG...*CRC\\n` as bytes."""
    body = b">%d %s" % (_check_seq(seq), _token(cmd))
    for arg in args:
        body += b" " + _token(arg)
    return _seal(body)


def build_reply(seq: int, fields: Optional[Dict[str, object]] = None) -> bytes:
    """An OK reply (`<SEQ OK k=v...*CRC\\n`); the device's side, for test peers."""
    body = b"<%d OK" % seq
    for key, value in (fields or {}).items():
        body += b" " + _token(f"{key}={value}")
    return _seal(body)


def build_error(seq: int, code: str, message: str) -> bytes:
    """An ERR reply; the message is one line of free text."""
    text = message.replace("\n", " ").replace("*", "x").encode("ascii", "replace")
    return _seal(b"<%d ERR %s %s" % (seq, _token(code), text))


@dataclass
class Reply:
    seq: int
    ok: bool
    fields: Dict[str, str] = field(default_factory=dict)
    code: str = ""           # ERR replies: E_...
    message: str = ""        # ERR replies: the human text

    def field(self, key: str) -> str:
        try:
            return self.fields[key]
        except KeyError:
            raise MalformedReplyError(
                f"reply {self.seq} lacks field {key!r} (has {', '.join(self.fields) or 'none'}); "
                "check the device runs a compatible rvne firmware"
            ) from None


@dataclass
class Request:
    seq: int
    cmd: str
    args: List[str]


def _split_crc(line: bytes, sigil: bytes, what: str):
    """(body, seq, rest tokens) after checking sigil, CRC and SEQ syntax."""
    line = line.rstrip(b"\n")
    if line.endswith(b"\r"):
        line = line[:-1]
    if not line.startswith(sigil):
        raise MalformedReplyError(f"{what} {line[:40]!r} does not start with {sigil.decode()!r}")
    star = line.rfind(b"*")
    if star < 0 or not _CRC_RE.fullmatch(line[star + 1:]):
        raise ReplyCrcError(f"{what} {line[:40]!r} has no '*' and 8 hex digit CRC")
    body = line[:star]
    stored = int(line[star + 1:], 16)
    computed = line_crc(body)
    if stored != computed:
        raise ReplyCrcError(f"{what} CRC mismatch: stored {stored:08X}, computed {computed:08X}")
    seq_tok, _, rest = body[1:].partition(b" ")
    if not _SEQ_RE.fullmatch(seq_tok) or int(seq_tok) > SEQ_MAX:
        raise MalformedReplyError(f"{what} has SEQ {seq_tok[:12]!r}, not a decimal 0..{SEQ_MAX}")
    return int(seq_tok), rest


def parse_reply(line: bytes) -> Reply:
    """Parse one device line that starts with '<'. Raises ReplyCrcError for a
    CRC that does not match and MalformedReplyError for anything else wrong."""
    seq, rest = _split_crc(line, b"<", "reply")
    status, _, tail = rest.partition(b" ")
    if status == b"OK":
        fields = {}
        for tok in tail.split(b" ") if tail else []:
            key, eq, value = tok.partition(b"=")
            if not eq or not key:
                raise MalformedReplyError(f"reply {seq} field {tok[:40]!r} is not key=value")
            fields[key.decode("ascii", "replace")] = value.decode("ascii", "replace")
        return Reply(seq, True, fields)
    if status == b"ERR":
        code, _, message = tail.partition(b" ")
        if not code.startswith(b"E_"):
            raise MalformedReplyError(f"reply {seq} ERR without an E_ code: {tail[:40]!r}")
        return Reply(seq, False, code=code.decode("ascii", "replace"),
                     message=message.decode("ascii", "replace"))
    raise MalformedReplyError(f"reply {seq} status {status[:20]!r} is neither OK nor ERR")


def parse_request(line: bytes) -> Request:
    """The device's side of the codec (test peers): `>SEQ CMD ARG...*CRC`."""
    seq, rest = _split_crc(line, b">", "request")
    if seq == 0:
        raise MalformedReplyError("request SEQ 0 is reserved for replies")
    toks = rest.split(b" ")
    if not _CMD_RE.fullmatch(toks[0]) or any(not t for t in toks):
        raise MalformedReplyError(f"request {seq} has bad token syntax: {rest[:40]!r}")
    return Request(seq, toks[0].decode(), [t.decode("ascii", "replace") for t in toks[1:]])


# -- tensors -------------------------------------------------------------------
def encode_f32(values) -> str:
    """Standard base64 (padded) of little-endian f32."""
    arr = np.ascontiguousarray(np.asarray(values, dtype="<f4")).reshape(-1)
    return base64.b64encode(arr.tobytes()).decode("ascii")


def decode_f32(text: str, count: Optional[int] = None) -> np.ndarray:
    """Inverse of encode_f32; `count` (values expected) is checked when given."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError) as exc:
        raise MalformedReplyError(f"tensor is not valid base64 ({exc})") from None
    if len(raw) % 4:
        raise MalformedReplyError(f"tensor holds {len(raw)} bytes, not a whole number of f32")
    arr = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if count is not None and arr.size != count:
        raise MalformedReplyError(f"tensor holds {arr.size} f32 values, expected {count}")
    return arr


def b64_len(n_bytes: int) -> int:
    return 4 * ((n_bytes + 2) // 3)


def push_request_len(n: int, dim: int) -> int:
    """Longest `>SEQ PUSH N B64*CRC` for n frames (SEQ at 10 digits), LF excluded."""
    return len(">") + 10 + len(" PUSH ") + len(str(n)) + 1 + b64_len(4 * n * dim) + 1 + CRC_LEN


def push_reply_len(n: int, n_classes: int) -> int:
    """Longest `<SEQ OK n=N pushes=P logits=B64*CRC` (SEQ and P at 10 digits)."""
    return (len("<") + 10 + len(" OK n=") + len(str(n)) + len(" pushes=") + 10
            + len(" logits=") + b64_len(4 * n * n_classes) + 1 + CRC_LEN)


def frames_per_push(line_max: int, dim: int, n_classes: int) -> int:
    """Most frames one PUSH/RUN may carry so request and reply both fit in
    line_max. Raises DeviceError when not even one frame fits."""
    if dim < 1 or n_classes < 1:
        raise ValueError(f"dims must be positive, got D={dim} C={n_classes}")
    lo, hi = 0, max(1, line_max)  # each frame costs > 1 byte, so n < line_max
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if push_request_len(mid, dim) <= line_max and push_reply_len(mid, n_classes) <= line_max:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        raise DeviceError(
            f"one frame of D={dim} (or its C={n_classes} logits) does not fit the device's "
            f"line_max={line_max}; build the firmware with a larger line buffer"
        )
    return lo


def chunks(n_total: int, per: int) -> Sequence[range]:
    """Index ranges of at most `per` frames covering 0..n_total."""
    return [range(i, min(i + per, n_total)) for i in range(0, n_total, per)]
