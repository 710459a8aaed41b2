"""`rvne update` and the UPDATE_* commands on the virtual device booting a
flash image (docs/protocol.md, "Updating the model"): the update switches
the model and `rvne check` passes after it; every bad input is refused in
one named line with the running model untouched (INFO and a RUN that
agrees with the old model's reference)."""

import base64
import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from rvne import cli
from rvne.errors import ProtocolError, UpdateError
from rvne.flash import image as flash_image, partition
from rvne.io import blob, upstream_init
from rvne.link.device import Device
from rvne.link.update import update_device
from rvne.model import verdict
from rvne.model.contract import Dims
from rvne.targets import sim

ROOT = Path(__file__).resolve().parents[1]
OLD = upstream_init.init_blob()
NEW = upstream_init.init_blob(seed=11)
NEW_CRC = blob.parse_loadable(NEW).crc_stored
OLD_CRC = blob.parse_loadable(OLD).crc_stored


def image(tmp_path, csv=None, model=OLD, name="flash.img"):
    table = partition.parse_csv(csv) if csv else partition.read_csv(ROOT / "partitions.csv")
    path = tmp_path / name
    path.write_bytes(flash_image.with_model(flash_image.build_image(b"", b"", table), model))
    return path


@pytest.fixture
def device(tmp_path):
    with sim.start(None, image=image(tmp_path)) as t, Device(t.url, timeout=5) as dev:
        yield dev


def run(capsys, *argv):
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def run_beside(capsys, dev, *argv):
    """The CLI on dev's port: rvne opens a port exclusively, so this client
    lets go of it for the command and takes it again after."""
    dev.close()
    try:
        return run(capsys, *argv)
    finally:
        dev.__init__(dev.url, timeout=5)


def serves(dev, data):
    """The device serves `data`'s model: INFO and logits that agree with its reference."""
    info = dev.info()
    parsed = blob.parse_loadable(data)
    assert info.loaded and info.crc == parsed.crc_stored and info.blob_len == len(data)
    x = np.random.default_rng(3).standard_normal((6, parsed.header.input_dim)).astype(np.float32)
    assert verdict.against_blob(dev.run(x), parsed, x, info.window)["ok"]
    return info


def chunk(dev, off, data, n=1000):
    piece = data[off:off + n]
    return dev.request("UPDATE_CHUNK", off, f"{zlib.crc32(piece):08X}", base64.b64encode(piece).decode())


def send_all(dev, data, step=10000):
    for off in range(0, len(data), step):
        chunk(dev, off, data, step)


def refused(code, fn, *args):
    with pytest.raises(ProtocolError) as exc:
        fn(*args)
    assert exc.value.code == code and "\n" not in str(exc.value)
    return str(exc.value)


# -- the update -----------------------------------------------------------------------
def test_update_switches_and_check_passes_after(tmp_path, capsys):
    img = image(tmp_path)
    new = tmp_path / "new.rvne"
    new.write_bytes(NEW)
    rc, out, err = run(capsys, "update", new, "--target", "sim", "--image", img)
    assert rc == 0, err
    assert out.startswith("updated ") and f"crc={NEW_CRC:08X}" in out and "slot b seq 2" in out
    assert "  crc       " + f"{NEW_CRC:08X}" in out            # the device's INFO after the switch
    rc, out, err = run(capsys, "check", new, "--target", "sim", "--image", img, "--vectors", "1")
    assert rc == 0 and out.rstrip().endswith("PASS"), out + err
    # And back, as JSON: typed values, the device's INFO inside.
    old = tmp_path / "old.rvne"
    old.write_bytes(OLD)
    rc, out, err = run(capsys, "update", old, "--target", "sim", "--image", img, "--json")
    assert rc == 0, err
    got = json.loads(out)
    assert got["crc"] == OLD_CRC and got["slot"] == "a" and got["seq"] == 3 and got["bytes"] == len(OLD)
    assert got["info"]["crc"] == OLD_CRC and got["info"]["status"] == "loaded"


def test_inference_goes_on_during_an_update_and_info_says_so(device):
    serves(device, OLD)
    r = device.request("UPDATE_BEGIN", len(NEW), f"{NEW_CRC:08X}")
    assert r.field("slot") == "b"
    step = 10000
    for off in range(0, len(NEW), step):
        piece = NEW[off:off + step]
        device.request("UPDATE_CHUNK", off, f"{zlib.crc32(piece):08X}", base64.b64encode(piece).decode())
        info = serves(device, OLD)
        assert info.fields["update"] == f"{min(off + step, len(NEW))}/{len(NEW)}"
    r = device.request("UPDATE_COMMIT", f"{NEW_CRC:08X}")
    assert (r.field("slot"), r.field("crc")) == ("b", f"{NEW_CRC:08X}")
    info = serves(device, NEW)
    assert info.fields["update"] == "idle" and info.fields["slot"] == "b"


def test_a_bad_chunk_is_refused_and_resent(device):
    # Damage the first chunk's CRC once, as line noise the line CRC missed would.
    sent = []
    real = device.request

    def noisy(cmd, *args):
        if cmd == "UPDATE_CHUNK" and not sent:
            sent.append(args)
            args = (args[0], f"{int(args[1], 16) ^ 1:08X}", args[2])
        return real(cmd, *args)

    device.request = noisy
    res = update_device(device, NEW)
    assert res.resent == 1 and res.info.crc == NEW_CRC
    device.request = real
    serves(device, NEW)


# -- bad input: one named line each, the old model untouched -----------------------------
def test_a_blob_for_another_contract(device, tmp_path, capsys):
    h = blob.Header.for_dims(Dims.of((16, 4, 1, 32, 2, 4)))
    other = blob.serialize(h, bytes(4 * 100))                 # weights_len not the dims' size
    crc = zlib.crc32(other[:-4])
    device.request("UPDATE_BEGIN", len(other), f"{crc:08X}")
    send_all(device, other)
    msg = refused("E_CONTRACT", device.request, "UPDATE_COMMIT", f"{crc:08X}")
    assert "old model serves" in msg
    serves(device, OLD)
    # rvne update refuses it before sending anything.
    path = tmp_path / "other.rvne"
    path.write_bytes(other)
    rc, _, err = run_beside(capsys, device, "update", path, "-p", device.url)
    assert rc == 1 and err.count("\n") == 1 and "E_CONTRACT" in err
    assert device.info().fields["update"] == "idle"
    serves(device, OLD)


def test_a_nan_weight_with_a_correct_crc_is_refused(device, tmp_path, capsys):
    """Issue 33: the device served a blob with a NaN weight and a correct CRC
    (rule 18, E_NONFINITE): refused at COMMIT as at boot, the old model
    kept; `rvne verify` and `rvne update` refuse it before anything is sent."""
    import struct

    nan = bytearray(NEW)
    nan[24 + 4 * 77:24 + 4 * 78] = struct.pack("<f", float("nan"))
    nan[-4:] = struct.pack("<I", zlib.crc32(bytes(nan[:-4])))
    crc = zlib.crc32(bytes(nan[:-4]))
    device.request("UPDATE_BEGIN", len(nan), f"{crc:08X}")
    send_all(device, bytes(nan))
    msg = refused("E_NONFINITE", device.request, "UPDATE_COMMIT", f"{crc:08X}")
    assert "old model serves" in msg
    serves(device, OLD)
    path = tmp_path / "nan.rvne"
    path.write_bytes(bytes(nan))
    rc, _, err = run(capsys, "verify", path)
    assert rc == 1 and err.count("\n") == 1 and "E_NONFINITE" in err and "weight 77" in err
    rc, _, err = run_beside(capsys, device, "update", path, "-p", device.url)
    assert rc == 1 and err.count("\n") == 1 and "E_NONFINITE" in err
    serves(device, OLD)


def test_a_size_shorter_than_the_blob_is_e_length(device):
    """docs/protocol.md: SIZE not the blob's length is E_LENGTH (was E_CRC:
    the loader read the CRC from past the bytes sent)."""
    short = len(NEW) - 1000
    device.request("UPDATE_BEGIN", short, f"{NEW_CRC:08X}")
    send_all(device, NEW[:short])
    refused("E_LENGTH", device.request, "UPDATE_COMMIT", f"{NEW_CRC:08X}")
    serves(device, OLD)
    msg = refused("E_UPDATE_SIZE", device.request, "UPDATE_BEGIN", 10_000_000, f"{NEW_CRC:08X}")
    assert "slot bytes: " in msg and "SIZE is below 28" in msg
    device.request("UPDATE_BEGIN", 100, f"{NEW_CRC:08X}")
    msg = refused("E_UPDATE_SIZE", chunk, device, 0, NEW, 200)
    assert "passes the update's SIZE; SIZE: 100" in msg
    device.request("UPDATE_ABORT")


def test_a_truncated_transfer(device):
    device.request("UPDATE_BEGIN", len(NEW), f"{NEW_CRC:08X}")
    device.request("UPDATE_CHUNK", 0, f"{zlib.crc32(NEW[:5000]):08X}", base64.b64encode(NEW[:5000]).decode())
    msg = refused("E_INCOMPLETE", device.request, "UPDATE_COMMIT", f"{NEW_CRC:08X}")
    assert "offset 5000" in msg
    serves(device, OLD)
    # Power cut before the rest: the device reboots into the old model (tools/powerloss.py for the rest).


def test_chunks_out_of_order(device):
    device.request("UPDATE_BEGIN", len(NEW), f"{NEW_CRC:08X}")
    msg = refused("E_UPDATE_ORDER", chunk, device, 100, NEW)
    assert "expected offset 0" in msg
    chunk_len = 1000
    device.request("UPDATE_CHUNK", 0, f"{zlib.crc32(NEW[:chunk_len]):08X}", base64.b64encode(NEW[:chunk_len]).decode())
    refused("E_UPDATE_ORDER", device.request, "UPDATE_CHUNK", 0, f"{zlib.crc32(NEW[:chunk_len]):08X}",
            base64.b64encode(NEW[:chunk_len]).decode())
    serves(device, OLD)


def test_a_commit_with_the_wrong_crc(device):
    device.request("UPDATE_BEGIN", len(NEW), f"{NEW_CRC:08X}")
    send_all(device, NEW)
    refused("E_UPDATE_CRC", device.request, "UPDATE_COMMIT", f"{NEW_CRC ^ 0x100:08X}")
    serves(device, OLD)
    assert device.info().fields["update"] == "idle"       # abandoned: a new BEGIN is welcome
    # A BEGIN that named another CRC than the blob carries is refused at COMMIT too.
    device.request("UPDATE_BEGIN", len(NEW), f"{OLD_CRC:08X}")
    send_all(device, NEW)
    refused("E_UPDATE_CRC", device.request, "UPDATE_COMMIT", f"{OLD_CRC:08X}")
    serves(device, OLD)


def test_a_second_begin_mid_update_and_a_host_killed_mid_update(device, tmp_path, capsys):
    device.request("UPDATE_BEGIN", len(NEW), f"{NEW_CRC:08X}")
    device.request("UPDATE_CHUNK", 0, f"{zlib.crc32(NEW[:64]):08X}", base64.b64encode(NEW[:64]).decode())
    refused("E_UPDATE_BUSY", device.request, "UPDATE_BEGIN", len(NEW), f"{NEW_CRC:08X}")
    serves(device, OLD)
    # The first host is gone (as if killed): rvne update says what to do, --abort does it.
    path = tmp_path / "new.rvne"
    path.write_bytes(NEW)
    rc, _, err = run_beside(capsys, device, "update", path, "-p", device.url)
    assert rc == 1 and err.count("\n") == 1 and "E_UPDATE_BUSY" in err and "UPDATE_ABORT" in err
    serves(device, OLD)
    rc, out, err = run_beside(capsys, device, "update", path, "-p", device.url, "--abort")
    assert rc == 0, err
    serves(device, NEW)


def test_a_device_without_the_two_slot_layout(tmp_path, capsys):
    path = tmp_path / "new.rvne"
    path.write_bytes(NEW)
    single = image(tmp_path, "factory, app, factory, 0x10000, 1M\nrvne, data, 0x40, 0x110000, 2M\n",
                   name="single.img")
    with sim.start(None, image=single) as t, Device(t.url, timeout=5) as dev:
        info = serves(dev, OLD)
        assert info.fields["layout"] == "single"
        msg = refused("E_NO_SLOTS", dev.request, "UPDATE_BEGIN", len(NEW), f"{NEW_CRC:08X}")
        assert "rvne flash" in msg
        rc, _, err = run_beside(capsys, dev, "update", path, "-p", t.url)
        assert rc == 1 and err.count("\n") == 1 and "E_NO_SLOTS" in err
        serves(dev, OLD)
    # The virtual device serving a plain blob file has no flash to write either.
    with sim.start(OLD) as t, Device(t.url, timeout=5) as dev:
        refused("E_NO_SLOTS", dev.request, "UPDATE_BEGIN", len(NEW), f"{NEW_CRC:08X}")
        serves(dev, OLD)


def test_update_usage_errors(capsys, tmp_path):
    rc, _, err = run(capsys, "update", "x.rvne", "--target", "sim")
    assert rc == 2 and "--target and --image go together" in err
    rc, _, err = run(capsys, "update", "x.rvne", "-p", "/dev/null", "--image", "x.img")
    assert rc == 2
    rc, _, err = run(capsys, "update", tmp_path / "absent.rvne", "-p", "/dev/null")
    assert rc == 1 and "absent.rvne" in err and err.count("\n") == 1


def test_an_update_error_carries_the_device_code():
    exc = UpdateError("the update refused by the device: E_NO_SLOTS: ...", "E_NO_SLOTS")
    assert exc.code == "E_NO_SLOTS"


def test_info_json_types_the_slot_fields(device, capsys):
    rc, out, err = run_beside(capsys, device, "device", "info", "-p", device.url, "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert (doc["layout"], doc["slot"], doc["seq"], doc["update"]) == ("slots", "a", 1, "idle")


# -- boot outcomes (docs/flash-layout.md, "Slots and selector") ----------------------------
def _two_models(tmp_path):
    """An image whose slot A holds OLD (record seq 1, copy 0) and slot B NEW (seq 2, copy 1)."""
    img = image(tmp_path)
    with sim.start(None, image=img) as t, Device(t.url, timeout=5) as dev:
        update_device(dev, NEW)
    return img


def _sel(img):
    table = flash_image.read_table(img.read_bytes())
    return table.find("rvne_sel"), table.find("rvne_a"), table.find("rvne_b")


def _patch(img, offset, data):
    raw = bytearray(img.read_bytes())
    raw[offset:offset + len(data)] = data
    img.write_bytes(bytes(raw))


def _boot(img):
    with sim.start(None, image=img) as t, Device(t.url, timeout=5) as dev:
        info = dev.info()
        served = None
        for name, data in (("old", OLD), ("new", NEW)):
            if info.loaded and info.crc == blob.parse_loadable(data).crc_stored:
                served = name
                serves(dev, data)
        return info, served


def test_boot_takes_the_higher_valid_record(tmp_path):
    img = _two_models(tmp_path)
    info, served = _boot(img)
    assert (served, info.fields["slot"], info.fields["seq"]) == ("new", "b", "2")


def test_boot_with_a_torn_newer_record_serves_the_older(tmp_path):
    img = _two_models(tmp_path)
    sel, _, _ = _sel(img)
    _patch(img, sel.offset + sel.size // 2 + 16, b"\xff" * 16)        # copy 1 half programmed
    info, served = _boot(img)
    assert (served, info.fields["slot"], info.fields["seq"]) == ("old", "a", "1")


def test_boot_with_both_copies_corrupt_serves_slot_a(tmp_path):
    img = _two_models(tmp_path)
    sel, _, _ = _sel(img)
    _patch(img, sel.offset + 4, b"\x00")
    _patch(img, sel.offset + sel.size // 2 + 4, b"\x00")
    info, served = _boot(img)
    assert (served, info.fields["slot"], info.fields["seq"]) == ("old", "a", "-")


def test_boot_with_the_recorded_slot_erased_serves_the_other_record(tmp_path):
    img = _two_models(tmp_path)
    _, _, b = _sel(img)
    _patch(img, b.offset, b"\xff" * b.size)
    info, served = _boot(img)
    assert (served, info.fields["slot"], info.fields["seq"]) == ("old", "a", "1")
    # Both recorded slots erased: no model, the newest record's slot's reason.
    _, a, _ = _sel(img)
    _patch(img, a.offset, b"\xff" * a.size)
    info, served = _boot(img)
    assert served is None and not info.loaded and info.reason == "E_ERASED"


def test_two_updates_of_one_image_at_once_run_one_after_the_other(tmp_path):
    """Issue 33: two `rvne update --target sim --image IMG` at once both said
    "slot b seq 2" and left slot b a mix of both blobs. The image is locked
    while a device boots it, so the second waits and updates what the first
    left: seqs 2 and 3, each caller told the model it installed, and the
    image boots the one that finished last."""
    import os
    import subprocess
    import sys

    img = image(tmp_path)
    third = upstream_init.init_blob(seed=12)
    paths = []
    for name, data in (("new", NEW), ("third", third)):
        paths.append(tmp_path / f"{name}.rvne")
        paths[-1].write_bytes(data)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "host")}
    procs = [subprocess.Popen([sys.executable, "-m", "rvne", "update", str(p), "--target", "sim", "--image",
                               str(img), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for p in paths]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        results.append(json.loads(out))
    assert sorted(r["seq"] for r in results) == [2, 3]
    assert sorted(r["slot"] for r in results) == ["a", "b"]
    for r, data in zip(results, (NEW, third)):
        assert r["crc"] == r["info"]["crc"] == blob.parse_loadable(data).crc_stored
    last, data = max(zip(results, (NEW, third)), key=lambda rd: rd[0]["seq"])
    with sim.start(None, image=img) as t, Device(t.url, timeout=5) as dev:
        info = serves(dev, data)
        assert info.fields["seq"] == "3" and info.fields["slot"] == last["slot"]
