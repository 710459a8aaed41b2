"""Signed models on the virtual device (docs/format.md "Signed models",
docs/protocol.md): a device built with the signed policy takes a new model
only signed by a key it trusts and not older than the one serving; every
attack of issue 33 is refused at UPDATE_COMMIT with its named error, the
old model keeps serving and INFO says why; the boot path verifies the
serving slot and falls back. The host refuses early with the same error.
The unsigned device takes a signed model as it takes a blob."""

import pytest

import signed_setup
from test_update_sim import run
from rvne import cli
from rvne.flash import image as flash_image, partition
from rvne.io import blob, signed, upstream_init
from rvne.link.device import Device
from rvne.link.update import update_device
from rvne.targets import sim


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


serves, send, refused_at_commit = signed_setup.serves, signed_setup.send, signed_setup.refused_at_commit


def test_info_names_the_policy_keys_version_and_signer(setup, device, models):
    d = setup.digests
    info = serves(device, models["new"], 2, d["k2"])
    assert info.fields["policy"] == "signed"
    assert info.fields["keys"] == ",".join(d[k] for k in ("k1", "k2", "k3"))
    assert info.fields["revoked"] == d["k3"] and info.fields["refused"] == "-"
    # A newer model by the other trusted key.
    update_device(device, models["third"])
    serves(device, models["third"], 3, d["k1"])


def test_every_attack_is_refused_with_its_name_and_the_old_model_serves(setup, models, device, tmp_path, capsys):
    for what, data, code in signed_setup.attacks(setup, models["new"], models["third"], NEW, THIRD):
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
    rc, _, err = run(capsys, *argv)
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
    bad.write_bytes(signed_setup.with_blob_crc(signed_setup.flip(data, 24 + 5)))
    rc, err = _cli(capsys, "verify", bad, "--pubkey", setup.keys["k2"])
    assert rc == 1 and "E_BAD_SIGNATURE" in err
    # The external-signer flow: the payload, signed outside rvne, assembled by espsecure.
    payload = tmp_path / "m.payload"
    assert cli.main(["sign", str(src), "--model-version", "7", "--payload", "-o", str(payload)]) == 0
    assert payload.read_bytes() == data[:signed.payload_len(len(NEW))]


def test_update_says_before_sending_what_the_board_will_do(setup, models, device, tmp_path, capsys):
    """Issue 33, host UX: `rvne update` says the board's policy, the version
    against the serving one and the trusted signer before it sends."""
    path = tmp_path / "third.signed"
    path.write_bytes(models["third"])
    device.close()
    try:
        rc, out, err = run(capsys, "update", path, "-p", device.url)
    finally:
        device.__init__(device.url, timeout=10)
    assert rc == 0, err
    assert ("policy is signed: it will take version 3 (serving version 2), signed by trusted key "
            + setup.digests["k1"][:16]) in err
    serves(device, models["third"], 3, setup.digests["k1"])
