"""Weight files of other tool chains (docs/formats.md): detection by
content, one reader module per format, each `read(src, data=...) -> Report`.

Every reader module defines:
  NAME          short id ("lwt", ...), TITLE human name
  sniff(src)    True when the first bytes are this format's signature
  read(src, *, data=True) -> base.Report
                data=False reads only headers and indexes (inspect);
                data=True also runs the checks that read tensor data (CRC,
                padding bytes) - verify.
  tensor_array(src, tensor) -> numpy array of the tensor, decoded exactly
"""

import importlib

from .base import Source, UnknownFormatError

# Order matters only for speed: every signature is distinct, and MILBlob's
# and safetensors' (no magic string) come last.
READER_MODULES = ("lwt", "burnpack", "cnn2", "milblob", "safetensors_fmt")
RVNE_MAGIC = b"ENVR"


def readers():
    """The reader modules, imported on first use (the CLI starts faster)."""
    return [importlib.import_module(f"{__name__}.{m}") for m in READER_MODULES]


def detect(src):
    """The reader module for `src`, "rvne" for an RVNE blob, or None."""
    if src.bytes(0, 4) in (RVNE_MAGIC, RVNE_MAGIC[::-1]):  # swapped: blob.py explains
        return "rvne"
    for mod in readers():
        if mod.sniff(src):
            return mod
    return None


def open_path(path, buf):
    """(Source, reader module or "rvne") for a mapped file; raises
    UnknownFormatError naming the file when no format matches."""
    src = Source(buf, path)
    mod = detect(src)
    if mod is None:
        raise UnknownFormatError(
            f"{path}: not a supported weight format (RVNE, LightwatchAI2 .lwt, Burnpack, Core ML MILBlob "
            "weight.bin, CNN v2 .bin, safetensors; recognised by content, not by name)")
    return src, mod
