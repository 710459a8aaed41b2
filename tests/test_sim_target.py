"""rvne.targets.sim: build-if-stale, start on a partition, stop cleanly, and
one-line TargetErrors when it cannot."""

import os
from pathlib import Path

import pytest

from rvne.errors import TargetError
from rvne.io import upstream_init
from rvne.link.device import Device
from rvne.targets import build, sim, start_target


def test_start_serves_the_partition_and_stop_cleans_up():
    blob = upstream_init.init_blob()
    t = start_target("sim", blob, window=9)
    try:
        part_file, log_file = t._files
        assert Path(part_file).read_bytes() == blob
        assert "ready: OK" in t.banner
        with Device(t.url, timeout=5) as dev:
            info = dev.info()
        assert info.window == 9 and info.crc == upstream_init.EXAMPLE_CRC
    finally:
        t.stop()
    assert t.proc.poll() is not None
    assert not os.path.exists(part_file) and not os.path.exists(log_file)
    t.stop()   # idempotent


def test_context_manager_stops_on_error():
    with pytest.raises(RuntimeError):
        with start_target("sim", b"\xff" * 64) as t:
            raise RuntimeError("a failing test")
    assert t.proc.poll() is not None


def test_binary_is_fresh_after_ensure_built():
    exe = sim.ensure_built()
    assert exe.is_file() and not build.is_stale(exe, [sim.tree().path(s) for s in sim.SOURCES])


def test_missing_compiler_names_the_packages(monkeypatch):
    monkeypatch.setattr(build, "is_stale", lambda product, sources: True)
    monkeypatch.setattr(sim.shutil, "which", lambda tool: None)
    with pytest.raises(TargetError, match=r"apt-get install gcc make") as exc:
        sim.ensure_built()
    assert "\n" not in str(exc.value)


def test_not_a_checkout(monkeypatch, tmp_path):
    fake_file = tmp_path / "site-packages" / "rvne" / "targets" / "sim.py"
    monkeypatch.setattr(sim, "__file__", str(fake_file))
    with pytest.raises(TargetError, match="firmware sources are missing") as exc:
        sim.tree()
    assert "\n" not in str(exc.value) and "pip install ." in str(exc.value)


def test_bad_arguments_are_target_errors():
    with pytest.raises(TargetError, match="bytes"):
        start_target("sim", "not bytes")
    with pytest.raises(TargetError, match="window"):
        start_target("sim", b"", window=0)
    with pytest.raises(TargetError, match="unknown target"):
        start_target("nope", b"")
