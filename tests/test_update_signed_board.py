"""Signed models on the `qemu` board (the lx6 firmware built with the
signed policy, `make lx6 LX6_SIGNED=1`, Mbed TLS from Debian's source
package, on QEMU's lx60 through its CFI flash path): the attacks of issue
33 refused at UPDATE_COMMIT with their named errors and the old model
serving, INFO's policy, keys, version and signer; the boot path's fallback
from a slot whose signature fails; and power cuts during a signed update
(tests/powerloss_boards.py, a reduced set; `tools/powerloss.py --target
qemu --signed` runs 200)."""

import pytest

import powerloss_boards as pb
import signed_setup
from rvne.flash import image as flash_image
from rvne.io import signed, upstream_init
from rvne.link.device import Device
from rvne.link.update import update_device
from rvne.targets import qemu

OLD = upstream_init.init_blob((8, 2, 1, 8, 1, 2), seed=11)
NEW = upstream_init.init_blob(seed=12)
THIRD = upstream_init.init_blob((8, 2, 1, 8, 1, 2), seed=13)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    s = signed_setup.make(tmp_path_factory.mktemp("signed-board"))
    s.images = s.board_images()
    return s


@pytest.fixture(scope="module")
def models(setup):
    return {"old": setup.sign(OLD, 1, "k1"), "new": setup.sign(NEW, 2, "k2"), "third": setup.sign(THIRD, 3, "k1")}


def boot(img):
    return qemu.start(image=img, persist=True, start_timeout=60)


def test_the_board_refuses_every_attack_and_keeps_serving(setup, models, tmp_path):
    img = tmp_path / "flash.img"
    img.write_bytes(flash_image.with_model(setup.images[0].read_bytes(), models["old"]))
    with boot(img) as t, Device(t.url, timeout=60) as dev:
        info = signed_setup.serves(dev, models["old"], 1, setup.digests["k1"])
        assert info.fields["policy"] == "signed" and info.fields["revoked"] == setup.digests["k3"]
        update_device(dev, models["new"])
        signed_setup.serves(dev, models["new"], 2, setup.digests["k2"])
        for what, data, code in signed_setup.attacks(setup, models["new"], models["third"], NEW, THIRD):
            signed_setup.refused_at_commit(dev, data, code)
            assert dev.info().crc == signed.check_model(models["new"]).crc_stored, what
        signed_setup.serves(dev, models["new"], 2, setup.digests["k2"])
        # A good update still goes through after them (into slot A, over the attacks' bytes).
        update_device(dev, models["third"])
        assert signed_setup.serves(dev, models["third"], 3, setup.digests["k1"]).fields["slot"] == "a"
    # Slot A's signature broken in flash: the next boot falls back to slot B's model.
    a = flash_image.read_table(img.read_bytes()).find("rvne_a")
    raw = bytearray(img.read_bytes())
    raw[a.offset + signed.payload_len(len(THIRD)) + 812 + 7] ^= 0x40
    img.write_bytes(bytes(raw))
    with boot(img) as t, Device(t.url, timeout=60) as dev:
        info = signed_setup.serves(dev, models["new"], 2, setup.digests["k2"])
        assert info.fields["slot"] == "b" and "older record" in t.banner


def test_power_cuts_in_a_signed_update_leave_old_or_new_verified(setup, models, tmp_path):
    rig = pb.Rig("qemu", pb.Models(models["old"], models["new"], models["third"]), workdir=tmp_path,
                 images=setup.images, commit_span=pb.COMMIT_SPAN_SIGNED)
    cuts = pb.plan(rig, 8)
    outcomes = pb.run_cuts(rig, cuts, workers=2)
    assert len(outcomes) == len(cuts) >= 8
    broken = [o for o in outcomes if not o.ok]
    assert not broken, pb.table(outcomes)
    assert {o.served for o in outcomes} <= {"old", "new"}
    assert any(o.cut.kind != "bytes" and o.halted for o in outcomes)
