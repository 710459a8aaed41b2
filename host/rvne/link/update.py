"""Replace the model of a running device over its serial line
(`rvne update BLOB -p PORT`; docs/protocol.md, "Updating the model").

    with Device(url) as dev:
        result = update_device(dev, blob_bytes, progress=lambda done, total: ...)

The blob is checked here first (rules 1-14 of docs/format.md) so nothing is
sent that the device would refuse anyway; the device checks it again, as at
boot, before it switches. Chunks go in order, each with its CRC; a chunk the
device received damaged (E_CHUNK_CRC) is sent again, a reply lost on the way
is recovered by the protocol's resend-with-the-same-SEQ. Any other refusal
ends the update with the device's error code: the old model keeps serving.
"""

import base64
import contextlib
import time
import zlib
from dataclasses import dataclass
from typing import Callable, Optional

from ..errors import DeviceError, ProtocolError, SignatureError, UpdateError
from ..io import signed
from .device import Device, Info

CHUNK_RESENDS = 3            # E_CHUNK_CRC for the same chunk this often: the link is bad
BITS_PER_BYTE = 10           # 8N1 on a UART
FLASH_ALLOWANCE = 5.0        # s per request for erase + program on the device (a 64 KiB sector: ~1 s)


@dataclass
class UpdateResult:
    slot: str
    seq: int
    crc: int
    blob_len: int
    chunks: int
    resent: int               # chunks sent again after E_CHUNK_CRC
    seconds: float
    info: Info                # INFO after the switch


def _timeout_for(dev: Device, line_len: int, baud: Optional[int]) -> float:
    """A request's reply deadline: the line's time on the wire plus the
    device's flash work. A pty or socket has no baud: the default covers it."""
    wire = line_len * BITS_PER_BYTE / baud if baud else 0.0
    return max(dev.timeout, 2 * wire + FLASH_ALLOWANCE)


@contextlib.contextmanager
def _patient(dev: Device, timeout: float):
    """Reply and write deadlines of `timeout` for the update's requests (a
    full chunk line takes over a second at 115200 baud), restored after;
    a port that died meanwhile is left as it is."""
    old = dev.timeout
    link = getattr(dev, "_link", None)
    old_wt = getattr(link, "write_timeout", None)
    dev.timeout = max(old, timeout)
    with contextlib.suppress(Exception):
        if old_wt is not None and old_wt < timeout:
            link.write_timeout = timeout
    try:
        yield
    finally:
        dev.timeout = old
        with contextlib.suppress(Exception):
            if old_wt is not None and link.write_timeout != old_wt:
                link.write_timeout = old_wt


def _refused(exc: ProtocolError, what: str) -> UpdateError:
    return UpdateError(f"{what} refused by the device: {exc.code}: {str(exc).split(': ', 1)[-1]}", exc.code)


def precheck(info: Info, data: bytes) -> str:
    """What the board will say of `data` by its INFO (policy, trusted and
    revoked keys, the serving model's version; docs/format.md "Signed
    models"): an UpdateError with the same named error it would give, before
    anything is sent; else one line saying why it will take it ("" under
    the unsigned policy)."""
    trust = signed.Trust.from_info(info)
    try:
        sm = signed.judge(data, trust)
    except SignatureError as exc:
        raise UpdateError(f"the device would refuse it ({trust.policy} policy): {exc.code}: {exc}", exc.code) from None
    if trust.policy != "signed":
        return ""           # today's behaviour: nothing to say
    serving = "no signed model" if trust.version is None else f"version {trust.version}"
    signer = next(b.key_digest.hex() for b in sm.blocks if b.key_digest in trust.keys)
    return (f"the device's policy is signed: it will take version {sm.version} (serving {serving}), signed by "
            f"trusted key {signer[:16]}...")


def update_device(dev: Device, data: bytes, progress: Optional[Callable[[int, int], None]] = None,
                  abort_pending: bool = False, baud: Optional[int] = None) -> UpdateResult:
    """Send blob `data` to `dev`, switch it to the new model, and return the
    device's own account (INFO with the new CRC). `abort_pending`: end an
    update a killed host left in flight first (else E_UPDATE_BUSY). `baud`:
    the link's rate, for reply deadlines (None: a pty or socket).
    `data`: a blob or a signed model (rvne.io.signed), judged against the
    device's policy first (precheck). Raises BlobError or SignatureError
    (the file, before anything is sent), UpdateError (a refusal, the
    device's or precheck's, `code` its name) or DeviceError (the link)."""
    data = bytes(data)
    crc = signed.check_model(data).crc_stored
    progress = progress or (lambda done, total: None)
    t0 = time.monotonic()
    if abort_pending:
        dev.request("UPDATE_ABORT")
    precheck(dev.info(), data)
    try:
        r = dev.request("UPDATE_BEGIN", len(data), f"{crc:08X}")
    except ProtocolError as exc:
        raise _refused(exc, "the update") from None
    chunk = int(r.field("chunk"))
    if chunk < 64:
        raise UpdateError(f"the device offers chunks of {chunk} bytes; its line_max is too small for updates")
    progress(0, len(data))
    # The longest request is a full chunk; COMMIT reads the whole slot back.
    timeout = _timeout_for(dev, (chunk + 2) // 3 * 4 + 64, baud) + len(data) / 100_000
    try:
        with _patient(dev, timeout):
            n_chunks, resent, r = _send(dev, data, chunk, crc, progress)
    except BaseException:
        # The device keeps its old model either way; free it for the next try.
        with contextlib.suppress(DeviceError, OSError):
            dev.request("UPDATE_ABORT")
        raise
    info = dev.info()
    if not info.loaded or info.crc != crc:
        got = "-" if info.crc is None else f"{info.crc:08X}"
        raise UpdateError(f"the device committed but serves crc={got} ({info.reason}), not {crc:08X}; "
                          "check with `rvne device info`")
    return UpdateResult(slot=r.field("slot"), seq=int(r.field("seq")), crc=crc, blob_len=len(data),
                        chunks=n_chunks, resent=resent, seconds=time.monotonic() - t0, info=info)


def _send(dev, data, chunk, crc, progress):
    """The chunks in order, then COMMIT; returns (chunks, resent, COMMIT's reply)."""
    sent = n_chunks = resent = 0
    while sent < len(data):
        piece = data[sent:sent + chunk]
        b64 = base64.b64encode(piece).decode("ascii")
        for attempt in range(CHUNK_RESENDS + 1):
            try:
                r = dev.request("UPDATE_CHUNK", sent, f"{zlib.crc32(piece):08X}", b64)
                break
            except ProtocolError as exc:
                if exc.code != "E_CHUNK_CRC" or attempt == CHUNK_RESENDS:
                    raise _refused(exc, f"chunk at offset {sent}") from None
                resent += 1
        nxt = int(r.field("next"))
        if nxt != sent + len(piece):
            raise UpdateError(f"the device acknowledged up to {nxt}, expected {sent + len(piece)}; "
                              "retry the update", "E_UPDATE_ORDER")
        sent = nxt
        n_chunks += 1
        progress(sent, len(data))
    try:
        r = dev.request("UPDATE_COMMIT", f"{crc:08X}")
    except ProtocolError as exc:
        raise _refused(exc, "the new model") from None
    return n_chunks, resent, r
