"""Build step of the rvne package (everything else is in pyproject.toml):
a wheel carries the firmware sources the emulated targets are built from
(sim, qemu, qemu-lx106, qemu-esp32s3) as package data under rvne/_firmware, so an
installed rvne builds them from any directory (host/rvne/targets/build.py).
Copied at build time, never committed twice; an editable install keeps
using the checkout's firmware/."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

TOP = Path(__file__).resolve().parent
# What `make -C firmware posix|lx6|lx106|esp32s3-qemu` reads, relative to the
# checkout (esp32s3-qemu: the ESP-IDF app with the project's sdkconfig.defaults).
# Not the C tests and fuzzers (firmware/tests), the LLVM bug reproducers or
# an idf.py build directory left in the app's own directory.
FIRMWARE = ["firmware/Makefile", "firmware/core", "firmware/kernels", "firmware/ports/posix",
            "firmware/xtensa", "firmware/ports/lx6", "firmware/ports/lx106", "firmware/ports/esp32s3",
            "partitions.csv", "sdkconfig.defaults"]
LEFT_OUT = {"firmware/ports/lx6/llvm-bugs", "firmware/ports/esp32s3/build", "firmware/ports/esp32s3/sdkconfig"}
DATA_DIR = Path("rvne") / "_firmware"      # build.PACKAGE_DATA


def firmware_files():
    """(source, path relative to the checkout) of every file shipped."""
    for rel in FIRMWARE:
        top = TOP / rel
        if not top.exists():
            raise SystemExit(f"setup.py: {rel} is missing: build the package from a complete checkout")
        for path in sorted([top] if top.is_file() else top.rglob("*")):
            name = path.relative_to(TOP).as_posix()
            if path.is_file() and "__pycache__" not in path.parts \
                    and not any(name == d or name.startswith(d + "/") for d in LEFT_OUT):
                yield path, name


class BuildPyWithFirmware(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return      # the checkout's own firmware/ is used
        dest = Path(self.build_lib) / DATA_DIR
        shutil.rmtree(dest, ignore_errors=True)     # nothing stale from an earlier build
        for path, name in firmware_files():
            out = dest / name
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, out)


setup(cmdclass={"build_py": BuildPyWithFirmware})
