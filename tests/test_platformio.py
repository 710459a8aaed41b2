"""The PlatformIO project file parses and names what the ESP32-S3 build needs.

`pio project config` only checks the configuration: building needs the
ESP32-S3 toolchain, which CI cannot download (docs/esp32s3.md)."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PIO = shutil.which("pio") or shutil.which("platformio")
needs_pio = pytest.mark.skipif(PIO is None, reason="the `pio` executable is absent (pip install platformio)")


def _pio(*args, cwd=ROOT):
    return subprocess.run([PIO, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _config(cwd=ROOT):
    run = _pio("project", "config", "--json-output", cwd=cwd)
    assert run.returncode == 0, run.stderr or run.stdout
    # pio may print a banner before the JSON document.
    text = run.stdout[run.stdout.index("[["):]
    return {section: dict(items) for section, items in json.loads(text)}


@needs_pio
def test_pio_project_config_passes_lint():
    run = _pio("project", "config", "--lint")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "free from linting errors" in run.stdout


@needs_pio
def test_esp32s3_env_names_board_framework_and_partitions():
    cfg = _config()
    env = cfg["env:esp32s3"]
    assert env["board"] == "esp32-s3-devkitc-1"
    assert env["framework"] == ["espidf"]
    assert env["board_build.partitions"] == "partitions.csv"
    assert int(env["monitor_speed"]) > 0
    assert env["monitor_filters"]
    assert (ROOT / env["board_build.partitions"]).is_file()


@needs_pio
def test_src_dir_is_the_esp32s3_main_component_and_core_is_not_copied():
    cfg = _config()
    src = Path(cfg["platformio"]["src_dir"])
    assert src.resolve() == (ROOT / "firmware/ports/esp32s3/main").resolve()
    assert (src / "CMakeLists.txt").is_file()
    assert (src / "temporal_task.c").is_file()
    assert (src / "Kconfig.projbuild").is_file()
    # The core reaches the app as a component pointing at firmware/core, not a copy.
    port = ROOT / "firmware/ports/esp32s3"
    assert not list(port.rglob("rvne_blob.c")), "firmware/core sources were copied into the port"
    comp_dir = port / "components/rvne_core"
    comp = (comp_dir / "CMakeLists.txt").read_text()
    rel = re.search(r'"\$\{CMAKE_CURRENT_LIST_DIR\}/([^"]+)"', comp)
    assert rel, "rvne_core does not name the core's directory"
    assert (comp_dir / rel.group(1)).resolve() == (ROOT / "firmware/core").resolve()
    assert "/src/*.c" in comp and "/include" in comp
    # PlatformIO's ESP-IDF builder needs the project CMakeLists next to platformio.ini;
    # it must append to EXTRA_COMPONENT_DIRS (PlatformIO passes src_dir there).
    top = (ROOT / "CMakeLists.txt").read_text()
    assert "list(APPEND EXTRA_COMPONENT_DIRS" in top


def test_sdkconfig_defaults_use_the_custom_partition_table():
    text = (ROOT / "sdkconfig.defaults").read_text()
    assert "CONFIG_PARTITION_TABLE_CUSTOM=y" in text
    assert 'CONFIG_PARTITION_TABLE_CUSTOM_FILENAME="partitions.csv"' in text


@needs_pio
def test_a_broken_config_is_refused(tmp_path):
    # Proves the lint can fail: an unknown section option in a copy is reported.
    (tmp_path / "platformio.ini").write_text("[env:esp32s3]\nboard = esp32-s3-devkitc-1\nframework = espidf\n[platformio]\nsrc_dir\n")
    run = _pio("project", "config", "--lint", cwd=tmp_path)
    assert run.returncode != 0
