"""A short atheris run of every host reader (tools/fuzz_host.py; the long
run is documented there and in docs/files.md). A reader that raises
anything but its named error on any mutant fails the run."""

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

FUZZ = ROOT / "tools" / "fuzz_host.py"
TARGETS = ("rvne", "lwt", "burnpack", "milblob", "cnn2", "safetensors", "detect", "npy", "npz", "pt", "reply", "partition")
RUNS = {"npz": 1000, "pt": 500}     # each npz/pt input is a file written and unzipped
DEFAULT_RUNS = 5000


@pytest.mark.parametrize("target", TARGETS)
def test_short_fuzz_run(tmp_path, target):
    runs = RUNS.get(target, DEFAULT_RUNS)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    p = subprocess.run([sys.executable, str(FUZZ), target, "--runs", str(runs), "--corpus", str(tmp_path / "c")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={**os.environ, "TMPDIR": str(tmp)})
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"Done {runs} runs" in p.stderr
    cov = int(re.search(r"DONE\s+cov: (\d+)", p.stderr).group(1))
    assert cov > 10, p.stderr[-2000:]           # instrumented: the readers' edges were seen
    print(f"{target}: {runs} runs, cov {cov}")
    assert not [f for f in os.listdir(tmp_path) if f.startswith("crash-")]
    assert os.listdir(tmp) == []                 # no temporary file left behind
