"""The `rvne` CLI at its edges, as a demanding user meets it: missing,
unreadable, empty, truncated, byte-swapped and erased inputs, absurd option
values, outputs that must survive a failure, network peers that are absent,
silent or speak garbage. Every case: exit 0 ok, 1 invalid input or failed
check, 2 usage error; one line on stderr naming what is wrong (and what to
do), never a traceback; the previous good output kept."""

import errno
import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from fake_device import FakeDevice, ReferenceModel
from rvne import check, cli
from rvne.errors import ContractError, DeviceError, FlashError, PartitionError, TargetError
from rvne.flash import image as flash_image, partition
from rvne.io import atomic, blob, upstream_init
from rvne.link.device import Device, Info
from rvne.model import contract, reference
from rvne.targets import build

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "partitions.csv"
SMALL = (8, 2, 1, 4, 1, 3)


def run(capsys, *argv):
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as exc:  # argparse: usage errors and --help
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def one_line(err, *words):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def usage_error(err, *words):
    assert "usage:" in err and "Traceback" not in err
    last = err.strip().splitlines()[-1]
    for w in words:
        assert w in last, (w, last)


@pytest.fixture(scope="module")
def blob32():
    return upstream_init.init_blob(SMALL)


@pytest.fixture
def model(tmp_path, blob32):
    path = tmp_path / "m.rvne"
    path.write_bytes(blob32)
    return path


def image_with_table(table_bytes=None):
    """A 4 MiB image as the build lays it out (no firmware needed here)."""
    table = partition.read_csv(CSV)
    img = bytearray(b"\xff" * flash_image.FLASH_SIZE)
    t = table.to_binary() if table_bytes is None else table_bytes
    img[partition.TABLE_OFFSET:partition.TABLE_OFFSET + len(t)] = t
    return bytes(img)


# -- option values --------------------------------------------------------------------
@pytest.mark.parametrize("argv, words", [
    (["init", "x.rvne", "--dims", "-1,1,1,1,1,2"], ["--dims", "input_dim=-1"]),
    (["check", "x.rvne", "--port", "p", "--seed", "-5"], ["--seed", "'-5'", ">= 0"]),
    (["check", "x.rvne", "--port", "p", "--retries", "-1"], ["--retries", ">= 0"]),
    (["check", "x.rvne", "--port", "p", "--window", "4294967296"], ["--window", "1..4294967295"]),
    (["check", "x.rvne", "--port", "p", "--window", "-3"], ["--window", "'-3'"]),
    (["device", "info", "--port", "p", "--timeout", "inf"], ["--timeout", "'inf'"]),
    (["device", "info", "--port", "p", "--timeout", "nan"], ["--timeout", "'nan'"]),
    (["flash", "x.rvne", "--port", "p", "--baud", "0"], ["--baud", "'0'"]),
    (["infer", "b", "f", "--out", "o", "--window", "0"], ["--window", "'0'"]),
])
def test_bad_option_values_are_usage_errors_naming_the_option(capsys, argv, words):
    rc, _, err = run(capsys, *argv)
    assert rc == 2
    usage_error(err, *words)


def test_a_lone_double_dash_still_ends_the_options(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, _, err = run(capsys, "init", "--", "-1.rvne")
    assert rc == 0 and (tmp_path / "-1.rvne").is_file(), err


def test_check_image_without_a_target_is_a_usage_error_before_the_blob_is_read(capsys):
    rc, _, err = run(capsys, "check", "absent.rvne", "-p", "/dev/null", "--image", "x.img")
    assert rc == 2 and "--image goes with --target" in err


@pytest.mark.parametrize("dims", ["65535,65535,1,65535,65535,65535", "65535,64,64,1024,1,2"])
def test_dims_too_large_for_any_blob_are_refused_before_making_weights(tmp_path, capsys, dims):
    out = tmp_path / "x.rvne"
    out.write_bytes(b"previous")
    rc, _, err = run(capsys, "init", out, "--dims", dims, "--fp16")
    assert rc == 1
    one_line(err, f"dims {dims}", "u32 weights_len", "use smaller dims")
    assert out.read_bytes() == b"previous"
    with pytest.raises(ContractError, match="u32 weights_len"):
        blob.Header.for_dims(dims)


def test_out_of_memory_is_one_line(tmp_path, capsys, blob32, model):
    with FakeDevice(ReferenceModel(blob32, window=5), window=5) as fake:
        rc, _, err = run(capsys, "check", model, "--port", fake.url, "--length", 10**11, "--vectors", 1)
    assert rc == 1
    one_line(err, "not enough memory", "--length")


# -- unreadable and odd inputs -----------------------------------------------------------
@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux /proc")
@pytest.mark.parametrize("cmd", [
    ["verify", "/proc/self/mem"], ["inspect", "/proc/self/mem"], ["export", "/proc/self/mem", "o.npz"],
    ["flash", "/proc/self/mem", "--image", "x.img"], ["check", "/proc/self/mem", "--port", "p"],
])
def test_a_file_that_cannot_be_read_is_named(capsys, cmd):
    # /proc/self/mem opens fine and fails to read at offset 0 (EIO): an
    # unreadable file even for root, who ignores chmod 000.
    rc, _, err = run(capsys, *cmd)
    assert rc == 1
    one_line(err, "/proc/self/mem: Input/output error;")


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux /proc")
def test_unreadable_frames_and_image_are_named(tmp_path, capsys, model):
    rc, _, err = run(capsys, "infer", model, "/proc/self/mem", "--out", tmp_path / "o.npy")
    assert rc == 1
    one_line(err, "/proc/self/mem: Input/output error")
    rc, _, err = run(capsys, "flash", model, "--image", "/proc/self/mem")
    assert rc == 1     # refused by its size, before a byte of it is read (docs/files.md)
    one_line(err, "/proc/self/mem: flash image is 0 bytes, expected 4194304")


@pytest.mark.parametrize("make, words", [
    (lambda p: None, ["absent.rvne: No such file or directory; check the path"]),
    (lambda p: p.mkdir(), ["absent.rvne: Is a directory; give a file"]),
    (lambda p: p.write_bytes(b""), ["0 bytes"]),
    (lambda p: p.write_bytes(upstream_init.init_blob(SMALL)[:100]), ["truncated"]),
    (lambda p: p.write_bytes(b"RVNE" + bytes(100)), ['ASCII "RVNE"', "byte order"]),
    (lambda p: p.write_bytes(b"\xff" * 4096), ["erased"]),
])
@pytest.mark.parametrize("cmd", ["verify", "inspect", "export", "infer", "flash", "check"])
def test_bad_blob_inputs_to_every_command(tmp_path, capsys, make, words, cmd):
    path = tmp_path / "absent.rvne"
    make(path)
    frames = tmp_path / "f.npy"
    np.save(frames, np.zeros((2, SMALL[0]), np.float32))
    img = tmp_path / "flash.img"
    img.write_bytes(image_with_table())
    before = img.read_bytes()
    argv = {
        "verify": [path], "inspect": [path], "export": [path, tmp_path / "w.npz"],
        "infer": [path, frames, "--out", tmp_path / "o.npy"], "flash": [path, "--image", img],
        "check": [path, "--port", "socket://127.0.0.1:1"],
    }[cmd]
    rc, _, err = run(capsys, cmd, *argv)
    assert rc == 1
    one_line(err, f"rvne: error: {path}: ", *words)     # names the file at fault, not the image
    assert img.read_bytes() == before
    assert not (tmp_path / "w.npz").exists() and not (tmp_path / "o.npy").exists()


# -- frames -------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, words", [
    (np.nan, ["frame 3 value 2 is nan", "finite"]),
    (np.inf, ["frame 3 value 2 is inf", "finite"]),
    (1e300, ["frame 3 value 2 is inf as float32"]),     # float64 beyond float32
])
def test_non_finite_frames_are_refused_and_the_output_kept(tmp_path, capsys, model, bad, words):
    frames = np.ones((6, SMALL[0]), np.float64)
    frames[3, 2] = bad
    np.save(tmp_path / "f.npy", frames)
    out = tmp_path / "o.npy"
    out.write_bytes(b"previous logits")
    rc, _, err = run(capsys, "infer", model, tmp_path / "f.npy", "--out", out)
    assert rc == 1
    one_line(err, *words)
    assert out.read_bytes() == b"previous logits"


def test_frames_that_overflow_float32_arithmetic_warn_in_one_line(tmp_path, capsys, model, recwarn):
    np.save(tmp_path / "f.npy", np.full((4, SMALL[0]), 3e38, np.float32))
    rc, out, err = run(capsys, "infer", model, tmp_path / "f.npy", "--out", tmp_path / "o.npy")
    assert rc == 0 and "logits 4x3" in out
    one_line(err, "rvne: warning:", "not finite")
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("make, words", [
    (lambda p: np.save(p, np.zeros((4, 8), np.int64)), ["dtype int64"]),
    (lambda p: np.save(p, np.zeros((1, 2, 4, 8), np.float32)), ["shape (1, 2, 4, 8)", "[T, 8] or [N, T, 8]"]),
    (lambda p: np.save(p, np.zeros((4, 7), np.float32)), ["shape (4, 7)", "[T, 8] or [N, T, 8]"]),
    (lambda p: np.save(p, np.zeros(8, np.float32)), ["shape (8,)"]),
    (lambda p: p.write_bytes(b"x,y\n1,2\n"), ["not an .npy file"]),
    (lambda p: p.write_bytes(b""), ["not an .npy file"]),
])
def test_wrong_frames_files(tmp_path, capsys, model, make, words):
    frames = tmp_path / "f.npy"
    make(frames)
    rc, _, err = run(capsys, "infer", model, frames, "--out", tmp_path / "o.npy")
    assert rc == 1
    one_line(err, "f.npy", *words)


def test_a_window_beyond_any_integer_type_is_the_whole_sequence(tmp_path, capsys, model, blob32):
    frames = np.random.default_rng(1).standard_normal((12, SMALL[0])).astype(np.float32)
    np.save(tmp_path / "f.npy", frames)
    rc, _, err = run(capsys, "infer", model, tmp_path / "f.npy", "--out", tmp_path / "o.npy",
                     "--window", 10**20)
    assert rc == 0, err
    parsed = blob.parse(blob32)
    want = reference.forward_batch(parsed.tensors(), parsed.header.dims, frames, 12)
    assert np.array_equal(np.load(tmp_path / "o.npy"), want)


def test_output_in_a_missing_directory(tmp_path, capsys, model):
    np.save(tmp_path / "f.npy", np.zeros((2, SMALL[0]), np.float32))
    for argv in (["init", tmp_path / "no" / "x.rvne"], ["export", model, tmp_path / "no" / "w.npz"],
                 ["infer", model, tmp_path / "f.npy", "--out", tmp_path / "no" / "o.npy"]):
        rc, _, err = run(capsys, *argv)
        assert rc == 1
        one_line(err, str(tmp_path / "no"), "cannot create the output")


# -- outputs are replaced whole -----------------------------------------------------------
def test_export_onto_the_blob_it_reads_does_not_crash(tmp_path, blob32):
    # The blob is memory-mapped while it is exported: truncating it in place
    # killed the process with SIGBUS and left an empty file.
    path = tmp_path / "m.npz"
    path.write_bytes(blob32)
    done = subprocess.run([sys.executable, "-m", "rvne", "export", str(path), str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    with np.load(path) as z:
        assert "wc" in z.files


@pytest.mark.parametrize("ext", ["npz", "safetensors"])
def test_a_failing_export_keeps_the_previous_file(tmp_path, capsys, model, monkeypatch, ext):
    out = tmp_path / f"w.{ext}"
    out.write_bytes(b"previous weights")

    def disk_full(f, *args, **kwargs):
        if hasattr(f, "write"):
            f.write(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    if ext == "npz":
        monkeypatch.setattr(np, "savez", disk_full)
    else:
        import safetensors.numpy

        monkeypatch.setattr(safetensors.numpy, "save", lambda *a, **k: disk_full(None))
        monkeypatch.setattr(safetensors.numpy, "save_file", lambda t, p, **k: disk_full(open(p, "wb")))
    rc, _, err = run(capsys, "export", model, out)
    assert rc == 1
    one_line(err, "No space left on device")
    assert out.read_bytes() == b"previous weights"


def test_exported_safetensors_get_the_usual_mode(tmp_path, capsys, model):
    out = tmp_path / "w.safetensors"
    assert run(capsys, "export", model, out)[0] == 0
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask


def test_flash_through_a_symlink_updates_its_target_and_keeps_the_link(tmp_path, capsys, model):
    real = tmp_path / "real.img"
    real.write_bytes(image_with_table())
    link = tmp_path / "flash.img"
    link.symlink_to(real.name)
    rc, _, err = run(capsys, "flash", model, "--image", link)
    assert rc == 0, err
    assert link.is_symlink()
    offset = partition.read_csv(CSV).find("rvne_a").offset
    assert blob.parse_loadable(real.read_bytes()[offset:], exact_length=False).to_bytes() == model.read_bytes()


def test_a_failed_replace_names_the_output_not_the_temporary(tmp_path, monkeypatch):
    out = tmp_path / "o.rvne"
    out.write_bytes(b"previous")

    def refuse(src, dst):
        raise PermissionError(errno.EPERM, "Operation not permitted", src, dst)

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(PermissionError) as exc:
        atomic.write_atomic(out, b"new")
    assert exc.value.filename == str(out) and ".tmp" not in str(exc.value)
    assert out.read_bytes() == b"previous" and os.listdir(tmp_path) == ["o.rvne"]


# -- rvne flash --image -------------------------------------------------------------------
def test_flash_image_refusals_leave_it_byte_identical(tmp_path, capsys, model):
    good = image_with_table()
    cases = {
        "short.img": (good[:1000], ["short.img", "expected 4194304"]),
        "long.img": (good + b"\xff", ["long.img", "expected 4194304"]),
        "erased.img": (b"\xff" * len(good), ["erased.img", "empty (erased flash?)", "make -C firmware lx6"]),
        "garbage.img": (image_with_table(b"\x00" * 64), ["garbage.img", "not an ESP-IDF partition table"]),
        "norvne.img": (image_with_table(partition.parse_csv(
            "nvs, data, nvs, 0x9000, 0x6000\nfactory, app, factory, 0x10000, 1M\n").to_binary()),
            ["norvne.img", "no model partitions", "partitions.csv"]),
    }
    for name, (data, words) in cases.items():
        img = tmp_path / name
        img.write_bytes(data)
        rc, _, err = run(capsys, "flash", model, "--image", img)
        assert rc == 1, name
        line = one_line(err, *words)
        assert "write one with `rvne flash`" not in line    # rvne flash writes no tables
        assert img.read_bytes() == data, name


def test_flash_image_blob_too_large(tmp_path, capsys):
    img = tmp_path / "flash.img"
    img.write_bytes(image_with_table())
    before = img.read_bytes()
    big = tmp_path / "big.rvne"
    big.write_bytes(upstream_init.init_blob((64, 8, 8, 64, 9, 2), fp16=True))   # > 2 MiB
    rc, _, err = run(capsys, "flash", big, "--image", img)
    assert rc == 1
    one_line(err, "larger than partition 'rvne_a'")
    assert img.read_bytes() == before


def test_flash_image_with_partitions_is_a_usage_error(tmp_path, capsys, model):
    img = tmp_path / "flash.img"
    img.write_bytes(image_with_table())
    before = img.read_bytes()
    rc, _, err = run(capsys, "flash", model, "--image", img, "--partitions", CSV)
    assert rc == 2 and "--partitions goes with --port" in err
    assert img.read_bytes() == before


def test_flash_port_with_a_binary_partitions_file(tmp_path, capsys, model):
    rc, _, err = run(capsys, "flash", model, "--port", "/dev/nonexistent-tty", "--partitions", model)
    assert rc == 1
    one_line(err, str(model), "not a partitions.csv")
    with pytest.raises(PartitionError, match="not UTF-8"):
        partition.read_csv(model)


class _Board:
    """The few esptool calls rvne.flash.board makes, all succeeding unless told."""

    fatal = RuntimeError

    def __init__(self, fail_reset=False):
        self.fail_reset = fail_reset

    def connect(self, port, baud):
        return object()

    def chip_name(self, esp):
        return "ESP32-S3"

    def read_flash(self, esp, address, size):
        return image_with_table()[address:address + size]

    def write_flash(self, esp, address, data):
        pass

    def reset(self, esp):
        if self.fail_reset:
            raise RuntimeError("reset failed")

    def close(self, esp):
        pass


def _gone(port, baudrate):
    raise DeviceError(f"cannot open {port}: No such file or directory")


@pytest.mark.parametrize("fail_reset", [False, True])
def test_board_flash_points_at_the_real_info_command(blob32, fail_reset):
    from rvne.flash import board as board_flash

    with pytest.raises(FlashError) as exc:
        board_flash.flash_to_board(blob32, "/dev/ttyACM7", progress=False, esptool=_Board(fail_reset),
                                   device_factory=_gone, boot_timeout=0, sleep=lambda s: None)
    assert "`rvne device info --port /dev/ttyACM7`" in str(exc.value)


# -- devices --------------------------------------------------------------------------------
def test_device_info_nonexistent_port(capsys):
    rc, _, err = run(capsys, "device", "info", "--port", "/dev/nonexistent-tty")
    assert rc == 1
    line = one_line(err, "cannot open /dev/nonexistent-tty: No such file or directory;", "check the port")
    assert "[Errno" not in line


@pytest.mark.parametrize("url", ["socket://127.0.0.1", "socket://127.0.0.1:99999", "socket://:3333",
                                 "socket://127.0.0.1:x", "rfc2217://localhost"])
def test_network_url_without_a_usable_port(capsys, url):
    rc, _, err = run(capsys, "device", "info", "--port", url)
    assert rc == 1
    one_line(err, f"cannot open {url}", "a host and a port 1..65535")


def test_socket_with_nothing_listening(capsys):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    rc, _, err = run(capsys, "device", "info", "--port", f"socket://127.0.0.1:{port}")
    assert rc == 1
    one_line(err, f"cannot open socket://127.0.0.1:{port}", "Connection refused")


class Peer:
    """A TCP peer on 127.0.0.1 that answers every line it receives with
    `send` (bytes; empty: stays silent), or closes each connection at once."""

    def __init__(self, send=b"", close=False):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.1)
        self.url = "socket://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.send, self.close_at_once = send, close
        self.conns = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            if self.close_at_once:
                conn.close()
                continue
            self.conns.append(conn)
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        conn.settimeout(0.1)
        while not self.stop.is_set():
            try:
                data = conn.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            if not data:
                return
            if self.send and b"\n" in data:
                conn.sendall(self.send)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(2)
        for c in self.conns:
            c.close()
        self.sock.close()


@pytest.mark.parametrize("send, close, words", [
    (b"", False, ["INFO to", "failed after 1 try", "no reply within 0.2 s"]),
    (b"\x00\xffgarbage\r\n<<<>>>\n<1 OK*00000000\n" * 5, False, ["INFO to", "damaged reply"]),
    (bytes(range(256)) * 64, False, ["INFO to", "no reply"]),
    (b"", True, ["lost the connection"]),
])
def test_socket_peer_that_is_not_a_device(capsys, send, close, words):
    with Peer(send, close) as peer:
        rc, _, err = run(capsys, "device", "info", "--port", peer.url, "--timeout", "0.2", "--retries", "0")
    assert rc == 1
    one_line(err, *words)


def test_check_against_a_device_holding_another_blob(tmp_path, capsys, model, blob32):
    other = upstream_init.init_blob(SMALL, seed=7)
    theirs = blob.parse(other).crc_stored
    ours = blob.parse(blob32).crc_stored
    with FakeDevice(ReferenceModel(other, window=5), window=5) as fake:
        rc, out, err = run(capsys, "check", model, "--port", fake.url)
        assert "PUSH" not in fake.executed and "RUN" not in fake.executed
    assert rc == 1 and err == ""
    assert f"blob CRC differs: device {theirs:08X}, file {ours:08X}" in out
    assert "rvne flash" in out and out.rstrip().endswith("FAIL")


def test_check_against_a_device_without_a_model_says_only_that(tmp_path, capsys, model, blob32):
    m = ReferenceModel(blob32, window=5)
    m.info.update(status="error", reason="E_ERASED", crc="-", dims="-", dtype="-", blob_len="-")
    with FakeDevice(m, window=5) as fake:
        rc, out, _ = run(capsys, "check", model, "--port", fake.url, "--json")
    assert rc == 1
    problems = json.loads(out)["problems"]
    assert len(problems) == 1 and "no model loaded" in problems[0] and "E_ERASED" in problems[0]


# -- help -------------------------------------------------------------------------------------
@pytest.mark.parametrize("cmd", [[], ["init"], ["pack"], ["export"], ["inspect"], ["verify"], ["infer"],
                                 ["flash"], ["device"], ["device", "info"], ["check"]])
def test_help_reads_well(capsys, cmd):
    rc, out, _ = run(capsys, *cmd, "--help")
    assert rc == 0 and out.startswith(f"usage: rvne {' '.join(cmd)}".rstrip())
    # Every option's value is named for what it is, not by argparse's upper-case default.
    for dest in ("TIMEOUT", "RETRIES", "BAUD", "VECTORS", "SEED", "WINDOW", "LENGTH"):
        assert f"--{dest.lower()} {dest}" not in out, (cmd, dest)
    if cmd == []:
        assert "Exit codes: 0 ok, 1 invalid input, an error or a failed check, 2 usage error, 130 interrupted" \
            in " ".join(out.split())
    if cmd == ["device", "info"]:
        assert "Ask the device" in out


# -- building targets ---------------------------------------------------------------------------
def test_make_is_the_judge_of_a_build_product(tmp_path):
    """A change among a target's sources that make does not build from (a
    comment in firmware/Makefile, a README under core/) left the product
    older than its sources for ever: every `rvne check --target` failed with
    "make did not produce an up-to-date ..."."""
    fw = tmp_path / "firmware"
    fw.mkdir()
    (fw / "src.c").write_text("int x;\n")
    (fw / "Makefile").write_text("goal: ../out/prod\n../out/prod: src.c\n\tmkdir -p ../out && cp src.c $@\n")
    product = tmp_path / "out" / "prod"

    def stale():
        return build.is_stale(product, [fw])

    build.run_make(tmp_path, "goal", product, stale, "the product", 60)
    assert product.is_file() and not stale()
    notes = fw / "NOTES"
    notes.write_text("not a source of anything make builds\n")
    now = product.stat().st_mtime
    for path, age in ((fw / "src.c", 100), (fw / "Makefile", 100), (product, 50), (notes, 10)):
        os.utime(path, (now - age, now - age))
    assert stale()
    build.run_make(tmp_path, "goal", product, stale, "the product", 60)
    assert not stale()
    # A real failure to produce still says so.
    (fw / "Makefile").write_text("goal:\n\t@true\n")
    product.unlink()
    with pytest.raises(TargetError, match="did not produce"):
        build.run_make(tmp_path, "goal", product, stale, "the product", 60)


def test_make_is_the_judge_of_every_product_of_a_goal(tmp_path):
    """A goal with several products (`make defects`): when make has nothing
    to do, every product takes its verdict, not only the one named last
    (a rebase that rewrote firmware/Makefile left the others stale: "make did
    not produce an up-to-date build/defects/...")."""
    fw = tmp_path / "firmware"
    fw.mkdir()
    (fw / "src.c").write_text("int x;\n")
    (fw / "Makefile").write_text("goal: ../out/a ../out/b\n../out/%: src.c\n\tmkdir -p ../out && cp src.c $@\n")
    products = [tmp_path / "out" / "a", tmp_path / "out" / "b"]

    def stale():
        return any(build.is_stale(p, [fw]) for p in products)

    build.run_make(tmp_path, "goal", products, stale, "the products", 60)
    assert not stale()
    now = products[0].stat().st_mtime
    for path, age in ((fw / "src.c", 100), (products[0], 50), (products[1], 50), (fw / "Makefile", 10)):
        os.utime(path, (now - age, now - age))
    assert stale()
    build.run_make(tmp_path, "goal", products, stale, "the products", 60)
    assert not stale()


def test_inspect_does_not_read_dims_from_a_header_that_is_not_one(tmp_path, capsys):
    erased = tmp_path / "erased.rvne"
    erased.write_bytes(b"\xff" * 4096)
    rc, out, err = run(capsys, "inspect", erased)
    assert rc == 1 and "container-valid" not in out and "contract " not in out
    one_line(err, f"{erased}: ", "erased")
    rc, out, _ = run(capsys, "inspect", erased, "--json")
    info = json.loads(out)
    assert rc == 1 and info["error"]["code"] == "E_ERASED" and "contract" not in info and "params" not in info
