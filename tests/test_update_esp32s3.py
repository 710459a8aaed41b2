"""`rvne update --target qemu-esp32s3 --image IMG` through the ESP-IDF app
on Espressif's QEMU (`-machine esp32s3`, ROM boot): the app writes the
inactive slot and the selector with esp_partition_erase_range /
esp_partition_write into QEMU's emulated SPI flash, which QEMU writes
through to IMG itself (the target boots the file, locked, not a copy), so
the image keeps the update: `rvne check` of the new blob against it passes,
and the next update goes to the other slot. The image's path holds a comma
on purpose: QEMU's -drive syntax takes it only doubled.

Needs RVNE_QEMU_ESP, IDF_PATH and xtensa-esp32s3-elf-gcc (README: Install);
under CI a missing tool fails these tests, elsewhere it skips them."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rvne.flash import image as flash_image, slots
from rvne.io.upstream_init import init_blob
from rvne.link.device import Device
from rvne.targets import esp32s3_qemu
from rvne.targets import qemu as lx60

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def built_image():
    # Only tests marked esp_idf take this, and those are deselected where
    # the tools are missing (tests/conftest.py).
    esp32s3_qemu.check_tools()
    return esp32s3_qemu.ensure_built()


def rvne(*args, timeout=600):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "host")}
    return subprocess.run([sys.executable, "-m", "rvne", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def crc_of(data: bytes) -> int:
    return int.from_bytes(data[-4:], "little")


@pytest.mark.esp_idf
def test_update_lands_in_the_image_and_check_passes(built_image, tmp_path):
    old, new = tmp_path / "old.rvne", tmp_path / "new.rvne"
    old.write_bytes(init_blob((8, 2, 1, 8, 1, 2), seed=31))
    new.write_bytes(init_blob((16, 2, 1, 16, 1, 4), seed=32))     # two of the S3's 4 KiB sectors
    img = tmp_path / "board,s3" / "flash,1.img"
    img.parent.mkdir()
    shutil.copyfile(built_image, img)
    r = rvne("flash", old, "--image", img)
    assert r.returncode == 0, r.stderr

    r = rvne("update", new, "--target", "qemu-esp32s3", "--image", img, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["slot"], out["seq"], out["crc"]) == ("b", 2, crc_of(new.read_bytes()))
    assert out["info"]["port"] == "esp32s3" and out["info"]["crc"] == crc_of(new.read_bytes())

    # The file is the flash: slot B holds the blob, copy 1 of the selector
    # the record naming it, copy 0 still the flashed one.
    data = img.read_bytes()
    lay = slots.layout(flash_image.read_table(data))
    b = lay.slots[1]
    assert data[b.offset:b.offset + len(new.read_bytes())] == new.read_bytes()
    c0, c1 = lay.copy_offsets()
    assert slots.decode_record(data[c1:c1 + slots.RECORD_LEN]) == (
        slots.VALID, slots.Record(2, 1, len(new.read_bytes()), crc_of(new.read_bytes())))
    assert slots.decode_record(data[c0:c0 + slots.RECORD_LEN])[1].seq == 1

    r = rvne("check", new, "--target", "qemu-esp32s3", "--image", img, "--vectors", 1)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS" in r.stdout

    # Back to the old blob: slot A again, sequence 3, in copy 0; a boot of
    # the file serves it.
    r = rvne("update", old, "--target", "qemu-esp32s3", "--image", img, "--json")
    assert r.returncode == 0, r.stderr
    assert (json.loads(r.stdout)["slot"], json.loads(r.stdout)["seq"]) == ("a", 3)
    with esp32s3_qemu.start(image=img) as tg, Device(tg.url, timeout=30) as dev:
        info = dev.info()
    assert info.loaded and info.crc == crc_of(old.read_bytes())
    assert info.fields["slot"] == "a" and info.fields["seq"] == "3"


@pytest.mark.esp_idf
def test_image_in_use_by_another_board_is_refused(built_image, tmp_path):
    """Two QEMUs on one flash image would each write over the other: the
    second start names the image and changes nothing."""
    img = tmp_path / "flash.img"
    shutil.copyfile(built_image, img)
    before = img.read_bytes()
    with esp32s3_qemu.start(image=img, persist=True):
        with pytest.raises(esp32s3_qemu.TargetError) as exc:
            esp32s3_qemu.start(image=img, persist=True, start_timeout=20)
        assert str(img) in str(exc.value)
    assert img.read_bytes() == before


@pytest.mark.parametrize("command", [
    lambda path: esp32s3_qemu.qemu_command("qemu", path, 1234),
    lambda path: lx60.qemu_command(path, 1234),
], ids=["qemu-esp32s3", "lx60"])
def test_a_comma_in_the_image_path_is_doubled_for_qemu(command):
    """QEMU splits -drive at single commas: `a,b.img` would be `file=a` and an
    unknown option `b.img`."""
    cmd = command("/tmp/x,y/fl,ash.img")
    drive = cmd[cmd.index("-drive") + 1]
    assert drive.startswith("file=/tmp/x,,y/fl,,ash.img,")
