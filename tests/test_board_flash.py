"""rvne.flash.board against a double of the esptool interface it uses (each
failure injected), against the real Device client talking to a fake board,
and with the real esptool: its merge-bin lays the bytes flash_to_board hands
over into a flash image at the addresses given, and its port handling
reports a missing device. A real board is docs/esp32s3.md's job."""

import subprocess
import sys
from pathlib import Path

import pytest

from rvne.errors import CrcError, DeviceError, FlashError, PartitionError
from rvne.flash import board as board_flash, partition, slots
from rvne.io import blob as blob_mod
from rvne.io.upstream_init import init_blob
from rvne.link.device import Device, Info

from fake_device import FakeDevice, ReferenceModel

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "partitions.csv"
FLASH_SIZE = 0x400000


class FakeFatal(Exception):
    """Stands in for esptool.util.FatalError."""


class FakeEsptool:
    """A board behind esptool: `flash` is its whole flash; every call is
    recorded. fail_* hold the exception the call raises."""

    fatal = FakeFatal

    def __init__(self, flash, chip="ESP32-S3"):
        self.flash = bytearray(flash)
        self.chip = chip
        self.calls = []
        self.writes = []
        self.fail_connect = self.fail_read = self.fail_write = self.fail_reset = None
        self.closed = 0

    def connect(self, port, baud):
        self.calls.append(("connect", port, baud))
        if self.fail_connect:
            raise self.fail_connect
        return object()

    def chip_name(self, esp):
        return self.chip

    def read_flash(self, esp, address, size):
        self.calls.append(("read_flash", address, size))
        if self.fail_read:
            raise self.fail_read
        return bytes(self.flash[address:address + size])

    def write_flash(self, esp, address, data):
        self.calls.append(("write_flash", address, len(data)))
        if self.fail_write:
            raise self.fail_write
        assert address + len(data) <= len(self.flash), "write past the end of flash"
        self.writes.append((address, bytes(data)))
        self.flash[address:address + len(data)] = data

    def reset(self, esp):
        self.calls.append(("reset",))
        if self.fail_reset:
            raise self.fail_reset

    def close(self, esp):
        self.closed += 1

    def names(self):
        return [c[0] for c in self.calls]


def table_bytes(csv_text=None):
    table = partition.parse_csv(csv_text) if csv_text else partition.read_csv(CSV)
    return table, table.to_binary()


def board_flash_image(csv_text=None):
    """Erased flash with the partition table at 0x8000, as the ESP-IDF build flashes it."""
    _, tbl = table_bytes(csv_text)
    img = bytearray(b"\xff" * FLASH_SIZE)
    img[partition.TABLE_OFFSET:partition.TABLE_OFFSET + len(tbl)] = tbl
    return img


class BoardConsole:
    """What answers on the port after the reset: INFO replies as the firmware
    would send them; `fail` DeviceErrors first (the port re-enumerating)."""

    def __init__(self, info_fields, fail=0):
        self.info_fields = info_fields
        self.fail = fail
        self.opened = []

    def __call__(self, port, baudrate):
        self.opened.append((port, baudrate))
        if self.fail:
            self.fail -= 1
            raise DeviceError(f"cannot open {port}: [Errno 2] No such file or directory")
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def info(self):
        from rvne.link import protocol

        f = {"fw": "0.1.0", "port": "esp32s3", "status": "loaded", "reason": "OK", "dims": "16,4,1,32,2,4",
             "dtype": "fp32", "crc": "-", "blob_len": "-", "window": "100", "arena": "51200", "line_max": "4096",
             "clock": "ns", **self.info_fields}
        return Info.from_reply(protocol.Reply(seq=1, ok=True, fields=f))


def loaded(blob_bytes, **over):
    p = blob_mod.parse_loadable(blob_bytes)
    return BoardConsole({"crc": f"{p.crc_stored:08X}", "blob_len": str(len(blob_bytes)), **over})


@pytest.fixture
def blob_file(tmp_path):
    data = init_blob()
    path = tmp_path / "model.rvne"
    path.write_bytes(data)
    return path, data


def flash(blob, api, console, **kw):
    kw.setdefault("progress", False)
    return board_flash.flash_to_board(blob, "/dev/ttyACM0", esptool=api, device_factory=console,
                                      sleep=lambda s: None, **kw)


# -- the path that works ---------------------------------------------------
def test_writes_slot_a_and_its_selector_found_in_the_board_table_and_confirms_the_crc(blob_file):
    path, data = blob_file
    api = FakeEsptool(board_flash_image())
    seen = []
    res = flash(str(path), api, loaded(data), progress=lambda d, t: seen.append((d, t)))
    table = partition.read_csv(CSV)
    a, sel = table.find("rvne_a"), table.find("rvne_sel")
    assert res.offset == a.offset == 0x130000 and res.label == "rvne_a"
    assert res.crc == 0xDC807956 and res.blob_len == 41244 == len(data)
    assert api.names() == ["connect", "read_flash", "write_flash", "write_flash", "write_flash", "reset"]
    assert api.calls[1] == ("read_flash", 0x8000, 0xC00)
    assert api.flash[a.offset:a.offset + len(data)] == data
    # The blob before the record that names it (a cut between keeps the old record).
    assert [w[0] for w in api.writes] == [a.offset, sel.offset, sel.offset + 0x10000]
    state, rec = slots.decode_record(api.flash[sel.offset:sel.offset + 32])
    assert state == slots.VALID and rec == slots.Record(1, 0, len(data), 0xDC807956)
    assert slots.decode_record(api.flash[sel.offset + sel.size // 2:][:32])[0] == slots.ERASED
    # Nothing outside the partitions was touched.
    assert api.flash[a.offset + len(data):a.end] == b"\xff" * (a.size - len(data))
    b = table.find("rvne_b")
    assert api.flash[b.offset:b.end] == b"\xff" * b.size
    assert api.closed == 1
    assert seen[0] == (0, len(data)) and seen[-1] == (len(data), len(data))


def test_a_board_with_the_single_partition_layout_gets_the_blob_there(blob_file):
    _, data = blob_file
    api = FakeEsptool(board_flash_image(SMALL_CSV.replace("0x8000", "0x100000")))
    res = flash(data, api, loaded(data))
    assert res.label == "rvne" and res.offset == 0x110000
    assert [w[0] for w in api.writes] == [0x110000]
    assert bytes(api.flash[0x110000:0x110000 + len(data)]) == data


def test_partitions_csv_replaces_reading_the_board_table(blob_file):
    _, data = blob_file
    api = FakeEsptool(b"\xff" * FLASH_SIZE)       # the board's own table is erased
    res = flash(data, api, loaded(data), partitions=str(CSV))
    assert "read_flash" not in api.names()
    assert res.offset == 0x130000
    assert bytes(api.flash[0x130000:0x130000 + len(data)]) == data


def test_a_large_blob_goes_in_chunks_with_a_rising_progress_bar(tmp_path):
    data = init_blob(dims=(64, 8, 2, 32, 2, 8))     # > one 64 KiB write
    assert len(data) > board_flash.WRITE_CHUNK
    api = FakeEsptool(board_flash_image())
    seen = []
    flash(data, api, loaded(data), progress=lambda d, t: seen.append(d))
    addrs = [a for a, _ in api.writes if 0x130000 <= a < 0x290000]
    assert len(addrs) == -(-len(data) // board_flash.WRITE_CHUNK)
    assert addrs == [0x130000 + i * board_flash.WRITE_CHUNK for i in range(len(addrs))]
    assert b"".join(d for a, d in api.writes if a in addrs) == data
    assert seen == sorted(seen) and seen[-1] == len(data)


def test_the_board_may_take_a_while_to_come_back(blob_file):
    _, data = blob_file
    console = loaded(data)
    console.fail = 3
    flash(data, FakeEsptool(board_flash_image()), console)
    assert len(console.opened) == 4
    assert console.opened[0] == ("/dev/ttyACM0", board_flash.CONSOLE_BAUD)


def test_confirms_through_the_real_device_client(blob_file):
    # The INFO that confirms the flash comes over the protocol, parsed by rvne.link.device.
    _, data = blob_file
    with FakeDevice(model=ReferenceModel(data)) as dev:
        res = flash(data, FakeEsptool(board_flash_image()),
                    lambda port, baudrate: Device(dev.url, baudrate=baudrate))
        assert res.info.loaded and res.info.crc == 0xDC807956
        assert "INFO" in dev.executed


# -- every refusal, one line, nothing written ------------------------------
def one_line(exc):
    msg = str(exc.value)
    assert "\n" not in msg and msg
    return msg


def test_invalid_blob_is_refused_before_touching_the_board(blob_file):
    _, data = blob_file
    bad = bytearray(data)
    bad[100] ^= 1
    api = FakeEsptool(board_flash_image())
    with pytest.raises(CrcError) as exc:
        flash(bytes(bad), api, loaded(data))
    assert "not flashing" in one_line(exc)
    assert api.calls == []


@pytest.mark.parametrize("error", [OSError("could not open port /dev/ttyACM0: [Errno 2] No such file"),
                                   FakeFatal("Failed to connect to Espressif device: No serial data received.\nHint")])
def test_no_device_on_the_port(blob_file, error):
    _, data = blob_file
    api = FakeEsptool(board_flash_image())
    api.fail_connect = error
    with pytest.raises(FlashError) as exc:
        flash(data, api, loaded(data))
    assert one_line(exc).startswith("no device on /dev/ttyACM0")
    assert api.writes == []


def test_wrong_chip(blob_file):
    _, data = blob_file
    api = FakeEsptool(board_flash_image(), chip="ESP32")
    with pytest.raises(FlashError) as exc:
        flash(data, api, loaded(data))
    assert "wrong chip" in one_line(exc) and "found ESP32, expected esp32s3" in str(exc.value)
    assert api.writes == [] and api.closed == 1
    # The same board passes when it is the chip asked for.
    flash(data, FakeEsptool(board_flash_image(), chip="ESP32"), loaded(data), chip="esp32")


def test_no_such_partition_in_the_board_table(blob_file):
    _, data = blob_file
    api = FakeEsptool(board_flash_image())
    with pytest.raises(PartitionError) as exc:
        flash(data, api, loaded(data), label="model")
    assert "'model'" in one_line(exc) and "board on /dev/ttyACM0" in str(exc.value)
    assert api.writes == []


def test_a_board_without_a_partition_table(blob_file):
    _, data = blob_file
    api = FakeEsptool(b"\xff" * FLASH_SIZE)
    with pytest.raises(PartitionError) as exc:
        flash(data, api, loaded(data))
    assert "empty" in one_line(exc)
    assert api.writes == []


SMALL_CSV = """nvs, data, nvs, 0x9000, 0x6000,
factory, app, factory, 0x10000, 0x100000,
rvne, data, 0x40, 0x110000, 0x8000,
"""


def test_blob_too_large_for_the_csv_partition_is_refused_before_connecting(blob_file, tmp_path):
    _, data = blob_file
    csv = tmp_path / "small.csv"
    csv.write_text(SMALL_CSV)
    api = FakeEsptool(board_flash_image())
    with pytest.raises(FlashError) as exc:
        flash(data, api, loaded(data), partitions=str(csv))
    assert f"blob is {len(data)} bytes, larger than partition 'rvne' (32768 bytes" in one_line(exc)
    assert api.calls == []


def test_blob_too_large_for_the_board_partition(blob_file):
    _, data = blob_file
    api = FakeEsptool(board_flash_image(SMALL_CSV))
    with pytest.raises(FlashError) as exc:
        flash(data, api, loaded(data))
    assert "larger than partition 'rvne'" in one_line(exc)
    assert api.writes == []


def test_write_failure(blob_file):
    _, data = blob_file
    api = FakeEsptool(board_flash_image())
    api.fail_write = FakeFatal("MD5 of file does not match data in flash!")
    with pytest.raises(FlashError) as exc:
        flash(data, api, loaded(data))
    assert "writing" in one_line(exc) and "MD5" in str(exc.value)
    assert "reset" not in api.names() and api.closed == 1


def test_board_did_not_come_back(blob_file):
    _, data = blob_file
    console = loaded(data)
    console.fail = 10 ** 6
    with pytest.raises(FlashError) as exc:
        flash(data, FakeEsptool(board_flash_image()), console, boot_timeout=0.0)
    assert "did not come back on /dev/ttyACM0" in one_line(exc)


def test_board_loaded_something_else(blob_file):
    _, data = blob_file
    with pytest.raises(FlashError) as exc:
        flash(data, FakeEsptool(board_flash_image()), loaded(data, crc="12345678"))
    assert "CRC 12345678, not the flashed DC807956" in one_line(exc)
    with pytest.raises(FlashError) as exc:
        flash(data, FakeEsptool(board_flash_image()),
              loaded(data, status="error", reason="E_CRC"))
    assert "did not load the blob: E_CRC" in one_line(exc)


# -- the real esptool ---------------------------------------------------------
def test_real_esptool_merge_bin_puts_the_written_bytes_where_the_partition_is(blob_file, tmp_path):
    """The (address, bytes) pairs handed to esptool, plus the table the ESP-IDF
    build flashes, merged by esptool itself into a raw image: the image's own
    table names the partition, and the blob sits at its offset."""
    esptool_cmds = pytest.importorskip("esptool.cmds")
    _, data = blob_file
    api = FakeEsptool(board_flash_image())
    flash(data, api, loaded(data))
    _, tbl = table_bytes()
    out = tmp_path / "flash.bin"
    esptool_cmds.merge_bin([(partition.TABLE_OFFSET, tbl), *api.writes], chip="esp32s3",
                           output=str(out), format="raw")
    image = out.read_bytes()
    part = partition.PartitionTable.from_binary(image[partition.TABLE_OFFSET:]).find("rvne_a")
    assert image[part.offset:part.offset + len(data)] == data
    parsed = blob_mod.parse_loadable(image[part.offset:part.end], exact_length=False)
    assert parsed.crc_stored == 0xDC807956


def test_real_esptool_reports_a_missing_port_as_no_device(blob_file):
    path, _ = blob_file
    run = subprocess.run([sys.executable, "-m", "rvne", "flash", str(path), "--port", "/dev/rvne-no-such-port"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    err = run.stderr.strip()
    assert err.startswith("rvne: error: no device on /dev/rvne-no-such-port") and "\n" not in err
    assert "Traceback" not in run.stderr


def test_cli_flash_port_prints_one_line_and_exits_0(blob_file, monkeypatch, capsys):
    import rvne.link.device
    from rvne import cli

    path, data = blob_file
    api = FakeEsptool(board_flash_image())
    monkeypatch.setattr(board_flash, "EsptoolApi", lambda: api)
    monkeypatch.setattr(rvne.link.device, "Device", loaded(data))
    rc = cli.main(["flash", str(path), "--port", "/dev/ttyACM0", "--baud", "921600"])
    out, err = capsys.readouterr()
    assert rc == 0
    assert out.strip() == ("wrote 41244 bytes to partition 'rvne_a' at 0x130000 of the ESP32-S3 on /dev/ttyACM0; "
                           "the board loaded it: crc=DC807956")
    # Not a terminal: no progress drawn, esptool's stays off (docs/esp32s3.md).
    assert err == "" and api.show_progress is False
    assert api.calls[0] == ("connect", "/dev/ttyACM0", 921600)


def test_a_board_with_the_signed_policy_refuses_before_anything_is_written(blob_file):
    """Issue 33: `rvne flash` asks the running board's INFO first; under the
    signed policy an unsigned blob is refused with the board's own named
    error (E_UNSIGNED), esptool never connects. An unsigned board (no
    policy field: older firmware) is flashed as before."""
    from rvne.errors import UpdateError

    _, data = blob_file
    api = FakeEsptool(board_flash_image())
    board = loaded(data, policy="signed", keys="ab" * 32, revoked="-", version="4", signer="ab" * 32)
    with pytest.raises(UpdateError) as exc:
        flash(data, api, board)
    assert exc.value.code == "E_UNSIGNED" and "not flashing /dev/ttyACM0" in str(exc.value)
    assert api.calls == [] and api.writes == []
    res = flash(data, api, loaded(data))
    assert res.crc == 0xDC807956 and api.writes
