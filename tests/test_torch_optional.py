"""The package works without PyTorch: nothing imports torch unless rvne.torch
is imported (pyproject's `torch` extra is optional)."""

import subprocess
import sys
import textwrap

# Run in a child whose import system refuses torch, as on a machine without it.
_BLOCK = textwrap.dedent("""
    import importlib.abc, sys
    class NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError("No module named 'torch' (blocked by the test)", name="torch")
    sys.meta_path.insert(0, NoTorch())
""")


def _run(code, tmp_path):
    return subprocess.run([sys.executable, "-c", _BLOCK + textwrap.dedent(code)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def test_cli_and_modules_import_no_torch(tmp_path):
    r = _run("""
        import pkgutil, importlib, sys
        import rvne
        for m in pkgutil.walk_packages(rvne.__path__, "rvne."):
            if m.name not in ("rvne.torch", "rvne.__main__"):
                importlib.import_module(m.name)
        from rvne import cli
        assert cli.main(["init", "m.rvne"]) == 0
        assert cli.main(["export", "m.rvne", "m.npz"]) == 0
        assert cli.main(["pack", "m.npz", "n.rvne"]) == 0
        assert "torch" not in sys.modules, "torch was imported"
        print("ok")
    """, tmp_path)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr


def test_pack_pt_without_torch_says_what_to_install(tmp_path):
    (tmp_path / "w.pt").write_bytes(b"PK\x03\x04 whatever")
    r = _run("""
        from rvne import cli
        import sys
        sys.exit(cli.main(["pack", "w.pt", "o.rvne", "--dims", "8,2,1,4,1,3"]))
    """, tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    assert "w.pt: reading a .pt file needs PyTorch: pip install 'rvne[torch]'" in lines[0]
    assert not (tmp_path / "o.rvne").exists()
