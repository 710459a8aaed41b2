"""The "qemu-esp32s3" target: the ESP-IDF app itself (firmware/ports/esp32s3,
ESP-IDF, FreeRTOS, the UART driver) built for the ESP32-S3 and booted by the
chip's ROM on Espressif's QEMU (`-machine esp32s3`), its UART0 on a local
TCP socket (docs/targets.md).

    with start(partition_bytes) as dev:     # dev.url = socket://127.0.0.1:PORT
        ...

The tools are found as ESP-IDF's export.sh leaves them, never anywhere else:
$RVNE_QEMU_ESP (else an Espressif qemu-system-xtensa on PATH whose machines
include esp32s3), $IDF_PATH, xtensa-esp32s3-elf-gcc on PATH and ESP-IDF's
Python environment ($IDF_PYTHON_ENV_PATH, else the one ESP-IDF's install.sh
makes under $IDF_TOOLS_PATH or ~/.espressif). The app and its 8 MiB image are
built with `make -C firmware esp32s3-qemu` when missing or stale
(targets/build.py: a checkout's build/, or the per-user cache of an
installed rvne). Each start boots a temp copy of the image with the
partition bytes written raw into the model partition, found through the
image's own partition table (QEMU writes the flash back to its file), or,
with `persist`, the image file itself (`rvne update --target`).
"""

import functools
import os
import re
import shutil
import subprocess
import sys
import time
import weakref
from pathlib import Path

from ..errors import RvneError, TargetError
from ..flash import image as flash_image
from ..io.files import read as read_input
from . import RunningTarget, build, stop_process
from . import children
from . import qemu as lx60

NAME = "qemu-esp32s3"
GOAL = "esp32s3-qemu"                        # make goal and build directory
IMAGE = Path(GOAL) / "flash.img"             # in the build directory
IDF_BUILD = Path(GOAL) / "idf"               # ESP-IDF's build directory (pytest-embedded-idf reads it)
QEMU_ENV = "RVNE_QEMU_ESP"
QEMU_NAME = "qemu-system-xtensa"
GCC = "xtensa-esp32s3-elf-gcc"
SOURCES = (Path("firmware") / "Makefile", Path("firmware") / "core", Path("firmware") / "ports" / "esp32s3",
           Path("firmware") / "kernels", Path("partitions.csv"), Path("sdkconfig.defaults"))
MAX_IMAGE = 16 << 20
START_TIMEOUT = 60.0       # the ROM, the bootloader and FreeRTOS boot in ~1 s; a loaded host is slower
# A boot rarely stops after the bootloader's RTC init and never reaches the
# app (once in about 250 here, on a loaded host; docs/esp32s3.md): such a
# boot gets BOOT_TIMEOUT, then QEMU starts again on a fresh copy. A QEMU
# that dies by a signal before the banner (see qemu_command) is started
# again the same way: nothing was written to the flash by then.
BOOT_ATTEMPTS = 3
BOOT_TIMEOUT = 20.0
BUILD_TIMEOUT = 900.0
STOP_GRACE = 5.0
# Lines ESP-IDF prints when the app dies (with -no-reboot QEMU then exits).
FAULTS = (b"Guru Meditation Error", b"abort() was called", b"Backtrace:", b"FAULT")


@functools.lru_cache(maxsize=8)
def _has_esp32s3(qemu) -> bool:
    try:
        out = subprocess.run([qemu, "-machine", "help"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return re.search(r"^esp32s3\s", out, re.M) is not None


def find_qemu() -> str:
    """Espressif's qemu-system-xtensa: $RVNE_QEMU_ESP, else the one on PATH
    if it has the esp32s3 machine (Debian's has none). TargetError if not."""
    given = os.environ.get(QEMU_ENV)
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise TargetError(f"{QEMU_ENV}={given} is not an executable file; point it at Espressif's "
                              f"{QEMU_NAME} (`python $IDF_PATH/tools/idf_tools.py install qemu-xtensa`)")
        return given
    found = shutil.which(QEMU_NAME)
    if found and _has_esp32s3(found):
        return found
    raise TargetError(describe_missing(["qemu"]))


def idf_path():
    """$IDF_PATH when it holds ESP-IDF (tools/idf.py), else None."""
    p = os.environ.get("IDF_PATH")
    return Path(p) if p and (Path(p) / "tools" / "idf.py").is_file() else None


def idf_version(path) -> str:
    """"MAJOR.MINOR" of the ESP-IDF at `path` (as idf_tools.py reads it)."""
    header = Path(path) / "components" / "esp_common" / "include" / "esp_idf_version.h"
    try:
        text = header.read_text()
    except OSError:
        return ""
    m = re.search(r"ESP_IDF_VERSION_MAJOR\s+(\d+).*?ESP_IDF_VERSION_MINOR\s+(\d+)", text, re.S)
    return f"{m.group(1)}.{m.group(2)}" if m else ""


def idf_python(path):
    """The interpreter of ESP-IDF's Python environment: $IDF_PYTHON_ENV_PATH,
    else the one install.sh (or tools/bootstrap.sh) makes for this ESP-IDF,
    $IDF_TOOLS_PATH/python_env/idfX.Y_pyA.B_env (default ~/.espressif);
    None when there is none."""
    env = os.environ.get("IDF_PYTHON_ENV_PATH")
    if env:
        py = Path(env) / "bin" / "python"
        return py if py.is_file() else None
    tools = Path(os.environ.get("IDF_TOOLS_PATH") or Path.home() / ".espressif")
    ver = idf_version(path)
    mine = tools / "python_env" / f"idf{ver}_py{sys.version_info[0]}.{sys.version_info[1]}_env" / "bin" / "python"
    if mine.is_file():
        return mine
    others = sorted((tools / "python_env").glob(f"idf{ver}_py*_env/bin/python"))
    return others[-1] if others else None


HOW = {
    "qemu": f"Espressif's QEMU ({QEMU_NAME} with -machine esp32s3; Debian's has none): "
            f"`python $IDF_PATH/tools/idf_tools.py install qemu-xtensa` and source export.sh, or set {QEMU_ENV}",
    "idf": "ESP-IDF (IDF_PATH not set to an ESP-IDF v5.1+ tree): install ESP-IDF and source its export.sh",
    "gcc": f"{GCC} (not on PATH): `$IDF_PATH/install.sh esp32s3` and source export.sh",
    "python": "ESP-IDF's Python environment (none at IDF_PYTHON_ENV_PATH or ~/.espressif/python_env): "
              "`$IDF_PATH/install.sh esp32s3`, or `bash tools/bootstrap.sh` in a checkout",
}


def describe_missing(gone) -> str:
    """One line naming each missing tool (`missing()`) and how to get it."""
    return f"the {NAME} target needs " + "; and ".join(HOW[m] for m in gone)


def missing(need_build=True):
    """What of the tools is missing: a list of "qemu", "idf", "gcc", "python"."""
    out = []
    try:
        find_qemu()
    except TargetError:
        out.append("qemu")
    if need_build:
        path = idf_path()
        if path is None:
            out.append("idf")
        if shutil.which(GCC) is None:
            out.append("gcc")
        if path is not None and idf_python(path) is None:
            out.append("python")
    return out


def check_tools(need_build=True):
    """A one-line TargetError naming every missing tool and how to get it."""
    gone = missing(need_build)
    if gone == ["qemu"] and os.environ.get(QEMU_ENV):
        find_qemu()             # says what is wrong with the variable
    if gone:
        raise TargetError(describe_missing(gone))


def tree() -> build.Tree:
    return build.tree(__file__, Path("firmware") / "ports" / "esp32s3" / "idf.mk", NAME)


def ensure_built(tree_: build.Tree = None) -> Path:
    """Path of an up-to-date 8 MiB image of the app (erased `rvne` partition)."""
    check_tools()
    path = idf_path()
    # The ESP-IDF in use keys a cached build like a compiler does.
    sources = SOURCES + (path / "components" / "esp_common" / "include" / "esp_idf_version.h",)
    return build.ensure(tree_ or tree(), GOAL, IMAGE, sources, (GCC,), check_tools, "the ESP32-S3 app",
                        BUILD_TIMEOUT, variables=(f"IDF_PYTHON={idf_python(path)}",))


def qemu_command(qemu, image_path, port):
    # wait=on: QEMU holds the ROM until the runner connects, so no boot
    # output is lost. -no-reboot: a panic or software_reset() ends QEMU
    # instead of booting again unseen. The watchdogs of timer groups are off:
    # an emulated core on a loaded host is slower than they expect.
    # nodelay=on: as for the lx60 boards (rvne.targets.qemu), Nagle's
    # algorithm held every byte-by-byte UART reply for the host's delayed ACK.
    # thread=single: both cores on one host thread. With one thread per core
    # QEMU died by SIGSEGV in a few boots in a hundred on a loaded host, each
    # time in a load of flash_brownout_needs_reset, which ESP-IDF reads as a
    # flash operation ends and the caches come back (docs/esp32s3.md); none
    # in some hundreds of boots and updates since. The app computes on one
    # core, so nothing measurable is lost.
    return [qemu, "-machine", "esp32s3", "-nographic", "-monitor", "none", "-no-reboot", "-accel", "tcg,thread=single",
            "-drive", f"file={lx60.option_value(image_path)},if=mtd,format=raw",
            "-global", "driver=timer.esp32s3.timg,property=wdt_disable,value=true",
            "-serial", f"tcp:127.0.0.1:{port},server=on,wait=on,nodelay=on"]


class Esp32s3QemuTarget(RunningTarget):
    # Seconds a client should wait per reply: a RUN line of ~4 KB crosses
    # QEMU's paced UART in ~0.7 s and the pushes run on an emulated core.
    reply_timeout = 30.0

    def __init__(self, proc, files, url, banner, lock_fd=None):
        self.proc = proc
        self.url = url
        self.banner = banner
        self._finalizer = weakref.finalize(self, _stop, proc, files, lock_fd)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def instructions(self, value):
        """Instructions per push come from the app itself (STATS clock=insns),
        not from a calibration: nothing to convert."""
        return None

    def stop(self):
        self._finalizer()


def _stop(proc, files, lock_fd=None):
    stop_process(proc, files, STOP_GRACE)
    if lock_fd is not None:
        os.close(lock_fd)


def prepare_image(src, partition):
    """The bytes of image `src` with `partition` raw in its model partition
    (slot A under an erased selector, or `rvne`; None: as it is), refused
    unless Espressif's QEMU takes its size."""
    try:
        data = read_input(src, MAX_IMAGE)
        if len(data) not in flash_image.FLASH_SIZES:
            raise TargetError(f"cannot use the flash image {src}: {len(data)} bytes; Espressif's QEMU takes "
                              f"2, 4, 8 or 16 MiB (`make -C firmware {GOAL}` makes one)")
        if partition is not None:
            return flash_image.with_model(data, bytes(partition), record=False)
        flash_image.read_table(data)
        return data
    except TargetError:
        raise
    except RvneError as exc:
        raise TargetError(f"cannot prepare the flash image {src}: {exc}") from None
    except OSError as exc:
        raise TargetError(f"cannot read the flash image {src}: {exc.strerror}") from None


def _boot(qemu, data, deadline, path=None, lock_fd=None) -> Esp32s3QemuTarget:
    """One boot up to the app's ready banner: of `data` (a fresh copy: QEMU
    writes flash back), or with `path` of that file itself (persist; the
    target then owns `lock_fd`, the image's lock, once booted)."""
    img = children.AnonymousFile("rvne-esp-flash-", data) if path is None else None
    log = children.AnonymousFile("rvne-qemu-esp-")
    files = [log] if img is None else [img, log]
    img_path = str(path) if img is None else img.path
    proc = None
    try:
        proc, port, conn = lx60.launch(lambda port: qemu_command(qemu, img_path, port), img, log, deadline)
        with conn:
            banner = lx60._read_banner(proc, conn, log.path, deadline, qemu=qemu, faults=FAULTS,
                                       what="the ESP32-S3 app on QEMU")
        return Esp32s3QemuTarget(proc, files, f"socket://127.0.0.1:{port}", banner, lock_fd)
    except BaseException:
        stop_process(proc, files, STOP_GRACE)
        raise


def start(partition=None, window: int = 100, image=None, start_timeout: float = START_TIMEOUT,
          persist: bool = False, image_wait: float = None, **_ignored) -> Esp32s3QemuTarget:
    """Boot the app on Espressif's QEMU with `partition` (bytes) raw in its
    model partition (slot A under an erased selector, or `rvne`; None: keep
    the image's), wait for the ready banner and return the running target.
    `image`: boot this flash image (a copy of it) instead of the built one.
    A window other than the app's boot default (100) is set with WINDOW once
    booted.

    `persist` (with `image`): QEMU boots that file itself, not a copy: the
    app's esp_partition_erase_range/esp_partition_write reach the emulated
    SPI flash, which QEMU writes through to the file (an update, `rvne
    update --target`, stays in it). The file is locked against other rvne
    writers while QEMU runs, and QEMU locks it against another QEMU."""
    if persist and image is None:
        raise TargetError("persist needs the flash image to write: give --image")
    if partition is not None and not isinstance(partition, (bytes, bytearray, memoryview)):
        raise TargetError(f"the partition must be bytes, got {type(partition).__name__}")
    if int(window) < 1:
        raise TargetError(f"window must be >= 1, got {window}")
    check_tools(need_build=image is None)
    qemu = find_qemu()
    src = Path(image) if image is not None else ensure_built()
    data = prepare_image(src, partition)
    lock_fd = lx60.hold_image(src, data if partition is not None else None, image_wait) if persist else None
    deadline = time.monotonic() + start_timeout
    try:
        for attempt in range(1, BOOT_ATTEMPTS + 1):
            try:
                target = _boot(qemu, data, min(deadline, time.monotonic() + BOOT_TIMEOUT),
                               src if persist else None, lock_fd)
                break
            except (lx60.BannerTimeout, lx60.QemuCrashed):
                if attempt == BOOT_ATTEMPTS or time.monotonic() >= deadline:
                    raise
    except BaseException:
        if lock_fd is not None:
            os.close(lock_fd)
        raise
    if int(window) != 100:
        lx60._set_window(target, int(window))
    return target
