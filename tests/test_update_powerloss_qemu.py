"""Power loss during a model update on the emulated boards, through their
real flash path (QEMU lx60's CFI flash and the boards' driver; the ESP-IDF
app's esp_partition_* into Espressif QEMU's SPI flash): the reduced set
of tests/powerloss_boards.py's cuts (tools/powerloss.py runs the full one
and prints the table), and the selector states a cut or a damaged flash can
leave, each with the outcome docs/flash-layout.md ("Slots and selector")
gives it."""

import os
import shutil

import pytest

from rvne.flash import slots
from rvne.link.device import Device
from rvne.targets import esp32s3_qemu, qemu

import powerloss_boards as pb

# CI: at least 40 cuts per board: by bytes sent plus one inside each of the
# update's flash operations (lx60: 2 slot erases, 6 programs, the
# selector's erase and program = 10; S3: 2 erases, 3 programs, 2 = 7).
CI_CUTS = 40


@pytest.fixture(scope="module", params=["qemu", "qemu-lx106",
                                        pytest.param("qemu-esp32s3", marks=pytest.mark.esp_idf)])
def rig(request, tmp_path_factory):
    if request.param == esp32s3_qemu.NAME:
        # Marked esp_idf: deselected where the tools are missing (tests/conftest.py).
        esp32s3_qemu.check_tools()
        return pb.Rig(request.param, workdir=tmp_path_factory.mktemp("esp32s3"))
    board = qemu.BOARDS[request.param]
    missing = [t for t in (qemu.QEMU, *board.tools) if shutil.which(t) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and {' '.join(missing)} is missing: tools/bootstrap.sh installs {board.apt}")
        pytest.skip(f"{' '.join(missing)} not installed (apt-get install {board.apt})")
    return pb.Rig(request.param, workdir=tmp_path_factory.mktemp(board.core))


def test_cuts_keep_old_or_new_and_a_second_update_succeeds(rig):
    ops = sum(pb.op_counts(rig.models, pb.rig_chunk(rig), rig.sector).values())
    cuts = pb.plan(rig, CI_CUTS - ops)
    assert len(cuts) >= 40
    assert {c.kind for c in cuts} == {"bytes", *pb.OP_KINDS}
    outcomes = pb.run_cuts(rig, cuts)
    print(f"\n{rig.target}:\n{pb.table(outcomes)}")
    bad = [f"{o.cut}: {'; '.join(o.problems)}" for o in outcomes if not o.ok]
    assert not bad, "\n".join(bad)
    for o in outcomes:
        assert o.halted, o.cut
        assert o.served in ("old", "new") and o.second, o
        if o.cut.kind != "bytes" or not o.committed:
            assert o.served == "old", o       # no record for NEW was written yet


def test_an_operation_past_the_last_is_never_reached(rig):
    """The op cuts above cover every operation: one more of each kind than
    op_counts says is never reached, and the update completes."""
    counts = pb.op_counts(rig.models, pb.rig_chunk(rig), rig.sector)
    for kind in ("erase", "prog"):
        o = rig.run(pb.Cut(kind, counts[kind] + 1))
        assert not o.halted and any("never halted" in p for p in o.problems), o


# ---- selector states ------------------------------------------------------------------


def _image(rig, records, new_in_b=True, erase_b=False):
    """OLD in slot A, NEW in slot B (or B erased), and the two record copies
    as given (bytes, None: erased)."""
    lay = rig.layout
    img = bytearray(rig.base["bytes"])
    a, b = lay.slots
    img[b.offset:b.end] = b"\xff" * b.size
    if new_in_b and not erase_b:
        img[b.offset:b.offset + len(rig.models.new)] = rig.models.new
    for off, raw in zip(lay.copy_offsets(), records):
        img[off:off + slots.RECORD_LEN] = raw if raw is not None else b"\xff" * slots.RECORD_LEN
    return bytes(img)


def _record(rig, seq, slot, blob):
    return slots.encode_record(slots.Record(seq, slot, len(blob), rig.models.crc(blob)))


def _served(rig, image, tmp_path):
    """Boot `image`: what it serves, its banner, then an update to AGAIN:
    why that failed (None: it did not) and what is served after it."""
    path = tmp_path / "flash.img"
    path.write_bytes(image)
    tg = rig.boot(path)
    try:
        with Device(tg.url, timeout=pb.REPLY_TIMEOUT) as dev:
            served = rig.served(path, dev)
            second = rig.update(dev, rig.models.again)
            after = rig.served(path, dev)
    finally:
        tg.stop()
    return served, tg.banner, second, after


def test_torn_record_the_other_copy_wins(rig, tmp_path):
    """A record copy cut half-way through its program (its first 16 bytes
    written, the rest still erased) is corrupt; the intact copy names the
    slot that serves."""
    torn = _record(rig, 2, 1, rig.models.new)[:16] + b"\xff" * 16
    (name, slot, seq, problems), banner, second, after = _served(
        rig, _image(rig, [_record(rig, 1, 0, rig.models.old), torn]), tmp_path)
    assert (name, slot, seq, problems) == ("old", "a", "1", []), banner
    assert "selector copies valid/corrupt" in banner
    assert second is None and after[0] == "again" and after[1] == "b"


def test_both_copies_corrupt_slot_a_serves(rig, tmp_path):
    """No valid record at all (both copies damaged): slot A serves if it
    holds a valid blob, as ESP-IDF boots its first app without otadata; an
    update then writes a valid record again."""
    bad0 = bytearray(_record(rig, 3, 1, rig.models.new))
    bad0[5] ^= 0x40
    bad1 = b"\x00" * slots.RECORD_LEN
    (name, slot, _, problems), banner, second, after = _served(rig, _image(rig, [bytes(bad0), bad1]), tmp_path)
    assert (name, slot, problems) == ("old", "a", []), banner
    assert "selector copies corrupt/corrupt" in banner and "selector damaged" in banner
    assert second is None and after[0] == "again" and after[1] == "b"


def test_slot_erased_under_a_valid_record_falls_back(rig, tmp_path):
    """The newer record names slot B, which is erased: the older record's
    slot A serves (boot says so)."""
    image = _image(rig, [_record(rig, 1, 0, rig.models.old), _record(rig, 2, 1, rig.models.new)], erase_b=True)
    (name, slot, seq, problems), banner, second, after = _served(rig, image, tmp_path)
    assert (name, slot, seq, problems) == ("old", "a", "1", []), banner
    assert "older record seq 1" in banner
    assert second is None and after[0] == "again" and after[1] == "b"


def test_only_record_names_an_erased_slot_no_model_then_an_update_recovers(rig, tmp_path):
    """The one valid record names slot B and B is erased: no blob is served
    that no record vouches for (slot A's OLD included); INFO says why, and an
    update (into slot A) brings a model back."""
    image = _image(rig, [None, _record(rig, 2, 1, rig.models.new)], erase_b=True)
    (name, slot, _, problems), banner, second, after = _served(rig, image, tmp_path)
    assert name == "none" and problems and "E_ERASED" in problems[0], (name, problems, banner)
    assert "the recorded slot holds no valid blob" in banner
    assert second is None and after[0] == "again"
