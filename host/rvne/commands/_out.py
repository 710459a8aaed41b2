"""One result per command: text for people, or with --json one JSON
object with typed values (numbers as numbers, dims as a list), so a script
never parses the text (docs/cli.md, JSON)."""

import contextlib
import json
import sys

from ..errors import WeightsFileError, printable, printable_json
from ..io import blob, weights as weights_io


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


def float_model(path, dims):
    """(arrays, dims, what) of a float model as `rvne pack` or `rvne export`
    reads it: a loadable FP32/FP16 blob, .npz, .safetensors or .pt."""
    try:
        weights_io.format_of(path)
    except WeightsFileError:
        parsed = blob.read_file(path, contract=True)
        if parsed.header.int8:
            raise WeightsFileError(f"{path}: already an int8 blob; quantize the float model it came from") from None
        return parsed.tensors(), parsed.header.dims, f"{parsed.header.dtype} blob"
    arrays, d, _ = weights_io.load_named(path, dims)
    return arrays, d, f"{weights_io.format_of(path)} weights"
