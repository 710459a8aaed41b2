"""`rvne update --target qemu|qemu-lx106 --image IMG` on both emulated boards:
the board writes the inactive slot and the selector through its CFI flash
driver into IMG itself (QEMU writes the flash through to the file), so the
image keeps the update: it boots the new model, `rvne check` of the new blob
against it passes, and the next update goes to the other slot."""

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
from rvne.targets import qemu

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(params=["qemu", "qemu-lx106"])
def board(request):
    b = qemu.BOARDS[request.param]
    missing = [t for t in (qemu.QEMU, *b.tools) if shutil.which(t) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and {' '.join(missing)} is missing: tools/bootstrap.sh installs {b.apt}")
        pytest.skip(f"{' '.join(missing)} not installed (apt-get install {b.apt})")
    return b


def rvne(*args, timeout=600):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "host")}
    return subprocess.run([sys.executable, "-m", "rvne", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_update_lands_in_the_image_and_check_passes(board, tmp_path):
    old, new = tmp_path / "old.rvne", tmp_path / "new.rvne"
    old.write_bytes(init_blob((16, 4, 1, 32, 2, 4), seed=21))
    new.write_bytes(init_blob((16, 4, 1, 32, 2, 4), seed=22))
    crc_new = int.from_bytes(new.read_bytes()[-4:], "little")
    img = tmp_path / "flash.img"
    shutil.copyfile(qemu.ensure_built(board), img)
    r = rvne("flash", old, "--image", img)
    assert r.returncode == 0, r.stderr

    r = rvne("update", new, "--target", board.target, "--image", img, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["slot"], out["seq"], out["crc"]) == ("b", 2, crc_new)
    assert out["info"]["port"] == board.core

    # The file is the flash: slot B holds the blob, copy 1 of the selector
    # the record naming it (copy 0 still the flashed one).
    data = img.read_bytes()
    lay = slots.layout(flash_image.read_table(data))
    b = lay.slots[1]
    assert data[b.offset:b.offset + len(new.read_bytes())] == new.read_bytes()
    c0, c1 = lay.copy_offsets()
    assert slots.decode_record(data[c1:c1 + slots.RECORD_LEN]) == (
        slots.VALID, slots.Record(2, 1, len(new.read_bytes()), crc_new))
    assert slots.decode_record(data[c0:c0 + slots.RECORD_LEN])[1].seq == 1

    r = rvne("check", new, "--target", board.target, "--image", img, "--vectors", 1)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS" in r.stdout

    # Back to the old blob: slot A again, sequence 3, in copy 0.
    r = rvne("update", old, "--target", board.target, "--image", img, "--json")
    assert r.returncode == 0, r.stderr
    assert (json.loads(r.stdout)["slot"], json.loads(r.stdout)["seq"]) == ("a", 3)
    tg = qemu.start(image=img, board=board.target)
    try:
        with Device(tg.url, timeout=30) as dev:
            info = dev.info()
        assert info.loaded and info.crc == int.from_bytes(old.read_bytes()[-4:], "little")
        assert info.fields["slot"] == "a" and info.fields["seq"] == "3"
    finally:
        tg.stop()


def test_image_in_use_by_another_board_is_refused(board, tmp_path):
    """Two QEMUs on one flash image would each write over the other: the
    second start names the image and changes nothing."""
    img = tmp_path / "flash.img"
    shutil.copyfile(qemu.ensure_built(board), img)
    before = img.read_bytes()
    tg = qemu.start(image=img, persist=True, board=board.target)
    try:
        with pytest.raises(qemu.TargetError) as exc:
            qemu.start(image=img, persist=True, board=board.target, start_timeout=20)
        assert str(img) in str(exc.value)
    finally:
        tg.stop()
    assert img.read_bytes() == before
