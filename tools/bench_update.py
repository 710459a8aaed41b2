#!/usr/bin/env python3
"""How long `rvne update` takes over a 115200-baud line, against the time
the blob's own bytes take on that line (issue 22: at most 1.5x, base64 and
framing included).

    python tools/bench_update.py [--baud 115200] [--blob model.rvne] [--json]

How the line is modelled here (this machine has no UART between host and
device): the virtual device (`rvne-vdev --flash`, the core's real update
code over a flash image) serves on a pty, and a relay in this process
carries every byte between the host's pty and the device's at the line's
rate, each direction on its own (full duplex), 10 bits per byte (8N1): a
byte reaches the other side when its last bit would have. What is not
modelled: the device's CPU time is this host's (far faster than an
ESP32-S3's at decoding base64 and CRCs); flash erase and program take no
time on a file, so a second run makes every erase block take 45 ms and
every 256 bytes programmed 0.4 ms, the typical figures of a W25Q64-class
SPI NOR flash (W25Q64JV datasheet; the worst case is several times that).
The relay itself is measured in the same run: a raw stream of the update's
size through it, no device (the floor).
"""

import argparse
import json
import os
import pty
import select
import sys
import tempfile
import threading
import time
import tty
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "host"))

from rvne import blob as blobmod  # noqa: E402
from rvne import flash_image, partition, upstream_init  # noqa: E402
from rvne.device import Device  # noqa: E402
from rvne.targets import sim  # noqa: E402
from rvne.update import update_device  # noqa: E402

BITS_PER_BYTE = 10          # 8N1
SLICE = 32                  # bytes the relay releases at once (~2.8 ms at 115200)
S3_FLASH_US = "45000,400"   # 4 KiB sector erase, 256-byte page program (W25Q64JV typical)


class PacedLink:
    """A full-duplex serial line of `baud` between a new pty (the host's
    end, `path`) and `device_fd`. Counts the bytes each way."""

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

    def _pump(self, src, dst, counter):
        free = time.monotonic()         # when the line has sent everything given so far
        per_byte = BITS_PER_BYTE / self.baud
        while not self._stop.is_set():
            ready, _, _ = select.select([src], [], [], 0.05)
            if not ready:
                continue
            try:
                data = os.read(src, 65536)
            except OSError:
                return
            if not data:
                return
            # An idle line starts sending now; a busy one when it is free. A
            # late wake-up does not slow the line: the schedule is absolute.
            free = max(free, time.monotonic())
            for i in range(0, len(data), SLICE):
                piece = data[i:i + SLICE]
                free += len(piece) * per_byte
                delay = free - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                view = memoryview(piece)
                while view:
                    try:
                        view = view[os.write(dst, view):]
                    except BlockingIOError:
                        select.select([], [dst], [], 0.05)
                setattr(self, counter, getattr(self, counter) + len(piece))

    def close(self):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=1)
        for fd in (self.master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass


def floor(nbytes, baud):
    """Seconds `nbytes` take through the relay with nobody but a reader at the far end."""
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


def one_update(old, new, baud, flash_us=None):
    """(seconds, bytes to the device, bytes back) of update_device over the paced line."""
    with tempfile.TemporaryDirectory(prefix="rvne-bench-update-") as tmp:
        img = Path(tmp) / "flash.img"
        table = partition.read_csv(ROOT / "partitions.csv")
        img.write_bytes(flash_image.with_model(flash_image.build_image(b"", b"", table), old))
        env = {"RVNE_VDEV_FLASH_US": flash_us} if flash_us else None
        with sim.start(None, image=img, env=env) as t:
            dev_fd = os.open(t.url, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
            tty.setraw(dev_fd)
            link = PacedLink(dev_fd, baud)
            try:
                with Device(link.path, timeout=10) as dev:
                    dev.info()                          # the banner and INFO before the clock starts
                    sent0, back0 = link.to_device, link.to_host
                    t0 = time.monotonic()
                    res = update_device(dev, new, baud=baud)
                    dt = time.monotonic() - t0
                    assert res.info.crc == blobmod.parse_loadable(new).crc_stored
                    return dt, link.to_device - sent0, link.to_host - back0, res
            finally:
                link.close()
                os.close(dev_fd)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baud", type=int, default=115200)
    ap.add_argument("--blob", help="the new blob (default: the default FP32 head, 41,244 bytes)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    new = Path(args.blob).read_bytes() if args.blob else upstream_init.init_blob(seed=11)
    old = upstream_init.init_blob()
    blob_s = len(new) * BITS_PER_BYTE / args.baud

    plain = one_update(old, new, args.baud)
    timed = one_update(old, new, args.baud, S3_FLASH_US)
    wire_s = plain[1] * BITS_PER_BYTE / args.baud
    floor_s, floor_n = floor(plain[1], args.baud)
    out = {
        "baud": args.baud, "blob_bytes": len(new), "blob_line_s": round(blob_s, 3),
        "request_bytes": plain[1], "reply_bytes": plain[2], "chunks": plain[3].chunks,
        "request_line_s": round(wire_s, 3), "relay_floor_s": round(floor_s, 3),
        "update_s": round(plain[0], 3), "ratio": round(plain[0] / blob_s, 3),
        "update_s_s3_flash": round(timed[0], 3), "ratio_s3_flash": round(timed[0] / blob_s, 3),
        "budget_ratio": 1.5,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"line        {args.baud} baud, 8N1 ({args.baud // BITS_PER_BYTE} bytes/s each way), modelled by a pacing relay")
    print(f"blob        {len(new)} bytes: {blob_s:.3f} s of line time (the budget: 1.5x = {1.5 * blob_s:.3f} s)")
    print(f"on the line {plain[1]} bytes to the device (base64 {len(new) * 4 // 3 + 1} + framing, "
          f"{plain[3].chunks} chunks) = {wire_s:.3f} s; {plain[2]} bytes of replies; relay floor for "
          f"{floor_n} bytes measured {floor_s:.3f} s ({floor_s / wire_s:.3f}x nominal)")
    print(f"update      {plain[0]:.3f} s = {plain[0] / blob_s:.2f}x the blob's line time "
          f"({plain[0] / wire_s:.2f}x its request bytes' line time), flash at host speed")
    print(f"update      {timed[0]:.3f} s = {timed[0] / blob_s:.2f}x with S3-like flash timing "
          f"(45 ms per 4 KiB erase, 0.4 ms per 256 B program)")
    print("PASS: within 1.5x" if max(plain[0], timed[0]) <= 1.5 * blob_s else "OVER 1.5x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
