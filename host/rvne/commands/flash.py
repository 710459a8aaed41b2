"""`rvne flash BLOB (--image IMG | --port PORT)`: write a blob into the
`rvne` data partition of the emulated board's flash image, or of a real
board (through rvne.board_flash). Both find the partition through the same
partition-table code (rvne.partition)."""

import importlib
import sys

from .. import blob, flash_image
from ..errors import FlashError
from ._args import BAUD_MAX, positive


def register(sub):
    p = sub.add_parser(
        "flash",
        help="write a blob into the device's rvne partition (a flash image or a board)",
        description="Validate BLOB (rules 1-14 of docs/format.md) and write it into the data "
                    "partition `rvne`, found through the partition table. Nothing is written "
                    "when the blob is refused or does not fit.",
    )
    p.add_argument("blob", metavar="BLOB", help="the .rvne blob to write")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--image", metavar="IMG",
                       help="the emulated board's 4 MiB flash image (build/lx6/flash.img; build/lx106/flash.img for --target qemu-lx106)")
    where.add_argument("--port", metavar="PORT", help="serial port of a real board (esptool)")
    p.add_argument("--chip", default="esp32s3", help="chip for --port (default esp32s3)")
    p.add_argument("--baud", type=positive("baud", BAUD_MAX), default=460800, metavar="B",
                   help="baud rate for --port (default 460800)")
    p.add_argument("--partitions", default=None, metavar="CSV",
                   help="partitions.csv for --port (default: read the board's table at 0x8000); "
                        "an image carries its own table")
    p.add_argument("--label", default="rvne", help="partition label (default rvne)")
    p.set_defaults(func=run)


def run(args):
    if args.image and args.partitions:
        # Silently writing by the image's table instead would surprise.
        print("rvne flash: error: --partitions goes with --port; an image is written by the table "
              "it carries (rebuild it with `make -C firmware lx106` for another layout)", file=sys.stderr)
        return 2
    data = blob.read_file(args.blob, contract=True).to_bytes()   # refusals name the file
    if args.image:
        part = flash_image.write_blob(args.image, data, label=args.label)
        print(f"wrote {len(data)} bytes to partition {args.label!r} at 0x{part.offset:x} "
              f"({part.size} bytes) of {args.image}")
        return 0
    try:
        board_flash = importlib.import_module("rvne.board_flash")
    except ModuleNotFoundError as exc:
        if exc.name != "rvne.board_flash":
            raise
        raise FlashError("flashing a board needs rvne.board_flash, which this install lacks; "
                         "use --image for the emulated board") from None
    res = board_flash.flash_to_board(data, port=args.port, chip=args.chip, baud=args.baud,
                                     partitions=args.partitions, label=args.label)
    print(f"wrote {res.blob_len} bytes to partition {res.label!r} at 0x{res.offset:x} of the "
          f"{res.chip} on {res.port}; the board loaded it: crc={res.crc:08X}")
    return 0
