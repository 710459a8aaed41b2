"""Which serial port and baud rate a board command uses, the way esptool and
idf.py users expect (docs/esp32s3.md, Board-tool conventions):

1. `-p/--port` (and `-b/--baud`) on the command line;
2. else the environment: for the port ESPPORT (idf.py's), then
   ESPTOOL_PORT (esptool's); for the baud when flashing ESPBAUD (idf.py's
   flash rate), then ESPTOOL_BAUD (esptool's); when talking to the
   running app IDF_MONITOR_BAUD or MONITORBAUD (idf.py monitor's), never
   a flashing rate for the console's or the other way round. idf.py's
   variable comes first because idf.py hands it to esptool as -p/-b,
   which beats esptool's own;
3. else, for the port, exactly one Espressif USB device attached: the
   chip's own USB (VID 0x303A) or a USB-UART bridge devkits carry
   (Silicon Labs CP210x, WCH CH340/CH9102, FTDI), used and said so.

The port list comes from pyserial's list_ports; tests pass their own."""

import os
from dataclasses import dataclass
from typing import Callable, List, Optional

from ..errors import DeviceError
from ..numbers import decimal

ESPRESSIF_VID = 0x303A
# (VID, PID) of the USB-UART bridges on Espressif devkits.
BRIDGES = {
    (0x10C4, 0xEA60): "CP210x",
    (0x1A86, 0x7523): "CH340",
    (0x1A86, 0x55D4): "CH9102",
    (0x0403, 0x6001): "FT232R",
    (0x0403, 0x6010): "FT2232",
    (0x0403, 0x6014): "FT232H",
    (0x0403, 0x6015): "FT231X",
}


@dataclass
class Candidate:
    device: str
    vid: int
    pid: int
    what: str


def _system_ports():
    from serial.tools import list_ports

    return list_ports.comports()


def candidates(ports=None) -> List[Candidate]:
    """The attached ports that look like an Espressif board."""
    found = []
    for p in _system_ports() if ports is None else ports:
        vid, pid = getattr(p, "vid", None), getattr(p, "pid", None)
        if vid is None or pid is None:
            continue
        if vid == ESPRESSIF_VID:
            what = "Espressif USB"
        elif (vid, pid) in BRIDGES:
            what = f"{BRIDGES[(vid, pid)]} USB-UART bridge"
        else:
            continue
        found.append(Candidate(p.device, vid, pid, what))
    return found


@dataclass
class Resolved:
    value: object
    source: str                 # "option", the environment variable's name, "detected", "default"


def resolve_port(given: Optional[str], env=None, ports=None, say: Optional[Callable[[str], None]] = None) -> Resolved:
    env = os.environ if env is None else env
    if given:
        return Resolved(given, "option")
    for name in PORT_ENV:
        if env.get(name):
            return Resolved(env[name], name)
    found = candidates(ports)
    if len(found) == 1:
        c = found[0]
        if say is not None:
            say(f"rvne: using {c.device} ({c.what}, {c.vid:04X}:{c.pid:04X}), the only Espressif board attached")
        return Resolved(c.device, "detected")
    if not found:
        raise DeviceError("no port given and no Espressif board found on USB; pass -p PORT (or set ESPPORT or "
                          "ESPTOOL_PORT), check the cable")
    names = ", ".join(f"{c.device} ({c.what})" for c in found)
    raise DeviceError(f"no port given and {len(found)} Espressif boards attached: {names}; pass -p PORT "
                      "(or set ESPPORT) to choose one")


PORT_ENV = ("ESPPORT", "ESPTOOL_PORT")
FLASH_BAUD_ENV = ("ESPBAUD", "ESPTOOL_BAUD")
CONSOLE_BAUD_ENV = ("IDF_MONITOR_BAUD", "MONITORBAUD")


def resolve_baud(given: Optional[int], default: int, env=None, names=FLASH_BAUD_ENV) -> Resolved:
    env = os.environ if env is None else env
    if given is not None:
        return Resolved(given, "option")
    for name in names:
        text = env.get(name)
        if not text:
            continue
        value = decimal(text) or 0
        if value <= 0:
            raise DeviceError(f"{name}={text!r} is not a baud rate; set it to a positive integer or unset it")
        return Resolved(value, name)
    return Resolved(default, "default")
