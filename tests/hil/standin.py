"""A stand-in for an ESP32-S3 board, for running the device suite's board
path in CI: the virtual device (rvne-vdev) serving PARTITION on a pty,
reached through a stable path LINK (a symlink, like a board's
/dev/ttyACM0). Its flash is the file: when PARTITION is replaced (the
suite's `--flash-hook file:PARTITION`), the board "reboots" — the virtual
device is restarted on the new contents and LINK points at its new pty, as
a board re-enumerates after esptool's reset.

    python tests/hil/standin.py --link LINK --partition PARTITION

Prints `standin: ready LINK` once serving; stops on SIGTERM/SIGINT,
removing LINK."""

import argparse
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "host"))

from rvne.targets import sim  # noqa: E402

POLL = 0.05


def _stamp(path):
    st = os.stat(path)
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _point(link, target):
    tmp = f"{link}.new"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, link)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--link", required=True)
    ap.add_argument("--partition", required=True)
    ap.add_argument("--window", type=int, default=100)
    args = ap.parse_args(argv)

    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(1))
    target = None
    try:
        stamp = None
        while not stop:
            now = _stamp(args.partition)
            if now != stamp:
                data = Path(args.partition).read_bytes()
                if target is not None:
                    target.stop()
                target = sim.start(data, window=args.window)
                _point(args.link, target.url)
                if stamp is None:
                    print(f"standin: ready {args.link}", flush=True)
                stamp = now
            time.sleep(POLL)
    finally:
        if target is not None:
            target.stop()
        if os.path.lexists(args.link):
            os.unlink(args.link)
    return 0


if __name__ == "__main__":
    sys.exit(main())
