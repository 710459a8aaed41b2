"""The lx106 runtime (firmware/xtensa/rt) as the cross-compiler sees it.

Its arithmetic is proven bit for bit on the host (firmware/tests/
test_softfloat.c); this checks what only the target build can show: every
file compiles warning-free for lx106, the portable code calls nothing it
supplies itself (a float operation in there would recurse through
__addsf3 & co.), and the alias layer fills exactly the gaps of Debian's
libgcc without clashing with it.
"""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

RT = Path(__file__).resolve().parents[1] / "firmware" / "xtensa" / "rt"
CC = "xtensa-lx106-elf-gcc"
NM = "xtensa-lx106-elf-nm"
ARCH = ["-mlongcalls", "-mtext-section-literals"]
# What the compiler may call for float, 32/64-bit division and conversions
# and Debian's libgcc for lx106 lacks (../shared/notes/emulated-xtensa.md).
GAPS = {
    "__addsf3", "__subsf3", "__mulsf3", "__floatsisf", "__floatunsisf",
    "__fixunssfsi", "__extendsfdf2", "__truncdfsf2", "__divsi3", "__udivsi3",
    "__umodsi3", "__umulsidi3", "__divdi3", "__udivdi3",
}

pytestmark = pytest.mark.skipif(
    shutil.which(CC) is None or shutil.which(NM) is None,
    reason=f"{CC} not installed (apt-get install gcc-xtensa-lx106 binutils-xtensa-lx106)",
)


def _symbols(obj, kind):
    out = subprocess.run([NM, *kind, str(obj)], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def _defined(obj):
    out = subprocess.run([NM, "-g", "--defined-only", str(obj)], check=True,
                         capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


@pytest.fixture(scope="module")
def libgcc():
    path = subprocess.run([CC, "-print-libgcc-file-name"], check=True,
                          capture_output=True, text=True).stdout.strip()
    return Path(path)


def _compile(src, out_dir, opt):
    obj = out_dir / f"{src.stem}{opt}.o"
    res = subprocess.run(
        [CC, "-std=c99", opt, "-Wall", "-Wextra", "-Werror", "-ffp-contract=off", *ARCH,
         "-I", str(RT), "-c", str(src), "-o", str(obj)],
        capture_output=True, text=True)
    assert res.returncode == 0 and not res.stderr, f"{src.name} {opt}:\n{res.stderr}"
    return obj


# Built only for the esp32-class core, whose divider (quou) makes its
# quotient digits; lx106 takes libgcc's __divsf3 and never links it
# (rt.mk's RT_FPU_SRC, not RT_SRC).
DIVIDER_ONLY = {"sf_div.c"}


def test_divider_only_sources_stay_out_of_the_lx106_build():
    rt_mk = (RT / "rt.mk").read_text()
    lx106_line = next(ln for ln in rt_mk.splitlines() if ln.startswith("RT_SRC :="))
    fpu_line = next(ln for ln in rt_mk.splitlines() if ln.startswith("RT_FPU_SRC :="))
    assert all(name not in lx106_line and name in fpu_line for name in DIVIDER_ONLY)


@pytest.mark.parametrize("opt", ["-O2", "-Os", "-O0"])
def test_portable_code_calls_nothing_it_supplies(tmp_path, libgcc, opt):
    portable = sorted(p for p in RT.glob("*.c") if p.name != "lx106_abi.c" and p.name not in DIVIDER_ONLY)
    assert portable, "no runtime sources found"
    in_libgcc = _defined(libgcc)
    for src in portable:
        undefined = _symbols(_compile(src, tmp_path, opt), ["-u"])
        assert not undefined & GAPS, f"{src.name} {opt} would recurse via {undefined & GAPS}"
        # Nothing beyond libgcc's own helpers (and memcpy/memset, which a
        # -O0 build may emit and picolibc provides), or the runtime's own
        # portable functions (df_arith.c builds on rvne_rt_umulsidi3).
        stray = {s for s in undefined - in_libgcc - {"memcpy", "memset"} if not s.startswith("rvne_rt_")}
        assert not stray, f"{src.name} {opt} needs {stray}"


def test_alias_layer_fills_exactly_the_gaps(tmp_path, libgcc):
    abi = _compile(RT / "lx106_abi.c", tmp_path, "-O2")
    provided = {s for s in _defined(abi) if s.startswith("__")}
    in_libgcc = _defined(libgcc)
    assert GAPS <= provided, f"missing {GAPS - provided}"
    clash = provided & in_libgcc
    assert not clash, f"defined twice (libgcc has them): {clash}"
    calls = _symbols(abi, ["-u"])
    assert all(re.fullmatch(r"rvne_rt_\w+|memcpy", s) for s in calls), calls


def test_alias_layer_refuses_host_builds(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no host C compiler")
    res = subprocess.run([cc, "-std=c99", "-I", str(RT), "-c", str(RT / "lx106_abi.c"),
                          "-o", str(tmp_path / "abi.o")], capture_output=True, text=True)
    assert res.returncode != 0 and "xtensa-lx106 only" in res.stderr
