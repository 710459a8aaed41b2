"""Outputs: what rvne must not replace, what a replaced file keeps, and
concurrent or killed writers (issue 16 items 2, 7, 10, 11; docs/files.md
"Outputs" and "Flashing an image")."""

import os
import signal
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from conftest import ROOT, SMALL, rvne
from rvne.flash import image as flash_image, partition
from rvne.io import atomic, blob, upstream_init

CSV = ROOT / "partitions.csv"


def image(table=None):
    return flash_image.build_image(b"\x00" * 16, b"\x00" * 16, table or partition.read_csv(CSV))


@pytest.fixture
def frames(tmp_path):
    path = tmp_path / "f.npy"
    np.save(path, np.zeros((3, SMALL[0]), np.float32))
    return path


def test_device_nodes_and_fifos_are_never_replaced(tmp_path, blob_file, frames, fifo):
    # A null device node of our own: a broken rvne must not turn the
    # machine's /dev/null into a file (it did, before this suite existed).
    null = tmp_path / "null"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        outs = (null, fifo)
    except PermissionError:         # not root: a FIFO is the node we can make
        outs = (fifo,)
    for out in outs:
        before = os.stat(out)
        for argv in (["infer", blob_file, frames, "--out", out], ["init", out, "--dims", "8,2,1,4,1,3"]):
            r = rvne(*argv, timeout=15)
            assert r.rc == 1, (argv, r.err)
            r.line(str(out), "rvne writes only regular files")
        r = rvne("export", blob_file, out, timeout=15)      # refused by its name first
        assert r.rc == 1
        r.line(str(out))
        after = os.stat(out)
        assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino


def test_read_only_and_hard_linked_outputs_are_kept(tmp_path, blob_file):
    ro = tmp_path / "ro.rvne"
    ro.write_bytes(b"keep")
    ro.chmod(0o444)
    r = rvne("init", ro)
    assert r.rc == 1 and ro.read_bytes() == b"keep"
    r.line("ro.rvne", "read-only (mode 0444)")
    linked = tmp_path / "a.rvne"
    linked.write_bytes(b"keep")
    os.link(linked, tmp_path / "b.rvne")
    r = rvne("init", linked)
    assert r.rc == 1 and linked.read_bytes() == b"keep"
    r.line("a.rvne", "2 hard links")


def test_a_replaced_file_keeps_mode_and_owner(tmp_path):
    out = tmp_path / "o.rvne"
    out.write_bytes(b"old")
    out.chmod(0o640)
    if os.geteuid() == 0:
        os.chown(out, 1234, 5678)
    atomic.write_atomic(out, b"new")
    st = out.stat()
    assert out.read_bytes() == b"new" and stat.S_IMODE(st.st_mode) == 0o640
    if os.geteuid() == 0:
        assert (st.st_uid, st.st_gid) == (1234, 5678)


def test_a_writer_names_no_file_until_it_is_complete(tmp_path, monkeypatch):
    """Killed while writing (SIGKILL cannot be caught), a writer must leave
    nothing: the data goes to a nameless file first (O_TMPFILE)."""
    seen = []
    real_fsync = os.fsync

    def spy(fd):
        seen.append(sorted(os.listdir(tmp_path)))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    atomic.write_atomic(tmp_path / "o.bin", b"x" * 100000)
    assert seen and seen[0] == []
    assert os.listdir(tmp_path) == ["o.bin"]


def test_sigkill_during_flash_leaves_no_temporary_file(tmp_path, blob_file):
    img = tmp_path / "flash.img"
    img.write_bytes(image())
    for delay in (0.2, 0.35, 0.5, 0.65):
        p = subprocess.Popen([sys.executable, "-m", "rvne", "flash", str(blob_file), "--image", str(img)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        assert sorted(os.listdir(tmp_path)) == ["flash.img", "good.rvne"]
        assert len(img.read_bytes()) == flash_image.FLASH_SIZE


def test_concurrent_flashes_of_one_image_both_land(tmp_path, small_blob):
    other = upstream_init.init_blob(SMALL, seed=7)
    a, b = tmp_path / "a.rvne", tmp_path / "b.rvne"
    a.write_bytes(small_blob)
    b.write_bytes(other)
    img = tmp_path / "flash.img"
    table = partition.parse_csv(CSV.read_text())     # two slots: one flash into each
    for trial in range(4):
        img.write_bytes(image(table))
        procs = [subprocess.Popen([sys.executable, "-m", "rvne", "flash", str(path), "--image", str(img),
                                   "--label", label], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for path, label in ((a, "rvne_a"), (b, "rvne_b"))]
        for p in procs:
            out, err = p.communicate(timeout=30)
            assert p.returncode == 0 and out.startswith("wrote"), err
        data = img.read_bytes()
        for want, label in ((small_blob, "rvne_a"), (other, "rvne_b")):
            p = table.find(label)
            assert data[p.offset:p.offset + len(want)] == want, (trial, label)


def _with_table(rows_bytes):
    img = bytearray(image())
    t = rows_bytes + b"\xff" * (partition.TABLE_MAX - len(rows_bytes))
    img[partition.TABLE_OFFSET:partition.TABLE_OFFSET + len(t)] = t
    return bytes(img)


def _row(name, ptype, sub, offset, size):
    return partition.Partition(name, ptype, sub, offset, size).to_binary()


@pytest.mark.parametrize("rows, words", [
    # rvne over the boot stub, with a valid MD5 row: the board would boot silent.
    ([("factory", 0, 0, 0x10000, 0x100000), ("rvne", 1, 0x40, 0x0, 0x200000)], "below the end of the partition table"),
    # rvne over the table itself.
    ([("rvne", 1, 0x40, 0x8000, 0x10000)], "below the end of the partition table"),
    # past the end of the 4 MiB flash.
    ([("rvne", 1, 0x40, 0x300000, 0x200000)], "past the 0x400000-byte flash"),
    # overlapping the app.
    ([("factory", 0, 0, 0x10000, 0x100000), ("rvne", 1, 0x40, 0x80000, 0x10000)], "overlaps"),
])
def test_an_image_whose_own_table_is_unsafe_is_not_written(tmp_path, blob_file, rows, words):
    import hashlib

    body = b"".join(_row(*r) for r in rows)
    data = _with_table(body + partition.MD5_ROW_HEAD + hashlib.md5(body).digest())
    img = tmp_path / "bad.img"
    img.write_bytes(data)
    r = rvne("flash", blob_file, "--image", img)
    assert r.rc == 1
    r.line("bad.img", words)
    assert img.read_bytes() == data


def test_an_image_table_without_md5_row_is_not_written(tmp_path, blob_file):
    body = _row("rvne", 1, 0x40, 0x110000, 0x200000)
    data = _with_table(body)
    img = tmp_path / "nomd5.img"
    img.write_bytes(data)
    r = rvne("flash", blob_file, "--image", img)
    assert r.rc == 1
    r.line("nomd5.img", "no MD5 row")
    assert img.read_bytes() == data


def test_flash_of_a_read_only_or_linked_image_is_refused(tmp_path, blob_file):
    data = image()
    img = tmp_path / "ro.img"
    img.write_bytes(data)
    img.chmod(0o444)
    r = rvne("flash", blob_file, "--image", img)
    assert r.rc == 1 and img.read_bytes() == data
    r.line("ro.img", "read-only")
    img2 = tmp_path / "l.img"
    img2.write_bytes(data)
    os.link(img2, tmp_path / "l2.img")
    r = rvne("flash", blob_file, "--image", img2)
    assert r.rc == 1 and img2.read_bytes() == data
    r.line("l.img", "hard links")
