"""Ctrl-C at any moment of a command, the import of its modules included,
ends with one line "rvne: interrupted" and exit 130 (docs/cli.md). The
SIGINT is sent by the process to itself when the named module is about to
be imported: the same as a user's Ctrl-C landing there, without timing."""

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:     # Python < 3.11
    tomllib = None

ROOT = Path(__file__).resolve().parents[1]


def entry_point():
    """(module, function) of the `rvne` console script, as pyproject.toml declares it."""
    text = (ROOT / "pyproject.toml").read_text()
    if tomllib is not None:
        spec = tomllib.loads(text)["project"]["scripts"]["rvne"]
    else:
        (spec,) = [ln.split("=", 1)[1].strip().strip('"') for ln in text.splitlines() if ln.startswith("rvne =")]
    module, func = spec.split(":")
    return module, func


# What the console script pip writes does, with a Ctrl-C when `trigger` is imported.
SCRIPT = textwrap.dedent("""
    import os, signal, sys
    TRIGGER = sys.argv.pop(1)

    class CtrlC:
        def find_spec(self, name, path=None, target=None):
            if name == TRIGGER:
                os.kill(os.getpid(), signal.SIGINT)
            return None

    sys.meta_path.insert(0, CtrlC())
    from {module} import {func}
    sys.exit({func}())
""")


@pytest.mark.parametrize("trigger", ["rvne.cli", "argparse", "rvne.commands.blobs", "numpy", "rvne.check",
                                     "rvne.targets"])
def test_ctrl_c_while_importing_is_one_line_and_exit_130(trigger, tmp_path):
    module, func = entry_point()
    code = SCRIPT.format(module=module, func=func)
    # SIGINT at its default in the child, as a terminal gives it: a run started in the background
    # (`cmd &`, nohup) inherits it ignored, and then no Ctrl-C reaches any program.
    done = subprocess.run([sys.executable, "-c", code, trigger, "check", "m.rvne", "--target", "sim"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert (done.returncode, done.stderr) == (130, "rvne: interrupted\n"), done.stderr[-2000:]
    assert done.stdout == ""
