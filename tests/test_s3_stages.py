"""tools/test_s3.sh, the one place the stages that need Espressif's tools
are written (README, "Run every test"): without the tools it runs nothing
and says what is missing in one line (exit 3), and ESP-IDF users' CI
workflow runs that script rather than a copy of its steps."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args, env=None):
    base = {k: v for k, v in os.environ.items() if k not in ("RVNE_QEMU_ESP", "IDF_PATH", "IDF_PYTHON_ENV_PATH")}
    # RVNE_TEST_ALL: the venv is set up (as inside tools/test_all.sh).
    return subprocess.run(["bash", str(ROOT / "tools" / "test_s3.sh"), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**base, "RVNE_TEST_ALL": "1", **(env or {})})


def test_without_espressifs_tools_nothing_runs_and_one_line_says_why():
    done = run("kernels")
    assert done.returncode == 3, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("test_s3: not run: the qemu-esp32s3 target needs")
    assert "idf_tools.py install qemu-xtensa" in lines[0] and "xtensa-esp32s3-elf-gcc" in lines[0]
    assert "== test_s3" not in done.stdout


def test_bad_arguments_are_refused():
    done = run("everything")
    assert done.returncode == 2 and "unknown argument 'everything'" in done.stderr
    done = run("--record", "app")
    assert done.returncode == 2 and "--record needs every stage" in done.stderr


def test_the_esp_idf_workflow_runs_the_script_not_a_copy_of_its_steps():
    wf = (ROOT / ".github" / "workflows" / "esp-idf.yml").read_text()
    runs = [ln.strip() for ln in wf.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    assert "bash tools/test_s3.sh" in runs
    assert "container: espressif/idf:v5.1.5" in runs
    assert not [ln for ln in runs if "pytest" in ln or "make -C" in ln or "demo.sh" in ln], runs
    assert "DOES NOT RUN IT" in wf


def test_the_test_command_lists_each_s3_stage_as_not_run_when_the_tools_are_missing():
    text = (ROOT / "tools" / "test_all.sh").read_text()
    for stage in ("app", "kernels", "pytest"):
        assert f"tools/test_s3.sh {stage}" in text
    assert 'echo "not run: $s: $S3_MISSING"' in text
