"""The emulated board's flash image (rvne.flash.image) and `rvne flash
--image`: layout, the blob written through the image's own partition table,
and refusals that leave the image byte-identical."""

import hashlib
import os
from pathlib import Path

import pytest

from rvne import cli
from rvne.errors import BlobError, ContractError, CrcError, ErasedError, FlashError, PartitionError
from rvne.flash import image as flash_image, partition, slots
from rvne.io import blob, upstream_init
from rvne.model.contract import Dims

REPO = Path(__file__).resolve().parents[1]
MiB = 1024 * 1024
BOOT = bytes(range(14))
APP = hashlib.sha256(b"app").digest() * 100


@pytest.fixture(scope="module")
def good_blob():
    return upstream_init.init_blob()


def make_image(tmp_path, csv=None, name="flash.img"):
    table = partition.parse_csv(csv) if csv else partition.read_csv(REPO / "partitions.csv")
    path = tmp_path / name
    path.write_bytes(flash_image.build_image(BOOT, APP, table))
    return path


def test_layout_like_the_esp32s3(tmp_path):
    img = make_image(tmp_path).read_bytes()
    table = partition.read_csv(REPO / "partitions.csv")
    assert len(img) == 4 * MiB
    assert img[:len(BOOT)] == BOOT
    assert img[len(BOOT):0x8000] == b"\xFF" * (0x8000 - len(BOOT))
    assert img[0x8000:0x8C00] == table.to_binary()
    assert img[0x10000:0x10000 + len(APP)] == APP
    for label in ("rvne_a", "rvne_b", "rvne_sel"):
        part = table.find(label)
        assert img[part.offset:part.end] == b"\xFF" * part.size      # erased partitions
    assert flash_image.read_table(img) == table


def test_write_blob_through_the_images_table(tmp_path, good_blob):
    path = make_image(tmp_path)
    before = path.read_bytes()
    part = flash_image.write_blob(path, good_blob)
    after = path.read_bytes()
    assert part.offset == 0x130000 and part.name == "rvne_a"
    assert after[part.offset:part.offset + len(good_blob)] == good_blob
    assert after[part.offset + len(good_blob):part.end] == b"\xFF" * (part.size - len(good_blob))
    # The selector names slot A in copy 0; copy 1 is erased; nothing else changed.
    sel = flash_image.read_table(after).find("rvne_sel")
    assert slots.decode_record(after[sel.offset:sel.offset + 32]) == (
        slots.VALID, slots.Record(1, 0, len(good_blob), 0xDC807956))
    assert after[sel.offset + 32:sel.end] == b"\xFF" * (sel.size - 32)
    assert after[:sel.offset] == before[:sel.offset] and after[part.end:] == before[part.end:]
    # What the firmware will read back from the mapped partition.
    assert blob.parse_loadable(after[part.offset:part.end], exact_length=False).crc_stored == 0xDC807956
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".flash-")]


def test_a_shorter_blob_replaces_a_longer_one_completely(tmp_path, good_blob):
    path = make_image(tmp_path)
    big = blob.from_arrays(upstream_init.init_arrays(Dims.of((16, 4, 1, 32, 3, 4))), (16, 4, 1, 32, 3, 4))
    flash_image.write_blob(path, big)
    flash_image.write_blob(path, good_blob)
    img = path.read_bytes()
    assert img[0x130000 + len(good_blob):0x130000 + len(big)] == b"\xFF" * (len(big) - len(good_blob))


def _wrong_contract(good):
    h = blob.Header.for_dims(Dims.of((16, 4, 1, 32, 2, 4)))
    return blob.serialize(h, bytes(4 * 10))


def _bad_crc(good):
    b = bytearray(good)
    b[100] ^= 0xFF
    return bytes(b)


@pytest.mark.parametrize("make_bad, error", [
    (lambda g: g[:-1], BlobError),
    (_bad_crc, CrcError),
    (_wrong_contract, ContractError),
    (lambda g: b"\xFF" * len(g), ErasedError),
])
def test_invalid_blobs_leave_the_image_byte_identical(tmp_path, good_blob, make_bad, error):
    path = make_image(tmp_path)
    flash_image.write_blob(path, good_blob)
    before = path.read_bytes()
    with pytest.raises(error):
        flash_image.write_blob(path, make_bad(good_blob))
    assert path.read_bytes() == before


def test_a_blob_that_does_not_fit_is_refused(tmp_path, good_blob):
    path = make_image(tmp_path, csv="factory, app, factory, 0x10000, 1M\nrvne, data, 0x40, , 32K\n")
    before = path.read_bytes()
    with pytest.raises(FlashError, match=r"blob is 41244 bytes, larger than partition 'rvne' \(32768"):
        flash_image.write_blob(path, good_blob)
    assert path.read_bytes() == before


def test_image_without_the_partition_or_with_a_corrupt_table(tmp_path, good_blob):
    path = make_image(tmp_path, csv="factory, app, factory, 0x10000, 1M\nother, data, 0x40, , 1M\n"
                                    "rvne_a, data, 0x40, , 1M\n")
    before = path.read_bytes()
    with pytest.raises(PartitionError, match=r"no model partitions .*\(missing rvne_b, rvne_sel\)"):
        flash_image.write_blob(path, good_blob)
    assert path.read_bytes() == before

    path = make_image(tmp_path, name="corrupt.img")
    img = bytearray(path.read_bytes())
    img[0x8000 + 4] ^= 1
    path.write_bytes(img)
    with pytest.raises(PartitionError, match="MD5 mismatch"):
        flash_image.write_blob(path, good_blob)
    assert path.read_bytes() == img


def test_image_of_the_wrong_size_is_refused(tmp_path, good_blob):
    path = tmp_path / "short.img"
    path.write_bytes(b"\xFF" * MiB)
    with pytest.raises(FlashError, match="expected 4194304"):
        flash_image.write_blob(path, good_blob)
    assert path.read_bytes() == b"\xFF" * MiB


def test_build_refuses_what_does_not_fit():
    table = partition.read_csv(REPO / "partitions.csv")
    with pytest.raises(FlashError, match="boot stub"):
        flash_image.build_image(b"\0" * 0x8001, APP, table)
    with pytest.raises(FlashError, match="larger than the factory partition"):
        flash_image.build_image(BOOT, b"\0" * (MiB + 1), table)


def test_raw_partition_bytes_are_not_validated(tmp_path):
    img = make_image(tmp_path).read_bytes()
    junk = b"RVNE junk that is no blob"
    out = flash_image.with_partition(img, junk, "rvne_b")
    assert out[0x290000:0x290000 + len(junk)] == junk
    with pytest.raises(FlashError, match="do not fit"):
        flash_image.with_partition(img, b"\0" * (2 * MiB + 1), "rvne_a")
    # As a model without a record: slot A under an erased selector.
    flashed = flash_image.with_model(flash_image.with_model(img, upstream_init.init_blob()), junk, record=False)
    assert flashed[0x130000:0x130000 + len(junk)] == junk
    assert flashed[0x110000:0x130000] == b"\xFF" * 0x20000


def test_the_previous_single_partition_layout_is_still_written(tmp_path, good_blob):
    path = make_image(tmp_path, csv="factory, app, factory, 0x10000, 1M\nrvne, data, 0x40, 0x110000, 2M\n")
    part = flash_image.write_blob(path, good_blob)
    assert part.name == "rvne" and part.offset == 0x110000
    assert path.read_bytes()[0x110000:0x110000 + len(good_blob)] == good_blob


def test_cli_flash_image(tmp_path, good_blob, capsys):
    path = make_image(tmp_path)
    good = tmp_path / "m.rvne"
    good.write_bytes(good_blob)
    bad = tmp_path / "bad.rvne"
    bad.write_bytes(_bad_crc(good_blob))
    assert cli.main(["flash", str(good), "--image", str(path)]) == 0
    assert "wrote 41244 bytes to partition 'rvne_a' at 0x130000" in capsys.readouterr().out
    before = path.read_bytes()
    assert cli.main(["flash", str(bad), "--image", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rvne: error: {bad}: E_CRC: CRC mismatch") and err.count("\n") == 1
    assert path.read_bytes() == before
    assert cli.main(["flash", str(tmp_path / "absent.rvne"), "--image", str(path)]) == 1
    assert path.read_bytes() == before


def test_cli_flash_needs_at_most_one_destination(tmp_path):
    # None: the board from ESPPORT or the one attached (tests/test_board_conventions.py).
    with pytest.raises(SystemExit) as exc:
        cli.main(["flash", "x.rvne", "--image", "a", "--port", "b"])
    assert exc.value.code == 2


def test_build_cli_writes_a_bootable_layout(tmp_path, good_blob):
    (tmp_path / "boot.bin").write_bytes(BOOT)
    (tmp_path / "app.bin").write_bytes(APP)
    (tmp_path / "m.rvne").write_bytes(good_blob)
    out = tmp_path / "out.img"
    rc = flash_image.main(["--boot", str(tmp_path / "boot.bin"), "--app", str(tmp_path / "app.bin"),
                           "--partitions", str(REPO / "partitions.csv"), "--blob", str(tmp_path / "m.rvne"),
                           "-o", str(out)])
    assert rc == 0
    img = out.read_bytes()
    assert img[0x130000:0x130000 + len(good_blob)] == good_blob
    assert flash_image.main(["--boot", str(tmp_path / "nope"), "--app", str(tmp_path / "app.bin"),
                             "--partitions", str(REPO / "partitions.csv"), "-o", str(tmp_path / "o2.img")]) == 1
    assert not (tmp_path / "o2.img").exists()
