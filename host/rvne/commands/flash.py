"""`rvne flash BLOB (--image IMG | --port PORT)`: write a blob into the
model partitions of the emulated board's flash image, or of a real board
(through rvne.flash.board): slot `rvne_a` and the selector naming it, or
the single `rvne` of the previous layout (rvne.flash.slots). Both find the
partitions through the same partition-table code (rvne.flash.partition).
`rvne image IMG` writes the emulated board's image in the first place (from
any directory, for an installed rvne too)."""

import importlib

from ..errors import FlashError
from ..flash import image as flash_image, partition
from ..io import files, signed
from ..link import ports
from . import _progress as progress
from ._args import BAUD_MAX, UsageError, positive
from ._farm import farm_args, single
from ._out import announcing_builds, emit, note

FLASH_BAUD = 460800


def register(sub):
    p = sub.add_parser(
        "flash",
        help="write a blob into the device's model partition (a flash image or a board)",
        description="Validate BLOB (rules 1-14 of docs/format.md) and write it as the model the device "
                    "boots: into slot rvne_a with a selector record naming it, or into the single rvne "
                    "partition of the previous layout, found through the partition table "
                    "(docs/flash-layout.md). Nothing is written when the blob is refused or does not fit.",
    )
    p.add_argument("blob", metavar="BLOB", help="the .rvne blob to write")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--image", metavar="IMG",
                       help="an emulated board's 4 MiB flash image, as `rvne image IMG [--target qemu-lx106]` "
                            "writes it; then `rvne check BLOB --target qemu --image IMG` boots it")
    where.add_argument("-p", "--port", metavar="PORT",
                       help="serial port of a real board (esptool; default: ESPPORT, ESPTOOL_PORT, else the "
                            "one Espressif board attached)")
    p.add_argument("--chip", default="esp32s3", help="chip for --port (default esp32s3)")
    p.add_argument("-b", "--baud", type=positive("baud", BAUD_MAX), default=None, metavar="B",
                   help=f"baud rate for --port (default: ESPBAUD, ESPTOOL_BAUD, else {FLASH_BAUD})")
    p.add_argument("--partitions", default=None, metavar="CSV",
                   help="partitions.csv for --port (default: read the board's table at 0x8000); "
                        "an image carries its own table")
    p.add_argument("--label", default=None,
                   help="write this one partition raw instead (default: slot rvne_a and the selector naming "
                        "it, or the single rvne of the previous layout; docs/flash-layout.md)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object, typed values")
    farm_args(p)
    p.set_defaults(func=_flash)

    p = sub.add_parser(
        "image",
        help="write an emulated board's flash image (firmware in, model partitions erased)",
        description="Write the flash image the emulated board boots: boot stub, partition table "
                    "(partitions.csv) and firmware, the model slots and selector erased (4 MiB; for qemu-esp32s3 "
                    "the ESP-IDF app's 8 MiB image: bootloader, table, app); building the target's "
                    "firmware first if needed (in a checkout's build/, or an installed rvne's build cache). "
                    "--target sim writes the table alone: the virtual device runs no firmware from it. "
                    "Then `rvne flash BLOB --image IMG` writes a blob into it, `rvne check BLOB --target "
                    "qemu --image IMG` boots it and `rvne update NEW --target qemu --image IMG` updates it.")
    p.add_argument("out", metavar="IMG", help="the image file to write (replaced whole)")
    p.add_argument("--target", choices=IMAGE_TARGETS, default=IMAGE_TARGETS[0],
                   help=f"the emulated board (default {IMAGE_TARGETS[0]})")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object, typed values")
    p.set_defaults(func=cmd_image)


IMAGE_TARGETS = ("qemu", "qemu-lx106", "qemu-esp32s3", "sim")
MODEL_SUBTYPE = 0x40        # partitions.csv's data subtype for a blob


def cmd_image(args):
    from ..io.atomic import write_atomic
    from ..targets import esp32s3_qemu, qemu, sim

    if args.target == "sim":
        table = partition.read_csv(sim.tree().path("partitions.csv"))
        image = flash_image.build_image(b"", b"", table)
    else:
        with announcing_builds(args), progress.status(f"building the {args.target} firmware if needed",
                                                      getattr(args, "quiet", False) or args.json):
            if args.target == esp32s3_qemu.NAME:
                built, limit = esp32s3_qemu.ensure_built(), esp32s3_qemu.MAX_IMAGE
            else:
                built, limit = qemu.ensure_built(args.target), flash_image.FLASH_SIZE
        image = files.read(built, limit)
    write_atomic(args.out, image)
    # The model partitions (data subtype 0x40, docs/flash-layout.md), whatever
    # partitions.csv calls them.
    models = [p for p in flash_image.read_table(image)
              if p.type == partition.DATA and p.subtype == MODEL_SUBTYPE]
    where = ", ".join(f"'{p.name}' at 0x{p.offset:x} ({p.size} bytes)" for p in models)
    emit(args, f"wrote {args.out}: the {args.target} board's flash image ({len(image)} bytes), model "
               f"partition{'s' if len(models) > 1 else ''} {where} erased; next: rvne flash BLOB --image {args.out}",
         {"image": args.out, "target": args.target, "bytes": len(image),
          "partitions": [{"label": p.name, "offset": p.offset, "size": p.size} for p in models]})
    return 0


def _flash(args):
    if args.image and (args.place or args.coordinator):
        raise UsageError("--place names a farm's board: drop --image")
    return single(run, speed=False)(args)


def run(args):
    if args.image and args.partitions:
        # Silently writing by the image's table instead would surprise.
        raise UsageError("--partitions goes with --port; an image is written by the table it carries "
                         "(`rvne image` writes one with the project's partitions.csv)")
    data = signed.read_model(args.blob)     # a blob or a signed model; refusals name the file
    if args.image:
        part = flash_image.write_blob(args.image, data, label=args.label)
        emit(args, f"wrote {len(data)} bytes to partition {part.name!r} at 0x{part.offset:x} "
                   f"({part.size} bytes) of {args.image}",
             {"image": args.image, "label": part.name, "offset": part.offset, "size": part.size,
              "bytes": len(data)})
        return 0
    port = ports.resolve_port(args.port, say=lambda line: note(args, line)).value
    baud = ports.resolve_baud(args.baud, FLASH_BAUD)
    if getattr(args, "verbose", 0):
        note(args, f"rvne: flashing through {port} at {baud.value} baud ({baud.source})")
    try:
        board_flash = importlib.import_module("rvne.flash.board")
    except ModuleNotFoundError as exc:
        if exc.name != "rvne.flash.board":
            raise
        raise FlashError("flashing a board needs rvne.flash.board, which this install lacks; "
                         "use --image for the emulated board") from None
    # esptool draws its own progress on a terminal (not with -q or --json);
    # nothing is drawn into a pipe.
    api = board_flash.EsptoolApi()
    api.show_progress = progress.enabled(getattr(args, "quiet", False) or args.json)
    res = board_flash.flash_to_board(data, port=port, chip=args.chip, baud=baud.value,
                                     partitions=args.partitions, label=args.label, progress=False, esptool=api)
    emit(args, f"wrote {res.blob_len} bytes to partition {res.label!r} at 0x{res.offset:x} of the "
               f"{res.chip} on {res.port}; the board loaded it: crc={res.crc:08X}",
         {"port": res.port, "chip": res.chip, "label": res.label, "offset": res.offset, "size": res.size,
          "bytes": res.blob_len, "crc": res.crc})
    return 0
