"""The "sim" target: the POSIX virtual device (firmware/ports/posix) serving
the protocol on a pseudo-terminal, with a temp file as its flash partition.

It is built when missing or stale (targets/build.py: in a checkout's
build/, or for an installed rvne in the per-user cache), so `rvne check
--target sim` works right after `pip install .` or `pip install -e .`.
"""

import os
import select
import shutil
import subprocess
import termios
import time
import tty
import weakref
from pathlib import Path

from ..errors import TargetError
from . import RunningTarget, build, hold_image, log_tail, stop_process
from . import children

PRODUCT = Path("posix") / "rvne-vdev"        # in the build directory
SOURCES = (Path("firmware") / "Makefile", Path("firmware") / "core", Path("firmware") / "kernels",
           Path("firmware") / "ports" / "posix")
START_TIMEOUT = 10.0
BUILD_TIMEOUT = 600.0


def tree() -> build.Tree:
    """The sources the virtual device is built from (build.tree)."""
    return build.tree(__file__, Path("firmware") / "Makefile", "sim")


def compiler() -> str:
    return os.environ.get("CC", "cc")


def check_tools():
    missing = [tool for tool in ("make", compiler()) if shutil.which(tool) is None]
    if missing:
        raise TargetError(
            f"building the virtual device needs {' and '.join(missing)}, not found; "
            "run `apt-get install gcc make` (or tools/bootstrap.sh)"
        )


def ensure_built(tree_: build.Tree = None) -> Path:
    """Path of an up-to-date rvne-vdev, building it with make if needed."""
    return build.ensure(tree_ or tree(), "posix", PRODUCT, SOURCES, (compiler(),), check_tools,
                        "the virtual device", BUILD_TIMEOUT)


class SimTarget(RunningTarget):
    def __init__(self, proc, files, keeper, url, banner, lock_fd=None):
        self.proc = proc
        self.url = url
        self.banner = banner
        self._files = files
        self._keeper = keeper
        # Stop the child even if the caller forgets (or a test errors out).
        self._finalizer = weakref.finalize(self, _cleanup, proc, files, keeper, lock_fd)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self):
        self._finalizer()


def _cleanup(proc, files, keeper, lock_fd=None):
    if keeper is not None:
        try:
            keeper.close()
        except OSError:
            pass
    stop_process(proc, files, grace=3)
    if lock_fd is not None:
        os.close(lock_fd)       # after the device is gone: nothing writes the image any more


def start(partition, window: int = 100, line_max: int = None,
          start_timeout: float = START_TIMEOUT, exe=None, image=None, flash: bool = False,
          erase_size: int = None, env=None, image_wait: float = None, **_ignored) -> SimTarget:
    """Start rvne-vdev (or the build `exe` of it) on a temp file holding
    `partition`; return once its ready banner was printed on the pty.

    `flash=True`: the device boots a whole flash image instead, as a board
    does (two slots and a selector, docs/flash-layout.md) and takes updates:
    a temp image from partitions.csv with `partition` written as `rvne
    flash` writes a blob (None: erased), or, with `image`, that file itself,
    in place (None for `partition`: boot what it holds), so an update lands
    in it; the file stays locked against other rvne until stop(), another's
    hold waited for up to `image_wait` seconds (targets.hold_image).
    `erase_size`: the flash's sector (default the S3's 4 KiB).
    `env`: extra environment (RVNE_VDEV_CUT for power-cut tests)."""
    if image is not None:
        flash = True
    if partition is not None and not isinstance(partition, (bytes, bytearray, memoryview)):
        raise TargetError(f"the partition must be bytes, got {type(partition).__name__}")
    if partition is None and not flash:
        raise TargetError("the partition must be bytes, got NoneType")
    if int(window) < 1:
        raise TargetError(f"window must be >= 1, got {window}")
    exe = exe or ensure_built()
    # Nameless files (rvne.targets.children): nothing is left behind, however we die.
    files = []
    lock_fd = None
    if image is not None:
        lock_fd = hold_image(image, _with_model(image, partition) if partition is not None else None, image_wait)
        path = Path(image)
    elif flash:
        path = _flash_file(partition, files)
    else:
        part = children.AnonymousFile("rvne-part-", partition)
        files.append(part)
        path = part.path
    pass_fds = tuple(f.fd for f in files)
    log = children.AnonymousFile("rvne-vdev-")
    files.append(log)
    log_path = log.path
    args = [str(exe), "--pty", "--window", str(int(window))]
    if line_max is not None:
        args += ["--line-max", str(int(line_max))]
    if flash:
        args.append("--flash")
        if erase_size is not None:
            args += ["--erase-size", str(int(erase_size))]
    args.append(str(path))
    proc = keeper = None
    try:
        # stdout/stderr go to a file: a pipe nobody drains could block the child.
        child_env = None if not env else {**os.environ, **env}
        proc = children.spawn(args, pass_fds=pass_fds, stdin=subprocess.DEVNULL, stdout=log.fd, stderr=log.fd,
                              env=child_env)
        deadline = time.monotonic() + start_timeout
        pty = _wait_pty_line(proc, log_path, deadline)
        # Opened with os.open, not pyserial, whose flush-on-open could eat the
        # banner. Closed again after it: the vdev sees every client open and
        # close, and prints its banner to each new client, as a board would.
        keeper = _open_raw(pty)
        banner = _wait_banner(proc, keeper, log_path, deadline)
        keeper.close()
        return SimTarget(proc, files, None, pty, banner, lock_fd)
    except BaseException:
        _cleanup(proc, files, keeper, lock_fd)
        raise


def _with_model(image, partition) -> bytes:
    from ..flash import image as flash_image

    try:
        return flash_image.with_model(Path(image).read_bytes(), bytes(partition))
    except OSError as exc:
        raise TargetError(f"cannot read the flash image {image}: {exc.strerror}") from None


def _flash_file(partition, files):
    """A nameless temp flash image for the device to boot, `partition`
    written into it as `rvne flash` writes a blob (None: erased)."""
    from ..flash import image as flash_image, partition as ptable

    table = ptable.read_csv(tree().path("partitions.csv"))
    data = flash_image.build_image(b"", b"", table)
    if partition is not None:
        data = flash_image.with_model(data, bytes(partition))
    f = children.AnonymousFile("rvne-flash-", data)
    files.append(f)
    return f.path


def _wait_pty_line(proc, log_path, deadline) -> str:
    while True:
        text = Path(log_path).read_text(errors="replace")
        for line in text.splitlines():
            if line.startswith("PTY "):
                return line[4:].strip()
        if proc.poll() is not None:
            raise TargetError(
                f"rvne-vdev exited with {proc.returncode} before naming its pty: {log_tail(log_path, 1) or 'no output'}"
            )
        if time.monotonic() > deadline:
            raise TargetError("rvne-vdev did not print `PTY <path>` in time; run it by hand to see why")
        time.sleep(0.01)


class _RawFd:
    def __init__(self, fd):
        self.fd = fd

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _open_raw(path) -> _RawFd:
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as exc:
        raise TargetError(f"cannot open rvne-vdev's pty {path}: {exc.strerror}") from None
    try:
        # Raw, no echo: an echoing pty would hand the device its own replies.
        tty.setraw(fd, termios.TCSANOW)
    except termios.error:
        pass
    return _RawFd(fd)


def _wait_banner(proc, link, log_path, deadline) -> str:
    got = b""
    while b"ready:" not in got or not got.endswith(b"\n"):
        if proc.poll() is not None:
            raise TargetError(
                f"rvne-vdev exited with {proc.returncode} before its ready banner: "
                f"{log_tail(log_path, 1) or got[-200:].decode(errors='replace') or 'no output'}"
            )
        if time.monotonic() > deadline:
            raise TargetError(
                f"rvne-vdev printed no `ready:` banner in time (got {got[-120:]!r}); run it by hand to see why"
            )
        ready, _, _ = select.select([link.fd], [], [], 0.05)
        if not ready:
            continue
        try:
            got += os.read(link.fd, 4096)
        except BlockingIOError:
            continue
        except OSError as exc:
            raise TargetError(f"reading rvne-vdev's pty failed: {exc.strerror}") from None
    return got.decode("utf-8", "replace")
