"""What the targets share to build their firmware from the checkout this
package lives in: find the checkout, tell whether a build product is older
than its sources, and run `make -C firmware GOAL` one process at a time.
Every failure is a one-line TargetError."""

import fcntl
import os
import subprocess
from pathlib import Path

from ..errors import TargetError


def repo_root(module_file, required, what) -> Path:
    """The checkout holding `module_file` (a module in host/rvne/targets/),
    recognised by the file `required` (relative to the checkout) that target
    `what` needs."""
    root = Path(module_file).resolve().parents[3]
    if not (root / required).is_file():
        raise TargetError(
            f"the {what} target needs the rvne source checkout (no {Path(required).as_posix()} above "
            f"{Path(module_file).parent}); install with `pip install -e .` from a clone of the repository"
        )
    return root


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


def run_make(root, goal, product, stale, what, timeout):
    """Run `make -C firmware -j2 GOAL` in checkout `root` to bring `product`
    up to date. `stale()` tells whether it still needs building: it is asked
    again under a lock (parallel test sessions must not run make on the same
    tree at once; the one that waited finds the product built) and once make
    is done. `what` names the product in errors."""
    product = Path(product)
    again = f"`make -C firmware {goal}`"
    product.parent.mkdir(parents=True, exist_ok=True)
    with open(product.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stale():
            cmd = ["make", "-C", str(Path(root) / "firmware"), "-j2", goal]
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                raise TargetError(f"{again} took over {timeout:.0f} s; run it by hand") from None
            if done.returncode != 0:
                lines = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
                last = lines[-1] if lines else f"exit {done.returncode}"
                raise TargetError(f"building {what} failed: {last}; run {again} to see all")
            if stale() and product.is_file() and _make_says_up_to_date(cmd):
                # A file among the sources changed that make does not build
                # from (a comment in the Makefile, a README under core/):
                # make is the judge, so record its verdict in the mtime.
                os.utime(product)
    if stale():
        shown = product.relative_to(root) if product.is_relative_to(root) else product
        raise TargetError(f"make did not produce an up-to-date {shown}; run {again} and read its errors")


def _make_says_up_to_date(cmd) -> bool:
    """`make -q` with the same goal: exit 0 when nothing is left to build."""
    try:
        return subprocess.run(cmd + ["-q"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
