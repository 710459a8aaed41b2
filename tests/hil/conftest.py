"""Device tests over a serial line, run through pytest-embedded's serial
service, against any target:

    python -m pytest tests/hil                      # --target sim (default)
    python -m pytest tests/hil --target qemu        # the emulated esp32-class core
    python -m pytest tests/hil --target qemu-lx106  # the emulated LX106 (soft-float)
    python -m pytest tests/hil --target qemu-esp32s3 --embedded-services idf,qemu \
        --app-path firmware/ports/esp32s3 --build-dir ../../../build/esp32s3-qemu/idf \
        --qemu-prog-path "$RVNE_QEMU_ESP"           # the ESP-IDF app on Espressif's QEMU
    python -m pytest tests/hil --target esp32s3 --port /dev/ttyUSB0
    python -m pytest tests/hil --target esp32s3 --place NAME   # a labgrid place's board (docs/farm.md)

On a board (`--target esp32s3`) the suite flashes each partition a test
needs through a flashing hook (tests/hil/hil_board.py: esptool by default,
`--flash-hook file:PATH` for the stand-in board of CI), resets the board to
read its banner, and restores the user's partition at the end; no test
skips for lack of a partition.

How this sits on pytest-embedded:
- `--target` is pytest-embedded's own option (its esp service's chip type);
  declaring it again would clash, and only the esp/idf services read it, so
  it is reused here to name an rvne target. Unset means "sim".
- The serial service opens `port` with serial.serial_for_url, so any pyserial
  URL works as the port: the pty path a sim or qemu target hands back, a
  socket:// or rfc2217:// URL, or /dev/ttyUSB0. The `port` fixture is
  overridden here to start a target with the partition a test asks for
  (`partition_kind`, parametrised per test) and return its URL;
  `embedded_services` is overridden to "serial". Each test then gets
  pytest-embedded's `dut`, whose expect() reads the device's output.
- Numeric tests need a request/reply client with CRC checks and chunking:
  they pause the dut's redirect thread (which would otherwise race them for
  the bytes) and run rvne.link.device.Device over the dut's own open port.

Targets are started once per partition kind per session and stopped at the
end. A target that cannot start (TargetError) fails the tests that need it;
only `--target esp32s3` without `--port` skips.

`--target qemu-esp32s3` runs as ESP-IDF users run their own app's tests:
pytest-embedded's idf and qemu services (`--embedded-services idf,qemu`,
the default for this target) read the app's ESP-IDF build directory
(`--app-path`, `--build-dir`; default rvne's own build of it, made when
stale) and start Espressif's QEMU (`--qemu-prog-path`, default
$RVNE_QEMU_ESP as rvne finds it) for each test, on a copy of the app's
image with the partition the test asks for (`qemu_image_path`). The dut
then is pytest-embedded's QemuDut, UART0 on QEMU's stdio: `link` gives
rvne.link.device.Device a serial-like view of it (DutLink). Without the tools
the suite fails under CI and skips elsewhere, naming what is missing.
"""

import contextlib
import functools
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from rvne.flash import image as flash_image
from rvne.io import blob, upstream_init
from rvne.link import protocol
from rvne.link.device import Device
from rvne.model import contract
from rvne.targets import esp32s3_qemu, start_target

import hil_board as boardmod

DEFAULT_TARGET = "sim"
BOARD = "esp32s3"
QEMU_IDF = esp32s3_qemu.NAME        # run through pytest-embedded's idf and qemu services
# Seconds per reply: an emulated core is ~100x slower than the host build.
REPLY_TIMEOUT = {"sim": 5.0, "qemu": 60.0, "qemu-lx106": 60.0, QEMU_IDF: 30.0, BOARD: 10.0}
READY = re.compile(rb"ready: [^\n]*\n")
# Per boot; a boot that stalls after the bootloader's RTC init (rare, on a
# loaded host: docs/esp32s3.md) gets a reset, as a board would.
BOOT_TIMEOUT = esp32s3_qemu.BOOT_TIMEOUT
BOOT_ATTEMPTS = esp32s3_qemu.BOOT_ATTEMPTS
DIMS = upstream_init.DIMS          # 16,4,1,32,2,4: the upstream example's


def _fp32():
    return upstream_init.init_blob()


def _fp16():
    return upstream_init.init_blob(fp16=True)


def _int8(dims):
    """The upstream example's weights (or, at other dims, its initialisation)
    quantised by the host (rvne.model.quantize) on generated frames."""
    from rvne import check
    from rvne.model import quantize

    arrays = blob.parse_loadable(upstream_init.init_blob(dims)).tensors()
    cal = check.generated_frames(4, 24, 20, dims.input_dim, 7)
    model, _ = quantize.quantize(arrays, dims, cal, 20)
    return blob.from_int8(model)


def _corrupt():
    b = bytearray(_fp32())
    b[blob.HEADER_LEN + 5] ^= 0x40          # a weight bit: the stored CRC no longer matches
    return bytes(b)


def _wrong_contract():
    # Container-valid (rules 1-13), one FP32 element short of the head's
    # weight layout (rule 14).
    short = contract.expected_weights_len(DIMS) - 4
    return blob.serialize(blob.Header.for_dims(DIMS, weights_len=short), bytes(short))


PARTITIONS = {
    "fp32": _fp32,
    "fp16": _fp16,
    "int8": lambda: _int8(DIMS),
    "int8_gqa": lambda: _int8(contract.Dims(24, 6, 2, 8, 2, 5)),     # two kv heads of three query heads each
    "erased": lambda: b"\xff" * 4096,
    "corrupt": _corrupt,
    "contract": _wrong_contract,
}


def pytest_addoption(parser):
    parser.addoption("--flash-hook", default=None, metavar="file:PATH",
                     help="with --target esp32s3: how the suite writes the board's partition; default "
                          "esptool, file:PATH replaces PATH (the stand-in board, tests/hil/standin.py)")
    parser.addoption("--partitions", default=None, metavar="CSV",
                     help="with --target esp32s3: partitions.csv instead of the board's own table")
    parser.addoption("--place", metavar="NAME", default=None,
                     help="with --target esp32s3: the board is this labgrid place's, acquired for the run and "
                          "released after (LG_COORDINATOR names the coordinator; docs/farm.md) instead of --port")
    parser.addoption("--rvne-blob", metavar="FILE", default=None,
                     help="run the model tests on this blob (your own) instead of the upstream example "
                          "of its dtype; on a board, flash it first")


def expected_state(kind, data):
    """(crc, reason) INFO reports once the board holds this partition."""
    if kind in ("fp32", "fp16", "int8", "int8_gqa"):
        return int.from_bytes(data[-4:], "little"), "OK"
    return None, {"erased": "E_ERASED", "corrupt": "E_CRC", "contract": "E_CONTRACT"}[kind]


def target_name(config):
    return config.getoption("target", None) or DEFAULT_TARGET


@pytest.fixture(scope="session")
def hil_target(pytestconfig):
    return target_name(pytestconfig)


@pytest.fixture(scope="session")
def reply_timeout(hil_target):
    return REPLY_TIMEOUT.get(hil_target, 60.0)


@pytest.fixture(scope="session")
def trace_mode(hil_target):
    """rvne check's --trace for this target: every push where the link is
    fast (the virtual device, the emulated boards), a sample on a board."""
    return "sample" if hil_target == BOARD else "all"


@pytest.fixture(scope="session")
def partition_bytes(pytestconfig):
    """kind -> the partition's bytes, built once. With --rvne-blob, that
    blob stands in for the upstream example of its dtype."""
    cache = {}
    own = pytestconfig.getoption("rvne_blob", None)
    if own:
        with open(own, "rb") as f:
            data = f.read()
        cache[blob.parse_loadable(data).header.dtype] = data

    def get(kind):
        if kind not in cache:
            cache[kind] = PARTITIONS[kind]()
        return cache[kind]

    return get


@pytest.fixture(scope="session")
def _running_targets(hil_target, partition_bytes):
    started = {}

    def get(kind):
        if kind not in started:
            started[kind] = start_target(hil_target, partition_bytes(kind))
        return started[kind]

    yield get
    for t in started.values():
        t.stop()


@pytest.fixture
def partition_kind():
    """What the device's blob partition holds; tests parametrise this."""
    return "fp32"


@pytest.fixture
def embedded_services(pytestconfig, hil_target):
    """pytest-embedded's services: the command line's, else "idf,qemu" for
    the ESP-IDF app on QEMU and "serial" (a port URL) for every other target."""
    given = pytestconfig.getoption("embedded_services", None)
    return given or ("idf,qemu" if hil_target == QEMU_IDF else "serial")


# -- the ESP-IDF app through pytest-embedded's idf and qemu services ---------------
@pytest.fixture(scope="session")
def _qemu_tools(hil_target):
    """Fail (under CI) or skip (elsewhere) when the ESP32-S3 tools are missing."""
    if hil_target != QEMU_IDF:
        return
    gone = esp32s3_qemu.missing()
    if gone:
        why = esp32s3_qemu.describe_missing(gone)
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the device suite on {QEMU_IDF}: {why}")
        pytest.skip(why)


@pytest.fixture(scope="session")
def _app_image(hil_target, _qemu_tools, pytestconfig):
    """The app's built 8 MiB image (rvne's build, made when stale) unless the
    command line names the build directory to use."""
    if hil_target != QEMU_IDF or pytestconfig.getoption("build_dir", None):
        return None
    return esp32s3_qemu.ensure_built()


@pytest.fixture
def app_path(request, pytestconfig, hil_target, _app_image):
    given = pytestconfig.getoption("app_path", None)
    if given or hil_target != QEMU_IDF:
        return given or os.path.dirname(str(request.node.fspath))
    return str(esp32s3_qemu.tree().path(Path("firmware") / "ports" / "esp32s3"))


@pytest.fixture
def build_dir(pytestconfig, hil_target, _app_image):
    given = pytestconfig.getoption("build_dir", None)
    if given or hil_target != QEMU_IDF:
        return given or "build"
    return str(_app_image.parent / "idf")        # absolute: os.path.join keeps it


@pytest.fixture
def target(pytestconfig, hil_target):
    """pytest-embedded's chip type: esp32s3 for the app on QEMU (our --target
    names rvne's target, which pytest-embedded's esp services never see)."""
    return "esp32s3" if hil_target == QEMU_IDF else pytestconfig.getoption("target", None)


@pytest.fixture
def qemu_prog_path(pytestconfig, hil_target, _qemu_tools):
    given = pytestconfig.getoption("qemu_prog_path", None)
    return given or (esp32s3_qemu.find_qemu() if hil_target == QEMU_IDF else None)


@pytest.fixture
def qemu_extra_args(pytestconfig):
    """UART0 on QEMU's plain stdio (not the monitor's mux, where Ctrl-A is
    an escape) and the timer groups' watchdogs off (an emulated core on a
    busy host is slow), both cores on one host thread (rvne.targets.
    esp32s3_qemu.qemu_command: QEMU's SIGSEGV with a thread per core). No
    -no-reboot: the dut's hard_reset (QEMU's system_reset) must boot again,
    not end QEMU; a panic shows in the log as `Guru Meditation Error` and
    the boot that follows."""
    return pytestconfig.getoption("qemu_extra_args", None) or (
        "-serial stdio -monitor none -accel tcg,thread=single "
        "-global driver=timer.esp32s3.timg,property=wdt_disable,value=true")


@pytest.fixture
def skip_regenerate_image(hil_target):
    return hil_target == QEMU_IDF       # the image is ours (qemu_image_path): never remade from the build


@pytest.fixture
def qemu_image_path(hil_target, partition_kind, partition_bytes, app_path, build_dir, tmp_path):
    """A fresh copy of the app's image (QEMU writes flash back) with the
    test's partition written raw into its model slot, found through the image's own
    partition table; the merged image is made once from the build's
    flash_args (pytest-embedded's own image maker writes it beside them)."""
    if hil_target != QEMU_IDF:
        return None
    out = tmp_path / "flash.img"
    out.write_bytes(flash_image.with_model(_merged_image(Path(app_path, build_dir)),
                                           partition_bytes(partition_kind), record=False))
    return str(out)


@functools.lru_cache(maxsize=4)
def _merged_image(binary) -> bytes:
    """The 8 MiB image of the ESP-IDF build in `binary`: the one `make -C
    firmware esp32s3-qemu` wrote beside it, else merged here from the
    build's flash_args as that make goal does (an app built with idf.py)."""
    made = binary.parent / "flash.img"
    if made.is_file() and made.stat().st_mtime >= (binary / "flash_args").stat().st_mtime:
        return made.read_bytes()
    out = binary / "rvne-qemu-flash.img"
    done = subprocess.run([sys.executable, "-m", "esptool", "--chip", "esp32s3", "merge-bin", "--fill-flash-size",
                           "8MB", "-o", str(out), "@flash_args"], cwd=binary, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"esptool merge-bin in {binary} failed: {(done.stderr or done.stdout).strip()[-300:]}")
    return out.read_bytes()


@pytest.fixture(scope="session")
def board(pytestconfig, hil_target, reply_timeout):
    """The board behind --port (None on other targets): its partition saved
    first, put back last."""
    if hil_target != BOARD:
        yield None
        return
    url = pytestconfig.getoption("port", None)
    place = pytestconfig.getoption("place", None)
    with contextlib.ExitStack() as stack:
        if place:
            if url:
                pytest.fail("--place names the board's port: drop --port")
            from rvne.farm import leases

            _, (farmed,) = stack.enter_context(leases.boards([place]))
            url = farmed.url
        if not url:
            pytest.skip("--target esp32s3 needs --port URL (or --place NAME) of a board running the rvne app")
        flasher = boardmod.make_flasher(pytestconfig.getoption("flash_hook"), url,
                                        partitions_csv=pytestconfig.getoption("partitions"))
        b = boardmod.Board(url, flasher, reply_timeout)
        b.save_user_partition()
        try:
            yield b
        finally:
            b.restore()


def _on_board(board, kind, partition_bytes):
    data = partition_bytes(kind)
    crc, reason = expected_state(kind, data)
    return board.ensure(kind, data, crc, reason)


@pytest.fixture
def port(hil_target, partition_kind, _running_targets, board, partition_bytes):
    """pytest-embedded's port, as the URL of a device holding partition_kind
    (on QEMU through pytest-embedded's qemu service: its stdio, no URL)."""
    if hil_target == BOARD:
        return _on_board(board, partition_kind, partition_bytes)
    if hil_target == QEMU_IDF:
        return None
    return _running_targets(partition_kind).url


@pytest.fixture
def dut(dut):
    """pytest-embedded's dut, with one fix for socket:// ports: its redirect
    thread reads `read_all()` every 50 ms, which pyserial sizes by
    in_waiting, and for a socket in_waiting is only ever 0 or 1, so output
    crawled in at 20 bytes/s. A non-blocking read of all that is there
    instead (the serial service itself takes the URL fine)."""
    if hasattr(dut, "qemu"):
        # The app on QEMU: wait for its banner, as a board's reset shows it.
        for attempt in range(1, BOOT_ATTEMPTS + 1):
            try:
                match = dut.expect(READY, timeout=BOOT_TIMEOUT)
                break
            except pexpect.TIMEOUT:
                if attempt == BOOT_ATTEMPTS:
                    raise BootStall(f"no `ready:` banner from the app on QEMU after {BOOT_ATTEMPTS} boots of "
                                    f"{BOOT_TIMEOUT:.0f} s; its log: {dut.logfile}") from None
                try:
                    dut.hard_reset()    # QEMU's system_reset: the ROM boots again
                except Exception as exc:  # a wedged QEMU does not answer QMP either
                    raise BootStall(f"QEMU stalled before the app's banner and did not take a reset "
                                    f"({type(exc).__name__}); its log: {dut.logfile}") from None
        dut.rvne_banner = (dut.pexpect_proc.before + match.group(0)).decode("utf-8", "replace")
        return dut
    proc = dut.serial.proc
    if type(proc).__module__.endswith("protocol_socket"):
        proc.read_all = functools.partial(_read_available, proc)
    return dut


def _read_available(proc):
    timeout = proc.timeout
    proc.timeout = 0
    try:
        return proc.read(1 << 16)
    finally:
        proc.timeout = timeout


@pytest.fixture
def running_target(request, hil_target, partition_kind, _running_targets, board, partition_bytes):
    """The RunningTarget behind `port`; on a board, the Board (its banner
    read at the reset after flashing); on QEMU the dut, with the banner it
    printed at boot."""
    if hil_target == BOARD:
        _on_board(board, partition_kind, partition_bytes)
        return board
    if hil_target == QEMU_IDF:
        return _Booted(request.getfixturevalue("dut").rvne_banner)
    return _running_targets(partition_kind)


class BootStall(Exception):
    """The app never printed its banner on QEMU. Rare (docs/esp32s3.md); the
    test command reruns a test that ends so (pytest-rerunfailures,
    --only-rerun BootStall), never one that fails otherwise."""


class _Booted:
    def __init__(self, banner):
        self.banner = banner


class DutLink:
    """What rvne.link.device.Device needs of a pyserial port (write, flush,
    read with `timeout`), over pytest-embedded's QemuDut: bytes go to
    QEMU's stdin (UART0), bytes come from pytest-embedded's capture of its
    stdout, including what its expect() has read but not matched."""

    POLL = 0.005

    def __init__(self, dut):
        self._dut = dut
        self._proc = dut.pexpect_proc
        self.timeout = 0.05

    def write(self, data):
        self._dut.write(bytes(data))
        return len(data)

    def flush(self):
        pass            # QEMU's stdin is unbuffered (pytest-embedded opens it with bufsize 0)

    def read(self, size=1):
        pending = self._proc.buffer
        if pending:
            self._proc.buffer = pending[size:]
            return pending[:size]
        deadline = time.monotonic() + (self.timeout or 0.0)
        while True:
            try:
                got = self._proc.read_nonblocking(size, timeout=0)
            except pexpect.TIMEOUT:
                got = b""
            if got or time.monotonic() >= deadline:
                return got
            time.sleep(self.POLL)

    def close(self):
        pass


@pytest.fixture
def link(dut):
    """The dut's byte link: its open serial port, or DutLink on QEMU."""
    return DutLink(dut) if hasattr(dut, "qemu") else dut.serial.proc


def _quiet(dut):
    """The serial service's redirect thread paused (it would race a client
    for the bytes); nothing to pause on QEMU."""
    import contextlib

    return contextlib.nullcontext() if hasattr(dut, "qemu") else dut.serial.disable_redirect_thread()


@pytest.fixture
def device(dut, port, link, reply_timeout):
    """rvne.link.device.Device over the dut's open link, the redirect thread
    paused meanwhile."""
    with _quiet(dut):
        yield Device(port or "qemu-esp32s3 (pytest-embedded)", timeout=reply_timeout, retries=1, link=link)


class RawLink:
    """Bytes in, reply lines out, through the dut (pytest-embedded's expect),
    for requests a well-behaved client would never send."""

    REPLY = re.compile(rb"<[^\n]*\n")

    def __init__(self, dut, link, timeout):
        self.dut = dut
        self.link = link
        self.timeout = timeout
        # Fresh SEQs: the device replays a request whose SEQ equals the last
        # one it executed, which may be a previous test's.
        self._seq = random.randint(1, 1 << 30)

    def seq(self) -> int:
        self._seq += 1
        return self._seq

    def send(self, data: bytes):
        self.link.write(data)
        self.link.flush()

    def request(self, seq, cmd, *args) -> bytes:
        line = protocol.build_request(seq, cmd, *args)
        self.send(line)
        return line

    def reply(self) -> protocol.Reply:
        """The next reply line; its CRC must be right."""
        match = self.dut.expect(self.REPLY, timeout=self.timeout)
        return protocol.parse_reply(match.group(0))

    def reply_line(self) -> bytes:
        return self.dut.expect(self.REPLY, timeout=self.timeout).group(0)


@pytest.fixture
def raw(dut, link, reply_timeout):
    return RawLink(dut, link, reply_timeout)



@pytest.fixture
def device_info(dut, port, link, reply_timeout):
    """The device's INFO (its own dims and limits: no test assumes the test blob's)."""
    with _quiet(dut):
        return Device(port or "qemu-esp32s3 (pytest-embedded)", timeout=reply_timeout, link=link).info()


@pytest.fixture
def device_line_max(device_info):
    return device_info.line_max


@pytest.fixture
def input_dim(device_info):
    """Floats per frame of the model the device holds."""
    if not device_info.loaded:
        pytest.fail(f"the device holds no model ({device_info.reason}); flash one with rvne flash")
    return device_info.dims[0]
