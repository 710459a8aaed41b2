"""The device suite runs on a user's own blob (`pytest tests/hil --rvne-blob
FILE`): no test assumes the upstream example's dims. Before issue 12,
test_repeated_seq_is_replayed_not_reexecuted sent a 16-wide frame and got
E_FRAME_SIZE from a 24-wide model."""

import os
import subprocess
import sys
from pathlib import Path

from rvne.io import upstream_init

ROOT = Path(__file__).resolve().parents[1]


def test_device_suite_on_a_24_wide_blob(tmp_path):
    own = tmp_path / "own.rvne"
    own.write_bytes(upstream_init.init_blob((24, 6, 3, 8, 2, 5)))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rvne-blob", str(own),
         "tests/hil/test_robustness.py", "tests/hil/test_stream.py", "tests/hil/test_info.py",
         "-k", "fp32 or not (fp16)"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout
