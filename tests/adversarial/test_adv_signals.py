"""Signals to a running `rvne check --target`: no virtual device or QEMU
left running, no temporary file left on disk, whatever the signal (issue 16
item 10; docs/files.md "Processes")."""

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import SMALL
from rvne.io import upstream_init

CHILD = {"sim": "rvne-vdev", "qemu": "qemu-system-xte"}   # /proc/PID/comm (15 chars)


def children_of(pid):
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def ctrl_c_works():
    """In the child: SIGINT at its default, as a terminal gives it. A test
    run started in the background (`cmd &` in a script, nohup) inherits
    SIGINT ignored, and a process that starts with it ignored keeps
    ignoring it (Python then installs no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(pred, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    return pred()


@pytest.mark.parametrize("target, sig", [
    ("sim", signal.SIGTERM), ("sim", signal.SIGHUP), ("sim", signal.SIGKILL), ("sim", signal.SIGINT),
    ("qemu", signal.SIGTERM), ("qemu", signal.SIGKILL),
])
def test_a_signal_leaves_no_process_and_no_file(tmp_path, target, sig):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    model = tmp_path / "m.rvne"
    model.write_bytes(upstream_init.init_blob(SMALL))
    p = subprocess.Popen([sys.executable, "-m", "rvne", "check", str(model), "--target", target,
                          "--vectors", "100000", "--window", "8"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "TMPDIR": str(tmp)}, preexec_fn=ctrl_c_works)
    try:
        kids = wait_for(lambda: [k for k in children_of(p.pid) if comm(k) == CHILD[target]], 60)
        assert kids, f"no {CHILD[target]} started"
        time.sleep(1.0 if target == "sim" else 3.0)     # streaming by now
        assert p.poll() is None, p.communicate()
        p.send_signal(sig)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if sig == signal.SIGKILL:
        assert p.returncode == -signal.SIGKILL
    elif sig == signal.SIGINT:
        assert p.returncode == 130 and "interrupted" in err
    else:
        assert p.returncode == 128 + sig, err
        assert err.strip() == f"rvne: stopped by {signal.Signals(sig).name}"
    for k in kids:
        assert wait_for(lambda: not alive(k), 10), f"{CHILD[target]} {k} outlived rvne"
    assert os.listdir(tmp) == []
