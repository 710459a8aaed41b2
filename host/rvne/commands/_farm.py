"""The board-farm options the board commands share (docs/farm.md, docs/cli.md):
--place, --tag, --wait, --coordinator, labgrid's LG_PLACE and LG_COORDINATOR;
acquiring the places for the command's run, and printing many boards'
results with one summary table."""

import argparse
import contextlib
import copy
import json
import math
import os

from ..errors import printable_json
from ._args import UsageError, seconds
from ._out import note


def _tag(text):
    key, eq, value = text.partition("=")
    if not eq or not key or not value:
        raise argparse.ArgumentTypeError(f"tag {text!r} must be KEY=VALUE (a labgrid place tag)")
    return key, value


def farm_args(p, many=False):
    """--place (repeatable with `many`), --tag, --wait, --coordinator."""
    g = p.add_argument_group("board farm (labgrid places; docs/farm.md)")
    g.add_argument("--place", action="append" if many else "store", metavar="NAME",
                   help="acquire this labgrid place and use its serial port"
                        + (" (repeat for several boards, worked on at once)" if many else "")
                        + "; default: LG_PLACE when no -p is given")
    if many:
        g.add_argument("--tag", action="append", type=_tag, metavar="K=V",
                       help="every place with this labgrid tag (repeat: all the tags)")
    g.add_argument("--wait", nargs="?", type=seconds, const=math.inf, default=0.0, metavar="S",
                   help="a place held by someone else: wait until it is free (at most S seconds) "
                        "instead of failing")
    g.add_argument("--coordinator", metavar="HOST:PORT",
                   help="labgrid coordinator (default: LG_COORDINATOR, else 127.0.0.1:20408)")


def wanted(args, env=None):
    """(place patterns, tags) the command names: --place/--tag, else
    LG_PLACE when neither -p nor --target is given; ([], {}) for none."""
    env = os.environ if env is None else env
    place = getattr(args, "place", None)
    patterns = ([place] if isinstance(place, str) else list(place or []))
    tags = dict(getattr(args, "tag", None) or [])
    if (patterns or tags) and (getattr(args, "port", None) or getattr(args, "target", None)):
        raise UsageError("--place/--tag name a farm's board: drop -p/--target")
    if not patterns and not tags and not getattr(args, "port", None) and not getattr(args, "target", None) \
            and env.get("LG_PLACE"):
        patterns = [env["LG_PLACE"]]
    return patterns, tags


@contextlib.contextmanager
def leased(args, patterns, tags):
    """(coordinator, boards) acquired for the block (rvne.farm.leases)."""
    from ..farm import leases

    wait = None if args.wait == math.inf else args.wait
    with leases.boards(patterns, tags, wait=wait, address=args.coordinator,
                       say=lambda line: note(args, line)) as got:
        yield got


def plain(args):
    """args without what does not pickle (the command's function, its parser),
    for a board's own process (rvne.farm.many)."""
    return argparse.Namespace(**{k: v for k, v in vars(args).items() if k not in ("func", "_parser", "_farm")})


def on_board(args, board, speed=True):
    """A copy of args aimed at `board`: its serial URL, and (`speed`) its
    exporter's baud rate unless -b said one."""
    a = copy.copy(args)
    a.port, a.place, a.tag = board.url, None, None
    if speed and getattr(a, "baud", None) is None:
        a.baud = board.speed
    return a


def single(func, speed=True):
    """A one-board command that also takes a place: acquire it, run `func`
    on its serial port, release it. `speed`: talk at the exporter's baud
    rate (not for flashing, which has its own)."""
    def run(args):
        patterns, tags = wanted(args)
        if not patterns and not tags:
            return func(args)
        with leased(args, patterns, tags) as (coord, boards):
            if len(boards) != 1:
                raise UsageError(f"{len(boards)} places match; this command takes one board")
            a = on_board(args, boards[0], speed)
            a._farm = (coord, boards[0])
            return func(a)
    return run


def report_many(args, outcomes, render, doc, header, row):
    """Each board's result (render(result) under its place's name, or its
    error), then the summary table; with --json one object. 0 when every
    board passed (`row` returns the verdict first: "pass"), else 1."""
    from ..farm.many import table

    rows, docs = [], []
    for o in outcomes:
        if o.error is not None:
            rows.append([o.board, "error"] + ["-"] * (len(header) - 2))
            docs.append({"place": o.board, "passed": False, "error": o.error})
        else:
            rows.append([o.board] + row(o.result))
            docs.append({"place": o.board, "passed": rows[-1][1] in ("pass", "updated"), **doc(o.result)})
    passed = all(d["passed"] for d in docs)
    if getattr(args, "json", False):
        print(json.dumps(printable_json({"boards": docs, "passed": passed}), indent=2))
    else:
        for o in outcomes:
            print(f"== place {o.board} ({o.seconds:.1f} s)")
            print(f"error: {o.error}" if o.error is not None else render(o.result))
            print()
        print(table(rows, header))
        bad = sum(not d["passed"] for d in docs)
        print(f"{len(docs) - bad} of {len(docs)} boards passed")
    return 0 if passed else 1
