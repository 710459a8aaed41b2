"""The host package's architecture (README, "Layout"): import-linter's
contracts in pyproject.toml hold (each layer imports only the ones below it,
model's inner order, no command module importing another, no import circle
in any package, no use of an old path), they fail on a copy with a circle
put back, old module paths still import for one release, and the host/rvne
paths the docs name exist."""

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

try:
    import importlinter  # noqa: F401
except ImportError as exc:
    if os.environ.get("CI"):
        raise ImportError(f"CI is set and import-linter is missing ({exc}): the test extra installs it "
                          "(tools/bootstrap.sh)") from exc
    pytest.skip("needs import-linter: pip install -e '.[test]' (tools/bootstrap.sh does it)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = ("layers", "model", "commands", "acyclic", "new-paths")


def lint_imports(host, tmp_path):
    """lint-imports with pyproject.toml's contracts on the rvne package under `host`."""
    env = {**os.environ, "PYTHONPATH": str(host)}
    return subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()",
                           "--no-cache", str(ROOT / "pyproject.toml")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_the_layers_hold_and_nothing_imports_in_a_circle(tmp_path):
    done = lint_imports(ROOT / "host", tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in done.stdout


def test_a_circle_or_an_upward_import_put_back_breaks_the_contracts(tmp_path):
    host = tmp_path / "host"
    shutil.copytree(ROOT / "host" / "rvne", host / "rvne", ignore=shutil.ignore_patterns("__pycache__"))
    # The circle of before: the rule importing the float64 truth, which imports the FP32 reference,
    # which imports the rule; a file module importing a command; an old path.
    with open(host / "rvne" / "model" / "agreement.py", "a") as f:
        f.write("\nfrom . import bounds  # noqa: E402,F401\n")
    with open(host / "rvne" / "io" / "blob.py", "a") as f:
        f.write("\nfrom ..commands import _args  # noqa: E402,F401\n")
    with open(host / "rvne" / "plan.py", "a") as f:
        f.write("\n\ndef _old():\n    from . import blob\n    return blob\n")
    done = lint_imports(host, tmp_path)
    out = done.stdout
    assert done.returncode != 0, out[-4000:]
    assert f"Contracts: {len(CONTRACTS) - 4} kept, 4 broken." in out, out[-4000:]
    assert "rvne.model.agreement -> rvne.model.bounds" in out
    assert "rvne.io.blob -> rvne.commands._args" in out
    assert "rvne.plan -> rvne" in out


def test_an_old_module_path_is_the_new_module_with_a_deprecation_warning(tmp_path):
    code = textwrap.dedent("""
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import rvne.blob
            from rvne import device
            from rvne.formats import lwt
            from rvne.weights_io import state_dict_key
        import rvne.io.blob, rvne.link.device, rvne.io.formats.lwt, rvne.io.weights
        assert rvne.blob is rvne.io.blob and device is rvne.link.device and lwt is rvne.io.formats.lwt
        assert state_dict_key is rvne.io.weights.state_dict_key
        assert rvne.io.blob.__spec__.name == "rvne.io.blob"
        msgs = sorted(str(w.message) for w in caught if w.category is DeprecationWarning)
        print("\\n".join(msgs))
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(ln.startswith("rvne.blob moved to rvne.io.blob") for ln in lines), lines
    assert any(ln.startswith("rvne.formats moved to rvne.io.formats") for ln in lines), lines
    assert any(ln.startswith("rvne.weights_io moved to rvne.io.weights") for ln in lines), lines


def test_every_host_path_the_docs_name_exists():
    named = {}
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for path in re.findall(r"host/rvne/[\w/]*\w(?:\.\w+)?", doc.read_text()):
            named.setdefault(path, doc.name)
    assert len(named) > 20
    missing = sorted(f"{p} ({doc})" for p, doc in named.items() if not (ROOT / p).exists())
    assert not missing, missing
