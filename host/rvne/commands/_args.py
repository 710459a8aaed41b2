"""argparse value types the commands share: a bad value is a usage error
(exit 2) naming the option and what it must be."""

import argparse


def positive(kind):
    """An integer >= 1; `kind` names it in the error."""
    def parse(text):
        try:
            value = int(text, 10)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"{kind} {text!r} must be an integer >= 1")
        return value
    return parse


def seconds(text):
    """A timeout: a number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"timeout {text!r} must be a number of seconds > 0")
    return value
