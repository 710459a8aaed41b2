"""Protocol abuse against the virtual device and the emulated board (issue
16, "What to build"). After every attack the device still answers and a
check against the reference passes: its state was not damaged and a junk
prefix left in its line buffer does not fail the next request."""

import os
import random
import socket
import time
import zlib

import numpy as np
import pytest

from conftest import SMALL
from rvne import check
from rvne.io import upstream_init
from rvne.link import protocol
from rvne.link.device import Device
from rvne.targets import start_target

WINDOW = 8


def sealed(body):
    return body + b"*%08X\n" % zlib.crc32(body)


def _rand(n, seed):
    return random.Random(seed).randbytes(n)


ATTACKS = {
    "junk without newline": [b"hello"],
    "bare carriage returns": [b"\r" * 64],
    "NULs": [b"\x00" * 256],
    "binary with newlines": [_rand(4096, 1)],
    "line over line_max": [b"A" * 40000 + b"\n"],
    "unterminated line over line_max": [b"B" * 40000],
    "bad crc": [b">5 PING*00000000\n"],
    "no crc": [b">5 PING*\n", b">5 PING\n"],
    "sigils alone": [b">\n", b"*\n", b"<1 OK*00000000\n"],
    "unknown command": [sealed(b">6 FORMAT")],
    "lowercase command": [sealed(b">7 ping")],
    "seq zero and overflow": [sealed(b">0 PING"), sealed(b">4294967296 PING"), sealed(b">-1 PING")],
    "push wrong count": [sealed(b">8 PUSH 3 AAAA")],
    "push bad base64": [sealed(b">9 PUSH 1 !!!!")],
    "push zero and huge n": [sealed(b">10 PUSH 0 "), sealed(b">11 PUSH 4294967295 AAAA")],
    "window zero and huge": [sealed(b">12 WINDOW 0"), sealed(b">13 WINDOW 4294967295"),
                             sealed(b">14 WINDOW 99999999999999999999")],
    "extra arguments": [sealed(b">15 INFO extra args here"), sealed(b">16 PING " + b"x " * 200)],
    "pipelined pings": [b"".join(sealed(b">%d PING" % (100 + i)) for i in range(300))],
    "utf-8 and invalid utf-8": ["»PING« ✓\n".encode(), b"\xff\xfe\xfd\n"],
    "a megabyte of newlines": [b"\n" * (1 << 20)],
    "reset mid stream": [sealed(b">17 RUN 1 " + b"A" * 44), sealed(b">18 RESET")],
    "half a line then hang up": [b">19 PI"],
}
BOARD_ATTACKS = ["junk without newline", "NULs", "line over line_max", "unterminated line over line_max",
                 "bad crc", "unknown command", "push bad base64", "window zero and huge", "pipelined pings",
                 "half a line then hang up"]


def attack(url, payloads, slow=False):
    """Send the payloads on a fresh connection, read what comes back for a
    moment, and hang up (as a crashed client would)."""
    with Device(url, timeout=1) as dev:
        for p in payloads:
            for i in range(0, len(p), 4096):
                dev.write_raw(p[i:i + 4096])
                if slow:
                    time.sleep(0.002)
        deadline = time.monotonic() + (1.0 if slow else 0.3)
        while dev.read_line(deadline) is not None:
            pass


def proves_alive(url, blob, timeout):
    # The attack's own error replies (seq 0) may still be on their way on a
    # loaded machine; Device takes each as a damaged request and resends, so
    # it gets a resend per attack line at most.
    with Device(url, timeout=timeout, retries=8) as dev:
        dev.ping()
        report = check.run_check(dev, blob, vectors=1, seed=3, length=WINDOW + 2)
    assert report.passed, check.render(report)


@pytest.fixture(scope="module")
def blob():
    return upstream_init.init_blob(SMALL)


@pytest.fixture(scope="module")
def vdev(blob):
    with start_target("sim", blob, window=WINDOW) as t:
        yield t


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_vdev_survives(vdev, blob, name):
    attack(vdev.url, ATTACKS[name])
    assert vdev.alive
    proves_alive(vdev.url, blob, timeout=5)


@pytest.fixture(scope="module")
def board(blob):
    with start_target("qemu", blob, window=WINDOW) as t:
        yield t


@pytest.mark.parametrize("name", BOARD_ATTACKS)
def test_emulated_board_survives(board, blob, name):
    attack(board.url, ATTACKS[name], slow=True)
    assert board.alive
    proves_alive(board.url, blob, timeout=board.reply_timeout)


def test_junk_in_the_line_buffer_does_not_fail_the_first_check(tmp_path, blob, capsys):
    """`printf hello > port` before `rvne check --port`: passes first time."""
    from rvne import cli

    path = tmp_path / "m.rvne"
    path.write_bytes(blob)
    with start_target("sim", blob, window=WINDOW) as t:
        for junk in (b"hello", b"\r\r", b"\x00\x00\x00", b">1 PIN"):
            fd = os.open(t.url, os.O_WRONLY | os.O_NOCTTY)
            os.write(fd, junk)
            os.close(fd)
            rc = cli.main(["check", str(path), "--port", t.url, "--vectors", "1", "--length", "10"])
            out, err = capsys.readouterr()
            assert rc == 0, (junk, out, err)


def test_vdev_truncated_partition_file_is_not_a_crash(tmp_path, blob):
    """The partition file is read once: truncating it later changes nothing."""
    import subprocess

    from rvne.targets import sim

    part = tmp_path / "part.bin"
    part.write_bytes(blob)
    exe = sim.ensure_built()
    p = subprocess.Popen([str(exe), "--window", str(WINDOW), str(part)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert b"ready: OK" in p.stdout.readline()
        os.truncate(part, 0)
        for seq in (1, 2):
            frame = protocol.encode_f32(np.ones(SMALL[0], np.float32))
            p.stdin.write(sealed(b">%d RUN 1 %s" % (seq, frame.encode() if isinstance(frame, str) else frame)))
            p.stdin.flush()
            line = p.stdout.readline()
            assert line.startswith(b"<%d OK" % seq), line
    finally:
        p.kill()
        p.wait()


def test_vdev_fifo_partition_is_no_partition_at_once(tmp_path):
    import subprocess

    from rvne.targets import sim

    fifo = tmp_path / "part.fifo"
    os.mkfifo(fifo)
    p = subprocess.run([str(sim.ensure_built()), str(fifo)], input=sealed(b">1 INFO"),
                       capture_output=True, timeout=10)
    assert b"E_NO_PARTITION" in p.stdout and b"not a regular file" in p.stderr
