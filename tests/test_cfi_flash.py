"""The lx60 boards' flash driver (firmware/xtensa/board/cfi_flash.h)
on both emulated cores, through QEMU's CFI flash as the firmware meets it:
the test image (xtensa/board/tests/test_cfi_flash.c) boots from flash like
the firmware, erases, programs and reads back scratch sectors while its own
code runs in place from the same flash, and ends QEMU through semihosting.

Booted twice on one image file: the second boot must find what the first
wrote, and the file itself must hold it (QEMU writes the flash through to
the file: what the power-loss tests rely on). The same test linked with the
command sequences left in flash must not pass: that is why they run from
RAM (docs/flash-layout.md, "Writing the flash")."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rvne.targets import build, qemu

ROOT = Path(__file__).resolve().parents[1]
PERSIST = 0x3F0000
SCRATCH = 0x3E0000
CORES = {"qemu": "lx6", "qemu-lx106": "lx106"}
CALL = re.compile(r"\bcall(?:x)?(?:0|4|8|12)\b")


def _pattern(i, seed):
    return ((i * 37 + seed) ^ (i >> 8)) & 0xFF


def _images(target):
    board = qemu.BOARDS[target]
    out = ROOT / "build" / board.core
    products = [out / "cfi-test.img", out / "cfi-test-xip.img"]
    sources = [ROOT / s for s in board.sources]
    stale = lambda: any(build.is_stale(p, sources) for p in products)   # noqa: E731
    if stale():
        build.run_make(ROOT, f"{board.core}-cfi-test", products, stale, f"the {board.core} flash test", 900)
    return products


def _boot(image, cpu, timeout=60):
    cmd = [qemu.QEMU, "-M", "lx60", "-cpu", cpu, "-semihosting", "-nographic", "-monitor", "none",
           "-serial", "stdio", "-drive", f"file={image},if=pflash,format=raw"]
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        return None, (exc.stdout or b"").decode("utf-8", "replace")
    return p.returncode, p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")


@pytest.fixture(params=sorted(CORES))
def target(request):
    board = qemu.BOARDS[request.param]
    missing = [t for t in (qemu.QEMU, *board.tools) if shutil.which(t) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and {' '.join(missing)} is missing: tools/bootstrap.sh installs {board.apt}")
        pytest.skip(f"{' '.join(missing)} not installed (apt-get install {board.apt})")
    return request.param


def test_driver_on_the_board_and_its_writes_reach_the_image_file(target, tmp_path):
    board = qemu.BOARDS[target]
    good, _ = _images(target)
    img = tmp_path / "flash.img"
    shutil.copyfile(good, img)
    before = img.read_bytes()

    rc, out = _boot(img, board.qemu_cpu)
    assert rc == 0, f"first boot: exit {rc}\n{out}"
    assert f"test_cfi_flash: {board.core} boot" in out
    assert "no previous boot's data" in out and "test_cfi_flash: PASS" in out, out
    assert "size=4194304 sector=65536 buffer=512" in out, out

    after = img.read_bytes()
    assert len(after) == len(before)
    # The file holds the pattern the firmware left, the scratch sector it
    # erased last reads erased, and nothing else in the image changed.
    assert after[PERSIST:PERSIST + 256] == bytes(_pattern(i, 11) for i in range(256))
    assert after[PERSIST + 256:PERSIST + 0x10000] == b"\xff" * (0x10000 - 256)
    assert after[SCRATCH:SCRATCH + 0x10000] == b"\xff" * 0x10000
    assert after[:SCRATCH] == before[:SCRATCH]

    rc, out = _boot(img, board.qemu_cpu)
    assert rc == 0, f"second boot: exit {rc}\n{out}"
    assert "previous boot's data found" in out and "test_cfi_flash: PASS" in out, out


def test_command_sequences_run_from_flash_do_not_work(target, tmp_path):
    """While the part is in command mode every read of it returns its status
    register, instruction fetches included: the driver linked with its
    command sequences in flash must not get through the test (it hangs or
    faults; either way no PASS)."""
    board = qemu.BOARDS[target]
    _, xip = _images(target)
    img = tmp_path / "flash.img"
    shutil.copyfile(xip, img)
    rc, out = _boot(img, board.qemu_cpu, timeout=5)
    assert f"test_cfi_flash: {board.core} boot" in out, out
    assert "PASS" not in out and rc != 0, f"exit {rc}\n{out}"


def test_command_sequences_are_linked_into_ram_and_call_nothing(target):
    """What the XIP test above shows must hold for the real driver: every
    command-sequence function lies in RAM, and its code calls nothing (a
    call could reach flash, and on the windowed core could raise a window
    exception whose vector is in flash)."""
    board = qemu.BOARDS[target]
    good, _ = _images(target)
    elf = good.with_suffix(".elf")
    nm = subprocess.run(["xtensa-lx106-elf-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    syms = {line.split()[2]: int(line.split()[0], 16) for line in nm.splitlines() if len(line.split()) == 3}
    ram = (0xC0080000, 0xC0100000) if board.core == "lx6" else (0x60000000, 0x61000000)
    flash = (board.flash_map, board.flash_map + 0x400000)
    for fn in ("cfi_cmd_query", "cfi_cmd_erase", "cfi_cmd_program"):
        assert ram[0] <= syms[fn] < ram[1], f"{fn} at 0x{syms[fn]:08x}, not in RAM"
    for fn in ("cfi_flash_write", "main"):
        assert flash[0] <= syms[fn] < flash[1], f"{fn} at 0x{syms[fn]:08x}, expected in flash"
    obj = ROOT / "build" / board.core / "board" / "cfi_cmd.o"
    if board.core == "lx6":
        code = obj.with_suffix(".s").read_text()      # llc's output (objdump lacks the windowed ops)
    else:
        code = subprocess.run(["xtensa-lx106-elf-objdump", "-d", str(obj)], capture_output=True, text=True,
                              check=True).stdout
    assert not CALL.findall(code), f"cfi_cmd.o calls out: {CALL.findall(code)}"
    # The same reading finds the calls the policy half makes.
    policy = obj.with_name("cfi_flash.o")
    if board.core == "lx6":
        code = policy.with_suffix(".s").read_text()
    else:
        code = subprocess.run(["xtensa-lx106-elf-objdump", "-d", str(policy)], capture_output=True, text=True,
                              check=True).stdout
    assert CALL.findall(code), "no call found in cfi_flash.o either: the check reads nothing"
