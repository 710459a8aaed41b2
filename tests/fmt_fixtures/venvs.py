"""Side environments for a format's own library at a version the test
environment cannot hold next to its own (coremltools 7 and 8 beside 9): one
venv per requirement set, built with pip from PyPI on first use and cached
outside the repository, so a later run costs nothing. A failed install fails
the test that needed it: these are the oracles, never optional."""

import fcntl
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import venv


def _root():
    if os.environ.get("RVNE_TEST_VENVS"):
        return pathlib.Path(os.environ["RVNE_TEST_VENVS"])
    cache = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(cache) / "rvne" / "test-venvs"


def _clean_env():
    # The worktree's PYTHONPATH would put the main environment's packages
    # (coremltools 9) in front of the side environment's.
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def python(name, requirements):
    """Path of the python of a venv holding `requirements`, built if missing."""
    key = hashlib.sha256("\n".join([sys.version, *requirements]).encode()).hexdigest()[:12]
    home = _root() / f"{name}-{key}"
    exe = home / "bin" / "python"
    if (home / ".complete").exists():
        return exe
    # One builder at a time (pytest-xdist's workers, parallel runs): the one
    # that waited finds it built, and none replaces a venv another uses.
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.with_name(home.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (home / ".complete").exists():
            _build(home, requirements)
    return exe


def _build(home, requirements):
    staging = home.with_name(home.name + f".tmp{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    venv.create(staging, with_pip=True, symlinks=True)
    proc = subprocess.run([str(staging / "bin" / "python"), "-m", "pip", "install", "-q",
                           "--disable-pip-version-check", *requirements],
                          capture_output=True, text=True, env=_clean_env())
    if proc.returncode:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"pip install {' '.join(requirements)} failed:\n{proc.stderr[-2000:]}")
    (staging / ".complete").write_text("\n".join(requirements) + "\n")
    shutil.rmtree(home, ignore_errors=True)
    staging.rename(home)


def run(exe, script, *args, timeout=600):
    """Run `script` (a path) under the side python; returns stdout."""
    proc = subprocess.run([str(exe), str(script), *map(str, args)], capture_output=True, text=True,
                          env=_clean_env(), timeout=timeout)
    if proc.returncode:
        raise RuntimeError(f"{script} {' '.join(map(str, args))} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout
