"""Signed models on the virtual device (docs/format.md "Signed models",
docs/protocol.md): a device built with the signed policy takes a new model
only signed by a key it trusts and not older than the one serving; every
attack of issue 33 is refused at UPDATE_COMMIT with its named error, the
old model keeps serving and INFO says why; the boot path verifies the
serving slot and falls back. The host refuses early with the same error.
The unsigned device takes a signed model as it takes a blob."""

import base64
import struct
import zlib

import pytest

import signed_setup
from rvne import cli
from rvne.errors import ProtocolError
from rvne.flash import image as flash_image, partition
from rvne.io import blob, signed, upstream_init
from rvne.link.device import Device
from rvne.link.update import update_device
from rvne.model import verdict
from rvne.targets import sim

import numpy as np

ROOT = signed_setup.ROOT
OLD = upstream_init.init_blob()
NEW = upstream_init.init_blob(seed=11)
THIRD = upstream_init.init_blob(seed=12)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return signed_setup.make(tmp_path_factory.mktemp("signed"))


@pytest.fixture(scope="module")
def models(setup):
    return {"old": setup.sign(OLD, 1, "k1"), "new": setup.sign(NEW, 2, "k2"), "third": setup.sign(THIRD, 3, "k1")}


def image(tmp_path, model):
    table = partition.read_csv(ROOT / "partitions.csv")
    path = tmp_path / "flash.img"
    path.write_bytes(flash_image.with_model(flash_image.build_image(b"", b"", table), model))
    return path


@pytest.fixture
def device(setup, models, tmp_path):
    """The signed device serving OLD (version 1, by k1), then NEW (version 2, by k2) over the line."""
    with sim.start(None, image=image(tmp_path, models["old"]), exe=setup.exe) as t, \
            Device(t.url, timeout=10) as dev:
        update_device(dev, models["new"])
        yield dev


def serves(dev, data, version=None, signer=None):
    info = dev.info()
    parsed = signed.check_model(data)
    assert info.loaded and info.crc == parsed.crc_stored and info.blob_len == parsed.header.total_len, info.fields
    x = np.random.default_rng(3).standard_normal((4, parsed.header.input_dim)).astype(np.float32)
    assert verdict.against_blob(dev.run(x), parsed, x, info.window)["ok"]
    if version is not None:
        assert info.fields["version"] == str(version) and info.fields["signer"] == signer
    return info


def send(dev, data, step=9000):
    crc = blob.parse(data, exact_length=False).crc_stored      # the blob's, whatever follows it
    dev.request("UPDATE_BEGIN", len(data), f"{crc:08X}")
    for off in range(0, len(data), step):
        piece = data[off:off + step]
        dev.request("UPDATE_CHUNK", off, f"{zlib.crc32(piece):08X}", base64.b64encode(piece).decode())
    return crc


def refused_at_commit(dev, data, code):
    crc = send(dev, data)
    with pytest.raises(ProtocolError) as exc:
        dev.request("UPDATE_COMMIT", f"{crc:08X}")
    assert exc.value.code == code, str(exc.value)
    assert "old model serves" in str(exc.value) and "\n" not in str(exc.value)
    assert dev.info().fields["refused"] == code


def with_blob_crc(data: bytes) -> bytes:
    """`data` with its blob's CRC made right again after a change."""
    n = 28 + struct.unpack_from("<I", data, 20)[0]
    out = bytearray(data)
    out[n - 4:n] = struct.pack("<I", zlib.crc32(bytes(out[:n - 4])))
    return bytes(out)


def flip(data: bytes, at: int) -> bytes:
    out = bytearray(data)
    out[at] ^= 0x01
    return bytes(out)


def test_info_names_the_policy_keys_version_and_signer(setup, device, models):
    d = setup.digests
    info = serves(device, models["new"], 2, d["k2"])
    assert info.fields["policy"] == "signed"
    assert info.fields["keys"] == ",".join(d[k] for k in ("k1", "k2", "k3"))
    assert info.fields["revoked"] == d["k3"] and info.fields["refused"] == "-"
    # A newer model by the other trusted key.
    update_device(device, models["third"])
    serves(device, models["third"], 3, d["k1"])


def _attacks(setup, models):
    new, third = models["new"], models["third"]
    n = len(NEW)
    pl = signed.payload_len(n)
    other_sector = third[signed.payload_len(len(THIRD)):]
    return [
        ("untrusted key", setup.sign(THIRD, 3, "k4"), "E_UNTRUSTED_KEY"),
        ("revoked key", setup.sign(THIRD, 3, "k3"), "E_REVOKED_KEY"),
        ("unsigned blob", THIRD, "E_UNSIGNED"),
        ("older version by a trusted key", setup.sign(THIRD, 1, "k1"), "E_ROLLBACK"),
        ("a flipped weight byte, CRC fixed", with_blob_crc(flip(new, 24 + 999)), "E_BAD_SIGNATURE"),
        ("a flipped byte in the signature", flip(new, pl + 812 + 100), "E_BAD_SIGNATURE"),
        ("a flipped byte in the version", flip(new, n + 4), "E_BAD_SIGNATURE"),
        ("a flipped byte in the digest field", flip(new, pl + 4), "E_BAD_SIGNATURE"),
        ("a valid signature of another blob", new[:pl] + other_sector, "E_BAD_SIGNATURE"),
        ("the signature sector truncated", new[:-100], "E_BAD_SIGNATURE"),
        ("the signature sector padded", new + b"\xff" * 4096, "E_BAD_SIGNATURE"),
        ("the signature sector gone, trailer kept", new[:pl], "E_BAD_SIGNATURE"),
    ]


def test_every_attack_is_refused_with_its_name_and_the_old_model_serves(setup, models, device, tmp_path, capsys):
    for what, data, code in _attacks(setup, models):
        refused_at_commit(device, data, code)
        serves(device, models["new"], 2, setup.digests["k2"])
        # The host says the same before sending anything (`rvne update` over the port).
        path = tmp_path / "attack.bin"
        path.write_bytes(data)
        device.close()
        try:
            rc, err = _cli(capsys, "update", path, "-p", device.url)
        finally:
            device.__init__(device.url, timeout=10)
        assert rc == 1 and err.count("\n") == 1 and code in err, (what, err)
        # A model laid out wrong is refused as the file is read; the rest by the board's INFO.
        assert "would refuse it" in err or code == "E_BAD_SIGNATURE", (what, err)
        assert device.info().fields["update"] == "idle", what
    # And after all of them, a good update still goes through.
    update_device(device, models["third"])
    serves(device, models["third"], 3, setup.digests["k1"])


def _cli(capsys, *argv):
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    _, err = capsys.readouterr()
    return rc, err


def test_boot_verifies_the_serving_slot_and_falls_back(setup, models, tmp_path):
    img = image(tmp_path, models["old"])
    with sim.start(None, image=img, exe=setup.exe) as t, Device(t.url, timeout=10) as dev:
        update_device(dev, models["new"])
    table = flash_image.read_table(img.read_bytes())
    b = table.find("rvne_b")
    raw = bytearray(img.read_bytes())
    raw[b.offset + signed.payload_len(len(NEW)) + 812 + 7] ^= 0x40     # slot B's signature, CRC'd block broken
    img.write_bytes(bytes(raw))
    with sim.start(None, image=img, exe=setup.exe) as t, Device(t.url, timeout=10) as dev:
        info = serves(dev, models["old"], 1, setup.digests["k1"])
        assert info.fields["slot"] == "a" and info.fields["seq"] == "1"
    # A bare blob raw in slot A under an erased selector: nothing serves, INFO says why.
    table_img = flash_image.with_model(img.read_bytes(), OLD, record=False)
    img.write_bytes(table_img)
    with sim.start(None, image=img, exe=setup.exe) as t, Device(t.url, timeout=10) as dev:
        info = dev.info()
        assert not info.loaded and info.reason == "E_UNSIGNED" and info.fields["version"] == "-"


def test_the_unsigned_device_takes_a_signed_model_and_says_unsigned(models, tmp_path):
    with sim.start(None, image=image(tmp_path, OLD)) as t, Device(t.url, timeout=10) as dev:
        info = dev.info()
        assert info.fields["policy"] == "unsigned" and info.fields["keys"] == "-"
        res = update_device(dev, models["new"])
        assert res.blob_len == len(models["new"])
        info = serves(dev, models["new"])
        assert info.fields["version"] == "-" and info.fields["signer"] == "-"
        # Its layout still counts: a SIZE that is neither the blob nor the signed model is E_LENGTH.
        refused_at_commit(dev, models["third"][:-100], "E_LENGTH")
        update_device(dev, THIRD)
        serves(dev, THIRD)


def test_sign_and_verify_on_the_command_line(setup, tmp_path, capsys):
    src = tmp_path / "m.rvne"
    src.write_bytes(NEW)
    out = tmp_path / "m.signed"
    rc = cli.main(["sign", str(src), "--model-version", "7", "--keyfile", str(setup.keys["k2"]), "-o", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and setup.digests["k2"] in text and "model version 7" in text
    data = out.read_bytes()
    assert data[:len(NEW)] == NEW and len(data) == signed.total_len(len(NEW))
    assert blob.parse_loadable(data[:len(NEW)]).crc_stored == blob.parse_loadable(NEW).crc_stored
    rc = cli.main(["verify", str(out), "--pubkey", str(setup.keys["k2"])])
    assert rc == 0 and "signature by" in capsys.readouterr().out
    rc, err = _cli(capsys, "verify", out, "--pubkey", setup.keys["k1"])
    assert rc == 1 and "E_UNTRUSTED_KEY" in err and err.count("\n") == 1
    bad = tmp_path / "bad.signed"
    bad.write_bytes(with_blob_crc(flip(data, 24 + 5)))
    rc, err = _cli(capsys, "verify", bad, "--pubkey", setup.keys["k2"])
    assert rc == 1 and "E_BAD_SIGNATURE" in err
    # The external-signer flow: the payload, signed outside rvne, assembled by espsecure.
    payload = tmp_path / "m.payload"
    assert cli.main(["sign", str(src), "--model-version", "7", "--payload", "-o", str(payload)]) == 0
    assert payload.read_bytes() == data[:signed.payload_len(len(NEW))]
