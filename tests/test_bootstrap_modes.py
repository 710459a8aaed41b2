"""tools/bootstrap.sh: the main job's install (`--main`, what tools/demo.sh
runs) is rvne without extras, no torch; the test command's adds them; a
warm run installs nothing. Run against a stand-in venv whose python logs
what it is asked to do (so no package is downloaded here)."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fake_venv(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "calls.log"
    py = venv / "bin" / "python"
    # torch is "there" once pip installed it.
    py.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\n'
                  f'case "$*" in\n'
                  f'  *"import torch"*) [ -f "{venv}/torch" ] || exit 1 ;;\n'
                  f'  *"pip install"*torch==*) touch "{venv}/torch" ;;\n'
                  f'esac\nexit 0\n')
    py.chmod(0o755)
    return venv, log


def bootstrap(venv, *argv):
    done = subprocess.run(["bash", str(ROOT / "tools" / "bootstrap.sh"), *argv], cwd=ROOT,
                          env={**os.environ, "RVNE_VENV": str(venv)}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


def installs(log):
    lines = log.read_text().splitlines() if log.exists() else []
    log.write_text("")
    return [ln for ln in lines if "pip install" in ln]


def test_main_job_installs_rvne_alone_and_once(tmp_path):
    venv, log = fake_venv(tmp_path)
    bootstrap(venv, "--main")
    calls = installs(log)
    assert len(calls) == 1 and calls[0].endswith("-e .") and "torch" not in calls[0], calls
    bootstrap(venv, "--main")
    assert installs(log) == []                          # warm: nothing installed again
    bootstrap(venv)                                     # the test command adds the extras and torch
    calls = installs(log)
    assert len(calls) == 2 and "torch==" in calls[0] and calls[1].endswith("-e .[test]"), calls
    bootstrap(venv, "--main")
    bootstrap(venv)
    assert installs(log) == []


def test_demo_runs_the_main_bootstrap_and_no_silent_build():
    demo = (ROOT / "tools" / "demo.sh").read_text()
    assert "bash tools/bootstrap.sh --main" in demo
    assert ">/dev/null" not in demo.replace("command -v", "")


def test_readme_gives_the_cpu_torch_command_bootstrap_runs():
    import re

    (cpu,) = re.findall(r'^TORCH_CPU="([^"]+)"$', (ROOT / "tools" / "bootstrap.sh").read_text(), re.M)
    assert "+cpu" in cpu and "download.pytorch.org/whl/cpu" in cpu
    readme = (ROOT / "README.md").read_text()
    assert f"pip install {cpu}\n" in readme
    # The extra comes after the CPU build, so pip finds torch already satisfied.
    assert readme.index(f"pip install {cpu}") < readme.index("pip install '.[torch]'")


def test_s3_mode_installs_the_test_extras_without_torch_and_once(tmp_path):
    # What tools/test_s3.sh needs in an ESP-IDF container: no torch, none of
    # Debian's Xtensa toolchains (the container's apt has no clang-22).
    venv, log = fake_venv(tmp_path)
    done = bootstrap(venv, "--s3")
    calls = installs(log)
    assert len(calls) == 1 and calls[0].endswith("-e .[test]") and "torch" not in calls[0], calls
    assert "clang-22" not in done.stdout and "qemu-system-misc" not in done.stdout
    bootstrap(venv, "--s3")
    assert installs(log) == []


def test_an_unknown_mode_is_refused_in_one_line(tmp_path):
    venv, _ = fake_venv(tmp_path)
    done = subprocess.run(["bash", str(ROOT / "tools" / "bootstrap.sh"), "--everything"], cwd=ROOT,
                          env={**os.environ, "RVNE_VENV": str(venv)}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown option '--everything'" in done.stderr
