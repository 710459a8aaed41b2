"""The emulated Xtensa boards: firmware booting from its ESP32-S3-layout
flash image on QEMU's lx60 board, the UART on a local TCP socket
(docs/targets.md, docs/flash-layout.md). One launcher for both cores:

- "qemu": the esp32-class core (firmware/ports/lx6: windowed ABI, FPU,
  clang/llc-22) on `-cpu de233_fpu`;
- "qemu-lx106": the ESP8266's LX106 (firmware/ports/lx106: call0 ABI,
  soft-float, gcc) on `-cpu lx106`.

    with start(partition_bytes, board="qemu") as dev:   # dev.url = socket://127.0.0.1:PORT
        ...

The firmware and image are built with `make -C firmware <core>` when missing
or stale (targets/build.py: a checkout's build/, or the per-user cache of an
installed rvne). The partition bytes go into a temp copy of the
image raw, unvalidated: tests boot erased and corrupt partitions on purpose.
"""

import os
import re
import shutil
import socket
import subprocess
import time
import weakref
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import FlashError, RvneError, TargetError
from ..flash import image as flash_image
from ..io.files import read as read_input
from . import RunningTarget, build, hold_image, log_tail, stop_process
from . import children

QEMU = "qemu-system-xtensa"


@dataclass(frozen=True)
class Board:
    """One emulated board: `core` names its firmware port (firmware/ports/
    <core>, <build dir>/<core>/, `make -C firmware <core>`, INFO port=)."""

    target: str
    core: str
    qemu_cpu: str
    tools: tuple        # what building its firmware needs on PATH
    apt: str            # the Debian packages that provide them and QEMU
    flash_map: int      # where the board maps flash offset 0 for this core
    dirs: tuple         # firmware/ directories its build reads: its port, the shared xtensa/ code
    variant: str = ""   # a build variant of the port: build/<core>-<variant>/, `make <core>-<variant>`

    @property
    def build_name(self) -> str:
        return f"{self.core}-{self.variant}" if self.variant else self.core

    @property
    def image(self) -> Path:
        return Path(self.build_name) / "flash.img"     # in the build directory

    @property
    def sources(self) -> tuple:
        return (Path("firmware") / "Makefile", Path("firmware") / "core", Path("firmware") / "kernels",
                *(Path("firmware") / d for d in self.dirs), Path("partitions.csv"),
                Path("host") / "rvne" / "flash" / "image.py", Path("host") / "rvne" / "flash" / "partition.py")


BOARDS = {
    "qemu": Board("qemu", "lx6", "de233_fpu", ("clang-22", "llc-22", "llvm-mc-22", "xtensa-lx106-elf-ld"),
                  "qemu-system-misc clang-22 llvm-22 binutils-xtensa-lx106", 0xFE000000,
                  ("ports/lx6", "xtensa/board", "xtensa/rt")),
    "qemu-lx106": Board("qemu-lx106", "lx106", "lx106", ("xtensa-lx106-elf-gcc",),
                        "qemu-system-misc gcc-xtensa-lx106 binutils-xtensa-lx106 picolibc-xtensa-lx106-elf",
                        0x50000000, ("ports/lx106", "xtensa/board", "xtensa/rt")),
}
DEFAULT_BOARD = "qemu"
# The "qemu" board's firmware with the core's C kernels only, none of the
# port's assembly (firmware/ports/lx6/port.mk, LX6_KERNELS=c): the baseline
# tools/bench_icount.py measures beside it. Not a target of its own.
C_KERNELS = replace(BOARDS["qemu"], variant="c")
START_TIMEOUT = 30.0
BUILD_TIMEOUT = 900.0
PORT_ATTEMPTS = 5
STOP_GRACE = 5.0     # seconds QEMU gets to exit on SIGTERM
CALIBRATION = re.compile(r"calibration loop_insns=(\d+) ccount=(\d+)")


def board_of(name) -> Board:
    if isinstance(name, Board):
        return name
    try:
        return BOARDS[name]
    except KeyError:
        raise TargetError(f"unknown emulated board {name!r}: choose one of {', '.join(BOARDS)}") from None


def tree(board: Board) -> build.Tree:
    """The sources `board`'s firmware is built from (build.tree)."""
    return build.tree(__file__, Path("firmware") / "ports" / board.core / "port.mk", board.target)


def check_tools(board="qemu", need_cc=True):
    board = board_of(board)
    missing = [t for t in ((QEMU, *board.tools) if need_cc else (QEMU,)) if shutil.which(t) is None]
    if missing:
        raise TargetError(f"{' and '.join(missing)} not found: apt-get install {board.apt} "
                          "(or run tools/bootstrap.sh)")


def ensure_built(board="qemu", tree_: build.Tree = None) -> Path:
    """Path of an up-to-date flash image (erased blob partition) for `board`."""
    board = board_of(board)
    return build.ensure(tree_ or tree(board), board.build_name, board.image, board.sources, board.tools,
                        lambda: check_tools(board), f"the {board.build_name} firmware", BUILD_TIMEOUT)


class QemuTarget(RunningTarget):
    # Seconds a client should wait per reply: a full request of pushes runs
    # on an emulated core (on lx106 soft-float: tens of ms per push at W = 100).
    reply_timeout = 60.0

    def __init__(self, proc, files, url, banner, board, icount=False, lock_fd=None, image=None):
        self.board = board
        self.icount = icount
        self.proc = proc
        self.url = url
        self.banner = banner
        self.image = image          # the flash image file QEMU writes (persist=True), else None
        self._files = files
        # QEMU is stopped even if the caller forgets or a test errors out.
        self._finalizer = weakref.finalize(self, _stop, proc, files, lock_fd)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    @property
    def calibration(self):
        """(instructions, CCOUNT ticks) of the boot-time calibration loop."""
        m = CALIBRATION.search(self.banner)
        return (int(m.group(1)), int(m.group(2))) if m else None

    def instructions(self, cycles):
        """CCOUNT `cycles` as instructions, by the boot-time calibration;
        None without a measurement or without -icount (then CCOUNT follows
        the host's clock and the ratio means nothing)."""
        cal = self.calibration
        if cycles is None or cal is None or not self.icount:
            return None
        return cycles * cal[0] / cal[1]

    def stop(self):
        self._finalizer()


def _stop(proc, files, lock_fd):
    stop_process(proc, files, STOP_GRACE)
    if lock_fd is not None:
        os.close(lock_fd)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def option_value(text) -> str:
    """`text` as one value of a QEMU option list (-drive, -chardev): a
    comma there ends the value, a doubled one stands for itself."""
    return str(text).replace(",", ",,")


def qemu_command(image_path, port, icount=False, board="qemu"):
    board = board_of(board)
    # wait=on: QEMU holds the guest until the runner connects, so the boot
    # output (banner, calibration) cannot be lost before anyone listens.
    # nodelay=on: the UART hands QEMU a reply byte by byte; with Nagle's
    # algorithm each request then waited for the host's delayed ACK (~45 ms).
    cmd = [QEMU, "-M", "lx60", "-cpu", board.qemu_cpu, "-nographic", "-monitor", "none",
           "-serial", f"tcp:127.0.0.1:{port},server=on,wait=on,nodelay=on",
           "-drive", f"file={option_value(image_path)},if=pflash,format=raw"]
    if icount:
        cmd += ["-icount", "shift=0"]
    return cmd


def start(partition=None, window: int = 100, image=None, icount: bool = False,
          start_timeout: float = START_TIMEOUT, line_max: int = None, board: str = DEFAULT_BOARD,
          persist: bool = False, image_wait: float = None, **_ignored) -> QemuTarget:
    """Boot emulated `board` ("qemu", "qemu-lx106") with `partition` (bytes) raw in its model
    partition (slot A under an erased selector, or `rvne`; None: keep the image's), wait for the ready banner and return
    a QemuTarget. `image`: a flash image to start from (default: the built
    one). `icount`: deterministic instruction counting (-icount shift=0).
    A window other than the firmware's boot default (100) is set with the
    protocol's WINDOW command once booted.

    `persist` (with `image`): QEMU boots that file itself, not a copy, so
    what the firmware writes into its flash (an update, `rvne update
    --target`) stays in it; the file is locked against other rvne writers
    while QEMU runs (and QEMU locks it against another QEMU); another rvne's
    hold is waited for up to `image_wait` seconds (targets.hold_image)."""
    if persist and image is None:
        raise TargetError("persist needs the flash image to write: give --image")
    if partition is not None and not isinstance(partition, (bytes, bytearray, memoryview)):
        raise TargetError(f"the partition must be bytes, got {type(partition).__name__}")
    if int(window) < 1:
        raise TargetError(f"window must be >= 1, got {window}")
    board = board_of(board)
    check_tools(board, need_cc=image is None)
    src = Path(image) if image is not None else ensure_built(board)
    try:
        data = read_input(src, flash_image.FLASH_SIZE)   # a FIFO or a huge file: refused, not hung
        if len(data) != flash_image.FLASH_SIZE:     # the lx60 board's pflash takes no other size
            raise FlashError(f"flash image is {len(data)} bytes, expected {flash_image.FLASH_SIZE} (4 MiB) "
                             f"for the {board.target} board; rebuild it with `make -C firmware {board.build_name}`")
        if partition is not None:
            data = flash_image.with_model(data, bytes(partition), record=False)
    except RvneError as exc:
        raise TargetError(f"cannot prepare the flash image {src}: {exc}") from None
    except OSError as exc:
        raise TargetError(f"cannot read the flash image {src}: {exc.strerror}") from None

    # Nameless files (rvne.targets.children): nothing is left behind, however we die.
    log = children.AnonymousFile("rvne-qemu-")
    lock_fd = None
    if persist:
        try:
            lock_fd = hold_image(src, data if partition is not None else None, image_wait)
        except TargetError:
            log.close()
            raise
        img, files, img_path = None, [log], str(src)
    else:
        img = children.AnonymousFile("rvne-flash-", data)
        files, img_path = [img, log], img.path
    log_path = log.path
    proc = None
    try:
        deadline = time.monotonic() + start_timeout
        proc, port, conn = launch(lambda port: qemu_command(img_path, port, icount, board), img, log, deadline)
        with conn:
            banner = _read_banner(proc, conn, log_path, deadline)
        target = QemuTarget(proc, files, f"socket://127.0.0.1:{port}", banner, board, icount, lock_fd,
                            Path(src) if persist else None)
    except BaseException:
        _stop(proc, files, lock_fd)
        raise
    if int(window) != 100:
        _set_window(target, int(window))
    return target


def launch(command, img, log, deadline):
    """Start QEMU as `command(port)` on a free local port, with the flash
    image `img` (children.AnonymousFile; None: a file QEMU opens by its
    path) and the log `log`, and connect to its
    serial server. Returns (process, port, socket); the caller stops the
    process on any error (it is killed by its group either way)."""
    proc = None
    for _ in range(PORT_ATTEMPTS):
        port = _free_port()
        log.truncate()
        proc = children.spawn(command(port), pass_fds=(img.fd,) if img is not None else (), stdin=subprocess.DEVNULL,
                              stdout=log.fd, stderr=log.fd)
        conn = _connect(proc, port, log.path, deadline, command(port)[0])
        if conn is not None:
            return proc, port, conn
        # Another process took the port between our probe and QEMU's bind.
        proc.wait(timeout=5)
    raise TargetError(f"QEMU could not listen on a free local port: {log_tail(log.path, 2) or 'no output'}")


def _connect(proc, port, log_path, deadline, qemu=QEMU):
    """A socket to QEMU's serial server; None when QEMU exited because the
    port was taken (the caller retries on another)."""
    while True:
        if proc.poll() is not None:
            log = log_tail(log_path, 2)
            if "in use" in log or "Failed to bind" in log:
                return None
            raise TargetError(f"{qemu} exited with {proc.returncode} before its UART listened: {log or 'no output'}")
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=1.0)
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TargetError(f"{qemu} did not open its UART socket on port {port} in time")
        time.sleep(0.02)


class BannerTimeout(TargetError):
    """The firmware printed no ready banner before the deadline (QEMU still running)."""


class QemuCrashed(TargetError):
    """QEMU itself died by a signal before the ready banner (an emulator
    fault, not the firmware's: a firmware fault ends QEMU with a status)."""


def _exited(proc, got, faults, log_path, qemu):
    """The error for QEMU gone before the banner."""
    why = _fault_line(got, faults) or log_tail(log_path, 2) or _last_line(got) or "no output"
    code = proc.returncode
    if code is not None and code < 0:
        return QemuCrashed(f"{qemu} died by signal {-code} before the ready banner (after: {why})")
    return TargetError(f"{qemu} exited with {code} before the ready banner: {why}")


def _read_banner(proc, conn, log_path, deadline, qemu=QEMU, faults=(b"FAULT",), what="the emulated board") -> str:
    """What the firmware prints up to its `ready:` line; a fault line
    (`faults`), QEMU's exit or the deadline (BannerTimeout) is a TargetError."""
    got = b""
    conn.settimeout(0.1)
    while b"ready:" not in got or not got.endswith(b"\n"):
        if got.endswith(b"\n") and any(f in got for f in faults):
            raise TargetError(f"the firmware faulted while booting: {_fault_line(got, faults)}")
        if proc.poll() is not None:
            raise _exited(proc, got, faults, log_path, qemu)
        if time.monotonic() > deadline:
            raise BannerTimeout(f"{what} printed no `ready:` banner in time (got {got[-120:]!r})")
        try:
            chunk = conn.recv(4096)
        except socket.timeout:
            continue
        if not chunk:
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                raise TargetError("QEMU closed the UART socket before the ready banner") from None
            raise _exited(proc, got, faults, log_path, qemu)
        got += chunk
    return got.decode("utf-8", "replace")


def _fault_line(data: bytes, faults) -> str:
    """The first line of `data` naming one of `faults` ("" when none does)."""
    for ln in data.decode("utf-8", "replace").splitlines():
        if any(f.decode() in ln for f in faults):
            return ln.strip()
    return ""


def _last_line(data: bytes) -> str:
    lines = [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


def _set_window(target, window):
    from ..link.device import Device

    try:
        with Device(target.url) as dev:
            if dev.info().loaded:
                dev.window(window)
    except RvneError as exc:
        target.stop()
        raise TargetError(f"setting window {window} on the emulated board failed: {exc}") from None
