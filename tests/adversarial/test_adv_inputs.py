"""Inputs that used to hang, exhaust memory, be read twice or kill the host
(issue 16 items 3, 4, 9, 12; docs/files.md "Inputs"). Each ends within its
deadline with exit 1 and one line, or succeeds where it should."""

import io
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from conftest import ROOT, Ran, rvne
from rvne.flash import image as flash_image, partition

CSV = ROOT / "partitions.csv"


def image_bytes():
    table = partition.read_csv(CSV)
    return flash_image.build_image(b"\x00" * 16, b"\x00" * 16, table)


@pytest.mark.parametrize("argv", [
    ["verify", "{fifo}"],
    ["inspect", "{fifo}"],
    ["export", "{fifo}", "{tmp}/o.npz"],
    ["pack", "{fifo}", "{tmp}/o.rvne", "--dims", "8,2,1,4,1,3"],
    ["infer", "{blob}", "{fifo}", "--out", "{tmp}/o.npy"],
    ["flash", "{blob}", "--image", "{fifo}"],
    ["check", "{blob}", "--target", "qemu", "--image", "{fifo}"],
    ["flash", "{blob}", "--port", "/dev/null", "--partitions", "{fifo}"],
    ["pack", "{blob}", "{tmp}/o.rvne", "--map", "{fifo}"],
    ["pack", "{fifo}", "{tmp}/o.rvne", "--map", "{tmp}/m.json"],
])
def test_a_fifo_without_writer_is_refused_not_waited_for(tmp_path, fifo, blob_file, argv):
    args = [a.format(fifo=fifo, tmp=tmp_path, blob=blob_file) for a in argv]
    (tmp_path / "m.json").write_text('{"tensors": {"wc": "x"}}')
    if args[0] == "pack" and "--map" not in args:
        os.rename(fifo, tmp_path / "w.npz")
        args[1] = tmp_path / "w.npz"
    r = rvne(*args, timeout=15)
    assert r.rc == 1, r.err
    r.line("fifo" if args[0] != "pack" or "--map" in args else "w.npz")


def test_a_fifo_safetensors_is_refused(tmp_path):
    path = tmp_path / "w.safetensors"
    os.mkfifo(path)
    r = rvne("pack", path, tmp_path / "o.rvne", timeout=15)
    assert r.rc == 1
    r.line("w.safetensors: is a FIFO")


@pytest.mark.parametrize("cmd", ["verify", "inspect", "export"])
def test_character_devices_are_refused_before_reading(tmp_path, cmd):
    extra = [tmp_path / "o.npz"] if cmd == "export" else []
    r = rvne(cmd, "/dev/zero", *extra, timeout=10)
    assert r.rc == 1
    r.line("/dev/zero: is a character device")


def test_a_pipe_is_read_once_and_accepted(blob_file):
    with open(blob_file, "rb") as f:
        r = rvne("verify", "/dev/stdin", stdin=f)
    assert r.rc == 0 and r.out.startswith("OK /dev/stdin"), r.err
    # Process substitution: the path is a pipe that can be opened once.
    p = subprocess.run(["bash", "-c", f'"{sys.executable}" -m rvne verify <(cat "{blob_file}")'],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 0 and p.stdout.startswith("OK /dev/fd/"), p.stderr
    with open(blob_file, "rb") as f:
        r = rvne("inspect", "/dev/stdin", "--json", stdin=f)
    assert r.rc == 0, r.err


@pytest.mark.parametrize("delay", [0.0, 0.4])
def test_a_fifo_with_a_writer_is_read_once(tmp_path, fifo, blob_file, delay):
    """A named FIFO whose writer opens it before or just after rvne does
    (within its grace of docs/files.md) is read, and read once."""
    writer = subprocess.Popen(["bash", "-c", f'sleep {delay}; cat "{blob_file}" > "{fifo}"'])
    try:
        r = rvne("verify", fifo, timeout=15)
    finally:
        writer.kill()
        writer.wait()
    assert r.rc == 0 and r.out.startswith(f"OK {fifo}"), r.err


def test_an_endless_pipe_stops_at_its_cap(tmp_path):
    p = subprocess.run(["bash", "-c", f'head -c 300000000 /dev/zero | "{sys.executable}" -m rvne verify /dev/stdin'],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert "more than 268435456 bytes from a pipe" in p.stderr and p.stderr.count("\n") == 1


_MEASURE = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(r.returncode)")


def _peak_rss_mib(argv, timeout=30):
    """(result, peak RSS in MiB) of `python -m rvne ARGV`, measured by a
    wrapper process whose only child it is."""
    p = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "rvne", *map(str, argv)],
                       capture_output=True, text=True, timeout=timeout)
    err, _, peak = p.stderr.rstrip("\n").rpartition("\n")
    return Ran(p.returncode, p.stdout, err + "\n"), int(peak) / 1024


def test_a_huge_sparse_image_is_refused_by_its_size(tmp_path, blob_file):
    img = tmp_path / "huge.img"
    with open(img, "wb") as f:
        f.truncate(6 << 30)
    r, peak = _peak_rss_mib(["flash", blob_file, "--image", img])
    assert r.rc == 1
    r.line("huge.img", "6442450944 bytes, expected 4194304")
    assert peak < 1024      # MiB; was 6.2 GB (the run's 30 s timeout is its hang guard)


def _bomb(path):
    """A ~250 KB .npz whose one member inflates to 256 MiB of float32 zeros."""
    n = 64 << 20
    out = _header((n,))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        with z.open("layers.0.wq.npy", "w", force_zip64=True) as m:
            m.write(out.getvalue())
            zeros = bytes(1 << 20)
            for _ in range(n * 4 >> 20):
                m.write(zeros)
        z.writestr("rvne.dims.npy", _npy(np.array("8,2,1,4,1,3")))
    assert path.stat().st_size < 2 << 20


@pytest.mark.parametrize("with_map", [False, True])
def test_an_npz_zip_bomb_is_refused_before_inflating(tmp_path, with_map):
    bomb = tmp_path / "bomb.npz"
    _bomb(bomb)
    argv = ["pack", bomb, tmp_path / "o.rvne"]
    if with_map:
        names = ["layers.0.wq", "layers.0.wk", "layers.0.wv", "layers.0.wo", "wc"]
        (tmp_path / "m.json").write_text('{"tensors": {%s}}' % ", ".join(f'"{n}": "layers.0.wq"' for n in names))
        argv += ["--map", tmp_path / "m.json"]
    r, peak = _peak_rss_mib(argv)
    assert r.rc == 1
    r.line("bomb.npz", "zip bomb")
    assert peak < 200, peak
    assert not (tmp_path / "o.rvne").exists()


def _header(shape):
    """A v1 .npy header for float32 `shape` (the data is the caller's)."""
    hdr = np.lib.format.header_data_from_array_1_0(np.zeros(1, np.float32))
    hdr["shape"] = shape
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, hdr)
    return out


def _npy(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


@pytest.mark.parametrize("shape", [(1 << 40, 8), (3, 1 << 60)])
def test_npy_frames_whose_header_lies_are_refused_without_allocating(tmp_path, blob_file, shape):
    frames = tmp_path / "f.npy"
    out = _header(shape)
    frames.write_bytes(out.getvalue() + bytes(96))
    r = rvne("infer", blob_file, frames, "--out", tmp_path / "o.npy")
    assert r.rc == 1
    r.line("f.npy", "header promises")


def test_a_mapped_file_truncated_under_the_reader_is_one_line(tmp_path):
    """The SIGBUS guard itself, deterministic: map, truncate, read."""
    path = tmp_path / "big.rvne"
    path.write_bytes(bytes(8 << 20))
    code = ("import zlib, os, sys; from rvne.io import files; m = files.load(sys.argv[1]); "
            "os.truncate(sys.argv[1], 0); zlib.crc32(m); print('read past the end')")
    p = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=20)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert p.stderr.strip().count("\n") == 0 and "shrank under it" in p.stderr
    assert "read past the end" not in p.stdout


def test_a_blob_truncated_during_verify_never_dies_of_sigbus(tmp_path):
    """The real race, many times: every run ends with 0 (read before the
    cut) or 1 (one line), never 135 (Bus error)."""
    path = tmp_path / "big.rvne"
    from rvne.io import upstream_init
    data = upstream_init.init_blob((256, 8, 2, 64, 8, 4))
    for _ in range(4):
        path.write_bytes(data)
        p = subprocess.Popen([sys.executable, "-m", "rvne", "verify", str(path)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        os.truncate(path, 100)
        out, err = p.communicate(timeout=20)
        assert p.returncode in (0, 1), (p.returncode, err)
        assert "Traceback" not in err and err.count("\n") <= 1


def test_ascii_output_encoding_and_a_utf8_path(tmp_path, small_blob):
    path = tmp_path / "modèle.rvne"
    path.write_bytes(small_blob)
    r = rvne("verify", path, env={"PYTHONIOENCODING": "ascii"})
    assert r.rc == 0 and "mod\\xe8le.rvne" in r.out, r.err
    r = rvne("verify", tmp_path / "absent-é.rvne", env={"PYTHONIOENCODING": "ascii"})
    assert r.rc == 1
    r.line("absent-\\xe9.rvne", "No such file")


def test_partitions_csv_with_a_non_ascii_name_is_one_line(tmp_path, blob_file):
    csv = tmp_path / "p.csv"
    csv.write_text("nvs, data, nvs, 0x9000, 0x6000\nrvné, data, 0x40, 0x10000, 0x100000\n", encoding="utf-8")
    r = rvne("flash", blob_file, "--port", "/dev/null", "--partitions", csv, "--label", "rvné")
    assert r.rc == 1
    r.line("p.csv", "not printable ASCII")


@pytest.mark.parametrize("baud", ["99999999999999999999", "4294967296", "0"])
def test_absurd_baud_is_a_usage_error(baud, blob_file):
    for argv in (["device", "info", "--port", "/dev/null"], ["flash", blob_file, "--port", "/dev/null"]):
        r = rvne(*argv, "--baud", baud)
        assert r.rc == 2 and "Traceback" not in r.err
        assert "baud" in r.err.splitlines()[-1]


def test_json_errors_are_json(tmp_path, blob_file):
    import json

    cases = [
        ["inspect", tmp_path / "absent.rvne", "--json"],
        ["inspect", "/dev/zero", "--json"],
        ["device", "info", "--port", "socket://127.0.0.1:1", "--json", "--timeout", "0.2", "--retries", "0"],
        ["check", tmp_path / "absent.rvne", "--port", "/dev/null", "--json"],
        ["check", blob_file, "--port", "socket://127.0.0.1:1", "--json", "--timeout", "0.2"],
    ]
    for argv in cases:
        r = rvne(*argv)
        assert r.rc == 1, (argv, r.err)
        line = r.line()
        doc = json.loads(r.out)
        assert doc["error"]["message"] in line and doc["error"]["code"].startswith("E_"), argv
