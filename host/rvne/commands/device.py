"""Device commands: `rvne device info` and `rvne check`. Thin layers over
rvne.device, rvne.check and rvne.targets."""

import contextlib
import json
import sys

from .. import blob as blobmod
from .. import check as checkmod
from .. import device as devmod
from ..device import DEFAULT_RETRIES, DEFAULT_TIMEOUT
from ..errors import DeviceError
from ..targets import TARGETS, start_target
from ._args import BAUD_MAX, nonnegative, positive, seconds

U32_MAX = 0xFFFFFFFF      # WINDOW W travels as a u32 (docs/protocol.md)


def _link_args(p):
    p.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="S",
                   help=f"seconds to wait for each reply before resending (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--retries", type=nonnegative("retries"), default=DEFAULT_RETRIES, metavar="N",
                   help=f"resends of a request before giving up (default {DEFAULT_RETRIES})")
    p.add_argument("--baud", type=positive("baud", BAUD_MAX), default=115200, metavar="B",
                   help="serial baud rate (default 115200)")


def register(sub):
    dev = sub.add_parser("device", help="talk to a device running rvne firmware")
    dsub = dev.add_subparsers(dest="device_command", metavar="ACTION")
    dsub.required = True
    info = dsub.add_parser("info", help="print the device's INFO (firmware, model, blob CRC, window)",
                           description="Ask the device on URL for INFO (docs/protocol.md) and print its "
                                       "fields: firmware, port, load status and reason, dims, dtype, blob "
                                       "CRC, window, arena. Exit 1 when the device cannot be reached.")
    info.add_argument("--port", required=True, metavar="URL",
                      help="pyserial URL: /dev/ttyUSB0, a pty path, socket://host:port, rfc2217://host:port")
    info.add_argument("--json", action="store_true", help="print INFO's fields as JSON")
    _link_args(info)
    info.set_defaults(func=cmd_device_info)

    chk = sub.add_parser(
        "check", help="verify a device computes what the reference computes from BLOB",
        description="Read INFO, compare the blob CRC and dims with BLOB, stream seeded random "
                    "sequences longer than W and compare every logit with rvne.reference. "
                    "Exit 1 on any mismatch.")
    chk.add_argument("blob", metavar="BLOB", help="the blob the device should hold")
    where = chk.add_mutually_exclusive_group(required=True)
    where.add_argument("--port", metavar="URL", help="a device already running (pyserial URL)")
    where.add_argument("--target", choices=TARGETS,
                       help="start this target on BLOB (building it if needed) and stop it after")
    chk.add_argument("--image", metavar="IMG",
                     help="with --target qemu: boot this flash image as it is (after `rvne flash BLOB "
                          "--image IMG`) instead of writing BLOB into a temporary copy of the built one")
    chk.add_argument("--vectors", type=positive("vectors"), default=4, metavar="N",
                     help="sequences to stream (default 4)")
    chk.add_argument("--seed", type=nonnegative("seed"), default=0, metavar="S",
                     help="seed of the random sequences (default 0)")
    chk.add_argument("--window", type=positive("window", U32_MAX), metavar="W",
                     help="send WINDOW W first (default: keep the device's)")
    chk.add_argument("--length", type=positive("length"), metavar="N",
                     help="frames per sequence (default W plus a few, so the window slides)")
    chk.add_argument("--json", action="store_true", help="print the report as JSON")
    _link_args(chk)
    chk.set_defaults(func=cmd_check)


def _open(args, url):
    # Looked up at call time, not bound at import, so tests can stand in a client.
    return devmod.Device(url, timeout=args.timeout, retries=args.retries, baudrate=args.baud)


def cmd_device_info(args):
    with _open(args, args.port) as dev:
        info = dev.info()
    if args.json:
        print(json.dumps(info.fields, indent=2))
    else:
        width = max(len(k) for k in info.fields)
        for key, value in info.fields.items():
            print(f"{key:<{width}}  {value}")
    return 0


CHECK_FRAMES_MAX = 20000     # frames per sequence a check streams unless --length says more


def _bound_length(dev, args):
    """A device's INFO sizes the check (length = W plus a few): refuse a
    window that would make it run for hours before streaming a frame."""
    if args.length is not None:
        return
    window = args.window or dev.info().window
    length = checkmod.default_length(window)
    if length > CHECK_FRAMES_MAX:
        raise DeviceError(f"the device's window is {window} frames, so a check would stream {length} frames per "
                          f"sequence; pass --window W (or --length N) to check a smaller one")


def cmd_check(args):
    emulated = (args.target or "").startswith("qemu")
    if args.image and not emulated:
        print("rvne check: error: --image goes with --target qemu or qemu-lx106", file=sys.stderr)
        return 2
    # A bad file fails before any target starts.
    blob_bytes = blobmod.read_file(args.blob, contract=True).to_bytes()
    with contextlib.ExitStack() as stack:
        url = args.port
        if args.target:
            if args.image:
                # The board boots what `rvne flash --image` wrote; INFO's CRC
                # check below proves the image holds BLOB.
                target = stack.enter_context(start_target(args.target, None, image=args.image, icount=emulated))
            else:
                target = stack.enter_context(start_target(args.target, blob_bytes, icount=emulated))
            url = target.url
            # An emulated core is slow: at least the reply time its target needs.
            args.timeout = max(args.timeout, getattr(target, "reply_timeout", 0.0))
        dev = stack.enter_context(_open(args, url))
        _bound_length(dev, args)
        report = checkmod.run_check(dev, blob_bytes, vectors=args.vectors, seed=args.seed,
                                    window=args.window, length=args.length)
        if emulated:
            report.instructions_per_push = target.instructions(report.device_push)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(checkmod.render(report))
    return 0 if report.passed else 1
