"""What the targets share to build their firmware: find its sources, tell
whether a build product is older than them, and run `make -C firmware GOAL`
one process at a time. Every failure is a one-line TargetError.

The sources are found in one place, `tree()`:
- a checkout (this module at host/rvne/targets/, firmware/ beside host/,
  also an editable install): builds go to the checkout's build/, rebuilt
  when a product is older than its sources (make is the judge);
- an installed rvne (a wheel, `pip install .`): the firmware sources ship
  as package data (rvne/_firmware, written by setup.py) and builds go to a
  per-user cache keyed by the sources and the compiler (targets/cache.py).
"""

import fcntl
import os
import subprocess
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import TargetError
from . import cache

PACKAGE_DATA = "_firmware"     # rvne/_firmware: firmware/ and partitions.csv of an installed rvne

# Told one line when a build really starts (what, where): a first build takes
# 20-30 s, and without a terminal no spinner says why nothing happens. The
# CLI points it at stderr (unless -q); a library caller may set it.
announce = None


def say_building(what, where):
    if announce is not None:
        announce(f"rvne: building {what} into {where} (first use, or its sources or compiler changed)")


@dataclass(frozen=True)
class Tree:
    """Where a target's sources are. `root` holds firmware/ and
    partitions.csv; `host` holds the rvne package (the Xtensa images are
    written by its rvne.flash.image); `installed`: package data of an
    installed rvne, whose builds go to the user cache."""

    root: Path
    host: Path
    installed: bool = False

    def path(self, rel) -> Path:
        """A source named as in a checkout (firmware/..., partitions.csv,
        host/rvne/...) in this tree."""
        rel = Path(rel)
        if rel.parts[0] == "host":
            return self.host.joinpath(*rel.parts[1:])
        return self.root / rel


def tree(module_file, required, what) -> Tree:
    """The sources target `what` builds from, recognised by the file
    `required` (relative to a checkout, e.g. firmware/Makefile).
    `module_file` is a module in host/rvne/targets/."""
    checkout = Path(module_file).resolve().parents[3]
    if (checkout / required).is_file() and (checkout / "host" / "rvne").is_dir():
        return Tree(checkout, checkout / "host")
    data = Path(str(resources.files("rvne").joinpath(PACKAGE_DATA)))
    if (data / required).is_file():
        return Tree(data, data.parent.parent, installed=True)
    raise TargetError(
        f"the {what} target's firmware sources are missing (no {Path(required).as_posix()} in a checkout "
        f"above {Path(module_file).parent} nor in the installed package); reinstall rvne with "
        "`pip install .` from a clone of the repository"
    )


def make_command(tree_: Tree, goal, build_dir=None, variables=()):
    """`make -C firmware -j2 GOAL` for `tree_`, writing into `build_dir`
    (default: the Makefile's own, a checkout's build/), with make
    `variables` ("NAME=value") besides. The image step runs under this
    interpreter, which has rvne's dependencies."""
    cmd = ["make", "-C", str(tree_.root / "firmware"), "-j2", f"RVNE_HOST={tree_.host}", f"PYTHON={sys.executable}"]
    if build_dir is not None:
        cmd.append(f"BUILD={build_dir}")
    return cmd + list(variables) + [goal]


def ensure(tree_: Tree, goal, product, sources, compilers, check_tools, what, timeout, variables=()) -> Path:
    """Path of an up-to-date build `product` (relative to the build
    directory, e.g. posix/rvne-vdev) of `make GOAL`. `sources` are named as
    in a checkout (Tree.path); `compilers` are the commands whose
    `--version` keys a cached build; `check_tools()` raises a TargetError
    naming what to install when something needed is missing; `variables`
    go to make (make_command)."""
    if tree_.installed:
        def build_into(directory, final):
            say_building(what, final)
            run(make_command(tree_, goal, directory, variables), what, timeout)

        return cache.ensure(tree_, goal, product, sources, compilers, check_tools, build_into)
    out = tree_.root / "build" / product
    paths = [tree_.path(s) for s in sources]
    if is_stale(out, paths):
        check_tools()
        run_make(tree_, goal, out, lambda: is_stale(out, paths), what, timeout, variables)
    return out


def newest_source(paths) -> float:
    """The newest modification time of the files among `paths` and in the
    trees below them (0.0 when there are none)."""
    newest = 0.0
    for path in map(Path, paths):
        if path.is_file():
            newest = max(newest, path.stat().st_mtime)
            continue
        for dirpath, _, files in os.walk(path):
            for name in files:
                newest = max(newest, os.stat(os.path.join(dirpath, name)).st_mtime)
    return newest


def is_stale(product, sources) -> bool:
    """True when `product` is missing or older than any of `sources`."""
    product = Path(product)
    return not product.is_file() or product.stat().st_mtime < newest_source(sources)


def run(cmd, what, timeout):
    """Run a make command; a failure or a timeout is a one-line TargetError."""
    again = "`make -C firmware " + cmd[-1] + "`"
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TargetError(f"{again} took over {timeout:.0f} s; run it by hand") from None
    except OSError as exc:
        raise TargetError(f"cannot run {cmd[0]} to build {what}: {exc.strerror}; "
                          "apt-get install make (or run tools/bootstrap.sh)") from None
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        last = lines[-1] if lines else f"exit {done.returncode}"
        raise TargetError(f"building {what} failed: {last}; run {again} to see all")


def run_make(root, goal, product, stale, what, timeout, variables=()):
    """Run `make -C firmware -j2 GOAL` in checkout `root` (a path or a Tree)
    to bring `product` (a path, or a list of the paths GOAL makes) up to
    date. `stale()` tells whether it still needs building: it is asked again
    under a lock (parallel test sessions must not run make on the same tree
    at once; the one that waited finds the product built) and once make is
    done. `what` names the product in errors."""
    tree_ = root if isinstance(root, Tree) else Tree(Path(root), Path(root) / "host")
    root = tree_.root
    products = [Path(p) for p in product] if isinstance(product, (list, tuple)) else [Path(product)]
    again = f"`make -C firmware {goal}`"
    products[-1].parent.mkdir(parents=True, exist_ok=True)
    with open(products[-1].parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stale():
            cmd = make_command(tree_, goal, variables=variables)
            say_building(what, products[-1].parent)
            run(cmd, what, timeout)
            if stale() and all(p.is_file() for p in products) and _make_says_up_to_date(cmd):
                # A file among the sources changed that make does not build
                # from (a comment in the Makefile, a README under core/):
                # make is the judge, so record its verdict in the mtimes.
                for p in products:
                    os.utime(p)
    if stale():
        shown = products[-1].relative_to(root) if products[-1].is_relative_to(root) else products[-1]
        raise TargetError(f"make did not produce an up-to-date {shown}; run {again} and read its errors")


def _make_says_up_to_date(cmd) -> bool:
    """`make -q` with the same goal: exit 0 when nothing is left to build."""
    try:
        return subprocess.run(cmd + ["-q"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
