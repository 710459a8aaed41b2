"""examples/train_temporal_head.py, shortened (docs/training.md): it trains,
beats chance on held-out sequences, exports FP32 and FP16 blobs and both
pass `rvne check`'s verdict on the emulated board (qemu)."""

import re
import subprocess
import sys
from pathlib import Path

from torch_required import torch  # noqa: F401  (fails, never skips, in CI)

from rvne.io import blob

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_temporal_head.py"


def test_the_example_trains_exports_and_passes_the_check(tmp_path):
    r = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "80", "--train", "1024", "--test", "256",
                        "--check", "2", "--target", "qemu", "--out", str(tmp_path), "--min-accuracy", "0.6"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    acc = float(re.search(r"held-out accuracy ([\d.]+) on 256 sequences", r.stdout).group(1))
    assert acc >= 0.6      # chance is 0.25
    assert r.stdout.count("\nPASS") == 2 and "FAIL" not in r.stdout, r.stdout
    # docs/training.md's shell command, on the frames the example saved (sim: the same verdict, faster).
    shell = subprocess.run([sys.executable, "-m", "rvne", "check", str(tmp_path / "gesture_head_fp32.rvne"),
                            "--target", "sim", "--frames", str(tmp_path / "held_out.npy"), "--window", "48"],
                           capture_output=True, text=True, timeout=300)
    assert shell.returncode == 0 and "2 sequences x 64 frames from the frames file" in shell.stdout, shell.stderr
    for dtype in ("fp32", "fp16"):
        parsed = blob.read_file(tmp_path / f"gesture_head_{dtype}.rvne", contract=True)
        assert parsed.header.dtype == dtype and tuple(parsed.header.dims) == (16, 4, 1, 32, 2, 4)
        assert f"gesture_head_{dtype}.rvne on the qemu target (2 held-out sequences, W 48)" in r.stdout


def test_the_example_refuses_a_window_too_short_for_its_gestures(tmp_path):
    r = subprocess.run([sys.executable, str(EXAMPLE), "--window", "20", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--window 20" in r.stderr
