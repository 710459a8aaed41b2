"""Helpers of the adversarial suite (docs/files.md): run `rvne` as a user
would, in a subprocess with a deadline, and read its one-line verdict."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rvne.io import upstream_init

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))          # fake_device, fmt_fixtures
SMALL = (8, 2, 1, 4, 1, 3)


class Ran:
    def __init__(self, rc, out, err):
        self.rc, self.out, self.err = rc, out, err

    def line(self, *words):
        """The single stderr line, holding each of `words`."""
        lines = [ln for ln in self.err.splitlines() if ln.strip()]
        assert len(lines) == 1, self.err
        assert "Traceback" not in self.err
        for w in words:
            assert w in lines[0], (w, lines[0])
        return lines[0]


def rvne(*argv, timeout=20, env=None, **kw):
    """`python -m rvne ARGV` in a subprocess; a hang fails the test at `timeout`."""
    p = subprocess.run([sys.executable, "-m", "rvne", *map(str, argv)], capture_output=True, text=True,
                       timeout=timeout, env={**os.environ, **(env or {})}, **kw)
    return Ran(p.returncode, p.stdout, p.stderr)


@pytest.fixture(scope="session")
def small_blob():
    return upstream_init.init_blob(SMALL)


@pytest.fixture
def blob_file(tmp_path, small_blob):
    path = tmp_path / "good.rvne"
    path.write_bytes(small_blob)
    return path


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path
