"""`rvne update BLOB (-p PORT | --target T --image IMG)`: replace the model
of a running device over its serial line (rvne.link.update; docs/protocol.md,
"Updating the model"), then print its INFO with the new CRC."""

import contextlib

from ..io import signed
from ..link.update import precheck, update_device
from ..targets import TARGETS, UPDATE_IMAGE_WAIT, start_target
from . import _progress as progress
from ._args import UsageError
from ._farm import farm_args, leased, on_board, plain, report_many, wanted
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
    farm_args(p, many=True)
    p.set_defaults(func=run)


def run(args):
    if bool(args.target) != bool(args.image):
        raise UsageError("--target and --image go together: the image is the device's flash and keeps the update")
    patterns, tags = wanted(args)
    data = signed.read_model(args.blob)     # a blob or a signed model; refusals name the file
    quiet = getattr(args, "quiet", False) or args.json
    if not patterns and not tags:
        return _print(args, _update_on(args, data, quiet))
    with leased(args, patterns, tags) as (_, boards):
        if len(boards) == 1:
            return _print(args, _update_on(on_board(args, boards[0]), data, quiet))
        return _update_many(args, boards, data)


def _update_many(args, boards, data):
    """Every board at once; a board whose update fails keeps serving its old
    model (the device switches only after its new slot checks out)."""
    from ..farm.many import run_all

    outcomes = run_all(boards, _update_board, plain(args), data)
    return report_many(args, outcomes, lambda r: _text(*r), lambda r: {"update": _doc(*r)},
                       ["board", "verdict", "slot", "seq", "crc", "seconds"],
                       lambda r: ["updated", r[1].slot, r[1].seq, f"{r[1].crc:08X}", f"{r[1].seconds:.2f}"])


def _update_board(board, args, data):
    """One farm board's update, in its own process (rvne.farm.many)."""
    return _update_on(on_board(args, board), data, True)


def _update_on(args, data, quiet):
    """(url, UpdateResult) of one device: a started --target or args.port."""
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
        return url, update_device(dev, data, progress=bar.update, abort_pending=args.abort, baud=baud)


def _text(url, res):
    fields = "\n".join(f"  {k:<9} {v}" for k, v in res.info.fields.items())
    return (f"updated {url}: slot {res.slot} seq {res.seq} crc={res.crc:08X}, {res.blob_len} bytes in "
            f"{res.chunks} chunks ({res.resent} resent), {res.seconds:.2f} s\n{fields}")


def _doc(url, res):
    return {"port": url, "slot": res.slot, "seq": res.seq, "crc": res.crc, "bytes": res.blob_len,
            "chunks": res.chunks, "resent": res.resent, "seconds": round(res.seconds, 3),
            "info": res.info.to_json()}


def _print(args, got):
    emit(args, _text(*got), _doc(*got))
    return 0
