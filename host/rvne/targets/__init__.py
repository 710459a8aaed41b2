"""Targets a device test can run against: each starts a device whose blob
partition holds given bytes and hands back a pyserial URL.

    with start_target("sim", partition_bytes) as dev:
        client = Device(dev.url)

Names: "qemu-esp32s3" (the ESP-IDF app on Espressif's QEMU booted by the
ESP32-S3's ROM, targets/esp32s3_qemu.py), "sim" (the POSIX virtual device,
targets/sim.py), "qemu" (the emulated esp32-class board: windowed ABI, FPU)
and "qemu-lx106" (the emulated LX106 board: call0, soft-float), both in
targets/qemu.py (docs/targets.md). A real board is reached with a port URL instead
(rvne.link.device), after `rvne flash`.
"""

import importlib
import os
from pathlib import Path

from . import children

TARGETS = ("sim", "qemu", "qemu-lx106", "qemu-esp32s3")
# target name -> (module in this package, extra options for its start())
_STARTERS = {"sim": ("sim", {}), "qemu": ("qemu", {"board": "qemu"}),
             "qemu-lx106": ("qemu", {"board": "qemu-lx106"}), "qemu-esp32s3": ("esp32s3_qemu", {})}


class RunningTarget:
    """A started device. `url` is a pyserial URL; `banner` is what the device
    printed up to and including its ready line; stop() is idempotent."""

    url: str = ""
    banner: str = ""

    def stop(self):
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def stop_process(proc, files, grace):
    """Stop a target's child (terminate its process group, kill it after
    `grace` seconds) and free its temp files (rvne.targets.children.AnonymousFile,
    or paths to remove); safe to call again."""
    children.stop(proc, grace)
    for f in files:
        if isinstance(f, children.AnonymousFile):
            f.close()
            continue
        try:
            os.unlink(f)
        except FileNotFoundError:
            pass


# Seconds a device booting an image itself (`--image`: an update lands in it)
# waits for another rvne holding that image: a board started beside another
# on one image is refused soon (IMAGE_LOCK_WAIT, its `image_wait` default);
# `rvne update` waits long (UPDATE_IMAGE_WAIT), so updates of one image run
# one after the other, each against what the one before left
# (docs/flash-layout.md, "Updates on the boards").
IMAGE_LOCK_WAIT = 3.0
UPDATE_IMAGE_WAIT = 300.0


def hold_image(src, data=None, wait=None) -> int:
    """For a device that boots flash image `src` itself: write `data` over
    it first (atomically; None: as it is), then lock it against other rvne
    writers until the returned fd is closed; waits up to `wait` seconds
    (default IMAGE_LOCK_WAIT) for another holder to let go."""
    from ..errors import RvneError, TargetError
    from ..io.atomic import write_atomic
    from ..io.files import lock_regular

    try:
        fd, _ = lock_regular(src, wait=IMAGE_LOCK_WAIT if wait is None else wait)
        if data is None:
            return fd
    except (RvneError, OSError) as exc:
        raise TargetError(f"cannot use the flash image {src}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        # Written under the lock, then locked again: the write replaced the inode.
        write_atomic(src, data, prefix=".flash-")
    except (RvneError, OSError) as exc:
        os.close(fd)
        raise TargetError(f"cannot use the flash image {src}: {getattr(exc, 'strerror', None) or exc}") from None
    os.close(fd)
    return hold_image(src, None, wait)


def log_tail(path, n) -> str:
    """The last `n` non-blank lines of a child's log, joined with " | "
    ("" when it cannot be read)."""
    try:
        lines = [ln.strip() for ln in Path(path).read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


def start_target(name, partition, **options):
    """Build what is missing or stale, start target `name` with `partition`
    (bytes: the blob partition's contents, a blob or anything else), wait for
    its ready banner and return a RunningTarget. Raises rvne.errors.TargetError
    with a one-line reason (and what to install) when it cannot."""
    if name not in TARGETS:
        from ..errors import TargetError

        raise TargetError(f"unknown target {name!r}: choose one of {', '.join(TARGETS)}")
    module, fixed = _STARTERS[name]
    return importlib.import_module(f"{__name__}.{module}").start(partition, **options, **fixed)
