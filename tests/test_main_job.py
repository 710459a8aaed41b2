"""README's main job through the CLI, on the emulated esp32-class board:
init a model, `rvne flash --image`, `rvne check --target qemu --image` boots
that image and passes, reporting instructions per push; the same image
checked against another model fails (exit 1), since the board holds a blob
with a different CRC."""

import json
import shutil
import subprocess
import sys

from rvne.targets import qemu


def rvne(*args):
    return subprocess.run([sys.executable, "-m", "rvne", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def test_flash_then_check_the_flashed_image(tmp_path):
    model, other, img = tmp_path / "model.rvne", tmp_path / "other.rvne", tmp_path / "flash.img"
    shutil.copyfile(qemu.ensure_built(), img)
    assert rvne("init", model).returncode == 0
    assert rvne("init", other, "--seed", "7").returncode == 0
    done = rvne("flash", model, "--image", img)
    assert done.returncode == 0, done.stderr

    ok = rvne("check", model, "--target", "qemu", "--image", img, "--vectors", "1")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.rstrip().endswith("PASS")
    assert "rvne/0.1.0 lx6 " in ok.stdout and "instructions/push on the emulated lx6 core" in ok.stdout

    # Deterministic under -icount: the same run counts the same instructions.
    runs = [json.loads(rvne("check", model, "--target", "qemu", "--image", img, "--vectors", "1",
                            "--json").stdout) for _ in range(2)]
    assert runs[0]["passed"] and runs[0]["info"]["port"] == "lx6"
    assert 1e4 < runs[0]["instructions_per_push"] < 1e7     # about 91,000 with the assembly kernels
    assert abs(runs[0]["instructions_per_push"] / runs[1]["instructions_per_push"] - 1) < 1e-4

    wrong = rvne("check", other, "--target", "qemu", "--image", img, "--vectors", "1")
    assert wrong.returncode == 1
    assert "crc" in (wrong.stdout + wrong.stderr).lower()


def test_image_needs_a_target(tmp_path):
    model = tmp_path / "model.rvne"
    assert rvne("init", model).returncode == 0
    done = rvne("check", model, "-p", "/dev/null", "--image", tmp_path / "x.img")
    assert done.returncode == 2
    # A usage error: check's usage, then one line (docs/cli.md).
    assert done.stderr.startswith("usage: rvne check") and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("rvne check: error: --image goes with --target")
