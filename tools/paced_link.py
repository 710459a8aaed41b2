"""A serial line of a given baud between the host and a device's pty, for
the benchmarks that measure what a real UART costs (tools/bench_update.py,
tools/bench_trace.py): this machine has no UART between host and device.

    link = PacedLink(open_pty(device_path), 115200)
    with Device(link.path) as dev: ...      # the host's end: a new pty
    link.to_device, link.to_host            # bytes carried each way
    link.close()

Full duplex, each direction on its own thread, 10 bits per byte (8N1): a
byte reaches the other side when its last bit would have. The schedule is
absolute (a late wake-up does not slow the line; an idle line carries no
credit), released SLICE bytes at a time.
"""

import os
import pty
import select
import threading
import time
import tty

BITS_PER_BYTE = 10          # 8N1
SLICE = 32                  # bytes released at once (~2.8 ms at 115200)


def open_pty(path) -> int:
    """A raw, non-blocking fd on the device's pty `path`."""
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    tty.setraw(fd)
    return fd


class PacedLink:
    """A line of `baud` between a new pty (the host's end, `path`) and
    `device_fd` (not closed here). Counts the bytes each way."""

    def __init__(self, device_fd, baud):
        self.baud = baud
        self.master, self._slave = pty.openpty()
        tty.setraw(self._slave)
        tty.setraw(self.master)
        self.path = os.ttyname(self._slave)
        self.device_fd = device_fd
        self.to_device = self.to_host = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._pump, args=(self.master, device_fd, "to_device"), daemon=True),
                         threading.Thread(target=self._pump, args=(device_fd, self.master, "to_host"), daemon=True)]
        for t in self._threads:
            t.start()

    @property
    def carried(self) -> int:
        """Bytes carried, both directions."""
        return self.to_device + self.to_host

    def _pump(self, src, dst, counter):
        free = time.monotonic()         # when the line has sent everything given so far
        per_byte = BITS_PER_BYTE / self.baud
        while not self._stop.is_set():
            ready, _, _ = select.select([src], [], [], 0.05)
            if not ready:
                continue
            try:
                data = os.read(src, 65536)
            except BlockingIOError:
                continue
            except OSError:
                return
            if not data:
                return
            free = max(free, time.monotonic())
            for i in range(0, len(data), SLICE):
                piece = data[i:i + SLICE]
                free += len(piece) * per_byte
                delay = free - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                # Counted before it is written: the far end may read the
                # bytes (and a test the counter) before this thread runs again.
                setattr(self, counter, getattr(self, counter) + len(piece))
                view = memoryview(piece)
                while view:
                    try:
                        view = view[os.write(dst, view):]
                    except BlockingIOError:
                        select.select([], [dst], [], 0.05)
                    except OSError:     # the far end closed at the end of a run
                        setattr(self, counter, getattr(self, counter) - len(view))
                        return

    def close(self):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=1)
        for fd in (self.master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def floor(nbytes, baud):
    """(seconds, bytes received) of `nbytes` through a link with nobody but
    a reader at the far end: the relay's own floor, measured."""
    a_master, a_slave = pty.openpty()
    tty.setraw(a_master)
    tty.setraw(a_slave)
    link = PacedLink(a_master, baud)
    got = 0
    out = os.open(link.path, os.O_RDWR | os.O_NOCTTY)
    payload = b"x" * nbytes
    t0 = time.monotonic()

    def writer():
        view = memoryview(payload)
        while view:
            view = view[os.write(out, view[:4096]):]

    w = threading.Thread(target=writer, daemon=True)
    w.start()
    while got < nbytes:
        ready, _, _ = select.select([a_slave], [], [], 5)
        if not ready:
            break
        got += len(os.read(a_slave, 65536))
    dt = time.monotonic() - t0
    w.join(timeout=1)
    link.close()
    for fd in (out, a_slave):
        os.close(fd)
    return dt, got
