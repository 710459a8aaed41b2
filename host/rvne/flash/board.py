"""Flash a blob into a real board's model partition (slot `rvne_a` and the
selector naming it, or the single `rvne` of the previous layout; rvne.flash.slots)
and prove the board loaded it (`rvne flash BLOB --port PORT`, issue 5 §3).

    flash_to_board("model.rvne", "/dev/ttyACM0")

Steps, each with its own one-line error: validate the blob (rules 1-14 of
docs/format.md); connect with esptool and check the chip; find the
partition in the board's own table (flash 0x8000) or in a partitions.csv;
refuse a blob that does not fit; write it (compressed; esptool verifies the
MD5 of what it wrote); hard-reset; ask INFO over the protocol until the
board answers, and require `status=loaded` with the blob's CRC.

esptool is reached through `EsptoolApi` (esptool v5's importable
esptool.cmds); tests hand in a double with the same methods.
"""

import contextlib
import io
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional, Union

from ..errors import BlobError, DeviceError, FlashError, PartitionError, RvneError, SignatureError, UpdateError
from ..io import blob as blob_mod, signed
from . import partition, slots

DEFAULT_BAUD = 460800
CONSOLE_BAUD = 115200           # the app's console (CONFIG_RVNE_BAUD) when it is UART0
BOOT_TIMEOUT = 15.0             # USB-Serial/JTAG re-enumerates after a reset
WRITE_CHUNK = 0x10000           # one esptool write per 64 KiB: drives the progress bar
ROM_BAUD = 115200


def _chip_key(name):
    return "".join(ch for ch in str(name).lower() if ch.isalnum())


def _first_line(text):
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return lines[0].rstrip(".") if lines else ""


class EsptoolApi:
    """The esptool calls rvne makes, on esptool v5's esptool.cmds. Output
    esptool prints is captured so the CLI stays one line per event."""

    def __init__(self):
        try:
            import esptool.cmds as cmds
            from esptool.util import FatalError
        except ImportError as exc:
            raise FlashError(f"esptool v5 is needed to flash a board ({exc}); "
                             "pip install 'esptool>=5'") from None
        self._cmds = cmds
        self.fatal = FatalError
        self.transcript = io.StringIO()
        # True: esptool's own write progress is shown (the CLI on a terminal)
        # and the blob goes in one write, so it draws one bar.
        self.show_progress = False

    @contextlib.contextmanager
    def _quiet(self):
        with contextlib.redirect_stdout(self.transcript), contextlib.redirect_stderr(self.transcript):
            yield

    def connect(self, port, baud):
        with self._quiet():
            esp = self._cmds.detect_chip(port, min(ROM_BAUD, baud))
            esp = self._cmds.run_stub(esp)
            if baud > ROM_BAUD:
                esp.change_baud(baud)
            self._cmds.attach_flash(esp)
        return esp

    def chip_name(self, esp):
        return esp.CHIP_NAME

    def read_flash(self, esp, address, size):
        with self._quiet():
            return self._cmds.read_flash(esp, address, size, no_progress=True)

    def write_flash(self, esp, address, data):
        # write_flash always checks the flash MD5 against the data afterwards.
        if self.show_progress:
            self._cmds.write_flash(esp, [(address, bytes(data))], compress=True, no_progress=False)
            return
        with self._quiet():
            self._cmds.write_flash(esp, [(address, bytes(data))], compress=True, no_progress=True)

    def reset(self, esp):
        with self._quiet():
            self._cmds.reset_chip(esp, "hard-reset")

    def close(self, esp):
        port = getattr(esp, "_port", None)
        if port is not None:
            with contextlib.suppress(Exception):
                port.close()


@dataclass
class FlashResult:
    port: str
    chip: str
    label: str
    offset: int
    size: int                   # the partition's
    blob_len: int
    crc: int
    info: object                # rvne.link.device.Info the board answered


def _default_progress(done, total):
    width = 30
    filled = width * done // total if total else width
    sys.stderr.write(f"\rrvne flash: [{'#' * filled}{'.' * (width - filled)}] {done}/{total} bytes")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _no_progress(done, total):
    pass


def _blob_bytes(blob):
    if isinstance(blob, (bytes, bytearray, memoryview)):
        return bytes(blob)
    return bytes(blob_mod.map_file(blob))


def _writes(table, label, data, where):
    """(partition, bytes) to write: `label` raw, or the model by the layout."""
    try:
        if label is not None:
            return [(table.find(label), data)]
        return slots.flash_writes(slots.layout(table), data)
    except PartitionError as exc:
        raise PartitionError(f"{where}: {exc}") from None


def _check_fits(data, part, where):
    if len(data) > part.size:
        # FlashError, as `rvne flash --image` says it (rvne.flash.image).
        raise FlashError(f"blob is {len(data)} bytes, larger than partition {part.name!r} "
                             f"({part.size} bytes at 0x{part.offset:x}) in {where}; "
                             "use a smaller model or grow the partition in partitions.csv and reflash the app")


def _connect(api, port, baud, chip):
    try:
        esp = api.connect(port, baud)
    except (OSError, OverflowError, ValueError, api.fatal) as exc:   # SerialException is an OSError
        raise FlashError(f"no device on {port}: {_first_line(exc) or type(exc).__name__}; check the cable and "
                         "port name, close any serial monitor, or hold BOOT while pressing RESET") from None
    found = api.chip_name(esp)
    if _chip_key(found) != _chip_key(chip):
        api.close(esp)
        raise FlashError(f"wrong chip on {port}: found {found}, expected {chip}; "
                         "pass --chip or connect the ESP32-S3 board")
    return esp, found


def _board_table(api, esp, port):
    try:
        raw = api.read_flash(esp, partition.TABLE_OFFSET, partition.TABLE_MAX)
    except api.fatal as exc:
        raise FlashError(f"reading the partition table at 0x{partition.TABLE_OFFSET:x} on {port} failed: "
                         f"{_first_line(exc)}; retry, or pass --partitions partitions.csv") from None
    try:
        # Written to only when the table is whole (MD5 row) and sane (no
        # partition over the boot stub or the table): else the board would
        # boot silent after our write.
        return partition.PartitionTable.from_binary(raw, require_md5=True).verify()
    except PartitionError as exc:
        raise PartitionError(f"board on {port}: {exc}") from None


def _write(api, esp, port, offset, data, progress):
    total = len(data)
    progress(0, total)
    step = max(total, 1) if getattr(api, "show_progress", False) else WRITE_CHUNK
    for start in range(0, total, step):
        chunk = data[start:start + step]
        try:
            api.write_flash(esp, offset + start, chunk)
        except api.fatal as exc:
            raise FlashError(f"writing {len(chunk)} bytes at 0x{offset + start:x} on {port} failed: "
                             f"{_first_line(exc)}; retry, at a lower --baud if it repeats") from None
        progress(start + len(chunk), total)


def _await_info(device_factory, port, console_baud, timeout, sleep=time.sleep, clock=time.monotonic):
    """INFO from the rebooted board; retries while the port is gone or silent."""
    deadline = clock() + timeout
    last = "no answer"
    while True:
        try:
            with device_factory(port, baudrate=console_baud) as dev:
                return dev.info()
        except DeviceError as exc:
            last = str(exc)
        if clock() >= deadline:
            raise FlashError(f"board did not come back on {port} within {timeout:g} s after the reset "
                             f"({last}); press RESET, check the console setting (docs/esp32s3.md), "
                             f"then `rvne device info --port {port}`")
        sleep(0.5)


def _precheck(device_factory, port, console_baud, data):
    """The running board's policy (INFO) judges the model before anything is
    written: its named error, as `rvne update` gives it (link.update.precheck).
    A board that does not answer (no firmware yet, another console) is
    flashed; it judges the model itself when it boots."""
    from ..link.update import precheck

    try:
        with device_factory(port, baudrate=console_baud) as dev:
            info = dev.info()
    except DeviceError:
        return
    try:
        precheck(info, data)
    except UpdateError as exc:
        raise UpdateError(f"not flashing {port}: {exc}", exc.code) from None


def flash_to_board(blob: Union[str, bytes], port: str, chip: str = "esp32s3", baud: int = DEFAULT_BAUD,
                   partitions: Optional[str] = None, label: Optional[str] = None,
                   progress: Union[None, bool, Callable[[int, int], None]] = None,
                   *, partitions_csv: Optional[str] = None, console_baud: int = CONSOLE_BAUD,
                   boot_timeout: float = BOOT_TIMEOUT, esptool=None, device_factory=None,
                   sleep=time.sleep) -> FlashResult:
    """Write `blob` (a path or the bytes) as the board's model (slot A and the
    selector naming it, or the single `rvne`; `label`: that one partition,
    raw) on `port`, reset it and confirm over the protocol that it loaded a
    blob with the same CRC. `partitions` (or `partitions_csv`) names a
    partitions.csv to take the layout from instead of the board's table.
    `progress(done, total)` is called while writing; None draws a bar on
    stderr, False draws nothing. Raises BlobError, PartitionError (no
    table, no such partition) or FlashError with a one-line message; nothing is written unless the blob
    is valid and fits."""
    if progress is None:
        progress = _default_progress
    elif progress is False:
        progress = lambda done, total: None  # noqa: E731
    csv_path = partitions if partitions is not None else partitions_csv

    data = _blob_bytes(blob)
    try:
        parsed = signed.check_model(data)       # a blob, or a signed model around one
    except (BlobError, SignatureError) as exc:
        raise type(exc)(f"not flashing: {exc}") from None
    crc = parsed.crc_stored
    if device_factory is None:
        from ..link.device import Device as device_factory
    _precheck(device_factory, port, console_baud, data)

    writes = None
    if csv_path is not None:
        writes = _writes(partition.read_csv(csv_path), label, data, str(csv_path))
        _check_fits(data, writes[0][0], str(csv_path))

    api = esptool if esptool is not None else EsptoolApi()
    esp, found = _connect(api, port, baud, chip)
    try:
        if writes is None:
            writes = _writes(_board_table(api, esp, port), label, data, f"board on {port}")
            _check_fits(data, writes[0][0], f"the table of the board on {port}")
        # The blob first, then the record naming it: a cut in between
        # leaves the old record, which names what was there before.
        for i, (part_w, bytes_w) in enumerate(writes):
            _write(api, esp, port, part_w.offset, bytes_w, progress if i == 0 else _no_progress)
        try:
            api.reset(esp)
        except api.fatal as exc:
            raise FlashError(f"blob written, but resetting the board on {port} failed: {_first_line(exc)}; "
                             f"press RESET, then check with `rvne device info --port {port}`") from None
    finally:
        api.close(esp)

    info = _await_info(device_factory, port, console_baud, boot_timeout, sleep=sleep)
    if not info.loaded:
        raise FlashError(f"board on {port} did not load the blob: {info.reason} "
                         f"(crc={'-' if info.crc is None else f'{info.crc:08X}'}); "
                         "is the firmware built with partitions.csv? see docs/esp32s3.md")
    part = writes[0][0]
    if info.crc != crc:
        got = "-" if info.crc is None else f"{info.crc:08X}"
        raise FlashError(f"board on {port} loaded a blob with CRC {got}, not the flashed {crc:08X}; "
                         f"the app may read another partition than {part.name!r} at 0x{part.offset:x}")
    return FlashResult(port=port, chip=found, label=part.name, offset=part.offset, size=part.size,
                       blob_len=len(data), crc=crc, info=info)


__all__ = ["flash_to_board", "FlashResult", "EsptoolApi", "RvneError"]
