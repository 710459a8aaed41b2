"""The device suite on a board (`--target esp32s3 --port P`): it writes each
partition a test needs, resets the board to read its boot banner, and puts
the user's partition back at the end (docs/esp32s3.md, The device suite on
a board).

Writing goes through a flashing hook with two calls, write(bytes) and
read(n): by default esptool into the board's `rvne` partition (found in the
board's table, or --partitions), then esptool's hard reset; with
`--flash-hook file:PATH`, PATH is replaced whole, which is what the
stand-in board of CI (tests/hil/standin.py) treats as its flash."""

import os
import tempfile
import time

from rvne.errors import DeviceError, RvneError
from rvne.flash import partition, slots
from rvne.link import reset as board_reset, ports
from rvne.link.device import Device

ERASED = b"\xff" * 4096
SETTLE_TIMEOUT = 30.0       # seconds for a board to come back with what was written


class FileFlasher:
    """The stand-in's flash: the partition file, replaced atomically."""

    def __init__(self, path):
        self.path = os.path.abspath(path)

    def write(self, data: bytes):
        fd, tmp = tempfile.mkstemp(prefix=".flash-", dir=os.path.dirname(self.path))
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def read(self, n: int) -> bytes:
        with open(self.path, "rb") as f:
            return f.read(n)


class EsptoolFlasher:
    """A real board's model partition through esptool: raw bytes at slot A
    under an erased selector (or the single `rvne`; rvne.flash.slots), erased,
    corrupt and wrong-contract partitions too, which `rvne flash` rightly
    refuses, then a hard reset."""

    def __init__(self, port, baud=460800, partitions_csv=None, label=None):
        from rvne.flash import board as board_flash

        self._bf = board_flash
        self.port, self.baud, self.csv, self.label = port, baud, partitions_csv, label

    def _session(self):
        api = self._bf.EsptoolApi()
        esp, _ = self._bf._connect(api, self.port, self.baud, "esp32s3")
        if self.csv:
            table = partition.read_csv(self.csv)
        else:
            table = self._bf._board_table(api, esp, self.port)
        if self.label is not None:
            return api, esp, partition.find_partition(table, self.label), None
        lay = slots.layout(table)
        return api, esp, lay.first, lay.selector

    def write(self, data: bytes):
        api, esp, part, sel = self._session()
        try:
            if len(data) > part.size:
                raise RvneError(f"{len(data)} bytes do not fit partition {part.name!r} ({part.size} bytes)")
            api.write_flash(esp, part.offset, data)
            if sel is not None:
                api.write_flash(esp, sel.offset, b"\xFF" * sel.size)
            api.reset(esp)
        finally:
            api.close(esp)

    def read(self, n: int) -> bytes:
        api, esp, part, _ = self._session()
        try:
            return bytes(api.read_flash(esp, part.offset, min(n, part.size)))
        finally:
            api.close(esp)


def make_flasher(spec, port, baud=None, partitions_csv=None):
    if spec and spec.startswith("file:"):
        return FileFlasher(spec[len("file:"):])
    if spec:
        raise RvneError(f"--flash-hook {spec!r}: give file:PATH, or leave it out to flash with esptool")
    # esptool's rate: ESPBAUD as `rvne flash` reads it.
    return EsptoolFlasher(port, baud or ports.resolve_baud(None, 460800).value, partitions_csv)


class Board:
    """The board behind --port, holding one partition kind at a time."""

    def __init__(self, url, flasher, reply_timeout, console_baud=115200):
        self.url, self.flasher = url, flasher
        self.reply_timeout, self.console_baud = reply_timeout, console_baud
        self.kind = None
        self.banner = ""
        self.flashes = 0
        self.original = None

    def _info(self):
        with Device(self.url, timeout=self.reply_timeout, retries=1, baudrate=self.console_baud) as dev:
            return dev.info()

    def save_user_partition(self):
        """What the user's board holds now, to put back at the end: the blob
        INFO reports (its length), else the first 4 KiB as they are."""
        info = self._info()
        n = info.blob_len if info.blob_len else len(ERASED)
        self.original = (self.flasher.read(n), info.crc if info.loaded else None, info.reason)
        return info

    def settle(self, crc, reason):
        """Reset and read the banner until the board reports what was
        written (INFO crc or reason): a board reboots after its flash
        changes, the stand-in restarts, and neither is instant."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        last = "no banner"
        while True:
            try:
                got = board_reset.reset_and_read_banner(self.url, self.console_baud, timeout=5.0)
                info = self._info()
                if (crc is not None and info.loaded and info.crc == crc) or \
                        (crc is None and info.reason == reason):
                    self.banner = "\n".join(got.lines)
                    return info
                last = f"INFO says {info.reason} crc={info.crc}"
            except DeviceError as exc:
                last = str(exc)
            if time.monotonic() >= deadline:
                raise DeviceError(f"the board on {self.url} did not come back with what was written within "
                                  f"{SETTLE_TIMEOUT:g} s ({last})")
            time.sleep(0.3)

    def ensure(self, kind, data, crc, reason):
        if self.kind != kind:
            self.flasher.write(data)
            self.flashes += 1
            self.kind = None
            self.settle(crc, reason)
            self.kind = kind
        return self.url

    def restore(self):
        if self.original is None:
            return
        data, crc, reason = self.original
        self.flasher.write(data)
        self.kind = None
        self.settle(crc, reason)
