"""Firmware builds of an installed rvne, in a per-user cache:
$RVNE_CACHE_DIR, else $XDG_CACHE_HOME/rvne/builds, else ~/.cache/rvne/builds.

One directory per build, named GOAL-KEY, where KEY hashes the goal, every
source file it is built from (path and bytes) and the `--version` output
of each compiler it uses: new sources (an upgraded rvne) or a new compiler
give a new key, hence a fresh build; nothing is ever rebuilt in place.

A build runs under an exclusive lock per GOAL-KEY (concurrent rvne
processes: one builds, the others wait and then use its result) into a
temporary directory beside the final one, renamed to GOAL-KEY only when
make succeeded and the product exists. So a directory named GOAL-KEY is
always complete, and what a killed build leaves (.GOAL-KEY.tmp*) is never
used: the next build under the lock removes it.
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import TargetError

ENV = "RVNE_CACHE_DIR"


def root() -> Path:
    """The cache directory (not created)."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rvne" / "builds"


def compiler_id(command) -> str:
    """What `command --version` prints (the whole output: Debian's version
    strings name the package revision); a missing one is an error the
    caller's tool check reports first."""
    try:
        done = subprocess.run([command, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TargetError(f"cannot run `{command} --version`: {exc}") from None
    return f"{command}\n{done.returncode}\n{done.stdout}{done.stderr}"


def key(tree, goal, sources, compilers) -> str:
    """The hash naming a build of `goal` from `sources` (named as in a
    checkout, Tree.path) by `compilers` (commands)."""
    h = hashlib.sha256(f"rvne build 1\0{goal}\0".encode())
    for rel in sorted(map(str, sources)):
        top = tree.path(rel)
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for f in files:
            name = Path(rel, f.relative_to(top)).as_posix() if f != top else rel
            h.update(f"{name}\0{hashlib.sha256(f.read_bytes()).hexdigest()}\0".encode())
    for command in compilers:
        h.update(compiler_id(command).encode() + b"\0")
    return h.hexdigest()[:16]


def ensure(tree, goal, product, sources, compilers, check_tools, build_into) -> Path:
    """Path of `product` (relative to the build directory) of `make GOAL`
    from `tree`, built into the cache if no complete build with the same key
    exists (build.ensure describes the arguments): build_into(directory,
    final) runs the build into `directory`, which becomes `final` when
    complete (build.ensure gives it)."""
    check_tools()       # the key needs the compilers' versions
    home = root()
    name = f"{goal}-{key(tree, goal, sources, compilers)}"
    final = home / name
    if (final / product).is_file():
        return final / product
    try:
        home.mkdir(parents=True, exist_ok=True)
        lock = open(home / f".{name}.lock", "w")
    except OSError as exc:
        raise _unusable(home, exc) from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (final / product).is_file():
            return final / product
        # Under the lock nobody else builds this key: whatever is left is
        # a killed build's (or a final directory someone emptied).
        for stale in [*home.glob(f".{name}.tmp*"), final]:
            shutil.rmtree(stale, ignore_errors=True)
        try:
            tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp", dir=home))
        except OSError as exc:
            raise _unusable(home, exc) from None
        try:
            build_into(tmp, final)
            if not (tmp / product).is_file():
                raise TargetError(f"make {goal} did not produce {product}; run `make -C "
                                  f"{tree.root / 'firmware'} {goal}` and read its errors")
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return final / product


def _unusable(home, exc) -> TargetError:
    return TargetError(f"cannot use the build cache {home}: {exc.strerror}; set {ENV} to a writable directory")
