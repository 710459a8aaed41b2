"""One result per command: text for people, or with --json one JSON
object with typed values (numbers as numbers, dims as a list), so a script
never parses the text (docs/esp32s3.md, Board-tool conventions)."""

import json
import sys


def emit(args, text, data):
    if getattr(args, "json", False):
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif text:
        print(text)


def note(args, line):
    """An informational line on stderr; silent with -q."""
    if not getattr(args, "quiet", False):
        print(line, file=sys.stderr)


def blob_fields(path, parsed):
    h = parsed.header
    return {"path": str(path), "dtype": h.dtype, "dims": list(h.dims), "bytes": h.total_len,
            "crc": parsed.crc_stored}
