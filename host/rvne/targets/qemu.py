"""The "qemu" target: the lx106 firmware (firmware/ports/lx106) booting from
its ESP32-S3-layout flash image on QEMU's lx60 board, the UART on a local
TCP socket (docs/flash-layout.md).

    with start(partition_bytes) as dev:      # dev.url = socket://127.0.0.1:PORT
        ...

The firmware and image are built with `make -C firmware lx106` when missing
or older than their sources. The partition bytes go into a temp copy of the
image raw, unvalidated: tests boot erased and corrupt partitions on purpose.
"""

import os
import re
import shutil
import socket
import subprocess
import time
import weakref
from pathlib import Path

from .. import children, flash_image
from ..files import read as read_input
from ..errors import RvneError, TargetError
from . import RunningTarget, build, log_tail, stop_process

QEMU = "qemu-system-xtensa"
CROSS_CC = "xtensa-lx106-elf-gcc"
APT_PACKAGES = "qemu-system-misc gcc-xtensa-lx106 binutils-xtensa-lx106 picolibc-xtensa-lx106-elf"
IMAGE = Path("build") / "lx106" / "flash.img"     # relative to the repo
SOURCES = (Path("firmware") / "Makefile", Path("firmware") / "core", Path("firmware") / "ports" / "lx106",
           Path("partitions.csv"), Path("host") / "rvne" / "flash_image.py", Path("host") / "rvne" / "partition.py")
START_TIMEOUT = 30.0
BUILD_TIMEOUT = 900.0
PORT_ATTEMPTS = 5
STOP_GRACE = 5.0     # seconds QEMU gets to exit on SIGTERM
CALIBRATION = re.compile(r"calibration loop_insns=(\d+) ccount=(\d+)")


def repo_root() -> Path:
    """The checkout holding this package (host/rvne/targets/qemu.py)."""
    return build.repo_root(__file__, Path("firmware") / "ports" / "lx106" / "port.mk", "qemu")


def check_tools(need_cc=True):
    missing = [t for t in ((QEMU, CROSS_CC) if need_cc else (QEMU,)) if shutil.which(t) is None]
    if missing:
        raise TargetError(f"{' and '.join(missing)} not found: apt-get install {APT_PACKAGES} "
                          "(or run tools/bootstrap.sh)")


def is_stale(root: Path) -> bool:
    return build.is_stale(root / IMAGE, [root / rel for rel in SOURCES])


def ensure_built(root: Path = None) -> Path:
    """Path of an up-to-date flash image (erased blob partition)."""
    root = root or repo_root()
    if is_stale(root):
        check_tools()
        build.run_make(root, "lx106", root / IMAGE, lambda: is_stale(root), "the lx106 firmware", BUILD_TIMEOUT)
    return root / IMAGE


class QemuTarget(RunningTarget):
    # Seconds a client should wait per reply: a full request of pushes runs
    # soft-float on an emulated core (tens of ms per push at W = 100).
    reply_timeout = 60.0

    def __init__(self, proc, files, url, banner):
        self.proc = proc
        self.url = url
        self.banner = banner
        self._files = files
        # QEMU is stopped even if the caller forgets or a test errors out.
        self._finalizer = weakref.finalize(self, stop_process, proc, files, STOP_GRACE)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    @property
    def calibration(self):
        """(instructions, CCOUNT ticks) of the boot-time calibration loop."""
        m = CALIBRATION.search(self.banner)
        return (int(m.group(1)), int(m.group(2))) if m else None

    def stop(self):
        self._finalizer()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def qemu_command(image_path, port, icount=False):
    # wait=on: QEMU holds the guest until the runner connects, so the boot
    # output (banner, calibration) cannot be lost before anyone listens.
    cmd = [QEMU, "-M", "lx60", "-cpu", "lx106", "-nographic", "-monitor", "none",
           "-serial", f"tcp:127.0.0.1:{port},server=on,wait=on",
           "-drive", f"file={image_path},if=pflash,format=raw"]
    if icount:
        cmd += ["-icount", "shift=0"]
    return cmd


def start(partition=None, window: int = 100, image=None, icount: bool = False,
          start_timeout: float = START_TIMEOUT, line_max: int = None, **_ignored) -> QemuTarget:
    """Boot the emulated board with `partition` (bytes) raw in its `rvne`
    partition (None: keep the image's), wait for the ready banner and return
    a QemuTarget. `image`: a flash image to start from (default: the built
    one). `icount`: deterministic instruction counting (-icount shift=0).
    A window other than the firmware's boot default (100) is set with the
    protocol's WINDOW command once booted."""
    if partition is not None and not isinstance(partition, (bytes, bytearray, memoryview)):
        raise TargetError(f"the partition must be bytes, got {type(partition).__name__}")
    if int(window) < 1:
        raise TargetError(f"window must be >= 1, got {window}")
    check_tools(need_cc=image is None)
    src = Path(image) if image is not None else ensure_built()
    try:
        data = read_input(src, flash_image.FLASH_SIZE)   # a FIFO or a huge file: refused, not hung
        if partition is not None:
            data = flash_image.with_partition(data, bytes(partition))
        elif len(data) != flash_image.FLASH_SIZE:
            flash_image.read_table(data)     # raises, naming the size
    except RvneError as exc:
        raise TargetError(f"cannot prepare the flash image {src}: {exc}") from None
    except OSError as exc:
        raise TargetError(f"cannot read the flash image {src}: {exc.strerror}") from None

    # Nameless files (rvne.children): nothing is left behind, however we die.
    img = children.AnonymousFile("rvne-flash-", data)
    log = children.AnonymousFile("rvne-qemu-")
    files = [img, log]
    img_path, log_path = img.path, log.path
    proc = None
    try:
        deadline = time.monotonic() + start_timeout
        for attempt in range(PORT_ATTEMPTS):
            port = _free_port()
            log.truncate()
            proc = children.spawn(qemu_command(img_path, port, icount), pass_fds=(img.fd,),
                                  stdin=subprocess.DEVNULL, stdout=log.fd, stderr=log.fd)
            conn = _connect(proc, port, log_path, deadline)
            if conn is not None:
                break
            # Another process took the port between our probe and QEMU's bind.
            proc.wait(timeout=5)
        else:
            raise TargetError(f"QEMU could not listen on a free local port: {log_tail(log_path, 2) or 'no output'}")
        with conn:
            banner = _read_banner(proc, conn, log_path, deadline)
        target = QemuTarget(proc, files, f"socket://127.0.0.1:{port}", banner)
    except BaseException:
        stop_process(proc, files, STOP_GRACE)
        raise
    if int(window) != 100:
        _set_window(target, int(window))
    return target


def _connect(proc, port, log_path, deadline):
    """A socket to QEMU's serial server; None when QEMU exited because the
    port was taken (the caller retries on another)."""
    while True:
        if proc.poll() is not None:
            log = log_tail(log_path, 2)
            if "in use" in log or "Failed to bind" in log:
                return None
            raise TargetError(f"{QEMU} exited with {proc.returncode} before its UART listened: {log or 'no output'}")
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=1.0)
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TargetError(f"{QEMU} did not open its UART socket on port {port} in time")
        time.sleep(0.02)


def _read_banner(proc, conn, log_path, deadline) -> str:
    got = b""
    conn.settimeout(0.1)
    while b"ready:" not in got or not got.endswith(b"\n"):
        if b"FAULT" in got and got.endswith(b"\n"):
            raise TargetError(f"the firmware faulted while booting: {_last_line(got)}")
        if proc.poll() is not None:
            raise TargetError(f"{QEMU} exited with {proc.returncode} before the ready banner: "
                              f"{log_tail(log_path, 2) or _last_line(got) or 'no output'}")
        if time.monotonic() > deadline:
            raise TargetError(f"the emulated board printed no `ready:` banner in time (got {got[-120:]!r})")
        try:
            chunk = conn.recv(4096)
        except socket.timeout:
            continue
        if not chunk:
            raise TargetError("QEMU closed the UART socket before the ready banner")
        got += chunk
    return got.decode("utf-8", "replace")


def _last_line(data: bytes) -> str:
    lines = [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


def _set_window(target, window):
    from ..device import Device

    try:
        with Device(target.url) as dev:
            if dev.info().loaded:
                dev.window(window)
    except RvneError as exc:
        target.stop()
        raise TargetError(f"setting window {window} on the emulated board failed: {exc}") from None
