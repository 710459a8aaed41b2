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


def probe(component: Path, target: str, version: str, config=()):
    major, minor = version.split(".")
    proc = subprocess.run(
        [CMAKE or "cmake", f"-DIDF_TARGET={target}", f"-DIDF_VERSION_MAJOR={major}",
         f"-DIDF_VERSION_MINOR={minor}", *(f"-D{c}=y" for c in config),
         f"-DCOMPONENT={component}", "-P", str(PROBE)],
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
    # rvne/kernels.h includes the kernels' declarations from firmware/kernels/<op>/: the app's includes too.
    incs = [Path(p) for p in calls["INCLUDE_DIRS"].split(";")]
    assert any((p / "rvne" / "kernels.h").is_file() for p in incs), incs
    assert any((p / "matvec" / "rvne_matvec.h").is_file() for p in incs), incs


def lx6_asm_kernels():
    """The kernels port.mk links as assembly on the lx6 board: the S3 option
    must link the same set, never a stale list of its own."""
    text = (ROOT / "firmware/ports/lx6/port.mk").read_text()
    line = next(l for l in text.splitlines() if l.startswith("LX6_DSP_KERNELS :="))
    return sorted(line.split(":=", 1)[1].split())


def test_asm_kernels_are_the_option_and_the_lx6_set():
    core = PORT / "components" / "rvne_core" / "CMakeLists.txt"
    proc, off = probe(core, "esp32s3", "5.5")
    assert proc.returncode == 0, proc.stderr
    assert not any(s.endswith((".S", "kernels_ae32.c")) for s in off["SRCS"].split(";"))
    assert "COMPILE_DEFINITIONS" not in off

    kernels = lx6_asm_kernels()
    header = "".join(p.read_text() for p in [ROOT / "firmware/core/include/rvne/kernels.h",
                                             *sorted((ROOT / "firmware/kernels").rglob("rvne_*.h"))])
    driver = (ROOT / "firmware/kernels/kernels_ae32.c").read_text()
    s3_blocks = sorted(p.name for p in (ROOT / "firmware/kernels").glob("*/*_aes3.S"))
    assert s3_blocks, "the S3's EE.LDF kernels are missing"
    # The S3 links its own kernels too (under RVNE_DSP_AES3 they replace
    # kernels_ae32.c's drivers); the ESP32's LX6 has no EE.* instructions.
    for target, extra_srcs, extra_defs in (("esp32s3", s3_blocks, ["RVNE_DSP_AES3"]), ("esp32", [], [])):
        proc, on = probe(core, target, "5.5", config=["CONFIG_RVNE_XTENSA_ASM_KERNELS"])
        assert proc.returncode == 0, proc.stderr
        srcs = [Path(s) for s in on["SRCS"].split(";")]
        assert sorted(s.name for s in srcs if s.suffix == ".S") == sorted([f"{k}_ae32.S" for k in kernels]
                                                                         + extra_srcs)
        assert "kernels_ae32.c" in {s.name for s in srcs}
        assert all(s.exists() for s in srcs)
        scope, *defs = on["COMPILE_DEFINITIONS"].split(" ", 1)[1].split(";")
        assert scope == "PRIVATE"
        assert sorted(defs) == sorted([f"RVNE_HAVE_{k.upper()}_AE32" for k in kernels] + extra_defs)
        (inc,) = on["PRIV_INCLUDE_DIRS"].split(";")
        assert (Path(inc) / "dsp.h").exists()
        # Every define must name a kernel rvne/kernels.h dispatches, or the
        # S3 switch the driver reads.
        assert all(f"defined({d})" in header or f"defined({d})" in driver for d in defs)


def test_asm_kernels_only_where_the_fpu_is():
    kconfig = (PORT / "main" / "Kconfig.projbuild").read_text()
    block = kconfig.split("config RVNE_XTENSA_ASM_KERNELS", 1)[1].split("config ", 1)[0]
    assert "depends on IDF_TARGET_ARCH_XTENSA && SOC_CPU_HAS_FPU" in block
    # On by default: make s3-test proves them on the S3's core as GCC builds them.
    assert "default y" in block
