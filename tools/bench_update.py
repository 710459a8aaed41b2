#!/usr/bin/env python3
"""How long `rvne update` takes over a 115200-baud line, against the time
the blob's own bytes take on that line (issue 22: at most 1.5x, base64 and
framing included).

    python tools/bench_update.py [--baud 115200] [--blob model.rvne] [--json]

How the line is modelled here (this machine has no UART between host and
device): the virtual device (`rvne-vdev --flash`, the core's real update
code over a flash image) serves on a pty, and a relay in this process
(tools/paced_link.py) carries every byte between the host's pty and the
device's at the line's rate, each direction on its own, 8N1. What is not
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
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "host"))

from rvne.flash import image as flash_image, partition  # noqa: E402
from rvne.io import blob as blobmod  # noqa: E402
from rvne.io import upstream_init  # noqa: E402
from rvne.link.device import Device  # noqa: E402
from rvne.link.update import update_device  # noqa: E402
from rvne.targets import sim  # noqa: E402

from paced_link import BITS_PER_BYTE, PacedLink, floor, open_pty  # noqa: E402

S3_FLASH_US = "45000,400"   # 4 KiB sector erase, 256-byte page program (W25Q64JV typical)


def one_update(old, new, baud, flash_us=None):
    """(seconds, bytes to the device, bytes back) of update_device over the paced line."""
    with tempfile.TemporaryDirectory(prefix="rvne-bench-update-") as tmp:
        img = Path(tmp) / "flash.img"
        table = partition.read_csv(ROOT / "partitions.csv")
        img.write_bytes(flash_image.with_model(flash_image.build_image(b"", b"", table), old))
        env = {"RVNE_VDEV_FLASH_US": flash_us} if flash_us else None
        with sim.start(None, image=img, env=env) as t:
            dev_fd = open_pty(t.url)
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
