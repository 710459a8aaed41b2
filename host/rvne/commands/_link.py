"""The serial-link options the device commands and `rvne update` share:
-p/-b, --timeout/--retries, and opening the client (rvne.link.ports: esptool's
conventions, ESPPORT/ESPTOOL_PORT, IDF_MONITOR_BAUD/MONITORBAUD)."""

from ..link import device as devmod
from ..link import ports
from ..link.device import DEFAULT_RETRIES, DEFAULT_TIMEOUT
from ._args import BAUD_MAX, nonnegative, positive, seconds
from ._out import note


def _link_args(p):
    p.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="S",
                   help=f"seconds to wait for each reply before resending (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--retries", type=nonnegative("retries"), default=DEFAULT_RETRIES, metavar="N",
                   help=f"resends of a request before giving up (default {DEFAULT_RETRIES})")
    _baud_arg(p)


def _baud_arg(p):
    p.add_argument("-b", "--baud", type=positive("baud", BAUD_MAX), default=None, metavar="B",
                   help=f"serial baud rate (default: IDF_MONITOR_BAUD or MONITORBAUD, else {CONSOLE_BAUD})")


PORT_HELP = ("pyserial URL: /dev/ttyUSB0, a pty path, socket://host:port, rfc2217://host:port "
             "(default: ESPPORT, ESPTOOL_PORT, else the one Espressif board attached)")
CONSOLE_BAUD = 115200


def _port(args):
    """-p, ESPPORT, ESPTOOL_PORT, or the one Espressif board attached (said unless -q)."""
    got = ports.resolve_port(args.port, say=lambda line: note(args, line))
    if getattr(args, "verbose", 0) and got.source != "detected":
        note(args, f"rvne: port {got.value} (from {'-p' if got.source == 'option' else got.source})")
    return got.value


def _baud(args):
    got = ports.resolve_baud(args.baud, CONSOLE_BAUD, names=ports.CONSOLE_BAUD_ENV)
    if getattr(args, "verbose", 0):
        note(args, f"rvne: baud {got.value} ({got.source})")
    return got.value


def _open(args, url):
    # Looked up at call time, not bound at import, so tests can stand in a client.
    return devmod.Device(url, timeout=args.timeout, retries=args.retries, baudrate=_baud(args))
