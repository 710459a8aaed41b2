"""The host CLI's loose ends (issue: an installed rvne that works as users
expect): report wording, help texts, option parity between commands."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from rvne import check, upstream_init

ROOT = Path(__file__).resolve().parents[1]


def _report(**over):
    r = check.CheckReport(url="socket://x", blob_crc=0xDC807956, blob_dims=(16, 4, 1, 32, 2, 4), blob_dtype="fp32",
                          info={"port": "lx6"}, window=100, vectors=1, length=110, logits=440, frames=110,
                          seconds=1.0, device_push=3559.0, clock="cycles")
    for k, v in over.items():
        setattr(r, k, v)
    return r


def test_report_gives_one_measure_of_device_cost():
    # With an instruction count (an emulated core under -icount), its CCOUNT
    # ticks are not a chip's cycles: only the instructions are reported.
    text = check.render(_report(instructions_per_push=88977.0))
    assert "88,977 instructions/push" in text and "cycles/push" not in text
    # A board's own clock (no icount) is the measure.
    text = check.render(_report())
    assert "3559 cycles/push on the device" in text and "instructions/push" not in text


def _fake_checkout(tmp_path):
    """A checkout with the virtual device's sources and nothing built."""
    top = tmp_path / "checkout"
    for rel in ("host/rvne", "firmware/core", "firmware/ports/posix"):
        shutil.copytree(ROOT / rel, top / rel, ignore=shutil.ignore_patterns("__pycache__"))
    for rel in ("firmware/Makefile", "partitions.csv"):
        shutil.copy2(ROOT / rel, top / rel)
    return top


def test_a_first_target_build_says_what_it_builds_and_where(tmp_path):
    top = _fake_checkout(tmp_path)
    (tmp_path / "m.rvne").write_bytes(upstream_init.init_blob((8, 2, 1, 4, 1, 3)))
    env = {**os.environ, "PYTHONPATH": str(top / "host")}
    run = subprocess.run([sys.executable, "-m", "rvne", "check", "m.rvne", "--target", "sim", "--vectors", "1"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    said = [ln for ln in run.stderr.splitlines() if ln.startswith("rvne: building")]
    assert said == [f"rvne: building the virtual device into {top / 'build' / 'posix'} (first use, or its "
                    "sources or compiler changed)"], run.stderr
    # Built now: the next run says nothing, and -q never does.
    again = subprocess.run([sys.executable, "-m", "rvne", "check", "m.rvne", "--target", "sim", "--vectors", "1"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "rvne: building" not in again.stderr


def _fake_install(tmp_path):
    """The package as a wheel lays it out (rvne/ with rvne/_firmware/
    partitions.csv), on a path with no checkout above it."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "host" / "rvne", site / "rvne", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "rvne" / "_firmware").mkdir()
    shutil.copy2(ROOT / "partitions.csv", site / "rvne" / "_firmware" / "partitions.csv")
    return {**os.environ, "PYTHONPATH": str(site)}


def test_an_installed_plan_and_init_find_the_shipped_partition_table(tmp_path):
    env = _fake_install(tmp_path)
    work = tmp_path / "empty"
    work.mkdir()

    def rvne(*argv):
        return subprocess.run([sys.executable, "-m", "rvne", *argv], cwd=work, env=env, capture_output=True,
                              text=True, timeout=120)

    assert rvne("init", "m.rvne").returncode == 0
    plan = rvne("plan", "m.rvne")
    assert plan.returncode == 0, plan.stderr
    assert "partitions.csv" in plan.stdout and plan.stdout.rstrip().endswith("OK")
    big = rvne("init", "big.rvne", "--dims", "256,8,2,64,3,16")
    assert big.returncode == 0 and "larger than partition 'rvne'" in big.stderr, big.stderr


def test_image_writes_the_board_image_that_flash_and_check_take(tmp_path, capsys):
    from rvne import blob, cli, flash_image

    img, model = tmp_path / "board.img", tmp_path / "m.rvne"
    model.write_bytes(upstream_init.init_blob())
    assert cli.main(["image", str(img), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["image"] == str(img) and doc["bytes"] == flash_image.FLASH_SIZE == img.stat().st_size
    part = flash_image.read_table(img.read_bytes(), strict=True).find("rvne")
    assert (doc["offset"], doc["size"]) == (part.offset, part.size)
    assert img.read_bytes()[part.offset:part.end] == b"\xff" * part.size
    assert cli.main(["flash", str(model), "--image", str(img)]) == 0
    stored = img.read_bytes()[part.offset:part.end]
    assert blob.parse_loadable(stored, exact_length=False).crc_stored == upstream_init.EXAMPLE_CRC


def test_flash_image_help_names_a_command_not_a_checkout_path():
    from rvne import cli

    parser = cli.build_parser()
    flash = parser._subparsers._group_actions[0].choices["flash"]
    text = flash.format_help()
    assert "build/lx6" not in text and "rvne image IMG" in " ".join(text.split())
