"""The device suite's board path (`pytest tests/hil --target esp32s3 --port
P`) end to end against a stand-in board (tests/hil/standin.py): a virtual
device on a pty whose flash is a partition file, written through the
suite's flashing hook. The user's model has dims of its own; the suite
flashes every partition it needs (FP32, FP16, erased, corrupt, wrong
contract), reads the banner after each reset, skips nothing, and puts the
user's model back."""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from rvne.io import upstream_init

ROOT = Path(__file__).resolve().parents[1]
STANDIN = ROOT / "tests" / "hil" / "standin.py"


def start_standin(link, part):
    proc = subprocess.Popen([sys.executable, str(STANDIN), "--link", str(link), "--partition", str(part)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    assert line.strip() == f"standin: ready {link}", line
    return proc


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_suite(link, *extra):
    return subprocess.run([sys.executable, "-m", "pytest", "tests/hil", "--target", "esp32s3", "--port", str(link),
                           "-v", "-p", "no:cacheprovider", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_suite_flashes_what_it_needs_and_restores_the_users_model(tmp_path):
    user = upstream_init.init_blob(dims=(8, 2, 1, 4, 1, 3), fp16=True, seed=7)
    part = tmp_path / "flash.bin"
    part.write_bytes(user)
    link = tmp_path / "ttyESP"
    proc = start_standin(link, part)
    try:
        before = time.time()
        run = run_suite(link, "--flash-hook", f"file:{part}")
    finally:
        stop(proc)
    out = run.stdout
    assert run.returncode == 0, out[-3000:] + run.stderr[-2000:]
    summary = out.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and "skipped" not in summary and "failed" not in summary, summary
    for test in ("test_info_matches_the_blob[fp16]", "test_banner_names_the_blob[fp32]",
                 "test_stream_matches_reference[fp16]",
                 "test_reported_by_info_and_device_stays_up[erased]",
                 "test_reported_by_info_and_device_stays_up[corrupt]",
                 "test_reported_by_info_and_device_stays_up[contract]"):
        assert re.search(re.escape(test) + r" PASSED", out), test
    # The user's model is back, byte for byte, written after the run began.
    assert part.read_bytes() == user
    assert part.stat().st_mtime >= before
    assert not os.path.lexists(link)


def test_a_bad_flash_hook_is_one_line(tmp_path):
    part = tmp_path / "flash.bin"
    part.write_bytes(upstream_init.init_blob())
    link = tmp_path / "ttyESP"
    proc = start_standin(link, part)
    try:
        run = run_suite(link, "--flash-hook", "ftp://nowhere", "-x")
    finally:
        stop(proc)
    assert run.returncode != 0
    assert "--flash-hook 'ftp://nowhere': give file:PATH" in run.stdout
    assert part.read_bytes() == upstream_init.init_blob()


def test_esptool_flasher_writes_raw_bytes_at_the_partition_and_reads_them_back(monkeypatch):
    """The real board's hook (tests/hil/hil_board.py) over the esptool
    double of tests/test_board_flash.py: broken partitions go in as they are
    (rvne flash would refuse them), at slot A's offset under an erased
    selector (so the board boots slot A), each write followed by the hard
    reset."""
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "hil"))
    import hil_board
    from test_board_flash import FakeEsptool, board_flash_image

    from rvne.flash import board as board_flash

    fake = FakeEsptool(board_flash_image())
    monkeypatch.setattr(board_flash, "EsptoolApi", lambda: fake)
    flasher = hil_board.make_flasher(None, "/dev/ttyACM0", baud=921600)
    corrupt = bytearray(upstream_init.init_blob())
    corrupt[40] ^= 0x40
    fake.flash[0x110000:0x110020] = b"\0" * 32                         # a record the write must erase
    flasher.write(bytes(corrupt))
    assert fake.writes == [(0x130000, bytes(corrupt)), (0x110000, b"\xff" * 0x20000)]
    assert fake.calls[0] == ("connect", "/dev/ttyACM0", 921600) and ("reset",) in fake.calls
    assert flasher.read(len(corrupt)) == bytes(corrupt)
    flasher.write(hil_board.ERASED)
    assert fake.flash[0x130000:0x131000] == hil_board.ERASED
    assert fake.closed >= 3
