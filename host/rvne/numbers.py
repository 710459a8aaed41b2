"""Exact number syntax for everything rvne reads as a number: options,
environment variables, device replies, partitions.csv, dims. Python's
int() and float() also take "+8", "0_8", " 8" and digits of any script
("١٦"); a value that is not written the way its document says is refused,
not guessed."""

import re

_DECIMAL = re.compile(r"[0-9]+", re.ASCII)
_HEX = re.compile(r"0[xX][0-9a-fA-F]+", re.ASCII)
_FLOAT = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def decimal(text):
    """The int an ASCII decimal spells, or None."""
    return int(text) if isinstance(text, str) and _DECIMAL.fullmatch(text) else None


def c_integer(text):
    """ASCII decimal or 0x hex (a C integer without sign or suffix), or None."""
    if not isinstance(text, str):
        return None
    if _HEX.fullmatch(text):
        return int(text, 16)
    return decimal(text)


def hex_digits(text, count):
    """The int of exactly `count` ASCII hex digits, or None."""
    if isinstance(text, str) and len(text) == count and re.fullmatch(r"[0-9a-fA-F]+", text, re.ASCII):
        return int(text, 16)
    return None


def unsigned_float(text):
    """A non-negative ASCII decimal number (1, 0.5, 2e-3), or None."""
    return float(text) if isinstance(text, str) and _FLOAT.fullmatch(text) else None
