"""Reset a board the way esptool does and read its boot banner.

Hard reset: DTR released (GPIO0 high: boot from flash), RTS asserted (EN
low) for 100 ms, then released. A port without modem lines (a pty, a
socket://) cannot be reset that way; it is closed and opened again, which
the virtual device (and ESP-IDF's linux target behind socat) answers with
its banner, as a board answers a reset. The banner is the firmware's
`rvne/... ready: ...` line (docs/protocol.md)."""

import time
from dataclasses import dataclass, field
from typing import List

import serial

from ..errors import DeviceError
from . import device

PULSE = 0.1
BANNER_MARK = " ready: "


@dataclass
class Reset:
    how: str                    # "hard reset (DTR/RTS)" or "reopened (no modem lines)"
    banner: str
    lines: List[str] = field(default_factory=list)   # everything read before the banner, banner included


def _open(url, baud):
    return device.open_link(url, baud, 0.05)


def _pulse(link) -> bool:
    try:
        link.dtr = False
        link.rts = True
        time.sleep(PULSE)
        link.rts = False
        return True
    except (serial.SerialException, OSError, ValueError, AttributeError):
        return False


def _read_banner(link, deadline, lines):
    buf = bytearray()
    while time.monotonic() < deadline:
        try:
            chunk = link.read(256)
        except (serial.SerialException, OSError) as exc:
            raise DeviceError(f"lost the port while waiting for the boot banner ({exc})") from None
        buf += chunk
        while b"\n" in buf:
            raw, _, rest = bytes(buf).partition(b"\n")
            buf = bytearray(rest)
            text = raw.rstrip(b"\r").decode("utf-8", "replace")
            lines.append(text)
            if BANNER_MARK in text and text.startswith("rvne/"):
                return text
    return None


def reset_and_read_banner(url: str, baud: int = 115200, timeout: float = 5.0, power=None) -> Reset:
    """Reset the board on `url` and return its banner; DeviceError naming
    what to check when none comes within `timeout` seconds. `power`: a
    callable that power-cycles the board (a farm place's switch,
    rvne.farm.power) and names the switch, used instead of DTR/RTS."""
    lines: List[str] = []
    link = _open(url, baud)
    try:
        if power is not None:
            # The port is open before the power comes back, so the banner is not missed.
            how = f"power-cycled ({power()}), then reopened"
            banner = _read_banner(link, time.monotonic() + timeout, lines)
            if banner is not None:
                return Reset(how, banner, lines)
        elif not url.startswith("socket://") and _pulse(link):
            # (a raw TCP port takes DTR/RTS without a word and carries neither)
            banner = _read_banner(link, time.monotonic() + timeout, lines)
            if banner is not None:
                return Reset("hard reset (DTR/RTS)", banner, lines)
        if power is None:
            how = "reopened (no modem lines)"
    finally:
        link.close()
    link = _open(url, baud)
    try:
        banner = _read_banner(link, time.monotonic() + timeout, lines)
    finally:
        link.close()
    if banner is None:
        seen = f"; last line: {lines[-1]!r}" if lines else ""
        raise DeviceError(f"no boot banner from {url} within {timeout:g} s of the reset{seen}; check the "
                          "baud rate and the console setting (docs/esp32s3.md), or press RESET")
    return Reset(how, banner, lines)
