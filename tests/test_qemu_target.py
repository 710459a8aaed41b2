"""The emulated Xtensa boards, each test on both: "qemu" (the esp32-class
core: windowed ABI, FPU, clang/llc-22) and "qemu-lx106" (call0, soft-float,
gcc), booting from their flash images on QEMU's lx60 board. Boots with a good blob (FP32, FP16), with an erased partition, a
bad CRC and a wrong-contract blob (each reports the reason and answers the
protocol), without a partition (E_NO_PARTITION) or with one too small for a
header (E_TOO_SHORT), and with a fault (reported, not hung)."""

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rvne.errors import ProtocolError, TargetError
from rvne.flash import image as flash_image, partition
from rvne.io import blob, upstream_init
from rvne.link.device import Device
from rvne.model import verdict
from rvne.model.contract import Dims
from rvne.targets import qemu, start_target

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 20.0          # per request: soft-float on an emulated core


# Every board; a missing toolchain fails its tests (bootstrap installs both).
@pytest.fixture(scope="module", params=sorted(qemu.BOARDS))
def board(request):
    return qemu.BOARDS[request.param]


@pytest.fixture(scope="module")
def good_blob():
    return upstream_init.init_blob()


@pytest.fixture(scope="module")
def built_image(board):
    return qemu.ensure_built(board)


def frames(n, seed=1):
    return np.random.default_rng(seed).standard_normal((n, 16)).astype(np.float32)


@pytest.mark.parametrize("fp16", [False, True], ids=["fp32", "fp16"])
def test_boots_loads_and_agrees_with_the_reference(board, built_image, fp16):
    data = upstream_init.init_blob(fp16=fp16)
    parsed = blob.parse_loadable(data)
    with start_target(board.target, data) as dev:
        assert dev.url.startswith("socket://127.0.0.1:")
        assert f"rvne: {board.core} boot, firmware 0.1.0, " in dev.banner
        assert f"rvne/0.1.0 {board.core} ready: OK dims=16,4,1,32,2,4" in dev.banner
        assert ("partition rvne_a offset=0x00130000 rvne_b offset=0x00290000 rvne_sel offset=0x00110000 "
                "slot size=0x00160000") in dev.banner
        assert f"rvne: {board.core} selector copies erased/erased; serving slot a (no record yet)" in dev.banner
        with Device(dev.url, timeout=TIMEOUT) as d:
            info = d.info()
            assert (info.port, info.status, info.reason) == (board.core, "loaded", "OK")
            assert info.dtype == ("fp16" if fp16 else "fp32") and info.crc == parsed.crc_stored
            assert info.clock == "cycles" and info.line_max >= 1024
            x = frames(12)
            got = d.run(x)
            v = verdict.against_blob(got, parsed, x, 100)
            assert v["ok"], v
            stats = d.stats()
            assert stats["pushes"] == 12 and stats["push_total"] > 0


@pytest.mark.parametrize("make_part, reason", [
    (lambda g: b"", "E_ERASED"),
    (lambda g: g[:100] + bytes([g[100] ^ 0xFF]) + g[101:], "E_CRC"),
    (lambda g: blob.serialize(blob.Header.for_dims(Dims.of((16, 4, 1, 32, 2, 4))), bytes(40)), "E_CONTRACT"),
    (lambda g: b"RVNE" + g[4:], "E_BAD_MAGIC"),
], ids=["erased", "bad-crc", "wrong-contract", "byte-swapped-magic"])
def test_bad_partitions_boot_report_and_answer(board, built_image, good_blob, make_part, reason):
    with start_target(board.target, make_part(good_blob)) as dev:
        assert f"{board.core} ready: {reason}" in dev.banner
        with Device(dev.url, timeout=TIMEOUT) as d:
            d.ping()
            info = d.info()
            assert (info.status, info.reason) == ("error", reason)
            if reason == "E_CRC":
                assert info.dims == (16, 4, 1, 32, 2, 4)     # the header was readable
            with pytest.raises(ProtocolError) as exc:
                d.run(frames(1))
            assert exc.value.code == "E_NO_MODEL"
            d.ping()                                         # still serving
        assert dev.alive


def _image_with_table(board, tmp_path, csv):
    """The built firmware in an image whose table comes from `csv`."""
    img = Path(qemu.ensure_built(board)).read_bytes()
    boot = img[:0x8000].rstrip(b"\xFF")
    factory = partition.read_csv(REPO / "partitions.csv").find("factory", ptype=partition.APP)
    app = img[factory.offset:factory.end].rstrip(b"\xFF")
    path = tmp_path / "custom.img"
    path.write_bytes(flash_image.build_image(boot, app, partition.parse_csv(csv)))
    return path


def test_partition_found_through_the_table_not_a_fixed_offset(board, built_image, good_blob, tmp_path):
    path = _image_with_table(board, tmp_path, "factory, app, factory, 0x10000, 1M\n"
                                       "first, data, 0x40, 0x200000, 64K\nrvne, data, 0x40, 0x300000, 1M\n")
    flash_image.write_blob(path, good_blob)
    with qemu.start(None, image=path, board=board.target) as dev:
        assert "partition rvne offset=0x00300000 size=0x00100000" in dev.banner
        assert "ready: OK" in dev.banner
        # The layout before two slots: it serves, and refuses an update in one named line.
        assert f"rvne: {board.core} single-partition layout 'rvne'" in dev.banner
        with Device(dev.url, timeout=TIMEOUT) as d:
            info = d.info()
            assert info.loaded and info.fields["layout"] == "single" and info.fields["slot"] == "a"
            with pytest.raises(ProtocolError) as exc:
                d.request("UPDATE_BEGIN", len(good_blob), f"{info.crc:08X}")
            assert exc.value.code == "E_NO_SLOTS"
            assert d.info().crc == info.crc


def test_no_rvne_partition_still_serves(board, built_image, tmp_path):
    path = _image_with_table(board, tmp_path, "factory, app, factory, 0x10000, 1M\nother, data, 0x40, , 1M\n")
    with qemu.start(None, image=path, board=board.target) as dev:
        assert "model partitions (rvne_a/rvne_b/rvne_sel or rvne): no such partition in the table" in dev.banner
        assert "ready: E_NO_PARTITION" in dev.banner
        with Device(dev.url, timeout=TIMEOUT) as d:
            d.ping()
            info = d.info()
            assert (info.status, info.reason, info.dims) == ("error", "E_NO_PARTITION", None)
            with pytest.raises(ProtocolError) as exc:
                d.run(frames(1))
            assert exc.value.code == "E_NO_MODEL"


def test_partition_smaller_than_a_header_is_too_short(board, built_image, tmp_path):
    # The partition exists (a 16-byte row in the table): rule 1's E_TOO_SHORT,
    # not E_NO_PARTITION.
    path = _image_with_table(board, tmp_path, "factory, app, factory, 0x10000, 1M\nrvne, data, 0x40, 0x300000, 16\n")
    with qemu.start(None, image=path, board=board.target) as dev:
        assert "partition rvne offset=0x00300000 size=0x00000010" in dev.banner
        assert "ready: E_TOO_SHORT" in dev.banner
        with Device(dev.url, timeout=TIMEOUT) as d:
            assert d.info().reason == "E_TOO_SHORT"


def test_table_with_a_bad_md5_is_not_trusted(board, built_image, good_blob, tmp_path):
    # The firmware checks the MD5 row with its own MD5: a good table boots
    # (every other test), one flipped label byte must not.
    img = bytearray(flash_image.with_model(Path(built_image).read_bytes(), good_blob))
    img[0x8000 + 12] ^= 0x20                              # 'nvs' -> 'Nvs'
    path = tmp_path / "badmd5.img"
    path.write_bytes(img)
    with qemu.start(None, image=path, board=board.target) as dev:
        assert "partition table corrupt" in dev.banner
        assert "ready: E_NO_PARTITION" in dev.banner


def test_window_option_and_stop(board, built_image, good_blob):
    dev = qemu.start(good_blob, window=7, board=board.target)
    try:
        with Device(dev.url, timeout=TIMEOUT) as d:
            assert d.info().window == 7
        proc, files = dev.proc, list(dev._files)
    finally:
        dev.stop()
    assert proc.poll() is not None
    assert not any(os.path.exists(f) for f in files)
    dev.stop()                                           # idempotent


def test_a_fault_is_reported_not_hung(board, built_image, good_blob, tmp_path):
    elf = REPO / "build" / board.core / "rvne.elf"
    nm = subprocess.run(["xtensa-lx106-elf-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    main = next(int(line.split()[0], 16) for line in nm.splitlines() if line.endswith(" T main"))
    img = bytearray(Path(built_image).read_bytes())
    off = main - board.flash_map
    img[off:off + 3] = b"\x00\x00\x00"                  # ILL: an illegal instruction at main's entry
    path = tmp_path / "fault.img"
    path.write_bytes(img)
    with pytest.raises(TargetError, match=rf"faulted while booting: rvne: {board.core} FAULT user "
                                          rf"exccause=0x00000000 epc1=0x{main:08x}"):
        qemu.start(good_blob, image=path, start_timeout=10, board=board.target)


def test_deep_calls_spill_and_refill_register_windows(built_image, good_blob):
    # The kernel's call chains are deeper than de233_fpu's 32 address
    # registers hold: a run that agrees with the reference went through the
    # window overflow and underflow handlers of start.S many times. Here the
    # same on a window of 1 and after RESET, where the paths differ.
    with start_target("qemu", good_blob, window=1) as dev, Device(dev.url, timeout=TIMEOUT) as d:
        x = frames(3)
        got = d.run(x)
        v = verdict.against_blob(got, blob.parse_loadable(good_blob), x, 1)
        assert v["ok"], v


def test_c_kernel_build_is_its_own_image_and_agrees(good_blob):
    # The "qemu" board's firmware with the core's C kernels only
    # (LX6_KERNELS=c): tools/bench_icount.py's baseline. It must be a build
    # of its own that links none of the port's assembly kernels, and agree.
    image = qemu.ensure_built(qemu.C_KERNELS)
    assert image == REPO / "build" / "lx6-c" / "flash.img"
    assert "_ae32" not in (REPO / "build" / "lx6-c" / "rvne.map").read_text()
    qemu.ensure_built("qemu")           # and the default build links them (docs/targets.md, Kernels)
    nm = subprocess.run(["xtensa-lx106-elf-nm", str(REPO / "build" / "lx6" / "rvne.elf")], capture_output=True,
                        text=True, check=True).stdout
    for kernel in ("matvec_f32", "scores_f32", "wsum_f32"):
        assert f" T rvne_{kernel}_ae32" in nm
    with qemu.start(good_blob, board=qemu.C_KERNELS) as dev, Device(dev.url, timeout=TIMEOUT) as d:
        assert "rvne: lx6 boot" in dev.banner
        x = frames(5)
        v = verdict.against_blob(d.run(x), blob.parse_loadable(good_blob), x, 100)
        assert v["ok"], v


def test_instructions_per_push_need_icount(good_blob):
    with start_target("qemu", good_blob) as dev:
        assert dev.calibration is not None and dev.instructions(1000) is None
    with start_target("qemu", good_blob, icount=True) as dev:
        n, ticks = dev.calibration
        assert n == 2_000_000 and dev.instructions(ticks) == pytest.approx(n)


def test_missing_tools_name_the_packages(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(TargetError, match="apt-get install qemu-system-misc clang-22 llvm-22"):
        qemu.start(b"")
    with pytest.raises(TargetError, match="apt-get install qemu-system-misc gcc-xtensa-lx106"):
        start_target("qemu-lx106", b"")


def test_unknown_board_is_named():
    with pytest.raises(TargetError, match="unknown emulated board 'esp32s3'"):
        qemu.start(b"", board="esp32s3")


def test_partition_must_be_bytes():
    with pytest.raises(TargetError, match="must be bytes"):
        qemu.start("not bytes")
