"""The ESP32-S3 app's ESP-IDF component files, run in CMake script mode
(tests/esp_idf_cmake/probe.cmake stands in for ESP-IDF's component
functions) for each supported ESP-IDF version and target: the version
branches named in docs/esp32s3.md pick the right components."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PORT = ROOT / "firmware" / "ports" / "esp32s3"
PROBE = ROOT / "tests" / "esp_idf_cmake" / "probe.cmake"
CMAKE = shutil.which("cmake")


def probe(component: Path, target: str, version: str):
    major, minor = version.split(".")
    proc = subprocess.run(
        [CMAKE or "cmake", f"-DIDF_TARGET={target}", f"-DIDF_VERSION_MAJOR={major}",
         f"-DIDF_VERSION_MINOR={minor}", f"-DCOMPONENT={component}", "-P", str(PROBE)],
        capture_output=True, text=True, timeout=60)
    calls = {}
    for line in proc.stderr.splitlines():
        if line.startswith("probe: "):
            key, _, value = line[len("probe: "):].partition(" ")
            calls[key] = value
    return proc, calls


def requires(target, version):
    proc, calls = probe(PORT / "main" / "CMakeLists.txt", target, version)
    assert proc.returncode == 0, proc.stderr
    return set(filter(None, calls["PRIV_REQUIRES"].split(";")))


def test_cmake_is_installed():
    # bootstrap installs it; without it every test here would say nothing.
    assert CMAKE, "cmake not found: run tools/bootstrap.sh"


@pytest.mark.parametrize("version", ["5.1", "5.2"])
def test_before_5_3_console_drivers_come_from_driver_and_vfs(version):
    got = requires("esp32s3", version)
    assert {"driver", "vfs", "esp_timer"} <= got
    assert not got & {"esp_driver_uart", "esp_driver_usb_serial_jtag"}


@pytest.mark.parametrize("version", ["5.3", "5.5", "6.0", "6.1"])
def test_from_5_3_console_drivers_are_their_own_components(version):
    got = requires("esp32s3", version)
    # v6.0's `driver` no longer brings these: without them
    # driver/usb_serial_jtag.h is not found.
    assert {"esp_driver_uart", "esp_driver_usb_serial_jtag", "esp_timer"} <= got
    assert "driver" not in got


@pytest.mark.parametrize("version", ["5.1", "5.5", "6.0"])
def test_linux_target_needs_no_driver_and_no_esp_timer(version):
    got = requires("linux", version)
    assert {"rvne_core", "esp_partition", "freertos"} <= got
    assert not got & {"driver", "vfs", "esp_driver_uart", "esp_driver_usb_serial_jtag", "esp_timer"}


@pytest.mark.parametrize("version", ["4.4", "5.0"])
def test_older_esp_idf_is_refused_with_the_supported_range(version):
    proc, calls = probe(PORT / "main" / "CMakeLists.txt", "esp32s3", version)
    assert proc.returncode != 0
    assert "needs ESP-IDF v5.1 or later" in proc.stderr
    assert "PRIV_REQUIRES" not in calls


@pytest.mark.parametrize("target", ["linux", "esp32s3"])
def test_core_links_libm(target):
    # On linux nothing else links libm: expf/sqrtf were undefined.
    proc, calls = probe(PORT / "components" / "rvne_core" / "CMakeLists.txt", target, "5.5")
    assert proc.returncode == 0, proc.stderr
    assert calls["LINK"].split(" ", 1)[1].split(";")[-1] == "m"
    srcs = calls["SRCS"].split(";")
    assert sorted(Path(s).name for s in srcs) == sorted(p.name for p in (ROOT / "firmware/core/src").glob("*.c"))
