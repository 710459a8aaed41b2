"""argparse value types the commands share: a bad value is a usage error
(exit 2) naming the option and what it must be."""

import argparse

from ..numbers import decimal, unsigned_float


class UsageError(Exception):
    """Options that do not go together: the CLI prints the command's usage
    and this message, exit 2 (docs/cli.md)."""


def positive(kind, maximum=None):
    """An integer >= 1 (and <= `maximum` when given); `kind` names it in the error."""
    return integer(kind, 1, maximum)


def nonnegative(kind, maximum=None):
    """An integer >= 0 (and <= `maximum` when given)."""
    return integer(kind, 0, maximum)


def integer(kind, minimum, maximum=None):
    def parse(text):
        value = decimal(text)
        if value is None or value < minimum or (maximum is not None and value > maximum):
            bound = f"an integer >= {minimum}" if maximum is None else f"an integer {minimum}..{maximum}"
            raise argparse.ArgumentTypeError(f"{kind} {text!r} must be {bound}")
        return value
    return parse


BAUD_MAX = 16_000_000    # beyond any UART; termios takes a 32-bit speed

SECONDS_MAX = 1e6   # finite, so select() and deadlines can take it


def seconds(text):
    """A timeout: a number of seconds > 0 (at most SECONDS_MAX)."""
    value = unsigned_float(text) or 0.0
    if not 0 < value <= SECONDS_MAX:
        raise argparse.ArgumentTypeError(f"timeout {text!r} must be a number of seconds > 0 and <= {SECONDS_MAX:g}")
    return value


def tolerance(kind):
    """A finite number >= 0 (an --atol or --rtol)."""
    def parse(text):
        value = unsigned_float(text)
        if value is None or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{kind} {text!r} must be a finite number >= 0")
        return value
    return parse
