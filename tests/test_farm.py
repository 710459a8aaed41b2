"""Board farms through a real labgrid (docs/farm.md): labgrid's coordinator
and exporters on 127.0.0.1 (tools/farm_lab.py), exporting emulated boards —
the virtual device on a pty through Debian's ser2net (RFC 2217) and the
emulated LX6 board's TCP serial port as a raw NetworkSerialPort — and rvne
acquiring, using and releasing places: two exporters at once, a place held
by someone else, an exporter killed mid-check, an update over several
places, a power switch, the coordinator unreachable, labgrid missing.
Each test has its own lab, stopped on every path by the fixture."""

import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rvne import cli
from rvne.io import blob as blobmod

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import farm_lab  # noqa: E402

CHECK = ["--vectors", "2", "--window", "8", "--length", "12"]     # a short check: the farm is under test
RVNE_TIMEOUT = 120


@pytest.fixture
def lab(tmp_path):
    with farm_lab.Lab(tmp_path / "lab") as lab:
        yield lab


@pytest.fixture
def blobs(tmp_path):
    """Two blobs of the default head: OLD and NEW (other weights, other CRC)."""
    out = {}
    for name, seed in (("old", 1), ("new", 2)):
        path = tmp_path / f"{name}.rvne"
        assert cli.main(["init", str(path), "--seed", str(seed), "-q"]) == 0
        out[name] = path
    return out


def crc(path):
    return blobmod.read_file(path, contract=True).crc_stored


def rvne(lab, *argv, env=None, **popen):
    """`rvne ARGV` in a process of its own against the lab's coordinator."""
    e = {**os.environ, "PYTHONPATH": str(ROOT / "host"), "LG_COORDINATOR": lab.address if lab else "",
         **(env or {})}
    if "LG_PLACE" not in (env or {}):
        e.pop("LG_PLACE", None)
    cmd = [sys.executable, "-m", "rvne", *map(str, argv)]
    if popen.pop("background", False):
        return subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=RVNE_TIMEOUT, **popen)


def one_error_line(stderr):
    lines = [ln for ln in stderr.splitlines() if ln.startswith("rvne: error:")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def vdev(lab, name, blob, **options):
    """An exporter `name` publishing a virtual device holding `blob` through ser2net."""
    board = lab.board("sim", Path(blob).read_bytes(), **options)
    lab.exporter(name, {"vdev": lab.serial(board)})
    return board


def test_boards_on_two_exporters_are_checked_at_once_and_released(lab, blobs):
    vdev(lab, "rack1", blobs["old"])
    lx6 = lab.board("qemu", blobs["old"].read_bytes())
    lab.exporter("rack2", {"lx6": lab.serial(lx6)})
    lab.place("vdev-1", ["rack1/vdev/*"], tags={"farm": "ci", "kind": "vdev"})
    lab.place("lx6-1", ["rack2/lx6/*"], tags={"farm": "ci", "kind": "lx6"})
    lab.place("other", ["rack9/none/*"], tags={"farm": "elsewhere"})

    done = rvne(lab, "check", blobs["old"], "--tag", "farm=ci", *CHECK)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    # One report per board (the virtual device through ser2net, the LX6 board raw), then the table.
    assert "== place lx6-1" in out and "== place vdev-1" in out and "other" not in out
    assert out.count("\nPASS\n") == 2, out
    table = out[out.index("board "):].splitlines()
    assert table[0].split()[:2] == ["board", "verdict"]
    assert sorted(row.split()[:2] for row in table[1:3]) == [["lx6-1", "pass"], ["vdev-1", "pass"]]
    assert table[3] == "2 of 2 boards passed"
    assert "acquired place vdev-1" in done.stderr and "released place lx6-1" in done.stderr
    assert lab.holder("vdev-1") is None and lab.holder("lx6-1") is None

    # A wrong blob on one board: that board fails, the other passes, exit 1.
    done = rvne(lab, "check", blobs["new"], "--place", "vdev-1", "--place", "lx6-1", "--json", *CHECK)
    doc = json.loads(done.stdout)
    assert done.returncode == 1 and doc["passed"] is False
    assert [b["place"] for b in doc["boards"]] == ["vdev-1", "lx6-1"]
    assert all(b["passed"] is False and b["check"]["problems"] for b in doc["boards"])


def test_a_place_held_by_another_is_one_line_naming_them_and_wait_waits(lab, blobs):
    vdev(lab, "rack1", blobs["old"])
    lab.place("vdev-1", ["rack1/vdev/*"])
    lab.client("-p", "vdev-1", "acquire", user="alice")

    done = rvne(lab, "check", blobs["old"], "--place", "vdev-1", *CHECK)
    assert done.returncode == 1
    line = one_error_line(done.stderr)
    assert "place vdev-1 is acquired by" in line and "/alice" in line and "--wait" in line
    assert lab.holder("vdev-1").endswith("/alice")      # left as it was

    done = rvne(lab, "device", "info", "--place", "vdev-1", "--wait", "0.5")
    assert done.returncode == 1 and "/alice" in one_error_line(done.stderr)

    waiting = rvne(lab, "device", "info", "--place", "vdev-1", "--wait", "--json", background=True)
    try:
        time.sleep(1.0)
        assert waiting.poll() is None           # still waiting for alice
        lab.client("-p", "vdev-1", "release", user="alice")
        out, err = waiting.communicate(timeout=RVNE_TIMEOUT)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait()
    assert waiting.returncode == 0, err
    assert json.loads(out)["crc"] == crc(blobs["old"])
    assert lab.holder("vdev-1") is None

    # A place this user already holds is used and left held.
    lab.client("-p", "vdev-1", "acquire")
    done = rvne(lab, "device", "info", "--place", "vdev-1", "--json")
    assert done.returncode == 0 and "already hold" in done.stderr
    assert lab.holder("vdev-1") is not None


def test_an_exporter_killed_mid_check_fails_its_board_only_and_frees_its_place(lab, blobs):
    vdev(lab, "rack1", blobs["old"])
    vdev(lab, "rack3", blobs["old"])
    lab.place("vdev-1", ["rack1/vdev/*"])
    lab.place("vdev-3", ["rack3/vdev/*"])

    run = rvne(lab, "check", blobs["old"], "--place", "vdev-1", "--place", "vdev-3", "--json",
               "--trace", "off", "--timeout", "1", "--retries", "1", background=True)
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end and run.poll() is None:
            port = lab.published_port("rack3")      # ser2net starts when the place is acquired
            if port and connected(port):
                break
            time.sleep(0.02)
        # Its link open (RFC 2217's negotiation takes ~0.5 s) and the check under way: the
        # host judges each sequence between the device's (the larger part of a check's time).
        time.sleep(1.5)
        assert run.poll() is None, "the check ended before the exporter was killed; give it more vectors"
        lab.kill("rack3")           # the exporter and its ser2net: the host went down
        out, err = run.communicate(timeout=RVNE_TIMEOUT)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 1 and "Traceback" not in err, err
    doc = json.loads(out)
    by = {b["place"]: b for b in doc["boards"]}
    assert by["vdev-1"]["passed"] is True and by["vdev-1"]["check"]["frames"] > 0
    error = by["vdev-3"]["error"]
    assert by["vdev-3"]["passed"] is False and error and "\n" not in error and "cannot open" not in error, error
    assert lab.holder("vdev-1") is None and lab.holder("vdev-3") is None


def test_an_update_over_several_places_keeps_the_old_model_where_it_fails(lab, blobs):
    vdev(lab, "rack1", blobs["old"], flash=True)       # a two-slot flash: takes updates
    vdev(lab, "rack2", blobs["old"])                   # a bare blob partition: refuses them
    lab.place("vdev-1", ["rack1/vdev/*"], tags={"kind": "vdev"})
    lab.place("vdev-2", ["rack2/vdev/*"], tags={"kind": "vdev"})

    done = rvne(lab, "update", blobs["new"], "--tag", "kind=vdev", "--json")
    assert done.returncode == 1, done.stderr
    by = {b["place"]: b for b in json.loads(done.stdout)["boards"]}
    assert by["vdev-1"]["passed"] is True and by["vdev-1"]["update"]["crc"] == crc(blobs["new"])
    assert by["vdev-2"]["passed"] is False and "E_NO_SLOTS" in by["vdev-2"]["error"]
    for place, blob in (("vdev-1", "new"), ("vdev-2", "old")):
        done = rvne(lab, "device", "info", "--place", place, "--json")
        assert done.returncode == 0 and json.loads(done.stdout)["crc"] == crc(blobs[blob]), (place, done.stderr)
    assert lab.holder("vdev-1") is None and lab.holder("vdev-2") is None


class _Switch(BaseHTTPRequestHandler):
    """A power switch as labgrid's simplerest model drives it: GET /relay/INDEX/VALUE."""

    def do_GET(self):       # noqa: N802 - http.server's name
        self.server.seen.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"1")

    def log_message(self, *args):
        pass


def test_a_place_with_a_power_switch_is_reset_through_it(lab, blobs):
    switch = ThreadingHTTPServer(("127.0.0.1", 0), _Switch)
    switch.seen = []
    threading.Thread(target=switch.serve_forever, daemon=True).start()
    try:
        board = lab.board("sim", blobs["old"].read_bytes())
        url = f"http://127.0.0.1:{switch.server_address[1]}/relay/{{index}}/{{value}}"
        lab.exporter("rack1", {"vdev": {**lab.serial(board),
                                        "NetworkPowerPort": {"model": "simplerest", "host": url, "index": 3}}})
        lab.place("vdev-1", ["rack1/vdev/*"])
        # labgrid's own variables name the place and the coordinator.
        done = rvne(lab, "device", "reset", "--json", env={"LG_PLACE": "vdev-1"})
    finally:
        switch.shutdown()
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["reset"].startswith("power-cycled (NetworkPowerPort") and doc["banner"].startswith("rvne/")
    assert switch.seen == ["/relay/3/0", "/relay/3/1"]
    assert lab.holder("vdev-1") is None


def test_an_unreachable_coordinator_is_one_line_within_the_timeout(capsys, monkeypatch, tmp_path):
    from rvne.farm import coordinator

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert cli.main(["device", "info", "--place", "x", "--coordinator", f"127.0.0.1:{port}"]) == 1
    err = capsys.readouterr().err
    assert "cannot reach the labgrid coordinator at 127.0.0.1:" in one_error_line(err)

    # A coordinator that accepts and never answers: the stated bound, then one line.
    monkeypatch.setattr(coordinator, "CONNECT_TIMEOUT", 1.5)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        monkeypatch.setenv("LG_COORDINATOR", f"127.0.0.1:{silent.getsockname()[1]}")
        monkeypatch.setenv("LG_PLACE", "x")
        start = time.monotonic()
        rc = cli.main(["device", "info"])
        took = time.monotonic() - start
    assert rc == 1
    line = one_error_line(capsys.readouterr().err)
    assert "did not answer within 1.5 s" in line, line
    assert took < 30        # bounded (the bound is 1.5 s; this only catches a hang)


def test_without_labgrid_a_place_says_how_to_get_it(tmp_path, blobs):
    code = ("import sys; sys.modules['labgrid'] = None; from rvne import cli; "
            f"sys.exit(cli.main(['check', {str(blobs['old'])!r}, '--place', 'a']))")
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT / "host")},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    line = one_error_line(done.stderr)
    assert "pip install 'rvne[farm]'" in line and "Python 3.10" in line


@pytest.mark.parametrize("argv", [["device", "info", "-p", "/dev/null", "--place", "a"],
                                  ["check", "b.rvne", "--target", "sim", "--tag", "k=v"],
                                  ["check", "b.rvne", "--tag", "novalue"]])
def test_a_place_with_a_port_or_target_or_a_bad_tag_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2


def connected(port):
    """A TCP connection to `port` on this host is established (Linux's /proc/net/tcp*)."""
    for table in ("tcp", "tcp6"):
        for line in Path("/proc/net", table).read_text().splitlines()[1:]:
            _, local, remote, state = line.split()[:4]
            if state == "01" and port in (int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16)):
                return True
    return False


def wait_held(lab, place, proc, seconds=30):
    end = time.monotonic() + seconds
    while lab.holder(place) is None and time.monotonic() < end and proc.poll() is None:
        time.sleep(0.05)


def test_sigterm_mid_check_releases_the_places(lab, blobs):
    vdev(lab, "rack1", blobs["old"])
    vdev(lab, "rack2", blobs["old"])
    lab.place("vdev-1", ["rack1/vdev/*"], tags={"kind": "vdev"})
    lab.place("vdev-2", ["rack2/vdev/*"], tags={"kind": "vdev"})
    run = rvne(lab, "check", blobs["old"], "--tag", "kind=vdev", "--vectors", "40", "--trace", "off",
               background=True)
    try:
        wait_held(lab, "vdev-2", run)
        time.sleep(0.5)
        assert run.poll() is None
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=RVNE_TIMEOUT)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 128 + signal.SIGTERM and "stopped by SIGTERM" in err and "Traceback" not in err, err
    assert lab.holder("vdev-1") is None and lab.holder("vdev-2") is None


def test_the_device_suite_runs_on_a_place(lab, tmp_path):
    """tests/hil --target esp32s3 --place NAME: the stand-in board (tests/hil/standin.py)
    behind a raw TCP bridge a farm's exporter publishes; the suite acquires the place,
    flashes what it needs through the hook, puts the user's model back and releases it."""
    from test_board_suite import start_standin, stop

    from rvne.io import upstream_init

    user = upstream_init.init_blob(dims=(8, 2, 1, 4, 1, 3), seed=7)
    part = tmp_path / "flash.bin"
    part.write_bytes(user)
    link = tmp_path / "ttyESP"
    standin = start_standin(link, part)
    bridge = farm_lab.Bridge(link)
    try:
        lab.exporter("rack1", {"s3": bridge.resource})
        lab.place("s3-1", ["rack1/s3/*"])
        run = subprocess.run([sys.executable, "-m", "pytest", "tests/hil", "--target", "esp32s3", "--place", "s3-1",
                              "--flash-hook", f"file:{part}", "-v", "-p", "no:cacheprovider",
                              "-k", "test_info_matches_the_blob or test_reported_by_info_and_device_stays_up"],
                             cwd=ROOT, capture_output=True, text=True, timeout=600,
                             env={**os.environ, "LG_COORDINATOR": lab.address})
    finally:
        bridge.close()
        stop(standin)
    out = run.stdout
    assert run.returncode == 0, out[-3000:] + run.stderr[-2000:]
    assert re.search(r"test_info_matches_the_blob\[fp32\] PASSED", out), out[-3000:]
    assert re.search(r"test_reported_by_info_and_device_stays_up\[corrupt\] PASSED", out), out[-3000:]
    summary = out.strip().splitlines()[-1]
    assert "skipped" not in summary and "failed" not in summary, summary
    assert part.read_bytes() == user
    assert lab.holder("s3-1") is None


def test_flash_through_a_place_reaches_esptool_on_its_port_and_releases_it(lab, blobs):
    """`rvne flash --place`: esptool on the place's RFC 2217 URL. The virtual device is no
    ESP chip, so esptool's connect fails: one line naming the URL, exit 1, place released."""
    vdev(lab, "rack1", blobs["old"])
    lab.place("vdev-1", ["rack1/vdev/*"])
    done = rvne(lab, "flash", blobs["old"], "--place", "vdev-1")
    assert done.returncode == 1
    line = one_error_line(done.stderr)
    assert "rfc2217://127.0.0.1:" in line and "Failed to connect to Espressif device" in line, line
    assert "acquired place vdev-1" in done.stderr and lab.holder("vdev-1") is None


def test_lg_place_names_the_place_only_when_nothing_else_names_the_device():
    import argparse

    from rvne.commands import _farm

    def wanted(env, **given):
        ns = argparse.Namespace(**{"place": None, "tag": None, "port": None, "target": None, **given})
        return _farm.wanted(ns, env=env)

    env = {"LG_PLACE": "s3-1", "ESPPORT": "/dev/ttyUSB0"}
    assert wanted(env) == (["s3-1"], {})                          # before ESPPORT
    assert wanted(env, port="/dev/ttyACM0") == ([], {})
    assert wanted(env, target="sim") == ([], {})
    assert wanted(env, place=["a", "b"], tag=[("rack", "1")]) == (["a", "b"], {"rack": "1"})
    assert wanted({}) == ([], {})


@dataclasses.dataclass
class _Board:                       # what rvne.farm.many hands each process: a place's name
    place: str
    resources: dict = dataclasses.field(default_factory=dict)


def _blas_threads(board):
    return {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def test_each_boards_process_runs_blas_on_one_thread_and_the_parent_keeps_its_environment(monkeypatch):
    # rvne.farm.many: BLAS threads of several board processes spinning on the same
    # cores made two boards cost 2.8x one board's CPU; a number the user set stands.
    from rvne.farm import many

    for k in many.BLAS_THREADS:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")
    got = many.run_all([_Board("a"), _Board("b")], _blas_threads)
    assert [o.error for o in got] == [None, None]
    assert all(o.result == {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "3"}
               for o in got), got
    assert "OPENBLAS_NUM_THREADS" not in os.environ and os.environ["MKL_NUM_THREADS"] == "3"
