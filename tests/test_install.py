"""An installed rvne outside the checkout (README "Install"): the wheel
built from this checkout carries the firmware sources and no build
outputs; installed into a fresh venv (no torch, no PYTHONPATH) its `rvne
check` builds and runs every emulated target from an empty directory, the
builds landing in the per-user cache (RVNE_CACHE_DIR); and that cache
(host/rvne/targets/cache.py) rebuilds on a new source or compiler, never
trusts a killed build, and lets concurrent processes share one build."""

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from rvne.errors import TargetError
from rvne.targets import build, cache, sim

ROOT = Path(__file__).resolve().parents[1]
# What setup.py copies into a wheel (besides the host package).
PACKAGED = ["firmware/Makefile", "firmware/core", "firmware/kernels", "firmware/ports/posix",
            "firmware/xtensa", "firmware/ports/lx6", "firmware/ports/lx106", "firmware/ports/esp32s3",
            "partitions.csv", "sdkconfig.defaults", "host", "pyproject.toml",
            "setup.py", "MANIFEST.in", "README.md"]
DATA = "rvne/_firmware/"
BUILD_OUTPUTS = (".o", ".bc", ".elf", ".bin", ".img", ".map", ".a")


def _ignore(_dir, names):
    return [n for n in names if n in ("__pycache__", "build") or n.endswith(".egg-info")]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel `pip wheel` builds from a copy of this checkout's package
    sources (a copy: setuptools' build/ and egg-info stay out of the tree)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    for rel in PACKAGED:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / rel).is_dir():
            shutil.copytree(ROOT / rel, src / rel, ignore=_ignore)
        else:
            shutil.copy2(ROOT / rel, src / rel)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check",
                           "-w", str(tmp / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (whl,) = (tmp / "dist").glob("rvne-*.whl")
    return whl


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """A fresh venv holding only the wheel and its dependencies; returns its bin/."""
    home = tmp_path_factory.mktemp("venv") / "v"
    venv.create(home, with_pip=False, symlinks=True)
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(home / "bin" / "python"), "install", "-q",
                           "--disable-pip-version-check", str(wheel)],
                          capture_output=True, text=True, timeout=600, env=_env())
    assert done.returncode == 0, done.stderr[-3000:]
    return home / "bin"


def _env(**extra):
    # Without PYTHONPATH: the worktree's host/ would shadow the installed package.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, **extra}


def test_wheel_carries_the_firmware_sources_and_no_build_outputs(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    data = {n[len(DATA):] for n in names if n.startswith(DATA)}
    for top in ("firmware/core", "firmware/kernels", "firmware/ports/posix", "firmware/xtensa",
                "firmware/ports/lx106", "firmware/ports/lx6", "firmware/ports/esp32s3"):
        expected = {p.relative_to(ROOT).as_posix() for p in (ROOT / top).rglob("*")
                    if p.is_file() and "__pycache__" not in p.parts and "llvm-bugs" not in p.parts}
        assert expected and expected <= data, sorted(expected - data)
    assert {"firmware/Makefile", "partitions.csv", "sdkconfig.defaults"} <= data
    assert not [n for n in data if n.startswith(("firmware/tests/", "firmware/ports/lx6/llvm-bugs/"))]
    assert not [n for n in names if n.endswith(BUILD_OUTPUTS) or n.endswith("rvne-vdev") or "/build/" in n]
    assert "rvne/targets/cache.py" in names and "rvne/cli.py" in names


def test_installed_wheel_checks_every_target_from_an_empty_directory(installed, tmp_path):
    py = str(installed / "python")
    where = subprocess.run([py, "-c", "import importlib.util, rvne; "
                            "print(rvne.__file__); print(importlib.util.find_spec('torch'))"],
                           capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=60)
    assert where.returncode == 0, where.stderr
    module, torch = where.stdout.split()
    assert Path(module).is_relative_to(installed.parent) and torch == "None"   # the wheel, without torch

    work, builds = tmp_path / "empty", tmp_path / "cache"
    work.mkdir()
    env = _env(RVNE_CACHE_DIR=str(builds))
    init = subprocess.run([str(installed / "rvne"), "init", "m.rvne"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=60)
    assert init.returncode == 0, init.stderr
    for target, product in (("sim", "posix/rvne-vdev"), ("qemu", "lx6/flash.img"),
                            ("qemu-lx106", "lx106/flash.img")):
        run = subprocess.run([str(installed / "rvne"), "check", "m.rvne", "--target", target, "--vectors", "1"],
                             cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0 and run.stdout.rstrip().endswith("PASS"), f"{target}: {run.stderr}"
        goal = product.split("/")[0]
        (built,) = builds.glob(f"{goal}-*")
        assert (built / product).is_file()
    assert sorted(p.name for p in work.iterdir()) == ["m.rvne"]         # nothing built where it ran

    # The emulated board's image for an installed user, and the shipped partitions.csv for plan.
    img = tmp_path / "board.img"
    for argv in (["image", str(img)], ["flash", "m.rvne", "--image", str(img)],
                 ["check", "m.rvne", "--target", "qemu", "--image", str(img), "--vectors", "1"],
                 ["plan", "m.rvne"]):
        run = subprocess.run([str(installed / "rvne"), *argv], cwd=work, env=env, capture_output=True, text=True,
                             timeout=600)
        assert run.returncode == 0, f"{argv}: {run.stderr}"
    assert run.stdout.rstrip().endswith("OK") and "_firmware/partitions.csv" in run.stdout
    assert not list(builds.glob(".*.tmp*"))


@pytest.fixture
def tree(wheel, tmp_path, monkeypatch):
    """The wheel's firmware sources, unpacked, as an installed rvne sees
    them (builds into a temporary cache)."""
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path / "pkg", [n for n in z.namelist() if n.startswith(DATA)])
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    return build.Tree(tmp_path / "pkg" / DATA, ROOT / "host", installed=True)


def test_cache_rebuilds_on_new_sources_or_compiler_only(tree, tmp_path, monkeypatch):
    first = sim.ensure_built(tree)
    assert first.is_file() and first.is_relative_to(tmp_path / "cache")
    made = first.stat().st_mtime_ns
    assert sim.ensure_built(tree) == first and first.stat().st_mtime_ns == made       # cached

    src = tree.root / "firmware" / "core" / "src" / "rvne_proto.c"
    src.write_text(src.read_text() + "\n/* changed */\n")
    second = sim.ensure_built(tree)
    assert second.is_file() and second.parent.parent != first.parent.parent

    # Another compiler (same binary, another --version) is another key.
    cc = shutil.which(os.environ.get("CC", "cc"))
    wrapper = tmp_path / "bin" / "cc"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\n[ "$1" = --version ] && echo "other cc 99" && exit 0\nexec {cc} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", str(wrapper))
    third = sim.ensure_built(tree)
    assert third.is_file() and len({first.parent.parent, second.parent.parent, third.parent.parent}) == 3


def test_cache_never_trusts_a_killed_build(tree):
    exe = sim.ensure_built(tree)
    final = exe.parent.parent
    shutil.rmtree(final)
    # What a build killed before its rename leaves, and a final directory
    # emptied by hand: neither is used, both are replaced.
    leftover = final.parent / f".{final.name}.tmp-killed"
    (leftover / "posix").mkdir(parents=True)
    (leftover / "posix" / "rvne-vdev").write_text("half-built")
    final.mkdir()
    again = sim.ensure_built(tree)
    assert again == exe and again.read_bytes()[:4] == b"\x7fELF" and not leftover.exists()


def test_concurrent_processes_share_one_build(tree, tmp_path):
    code = ("import sys; from pathlib import Path; from rvne.targets import build, sim; "
            "print(sim.ensure_built(build.Tree(Path(sys.argv[1]), Path(sys.argv[2]), installed=True)))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tree.root), str(tree.host)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    assert len({out.strip() for out, _ in outs}) == 1
    entries = [p.name for p in (tmp_path / "cache").iterdir() if not p.name.endswith(".lock")]
    assert len(entries) == 1 and entries[0].startswith("posix-")


def test_missing_compiler_names_the_package(tree, monkeypatch):
    monkeypatch.setenv("CC", "rvne-no-such-cc")
    with pytest.raises(TargetError, match=r"rvne-no-such-cc, not found; run `apt-get install gcc make`") as exc:
        sim.ensure_built(tree)
    assert "\n" not in str(exc.value)


def test_unusable_cache_is_one_line(tree, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(cache.ENV, str(blocker / "cache"))
    with pytest.raises(TargetError, match=r"cannot use the build cache .*; set RVNE_CACHE_DIR") as exc:
        sim.ensure_built(tree)
    assert "\n" not in str(exc.value)


def test_missing_make_is_one_line():
    with pytest.raises(TargetError, match=r"cannot run rvne-no-such-make .*apt-get install make") as exc:
        build.run(["rvne-no-such-make", "-C", "firmware", "lx6"], "the lx6 firmware", 10)
    assert "\n" not in str(exc.value)
