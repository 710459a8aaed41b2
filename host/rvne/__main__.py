"""The `rvne` command (`python -m rvne`, and the console script's entry).

Nothing but `sys` is imported before run() starts: a Ctrl-C at any moment
after that, even while the CLI's own modules (numpy, argparse) are still
being imported, ends with "rvne: interrupted" and exit 130 (docs/cli.md),
never a traceback."""

import sys


def run():
    try:
        from .cli import main

        return main()
    except KeyboardInterrupt:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)    # a second Ctrl-C must not cut the line short
        print("rvne: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(run())
