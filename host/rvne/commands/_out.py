"""One result per command: text for people, or with --json one JSON
object with typed values (numbers as numbers, dims as a list), so a script
never parses the text (docs/cli.md, JSON)."""

import contextlib
import json
import sys

from ..errors import printable, printable_json


def emit(args, text, data):
    if getattr(args, "json", False):
        json.dump(printable_json(data), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif text:
        print(text)


def note(args, line):
    """An informational line on stderr; silent with -q."""
    if not getattr(args, "quiet", False):
        print(printable(line), file=sys.stderr)


def blob_fields(path, parsed):
    h = parsed.header
    return {"path": str(path), "dtype": h.dtype, "dims": list(h.dims), "bytes": h.total_len,
            "crc": parsed.crc_stored}


@contextlib.contextmanager
def announcing_builds(args):
    """While the block runs, a firmware build that starts is said in one
    line on stderr (unless -q): with no terminal, nothing else shows why a
    first --target takes 20-30 s."""
    from ..targets import build

    previous = build.announce
    build.announce = lambda line: note(args, line)
    try:
        yield
    finally:
        build.announce = previous

