"""`rvne update BLOB (-p PORT | --target T --image IMG)`: replace the model
of a running device over its serial line (rvne.link.update; docs/protocol.md,
"Updating the model"), then print its INFO with the new CRC."""

import contextlib

from ..io import signed
from ..link.update import precheck, update_device
from ..targets import TARGETS, UPDATE_IMAGE_WAIT, start_target
from . import _progress as progress
from ._args import UsageError
from ._link import _baud, _link_args, _open, _port, PORT_HELP
from ._out import emit, note


def register(sub):
    p = sub.add_parser(
        "update", help="replace the model of a running device over its serial line",
        description="Validate BLOB (rules 1-14 of docs/format.md), send it to the device in CRC-checked "
                    "chunks, and let it switch: the device writes only its inactive slot, reads it back, "
                    "checks it as at boot and then names it in its selector (docs/flash-layout.md). Any "
                    "refusal or cut leaves the old model serving. Prints the device's INFO after the switch. "
                    "Exit 1 when the blob or the device refuses, or the link fails.")
    p.add_argument("blob", metavar="BLOB", help="the new .rvne blob")
    where = p.add_mutually_exclusive_group()
    where.add_argument("-p", "--port", metavar="URL", help=PORT_HELP)
    where.add_argument("--target", choices=TARGETS,
                       help="start this target on --image, update it, and stop it; the image keeps the update")
    p.add_argument("--image", metavar="IMG",
                   help="with --target: the flash image the device boots and writes (after `rvne flash "
                        "OLD --image IMG`)")
    p.add_argument("--abort", action="store_true",
                   help="first end an update a killed host left in flight on the device (else E_UPDATE_BUSY)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object, typed values")
    _link_args(p)
    p.set_defaults(func=run)


def run(args):
    if bool(args.target) != bool(args.image):
        raise UsageError("--target and --image go together: the image is the device's flash and keeps the update")
    data = signed.read_model(args.blob)     # a blob or a signed model; refusals name the file
    quiet = getattr(args, "quiet", False) or args.json
    with contextlib.ExitStack() as stack:
        baud = None
        if args.target:
            with progress.status(f"starting the {args.target} target (building its firmware if needed)", quiet):
                # Another rvne on the same image is waited for: updates of one image serialise.
                target = stack.enter_context(start_target(args.target, None, image=args.image, persist=True,
                                                          image_wait=UPDATE_IMAGE_WAIT))
            url = target.url
            args.timeout = max(args.timeout, getattr(target, "reply_timeout", 0.0))
        else:
            url = _port(args)
            baud = _baud(args)
        dev = stack.enter_context(_open(args, url))
        verdict = precheck(dev.info(), data)         # or refused here, before anything is sent
        if verdict and not args.json:
            note(args, f"rvne: {verdict}")
        bar = stack.enter_context(progress.Bytes(f"updating {url}", quiet))
        res = update_device(dev, data, progress=bar.update, abort_pending=args.abort, baud=baud)
    info = res.info
    fields = "\n".join(f"  {k:<9} {v}" for k, v in info.fields.items())
    emit(args, f"updated {url}: slot {res.slot} seq {res.seq} crc={res.crc:08X}, {res.blob_len} bytes in "
               f"{res.chunks} chunks ({res.resent} resent), {res.seconds:.2f} s\n{fields}",
         {"port": url, "slot": res.slot, "seq": res.seq, "crc": res.crc, "bytes": res.blob_len,
          "chunks": res.chunks, "resent": res.resent, "seconds": round(res.seconds, 3), "info": info.to_json()})
    return 0
