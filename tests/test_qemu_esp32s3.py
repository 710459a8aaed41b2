"""The qemu-esp32s3 target: the ESP-IDF app built for the ESP32-S3, booted
by the chip's ROM on Espressif's QEMU (docs/targets.md). Checks with rvne's
default batching (RUN lines of ~4 KB, the case that once never got a reply:
docs/esp32s3.md, "On Espressif's QEMU"), the main job's flash-then-check
flow, and the one-line errors when a tool or the image is wrong.

The tests marked esp_idf need RVNE_QEMU_ESP, IDF_PATH and
xtensa-esp32s3-elf-gcc (README: Install): where those are missing they are
deselected with one line naming what is missing (tests/conftest.py), and
tools/test_s3.sh runs them where the tools are."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rvne import check
from rvne.flash import image as flash_image, slots
from rvne.io import blob, upstream_init
from rvne.link.device import Device
from rvne.targets import esp32s3_qemu, start_target

REPO = Path(__file__).resolve().parents[1]


def require_tools():
    # Tests that need the tools are marked esp_idf, and deselected where the
    # tools are missing (tests/conftest.py): reaching here without them is a
    # mark forgotten, which must fail.
    esp32s3_qemu.check_tools()


@pytest.fixture(scope="module")
def built_image():
    require_tools()
    return esp32s3_qemu.ensure_built()


def rvne(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "rvne", *map(str, args)], capture_output=True, text=True,
                          timeout=600, env=env, cwd=cwd)


@pytest.mark.esp_idf
def test_default_batching_passes_and_is_link_bound(built_image):
    data = upstream_init.init_blob()
    with start_target("qemu-esp32s3", data) as dev:
        assert "rvne/0.1.0 esp32s3 ready: OK dims=16,4,1,32,2,4" in dev.banner
        # 15 s per reply, no resend: a 4 KB line used to take 28 s to cross
        # QEMU's UART (docs/esp32s3.md); now well under 1 s.
        with Device(dev.url, timeout=15.0, retries=0) as d:
            info = d.info()
            assert (info.port, info.status, info.crc) == ("esp32s3", "loaded", blob.parse(data).crc_stored)
            # rvne's own batching: a RUN line of ~4 KB, far over the UART's
            # 128-byte FIFO (the request that used to get no reply).
            per_line = d.frames_per_request()
            assert per_line * 86 > 4000
            report = check.run_check(d, data, vectors=2)
    assert report.passed, check.render(report)
    assert report.resends == 0 and report.frames > 2 * 100       # each sequence slides the window
    assert report.bytes_out / report.frames > 80       # every frame crossed the line


@pytest.mark.esp_idf
def test_flash_image_then_check_it_as_the_main_job_does(built_image, tmp_path):
    model = tmp_path / "model.rvne"
    img = tmp_path / "flash.img"
    assert rvne("init", model).returncode == 0
    made = rvne("image", img, "--target", "qemu-esp32s3")
    assert made.returncode == 0, made.stderr
    assert img.read_bytes() == built_image.read_bytes() and img.stat().st_size == 8 << 20
    done = rvne("flash", model, "--image", img)
    assert done.returncode == 0, done.stderr
    # Found through the image's own partition table, not a fixed offset.
    part = slots.layout(flash_image.read_table(img.read_bytes())).first
    assert f"partition '{part.name}' at 0x{part.offset:x}" in done.stdout
    before = hashlib.sha256(img.read_bytes()).hexdigest()
    run = rvne("check", model, "--target", "qemu-esp32s3", "--image", img, "--vectors", "1")
    assert run.returncode == 0 and run.stdout.rstrip().endswith("PASS"), run.stdout + run.stderr
    assert "esp32s3  status loaded (OK)" in run.stdout
    # QEMU writes flash back to its file: it ran on a copy.
    assert hashlib.sha256(img.read_bytes()).hexdigest() == before


@pytest.mark.esp_idf
def test_instructions_per_push_are_counted_by_the_cores_icount(built_image, tmp_path):
    """STATS clock=insns (the app's ICOUNT clock, sdkconfig.qemu): rvne check
    reports instructions_per_push, the same in two runs of the same frames,
    and a full window costs more than an empty one."""
    model = tmp_path / "m.rvne"
    rvne("init", model)
    runs = []
    for _ in range(2):
        run = rvne("check", model, "--target", "qemu-esp32s3", "--vectors", "1", "--json")
        assert run.returncode == 0, run.stderr
        runs.append(json.loads(run.stdout))
    assert runs[0]["clock"] == "insns" and runs[0]["info"]["clock"] == "insns"
    assert 1e4 < runs[0]["instructions_per_push"] < 1e7
    assert runs[0]["instructions_per_push"] == runs[1]["instructions_per_push"]
    run = rvne("check", model, "--target", "qemu-esp32s3", "--vectors", "1")
    assert "instructions/push on the emulated esp32s3 core (its ICOUNT register" in run.stdout, \
        run.stdout + run.stderr

    data = upstream_init.init_blob()
    x = np.random.default_rng(3).standard_normal((101, 16)).astype(np.float32)
    with start_target("qemu-esp32s3", data) as dev, Device(dev.url, timeout=30.0) as d:
        d.run(x[:1])
        first = d.stats()["push_last"]
        d.push(x[1:100])
        d.push(x[100:])
        full = d.stats()["push_last"]
    # Attention over 100 cached positions instead of 1.
    assert full > 2 * first > 0


@pytest.mark.esp_idf
def test_another_blob_on_the_device_fails_naming_the_crc(built_image, tmp_path):
    flashed, other = tmp_path / "a.rvne", tmp_path / "b.rvne"
    img = tmp_path / "flash.img"
    rvne("init", flashed)
    rvne("init", other, "--seed", "7")
    shutil.copyfile(built_image, img)
    assert rvne("flash", flashed, "--image", img).returncode == 0
    run = rvne("check", other, "--target", "qemu-esp32s3", "--image", img)
    assert run.returncode == 1
    assert "blob CRC differs" in run.stdout and "FAIL" in run.stdout


def test_a_missing_tool_is_one_line_naming_it_and_how_to_get_it(tmp_path):
    model = tmp_path / "m.rvne"
    assert rvne("init", model).returncode == 0
    env = {k: v for k, v in os.environ.items() if k not in ("RVNE_QEMU_ESP", "IDF_PATH", "IDF_PYTHON_ENV_PATH")}
    env["PATH"] = str(Path(sys.executable).parent) + ":/usr/bin:/bin"   # Debian's qemu has no esp32s3
    run = rvne("check", model, "--target", "qemu-esp32s3", env=env)
    assert run.returncode == 1 and run.stdout == ""
    line = run.stderr.strip()
    assert "\n" not in line and line.startswith("rvne: error: the qemu-esp32s3 target needs")
    assert "idf_tools.py install qemu-xtensa" in line and "RVNE_QEMU_ESP" in line
    assert "IDF_PATH" in line and "xtensa-esp32s3-elf-gcc" in line

    env["RVNE_QEMU_ESP"] = str(tmp_path / "nowhere")
    run = rvne("check", model, "--target", "qemu-esp32s3", "--image", tmp_path / "x.img", env=env)
    assert run.returncode == 1
    assert run.stderr.strip() == (f"rvne: error: RVNE_QEMU_ESP={tmp_path / 'nowhere'} is not an executable file; "
                                  "point it at Espressif's qemu-system-xtensa "
                                  "(`python $IDF_PATH/tools/idf_tools.py install qemu-xtensa`)")


@pytest.mark.esp_idf
def test_an_image_qemu_cannot_take_is_refused_in_one_line(tmp_path):
    require_tools()
    model = tmp_path / "m.rvne"
    rvne("init", model)
    img = tmp_path / "odd.img"
    img.write_bytes(b"\xff" * (3 << 20))
    run = rvne("check", model, "--target", "qemu-esp32s3", "--image", img)
    assert run.returncode == 1
    assert run.stderr.strip() == (f"rvne: error: cannot use the flash image {img}: 3145728 bytes; Espressif's QEMU "
                                  "takes 2, 4, 8 or 16 MiB (`make -C firmware esp32s3-qemu` makes one)")
