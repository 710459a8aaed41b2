"""Misbehaving serial peers and lying devices (issue 16 items 6, 8; docs/
files.md "Device values"). Each ends after the client's own tries with exit
1 and one line, however long the peer keeps talking; nothing a device says
sizes a loop or an allocation unchecked.

No wall-clock limits here (speed is for benchmarks): a peer still talking to
the client after HANG seconds hangs up and says so, which only a client that
would never give up reaches."""

import socket
import threading
import time
import tracemalloc

import pytest

from conftest import SMALL
from fake_device import FakeDevice, ReferenceModel
from rvne import cli
from rvne.io import upstream_init
from rvne.link import protocol
from rvne.link.device import Device

TIMEOUT, RETRIES = 0.3, 1
HANG = 60.0        # a hang guard, about 100x the client's tries: never a speed limit


class Peer:
    """A TCP peer on 127.0.0.1:0 running `behave(conn, over)` for each
    client; `over()` turns true when the test is done with the peer or the
    client has been connected for HANG seconds (then `hung` is set and the
    peer hangs up)."""

    def __init__(self, behave):
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(4)
        self._sock.settimeout(0.1)
        self.url = "socket://127.0.0.1:%d" % self._sock.getsockname()[1]
        self.stop = threading.Event()
        self.hung = False
        self._behave = behave
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            give_up = time.monotonic() + HANG

            def over():
                if time.monotonic() > give_up:
                    self.hung = True
                return self.hung or self.stop.is_set()

            with conn:
                conn.settimeout(0.05)
                try:
                    self._behave(conn, over)
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


def _flood(conn, over, junk):
    """Sends junk round and round for as long as the client reads, without
    blocking past over()."""
    ring, at = junk * 2, 0
    while not over():
        try:
            at = (at + conn.send(ring[at:at + len(junk)])) % len(junk)
        except socket.timeout:
            pass


def silent(conn, over):
    while not over() and _recv(conn) != b"":
        pass


def echoing(conn, over):
    while not over():
        data = _recv(conn)
        if data == b"":
            return
        if data:
            conn.sendall(data)


def trickling(conn, over):
    """A byte of junk every 20 ms, never a line end."""
    while not over():
        conn.sendall(b"z")
        time.sleep(0.02)


def flooding(conn, over):
    _flood(conn, over, b"\x00\xff garbage without end " * 4096)


def flooding_lines(conn, over):
    _flood(conn, over, b"<1 OK*00000000\n<0 ERR E_CRC bad*12345678\nlog line\n" * 2048)


def hanging_up(conn, over):
    conn.close()


@pytest.fixture
def writes(monkeypatch):
    """The requests the client writes (each try is one write)."""
    sent = []
    write_raw = Device.write_raw

    def counted(self, data):
        sent.append(data)
        return write_raw(self, data)

    monkeypatch.setattr(Device, "write_raw", counted)
    return sent


def run(capsys, *argv):
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line(err, *words):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.mark.parametrize("behave, words, tries", [
    (silent, "no reply within", RETRIES + 1), (echoing, "no reply within", RETRIES + 1),
    (trickling, "no reply within", RETRIES + 1), (flooding, "no reply within", RETRIES + 1),
    (flooding_lines, "failed after 2 tries", RETRIES + 1), (hanging_up, "lost the connection", None),
])
def test_misbehaving_peers_end_after_the_tries_with_one_line(capsys, writes, behave, words, tries):
    with Peer(behave) as peer:
        rc, _, err = run(capsys, "device", "info", "--port", peer.url,
                         "--timeout", TIMEOUT, "--retries", RETRIES)
    assert not peer.hung, f"the client was still on the line after {HANG:g} s"
    assert rc == 1
    one_line(err, words)
    if tries is None:
        assert len(writes) <= 1, writes          # nothing is resent to a closed connection
    else:
        assert len(writes) == tries, writes
        assert all(b" INFO*" in w for w in writes), writes


def test_a_runaway_line_is_dropped_and_the_reply_after_it_heard():
    """32 MiB without a line end before the reply: the client holds a
    bounded part of it (not the flood) and still takes the reply."""
    flood = 32 << 20

    def flood_then_answer(conn, over):
        conn.settimeout(HANG)
        heard = b""
        while b"\n" not in heard.lstrip(b"\n"):        # the request, after its leading LF
            data = conn.recv(4096)
            if not data:
                return
            heard += data
        request = protocol.parse_request(heard.lstrip(b"\n").split(b"\n")[0])
        junk = b"\x00\xff garbage without end " * 4096
        sent = 0
        while sent < flood:
            conn.sendall(junk)
            sent += len(junk)
        conn.sendall(b"\n" + protocol.build_reply(request.seq))
        while not over() and _recv(conn) != b"":
            pass

    with Peer(flood_then_answer) as peer:
        with Device(peer.url, timeout=HANG, retries=0) as dev:
            tracemalloc.start()
            try:
                dev.ping()
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            heard = dev.bytes_in
    assert not peer.hung
    assert heard > flood
    assert peak < flood // 4, peak


class Unpushable(ReferenceModel):
    """A frame pushed to a lying device ends the test's client at once (no
    reply), not after the hours a 2,000,000-frame window would stream."""

    def push(self, frame):
        raise AssertionError("a frame was pushed to a device whose INFO lies")


def lying(**fields):
    blob = upstream_init.init_blob(SMALL)
    model = Unpushable(blob, window=8)
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
            rc, _, err = run(capsys, *argv, "--port", dev.url, "--timeout", 2)
            assert rc == 1
            one_line(err, words)
    assert not {"PUSH", "RUN", "WINDOW"} & set(dev.executed), dev.executed


def test_a_huge_but_consistent_window_does_not_run_for_hours(tmp_path, capsys):
    blob, dev = lying(window=2_000_000, arena=2_000_000 * 64)
    path = tmp_path / "m.rvne"
    path.write_bytes(blob)
    with dev:
        rc, _, err = run(capsys, "check", path, "--port", dev.url, "--timeout", 2)
    assert rc == 1
    one_line(err, "window is 2000000 frames", "--window")
    assert not {"PUSH", "RUN", "WINDOW"} & set(dev.executed), dev.executed


def test_a_lying_n_or_logit_count_is_refused(tmp_path):
    blob = upstream_init.init_blob(SMALL)

    class Liar(ReferenceModel):
        def push(self, frame):
            return super().push(frame)[:-1]       # one logit short

    with FakeDevice(model=Liar(blob, window=8), window=8) as dev:
        with Device(dev.url, timeout=2) as d:
            with pytest.raises(protocol.MalformedReplyError):
                d.run(__import__("numpy").zeros((2, SMALL[0]), "float32"))
