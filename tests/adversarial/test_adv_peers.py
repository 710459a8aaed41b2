"""Misbehaving serial peers and lying devices (issue 16 items 6, 8; docs/
files.md "Device values"). Each ends within a stated time with exit 1 and
one line; nothing a device says sizes a loop or an allocation unchecked."""

import socket
import threading
import time

import pytest

from conftest import SMALL
from fake_device import FakeDevice, ReferenceModel
from rvne import cli
from rvne.io import upstream_init
from rvne.link import protocol
from rvne.link.device import Device

TIMEOUT, RETRIES = 0.3, 1
# Every peer must be given up on within the tries' timeouts plus slack.
LIMIT = TIMEOUT * (RETRIES + 1) + 2.0


class Peer:
    """A TCP peer on 127.0.0.1:0 running `behave(conn)` for each client."""

    def __init__(self, behave):
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(4)
        self._sock.settimeout(0.1)
        self.url = "socket://127.0.0.1:%d" % self._sock.getsockname()[1]
        self.stop = threading.Event()
        self._behave = behave
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(0.05)
                try:
                    self._behave(conn, self.stop)
                except OSError:
                    pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self._thread.join(timeout=2)
        self._sock.close()


def _recv(conn):
    try:
        return conn.recv(65536)
    except socket.timeout:
        return None


def silent(conn, stop):
    while not stop.is_set() and _recv(conn) != b"":
        pass


def echoing(conn, stop):
    while not stop.is_set():
        data = _recv(conn)
        if data == b"":
            return
        if data:
            conn.sendall(data)


def trickling(conn, stop):
    """A byte of junk every 20 ms, never a line end."""
    while not stop.is_set():
        conn.sendall(b"z")
        time.sleep(0.02)


def flooding(conn, stop):
    junk = b"\x00\xff garbage without end " * 4096
    while not stop.is_set():
        conn.sendall(junk)


def flooding_lines(conn, stop):
    junk = b"<1 OK*00000000\n<0 ERR E_CRC bad*12345678\nlog line\n" * 2048
    while not stop.is_set():
        conn.sendall(junk)


def hanging_up(conn, stop):
    conn.close()


def run(capsys, *argv):
    t0 = time.monotonic()
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err, time.monotonic() - t0


def one_line(err, *words):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.mark.parametrize("behave, words", [
    (silent, "no reply within"), (echoing, "no reply within"), (trickling, "no reply within"),
    (flooding, "no reply within"), (flooding_lines, "failed after 2 tries"), (hanging_up, "lost the connection"),
])
def test_misbehaving_peers_end_in_time_with_one_line(capsys, behave, words):
    with Peer(behave) as peer:
        rc, _, err, seconds = run(capsys, "device", "info", "--port", peer.url,
                                  "--timeout", TIMEOUT, "--retries", RETRIES)
    assert rc == 1
    one_line(err, words)
    assert seconds < LIMIT, seconds


def lying(**fields):
    blob = upstream_init.init_blob(SMALL)
    model = ReferenceModel(blob, window=8)
    model.info["arena"] = "4096"                  # honest for window 8 unless a field says otherwise
    model.info.update({k: str(v) for k, v in fields.items()})
    return blob, FakeDevice(model=model, window=int(fields.get("window", 8)) if str(fields.get("window", 8)).isdigit() else 8)


@pytest.mark.parametrize("fields, words", [
    ({"window": 0}, "window=0 is outside 1"),
    ({"window": -5}, "window='-5' is not a decimal number"),     # a sign is not the protocol's syntax
    ({"window": 2**32 - 1}, "cannot fit its arena"),
    ({"window": 2_000_000}, "cannot fit its arena"),
    ({"window": 8, "arena": 2**40}, "arena=1099511627776 is outside"),
    ({"line_max": 12}, "line_max=12 is outside"),
    ({"line_max": 2**40}, "line_max=1099511627776 is outside"),
    ({"dims": "8,2,1,4,0,3"}, "are not all 1"),
    ({"dims": "8,2,1,4,70000,3"}, "are not all 1"),
    ({"window": "x"}, "window='x' is not a decimal number"),
])
def test_a_lying_info_is_refused_before_use(tmp_path, capsys, fields, words):
    blob, dev = lying(**fields)
    path = tmp_path / "m.rvne"
    path.write_bytes(blob)
    with dev:
        for argv in (["device", "info"], ["check", path]):
            rc, _, err, seconds = run(capsys, *argv, "--port", dev.url, "--timeout", 2)
            assert rc == 1
            one_line(err, words)
            assert seconds < 5


def test_a_huge_but_consistent_window_does_not_run_for_hours(tmp_path, capsys):
    blob, dev = lying(window=2_000_000, arena=2_000_000 * 64)
    path = tmp_path / "m.rvne"
    path.write_bytes(blob)
    with dev:
        rc, _, err, seconds = run(capsys, "check", path, "--port", dev.url, "--timeout", 2)
    assert rc == 1
    one_line(err, "window is 2000000 frames", "--window")
    assert seconds < 5


def test_a_lying_n_or_logit_count_is_refused(tmp_path):
    blob = upstream_init.init_blob(SMALL)

    class Liar(ReferenceModel):
        def push(self, frame):
            return super().push(frame)[:-1]       # one logit short

    with FakeDevice(model=Liar(blob, window=8), window=8) as dev:
        with Device(dev.url, timeout=2) as d:
            with pytest.raises(protocol.MalformedReplyError):
                d.run(__import__("numpy").zeros((2, SMALL[0]), "float32"))
