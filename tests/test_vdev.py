"""The virtual device binary (firmware/ports/posix) as a process: its command
line, stdio serving, a missing or bad partition, and the pty mode across a
client closing and reopening it. The protocol itself is covered in C by
firmware/tests/test_proto.c; here each request is checked against the
numpy reference or the blob it came from."""

import base64
import os
import signal
import subprocess
import time
import zlib

import numpy as np
import pytest
import serial

from rvne.io import blob, upstream_init
from rvne.model import verdict
from rvne.targets import sim


@pytest.fixture(scope="module")
def vdev():
    try:
        return str(sim.ensure_built())
    except Exception as exc:  # a machine without a C compiler
        pytest.skip(f"cannot build rvne-vdev: {exc}")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("vdev") / "model.rvne"
    path.write_bytes(bytes(upstream_init.init_blob()))
    return path


def req(seq, body):
    line = f">{seq} {body}".encode()
    return line + b"*%08X\n" % zlib.crc32(line)


def parse(line):
    body, _, crc = line.rstrip(b"\n").rpartition(b"*")
    assert int(crc, 16) == zlib.crc32(body), line
    seq, status, *rest = body[1:].decode().split(" ")
    fields = dict(tok.split("=", 1) for tok in rest if "=" in tok) if status == "OK" else {}
    return int(seq), status, rest, fields


def serve_stdio(vdev, path, data, *args):
    return subprocess.run([vdev, *args, str(path)], input=data, capture_output=True, timeout=30)


def test_usage_errors_exit_2(vdev, tmp_path):
    for argv in ([], ["--window"], ["--window", "0", "x"], ["--window", "1x", "x"],
                 ["--line-max", "1023", "x"], ["--bogus", "x"], ["a", "b"], ["--fp16", "half", "x"],
                 ["--fp16"]):
        done = subprocess.run([vdev, *argv], capture_output=True, timeout=10)
        assert done.returncode == 2, argv
        assert b"usage: rvne-vdev" in done.stderr
        assert done.stdout == b""


def test_fp16_expanded_and_decoded_agree_bit_for_bit(vdev, tmp_path):
    """--fp16 expand (the default) and decode: INFO says which, the arena
    counts the expansion, and the logits are the same bits
    (docs/model.md, "FP16 weights")."""
    path = tmp_path / "fp16.rvne"
    path.write_bytes(bytes(upstream_init.init_blob(fp16=True)))
    parsed = blob.parse(path.read_bytes())
    frames = np.random.default_rng(5).standard_normal((9, parsed.header.input_dim)).astype("<f4")
    data = req(1, "INFO") + req(2, "PUSH 9 " + base64.b64encode(frames.tobytes()).decode())
    got = {}
    for mode in ("expand", "decode"):
        done = serve_stdio(vdev, path, data, "--window", "4", "--fp16", mode)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines(keepends=True)
        _, status, _, info = parse(lines[1])
        _, status2, _, push = parse(lines[2])
        assert status == status2 == "OK"
        got[mode] = (info, base64.b64decode(push["logits"]))
    assert got["expand"][0]["weights"] == "expanded"
    assert got["decode"][0]["weights"] == "decoded"
    assert int(got["expand"][0]["arena"]) == int(got["decode"][0]["arena"]) + 2 * parsed.header.weights_len
    assert got["expand"][1] == got["decode"][1] and len(got["expand"][1]) == 9 * parsed.header.n_classes * 4


def test_stdio_logits_match_reference(vdev, model):
    parsed = blob.parse(model.read_bytes())
    frames = np.random.default_rng(3).standard_normal((12, parsed.header.input_dim)).astype("<f4")
    C = parsed.header.n_classes
    data = req(1, "INFO") + req(2, "PUSH 7 " + base64.b64encode(frames[:7].tobytes()).decode())
    data += req(3, "PUSH 5 " + base64.b64encode(frames[7:].tobytes()).decode())
    done = serve_stdio(vdev, model, data, "--window", "5")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines(keepends=True)
    assert lines[0].startswith(b"rvne/") and b" posix ready: OK " in lines[0]
    _, status, _, info = parse(lines[1])
    assert status == "OK"
    h = parsed.header
    assert info["dims"] == ",".join(str(v) for v in (h.input_dim, h.n_q_heads, h.n_kv_heads,
                                                      h.head_dim, h.n_layers, h.n_classes))
    assert info["crc"] == "%08X" % zlib.crc32(model.read_bytes()[:-4])
    assert info["window"] == "5" and info["clock"] == "ns" and info["port"] == "posix"
    got = []
    for line in lines[2:4]:
        _, status, _, fields = parse(line)
        assert status == "OK"
        got.append(np.frombuffer(base64.b64decode(fields["logits"]), "<f4"))
    got = np.concatenate(got).reshape(len(frames), C)
    v = verdict.against_blob(got, parsed, frames, 5)
    assert v["ok"], v


@pytest.mark.parametrize("content, reason", [
    (None, "E_NO_PARTITION"),           # no such file: no partition at all
    ("dir", "E_NO_PARTITION"),          # not a file that could be a partition
    (b"", "E_TOO_SHORT"),               # an existing, empty partition
    (b"\xff" * 4096, "E_ERASED"),
], ids=["missing", "directory", "empty", "erased"])
def test_missing_empty_erased_partition_still_serves(vdev, tmp_path, content, reason):
    path = tmp_path / "part.bin"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    done = serve_stdio(vdev, path, req(1, "INFO") + req(2, "RESET"))
    assert done.returncode == 0
    lines = done.stdout.splitlines(keepends=True)
    assert lines[0].startswith(b"rvne/") and f"ready: {reason}".encode() in lines[0]
    _, _, _, info = parse(lines[1])
    assert info["status"] == "error" and info["reason"] == reason and info["dims"] == "-"
    seq, status, rest, _ = parse(lines[2])
    assert (seq, status, rest[0]) == (2, "ERR", "E_NO_MODEL")
    if content is None or content == b"":
        assert b"part.bin" in done.stderr  # the log says which file and why
    if content is None:
        assert b"without a partition" in done.stderr
        assert b"E_NO_PARTITION" in done.stderr


def _read_line(port, deadline=5.0):
    end = time.monotonic() + deadline
    line = b""
    while not line.endswith(b"\n") and time.monotonic() < end:
        line += port.readline()
    return line


def test_pty_survives_reopen_and_stops_on_sigterm(vdev, model):
    proc = subprocess.Popen([vdev, "--pty", str(model)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = proc.stdout.readline().decode()
        assert first.startswith("PTY /")
        path = first.split(" ", 1)[1].strip()
        pushes = 0
        for attempt in range(3):
            with serial.Serial(path, timeout=0.5) as port:
                # The banner comes on every open, whatever pyserial flushed.
                assert b"ready: OK" in _read_line(port)
                port.reset_input_buffer()
                frame = np.ones(16, "<f4").tobytes()
                port.write(req(10 + attempt, "PUSH 1 " + base64.b64encode(frame).decode()))
                while True:
                    line = _read_line(port)
                    assert line, "no reply"
                    if line.startswith(b"<"):
                        break
                seq, status, _, fields = parse(line)
                pushes += 1
                # The device kept its state across the reopen.
                assert (seq, status, int(fields["pushes"])) == (10 + attempt, "OK", pushes)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
        assert proc.stdout.read() == b""  # exactly one line on stdout
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
