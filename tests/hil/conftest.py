"""Device tests over a serial line, run through pytest-embedded's serial
service, against any target:

    python -m pytest tests/hil                      # --target sim (default)
    python -m pytest tests/hil --target qemu        # the emulated esp32-class core
    python -m pytest tests/hil --target qemu-lx106  # the emulated LX106 (soft-float)
    python -m pytest tests/hil --target esp32s3 --port /dev/ttyUSB0

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
  the bytes) and run rvne.device.Device over the dut's own open port.

Targets are started once per partition kind per session and stopped at the
end. A target that cannot start (TargetError) fails the tests that need it;
only `--target esp32s3` without `--port` skips.
"""

import functools
import random
import re

import pytest

from rvne import blob, contract, protocol, upstream_init
from rvne.device import Device
from rvne.targets import start_target

import hil_board as boardmod

DEFAULT_TARGET = "sim"
BOARD = "esp32s3"
# Seconds per reply: an emulated core is ~100x slower than the host build.
REPLY_TIMEOUT = {"sim": 5.0, "qemu": 60.0, "qemu-lx106": 60.0, BOARD: 10.0}
DIMS = upstream_init.DIMS          # 16,4,1,32,2,4: the upstream example's


def _fp32():
    return upstream_init.init_blob()


def _fp16():
    return upstream_init.init_blob(fp16=True)


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
    parser.addoption("--rvne-blob", metavar="FILE", default=None,
                     help="run the model tests on this blob (your own) instead of the upstream example "
                          "of its dtype; on a board, flash it first")


def expected_state(kind, data):
    """(crc, reason) INFO reports once the board holds this partition."""
    if kind in ("fp32", "fp16"):
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
def embedded_services():
    return "serial"


@pytest.fixture(scope="session")
def board(pytestconfig, hil_target, reply_timeout):
    """The board behind --port (None on other targets): its partition saved
    first, put back last."""
    if hil_target != BOARD:
        yield None
        return
    url = pytestconfig.getoption("port", None)
    if not url:
        pytest.skip("--target esp32s3 needs --port URL of a board running the rvne app")
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
    """pytest-embedded's port, as the URL of a device holding partition_kind."""
    if hil_target == BOARD:
        return _on_board(board, partition_kind, partition_bytes)
    return _running_targets(partition_kind).url


@pytest.fixture
def dut(dut):
    """pytest-embedded's dut, with one fix for socket:// ports: its redirect
    thread reads `read_all()` every 50 ms, which pyserial sizes by
    in_waiting, and for a socket in_waiting is only ever 0 or 1, so output
    crawled in at 20 bytes/s. A non-blocking read of all that is there
    instead (the serial service itself takes the URL fine)."""
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
def running_target(hil_target, partition_kind, _running_targets, board, partition_bytes):
    """The RunningTarget behind `port`; on a board, the Board (its banner
    read at the reset after flashing)."""
    if hil_target == BOARD:
        _on_board(board, partition_kind, partition_bytes)
        return board
    return _running_targets(partition_kind)


@pytest.fixture
def device(dut, port, reply_timeout):
    """rvne.device.Device over the dut's open port, the redirect thread
    paused meanwhile."""
    with dut.serial.disable_redirect_thread():
        yield Device(port, timeout=reply_timeout, retries=1, link=dut.serial.proc)


class RawLink:
    """Bytes in, reply lines out, through the dut (pytest-embedded's expect),
    for requests a well-behaved client would never send."""

    REPLY = re.compile(rb"<[^\n]*\n")

    def __init__(self, dut, timeout):
        self.dut = dut
        self.timeout = timeout
        # Fresh SEQs: the device replays a request whose SEQ equals the last
        # one it executed, which may be a previous test's.
        self._seq = random.randint(1, 1 << 30)

    def seq(self) -> int:
        self._seq += 1
        return self._seq

    def send(self, data: bytes):
        self.dut.serial.proc.write(data)
        self.dut.serial.proc.flush()

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
def raw(dut, reply_timeout):
    return RawLink(dut, reply_timeout)



@pytest.fixture
def device_info(dut, port, reply_timeout):
    """The device's INFO (its own dims and limits: no test assumes the test blob's)."""
    with dut.serial.disable_redirect_thread():
        return Device(port, timeout=reply_timeout, link=dut.serial.proc).info()


@pytest.fixture
def device_line_max(device_info):
    return device_info.line_max


@pytest.fixture
def input_dim(device_info):
    """Floats per frame of the model the device holds."""
    if not device_info.loaded:
        pytest.fail(f"the device holds no model ({device_info.reason}); flash one with rvne flash")
    return device_info.dims[0]
