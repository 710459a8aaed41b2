"""`rvne plan BLOB [--window W] [--partitions CSV]`: what the blob will cost
on the ESP32-S3 app before it is flashed (rvne.plan). Exit 1 when it does
not fit the partition or the RAM budget."""

import json

from .. import plan
from ._args import positive


def register(sub):
    p = sub.add_parser(
        "plan",
        help="what a blob costs on the ESP32-S3 (partition, arena, RAM, compute) before flashing",
        description="Blob bytes against the model slots (or the single `rvne` partition), the arena at W and at the app's arena "
                    "window, internal RAM with the app's other needs against a budget, MACs per frame "
                    "and an instruction estimate from the emulated board. Exit 1 when it does not fit.",
    )
    p.add_argument("blob", metavar="BLOB", help="the .rvne blob")
    p.add_argument("--window", type=positive("window", 65535), default=plan.DEFAULT_WINDOW, metavar="W",
                   help=f"attention window (default {plan.DEFAULT_WINDOW}, the app's RVNE_WINDOW)")
    p.add_argument("--partitions", default=None, metavar="CSV",
                   help="partitions.csv (default: the project's own)")
    p.add_argument("--label", default=None,
                   help="partition label (default: the model slots rvne_a/rvne_b, or rvne of the previous layout)")
    p.add_argument("--ram-budget", type=positive("RAM budget"), default=plan.RAM_BUDGET, metavar="BYTES",
                   help=f"internal RAM the app may use (default {plan.RAM_BUDGET}, an estimate; measure yours)")
    p.add_argument("--flash-size", choices=FLASH_SIZES, default=f"{plan.FLASH_SIZE >> 20}MB",
                   help=f"the board's flash, as esptool names it (default {plan.FLASH_SIZE >> 20}MB, the app's "
                        "sdkconfig.defaults); the partition must end inside it")
    p.add_argument("--json", action="store_true", help="one JSON object, typed values")
    p.set_defaults(func=run)


FLASH_SIZES = ("1MB", "2MB", "4MB", "8MB", "16MB", "32MB")


def run(args):
    result = plan.make_plan(args.blob, window=args.window, partitions_csv=args.partitions, label=args.label,
                            ram_budget=args.ram_budget, flash_size=int(args.flash_size[:-2]) << 20)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(plan.render_text(result))
    return 0 if result.ok else 1
