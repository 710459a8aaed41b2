"""tools/paced_link.py, the one model of a UART line the benchmarks share
(tools/bench_update.py, tools/bench_trace.py): it carries every byte
intact both ways, never faster than the baud allows (8N1), and the
benchmarks use it rather than a line model of their own."""

import ast
import os
import pty
import select
import sys
import time
import tty
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import paced_link  # noqa: E402


def read_exactly(fd, n, timeout=10.0):
    got = b""
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            got += os.read(fd, 65536)
    return got


def test_bytes_cross_intact_both_ways_no_faster_than_the_baud():
    dev_master, dev_slave = pty.openpty()          # the "device": its end is dev_slave
    tty.setraw(dev_master)
    tty.setraw(dev_slave)
    baud, n = 115200, 2880                          # 0.25 s of line time
    with paced_link.PacedLink(dev_master, baud) as link:
        host = os.open(link.path, os.O_RDWR | os.O_NOCTTY)
        try:
            payload = bytes(range(256)) * (n // 256) + b"x" * (n % 256)
            t0 = time.monotonic()
            os.write(host, payload)
            assert read_exactly(dev_slave, n) == payload
            dt = time.monotonic() - t0
            assert dt >= 0.95 * n * paced_link.BITS_PER_BYTE / baud
            os.write(dev_slave, b"reply\n")
            assert read_exactly(host, 6) == b"reply\n"
            # The link counts a piece just after writing it: the reader can be first.
            deadline = time.monotonic() + 10.0
            while link.carried < n + 6 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert (link.to_device, link.to_host, link.carried) == (n, 6, n + 6)
        finally:
            os.close(host)
    os.close(dev_slave)
    os.close(dev_master)


def test_the_benchmarks_share_the_line_model():
    for name in ("bench_update.py", "bench_trace.py"):
        tree = ast.parse((ROOT / "tools" / name).read_text())
        classes = [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        assert classes == [], f"tools/{name} models the line itself: {classes}"
        imports = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert "paced_link" in imports, f"tools/{name} does not use tools/paced_link.py"
