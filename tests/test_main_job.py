"""README's main job through the CLI, on the emulated board: init a model,
`rvne flash --image`, `rvne check --target qemu --image` boots that image and
passes; the same image checked against another model fails (exit 1), since
the board holds a blob with a different CRC."""

import shutil
import subprocess
import sys

import pytest

from rvne.targets import qemu

pytestmark = pytest.mark.skipif(
    not (shutil.which(qemu.QEMU) and shutil.which(qemu.CROSS_CC)),
    reason=f"needs {qemu.QEMU} and {qemu.CROSS_CC} (apt-get install {qemu.APT_PACKAGES})")


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

    wrong = rvne("check", other, "--target", "qemu", "--image", img, "--vectors", "1")
    assert wrong.returncode == 1
    assert "crc" in (wrong.stdout + wrong.stderr).lower()


def test_image_needs_the_qemu_target(tmp_path):
    model = tmp_path / "model.rvne"
    assert rvne("init", model).returncode == 0
    done = rvne("check", model, "--target", "sim", "--image", tmp_path / "x.img")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--image goes with --target qemu" in done.stderr
