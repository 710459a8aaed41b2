"""`rvne` command line: thin commands over the importable API.

Exit codes: 0 ok, 1 invalid input or failed check, 2 usage error.
Errors are one line on stderr, never a traceback.
"""

import argparse
import importlib
import sys

from . import __version__
from .errors import RvneError

# Each module defines register(subparsers); its parsers set `func(args) -> int`.
COMMAND_MODULES = [
    "rvne.commands.blobs",
    "rvne.commands.device",
    "rvne.commands.flash",
]


def build_parser():
    parser = argparse.ArgumentParser(
        prog="rvne",
        description="RVNE blobs, the temporal-head reference, and device verification.",
    )
    parser.add_argument("--version", action="version", version=f"rvne {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 on usage errors
    try:
        return int(args.func(args) or 0)
    except RvneError as exc:
        print(f"rvne: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        print(f"rvne: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("rvne: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
