"""`rvne` command line: thin commands over the importable API.

Exit codes, the error line and the --json shape: docs/cli.md (stated
once there). Errors are one line on stderr, never a traceback.
"""

import argparse
import errno
import importlib
import re
import signal
import sys

from . import __version__
from .commands._args import UsageError
from .errors import RvneError, printable, printable_json

# Each module defines register(subparsers); its parsers set `func(args) -> int`.
COMMAND_MODULES = [
    "rvne.commands.blobs",
    "rvne.commands.device",
    "rvne.commands.flash",
    "rvne.commands.plan",
    "rvne.commands.sign",
    "rvne.commands.update",
]


class _Parser(argparse.ArgumentParser):
    """A command's own parser reports an argument it does not know, with
    its own usage (`rvne check BLOB --bogus` shows check's, not rvne's)."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and not any(isinstance(a, argparse._SubParsersAction) for a in self._actions):
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


def build_parser():
    parser = _Parser(
        prog="rvne",
        description="RVNE blobs, the temporal-head reference, and device verification.",
        epilog="Exit codes: 0 ok, 1 invalid input, an error or a failed check, 2 usage error, "
               "130 interrupted (docs/cli.md). `rvne COMMAND --help` describes each command.",
    )
    parser.add_argument("--version", action="version", version=f"rvne {__version__}")
    _verbosity(parser, argparse.SUPPRESS, "say more (board commands: where the port and baud came from)")
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
    for leaf in leaf_parsers(parser):
        board = any("--port" in a.option_strings for a in leaf._actions)
        _verbosity(leaf, argparse.SUPPRESS, "say where the port and baud came from" if board else
                   "accepted by every command (as idf.py does); this one has nothing more to say")
        leaf.set_defaults(_parser=leaf)
    parser.set_defaults(verbose=0, quiet=False)
    return parser


def _verbosity(p, default, verbose_help):
    """-v/-q, accepted before or after the command (`rvne -q check ...`,
    `rvne check ... -q`), as idf.py does."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("-v", "--verbose", action="count", default=default, help=verbose_help)
    g.add_argument("-q", "--quiet", action="store_true", default=default,
                   help="the result and errors only: no progress, notes or informational lines")


def leaf_parsers(parser):
    """Every command's own parser (`device info`, `check`, ...)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [parser]
    out, seen = [], set()
    for action in subs:
        for child in action.choices.values():
            if id(child) not in seen:
                seen.add(id(child))
                out.extend(leaf_parsers(child))
    return out


# What to do about an OSError, by errno; the message names the file.
_OS_HINTS = {
    errno.ENOENT: "check the path",
    errno.EISDIR: "give a file, not a directory",
    errno.ENOTDIR: "check the path",
    errno.EACCES: "check its permissions",
    errno.EPERM: "check its permissions and attributes",
    errno.EIO: "the file cannot be read; copy it from a good source",
    errno.ENXIO: "not a regular file; give a file",
    errno.ENOSPC: "free some space and retry",
    errno.EROFS: "the file system is read-only; write elsewhere",
}
_NEGATIVE = re.compile(r"-\d")


def _negative_values(argv):
    """`--seed -5` as `--seed=-5`: argparse takes a value that starts with
    '-' and is not a plain number (`-1,2,3`) for an option, and would only
    say "expected one argument"; this way the option's own check explains."""
    out = []
    for tok in argv:
        if out and out[-1].startswith("--") and out[-1] != "--" and "=" not in out[-1] \
                and _NEGATIVE.match(tok) and "--" not in out:
            out[-1] = f"{out[-1]}={tok}"
        else:
            out.append(tok)
    return out


class Signalled(BaseException):
    """SIGTERM or SIGHUP, raised where the process is, so every `with` and
    `finally` on the way out stops its target and removes its files."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise_signalled(signum, _frame):
    # A second one kills at once: C code that retries its system call on
    # EINTR (a library's own open()) never lets this handler run.
    signal.signal(signum, signal.SIG_DFL)
    raise Signalled(signum)


def _robust_streams():
    """A message naming a file must print whatever the encoding of the
    terminal (PYTHONIOENCODING=ascii and a path in UTF-8)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):
            pass


def _fail(args, code, message, extra=None):
    """The one error line on stderr; with --json also {"error": ...} on
    stdout, so a JSON reader always gets JSON (docs/cli.md). `extra`: what
    the command had to say besides (check's report when --save failed)."""
    message = printable(message)        # a file name must not split the line or drive the terminal
    print(f"rvne: error: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        import json

        doc = {"error": {"code": code, "message": message}, **printable_json(extra or {})}
        print(json.dumps(doc, indent=2 if extra else None))
    return 1


def main(argv=None):
    _robust_streams()
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(_negative_values(argv))  # exits 2 on usage errors
    previous = {sig: signal.signal(sig, _raise_signalled) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        args._parser.error(str(exc))        # the command's usage, then one line; exit 2
    except BrokenPipeError:
        # `rvne inspect big | head`: the reader left; that is not an error of ours.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except RvneError as exc:
        return _fail(args, getattr(exc, "code", "E_RVNE"), str(exc), getattr(exc, "json_extra", None))
    except OSError as exc:
        what = exc.strerror or str(exc) or type(exc).__name__
        hint = _OS_HINTS.get(exc.errno)
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(args, f"E_OS_{errno.errorcode.get(exc.errno, 'ERROR')}",
                     f"{where}{what}" + (f"; {hint}" if hint else ""), getattr(exc, "json_extra", None))
    except MemoryError:
        return _fail(args, "E_MEMORY", "not enough memory for this request; ask for less (smaller --dims, "
                                       "--length, --window or input file)")
    except KeyboardInterrupt:
        print("rvne: interrupted", file=sys.stderr)
        return 130
    except Signalled as sig:
        print(f"rvne: stopped by {signal.Signals(sig.signum).name}", file=sys.stderr)
        return 128 + sig.signum
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


if __name__ == "__main__":
    sys.exit(main())
