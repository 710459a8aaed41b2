"""esptool/idf.py conventions of the board commands (docs/esp32s3.md,
Board-tool conventions): -p/-b, ESPPORT/ESPBAUD, one Espressif board
detected from a (fake) port list, -v/-q, --json with typed values on every
command, `rvne device stats|window|reset|monitor`, and progress drawn on a
terminal (a pty) but never into a pipe."""
import json
import os
import pty
import select
import subprocess
import sys
from types import SimpleNamespace

import pytest

from rvne import check, cli
from rvne.errors import DeviceError
from rvne.io import upstream_init
from rvne.link import ports
from rvne.targets import start_target


def port(device, vid=None, pid=None):
    return SimpleNamespace(device=device, vid=vid, pid=pid)


ESP_USB = port("/dev/ttyACM0", 0x303A, 0x1001)
CP2102 = port("/dev/ttyUSB0", 0x10C4, 0xEA60)
ARDUINO = port("/dev/ttyACM5", 0x2341, 0x0043)
NO_USB = port("/dev/ttyS0")


# -- port and baud resolution -----------------------------------------------------------
def test_option_then_espport_then_the_one_board():
    said = []
    assert ports.resolve_port("/dev/x", env={"ESPPORT": "/dev/y"}, ports=[ESP_USB]).value == "/dev/x"
    got = ports.resolve_port(None, env={"ESPPORT": "/dev/y"}, ports=[ESP_USB])
    assert (got.value, got.source) == ("/dev/y", "ESPPORT")
    got = ports.resolve_port(None, env={}, ports=[NO_USB, ARDUINO, ESP_USB], say=said.append)
    assert (got.value, got.source) == ("/dev/ttyACM0", "detected")
    assert said == ["rvne: using /dev/ttyACM0 (Espressif USB, 303A:1001), the only Espressif board attached"]


def test_a_usb_uart_bridge_counts_as_a_board():
    said = []
    got = ports.resolve_port(None, env={}, ports=[CP2102, ARDUINO], say=said.append)
    assert got.value == "/dev/ttyUSB0" and "CP210x USB-UART bridge" in said[0]


def test_none_or_several_boards_is_a_one_line_error():
    with pytest.raises(DeviceError, match="no Espressif board found") as exc:
        ports.resolve_port(None, env={}, ports=[ARDUINO, NO_USB])
    assert "-p PORT" in str(exc.value) and "ESPPORT" in str(exc.value)
    with pytest.raises(DeviceError, match="2 Espressif boards attached") as exc:
        ports.resolve_port(None, env={}, ports=[ESP_USB, CP2102])
    assert "/dev/ttyACM0 (Espressif USB)" in str(exc.value) and "/dev/ttyUSB0" in str(exc.value)


def test_baud_option_then_espbaud_then_default():
    assert ports.resolve_baud(921600, 115200, env={"ESPBAUD": "460800"}).value == 921600
    got = ports.resolve_baud(None, 115200, env={"ESPBAUD": "460800"})
    assert (got.value, got.source) == (460800, "ESPBAUD")
    assert ports.resolve_baud(None, 115200, env={}).value == 115200
    with pytest.raises(DeviceError, match="ESPBAUD='fast'"):
        ports.resolve_baud(None, 115200, env={"ESPBAUD": "fast"})
    # The running app's console takes idf.py monitor's variables, not esptool's.
    console = ports.CONSOLE_BAUD_ENV
    assert ports.resolve_baud(None, 115200, env={"ESPBAUD": "921600"}, names=console).value == 115200
    got = ports.resolve_baud(None, 115200, env={"ESPBAUD": "921600", "MONITORBAUD": "230400"}, names=console)
    assert (got.value, got.source) == (230400, "MONITORBAUD")


# -- every command ------------------------------------------------------------------------
def test_every_command_takes_json_v_and_q():
    leaves = cli.leaf_parsers(cli.build_parser())
    assert len(leaves) >= 14
    for p in leaves:
        opts = {o for a in p._actions for o in a.option_strings}
        assert {"--json", "-v", "-q"} <= opts, p.prog


@pytest.mark.parametrize("argv", [["device", "info"], ["device", "stats"], ["device", "reset"],
                                  ["device", "monitor"], ["device", "window", "5"], ["check", "m.rvne"],
                                  ["flash", "m.rvne"]])
def test_board_commands_take_p_and_b(argv):
    args = cli.build_parser().parse_args([*argv, "-p", "/dev/ttyACM3", "-b", "921600", "-q"])
    assert args.port == "/dev/ttyACM3" and args.baud == 921600 and args.quiet is True


def test_quiet_before_the_command_too():
    args = cli.build_parser().parse_args(["-q", "device", "info"])
    assert args.quiet is True and args.verbose == 0
    args = cli.build_parser().parse_args(["device", "info", "-vv"])
    assert args.verbose == 2 and args.quiet is False


# -- against the virtual device ---------------------------------------------------------
@pytest.fixture(scope="module")
def sim():
    with start_target("sim", upstream_init.init_blob(), window=20) as t:
        yield t


def run_cli(argv, monkeypatch, capsys, env=None, found=()):
    for key in ("ESPPORT", "ESPBAUD", "IDF_MONITOR_BAUD", "MONITORBAUD"):
        monkeypatch.delenv(key, raising=False)
    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(ports, "_system_ports", lambda: list(found))
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_detected_board_is_used_and_said(sim, monkeypatch, capsys):
    rc, out, err = run_cli(["device", "info", "--json"], monkeypatch, capsys, found=[port(sim.url, 0x303A, 0x1001)])
    assert rc == 0, err
    assert err == f"rvne: using {sim.url} (Espressif USB, 303A:1001), the only Espressif board attached\n"
    info = json.loads(out)
    assert info["window"] == 20 and isinstance(info["window"], int)
    assert info["dims"] == [16, 4, 1, 32, 2, 4] and info["crc"] == upstream_init.EXAMPLE_CRC
    assert isinstance(info["arena"], int) and info["status"] == "loaded"
    rc, out, err = run_cli(["device", "info", "-q"], monkeypatch, capsys, found=[port(sim.url, 0x303A, 0x1001)])
    assert rc == 0 and err == "" and "window" in out


def test_espport_and_verbose(sim, monkeypatch, capsys):
    rc, out, err = run_cli(["device", "stats", "--json", "-v"], monkeypatch, capsys,
                           env={"ESPPORT": sim.url, "IDF_MONITOR_BAUD": "230400"})
    assert rc == 0, err
    assert f"rvne: port {sim.url} (from ESPPORT)" in err and "rvne: baud 230400 (IDF_MONITOR_BAUD)" in err
    stats = json.loads(out)
    assert isinstance(stats["pushes"], int) and isinstance(stats["drops"], int)


def test_no_board_anywhere_is_one_line_exit_1(monkeypatch, capsys, tmp_path):
    rc, out, err = run_cli(["device", "info"], monkeypatch, capsys, found=[ARDUINO])
    assert rc == 1 and out == "" and err.count("\n") == 1 and "no Espressif board found" in err
    rc, out, err = run_cli(["device", "info", "--json"], monkeypatch, capsys, found=[ESP_USB, CP2102])
    assert rc == 1 and json.loads(out)["error"]["message"].startswith("no port given and 2 Espressif boards")


def test_device_window_stats_reset_monitor(sim, monkeypatch, capsys):
    rc, out, err = run_cli(["device", "window", "12", "-p", sim.url, "--json"], monkeypatch, capsys)
    assert rc == 0, err
    got = json.loads(out)
    assert got["window"] == 12 and got["arena"] == 4 * (2 * 16 + 128 + 4 + 4 + 12 * (2 * 2 * 32 + 4))
    rc, out, err = run_cli(["device", "window", "4294967295", "-p", sim.url], monkeypatch, capsys)
    assert rc == 1 and "E_TOO_LARGE" in err
    rc, out, err = run_cli(["device", "reset", "-p", sim.url, "--json"], monkeypatch, capsys)
    assert rc == 0, err
    got = json.loads(out)
    # A pty has no modem lines: reopened, and the virtual device printed its banner.
    assert got["reset"] == "reopened (no modem lines)" and " ready: OK" in got["banner"]
    rc, out, err = run_cli(["device", "reset", "--soft", "-p", sim.url], monkeypatch, capsys)
    assert rc == 0 and "reset the head's state" in out
    rc, out, err = run_cli(["device", "monitor", "-p", sim.url, "--lines", "1", "--seconds", "10"],
                           monkeypatch, capsys)
    assert rc == 0 and out.startswith("rvne/") and " ready: OK" in out
    assert "monitoring" in err
    rc, out, err = run_cli(["device", "monitor", "-p", sim.url, "--seconds", "0.3", "-q", "--json"],
                           monkeypatch, capsys)
    assert rc == 0 and err == ""
    assert all("line" in json.loads(x) for x in out.splitlines())


# -- progress: a terminal gets it, a pipe does not ---------------------------------------
def check_cmd(tmp_path, *extra):
    blob = tmp_path / "m.rvne"
    blob.write_bytes(upstream_init.init_blob())
    return [sys.executable, "-m", "rvne", "check", str(blob), "--target", "sim", "--vectors", "6", *extra]


def stderr_on_pty(argv):
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    got = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:     # EIO: the child closed its end
                    break
                if not chunk:
                    break
                got += chunk
            elif proc.poll() is not None:
                break
        out = proc.stdout.read()
        proc.wait(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out.decode(), got.decode("utf-8", "replace")


def test_progress_on_a_terminal(tmp_path):
    rc, out, err = stderr_on_pty(check_cmd(tmp_path))
    assert rc == 0 and out.rstrip().endswith("PASS")
    assert "starting the sim target" in err
    total = sum(check.sequence_lengths(6, check.default_length(100), 100))     # 6 generated sequences at W 100
    assert f"/{total}" in err and "frames" in err and "ETA" in err and "\x1b[" in err


def test_no_progress_into_a_pipe_or_with_q(tmp_path):
    run = subprocess.run(check_cmd(tmp_path), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stderr == "" and run.stdout.rstrip().endswith("PASS")
    rc, out, err = stderr_on_pty(check_cmd(tmp_path, "-q"))
    assert rc == 0 and err == "" and out.rstrip().endswith("PASS")


def test_flash_shows_esptools_own_progress_only_when_asked(capsys):
    """EsptoolApi.show_progress (set by `rvne flash` on a terminal): esptool
    writes the whole blob in one call with its progress on, not captured;
    otherwise its output is captured and its progress off."""
    from rvne.flash import board as board_flash

    class Cmds:
        def __init__(self):
            self.calls = []

        def write_flash(self, esp, pairs, compress, no_progress):
            self.calls.append((len(pairs[0][1]), no_progress))
            print("Writing at 0x00110000 [====] 100.0%")   # what esptool draws

    api = board_flash.EsptoolApi()
    api._cmds = Cmds()
    api.show_progress = True
    board_flash._write(api, None, "/dev/ttyACM0", 0x110000, b"\0" * 200000, lambda d, t: None)
    assert api._cmds.calls == [(200000, False)]
    assert "Writing at 0x00110000" in capsys.readouterr().out
    api._cmds.calls.clear()
    api.show_progress = False
    board_flash._write(api, None, "/dev/ttyACM0", 0x110000, b"\0" * 200000, lambda d, t: None)
    assert api._cmds.calls == [(0x10000, True)] * 3 + [(200000 - 3 * 0x10000, True)]
    assert capsys.readouterr().out == ""


def test_esptools_own_variables_come_after_idf_pys():
    # esptool reads ESPTOOL_PORT/ESPTOOL_BAUD; idf.py's ESPPORT/ESPBAUD win, as idf.py passes them as -p/-b.
    got = ports.resolve_port(None, env={"ESPTOOL_PORT": "/dev/e"}, ports=[ESP_USB])
    assert (got.value, got.source) == ("/dev/e", "ESPTOOL_PORT")
    got = ports.resolve_port(None, env={"ESPTOOL_PORT": "/dev/e", "ESPPORT": "/dev/i"}, ports=[ESP_USB])
    assert (got.value, got.source) == ("/dev/i", "ESPPORT")
    assert ports.resolve_port("/dev/x", env={"ESPTOOL_PORT": "/dev/e"}).value == "/dev/x"
    got = ports.resolve_baud(None, 115200, env={"ESPTOOL_BAUD": "921600"})
    assert (got.value, got.source) == (921600, "ESPTOOL_BAUD")
    got = ports.resolve_baud(None, 115200, env={"ESPTOOL_BAUD": "921600", "ESPBAUD": "460800"})
    assert (got.value, got.source) == (460800, "ESPBAUD")
    with pytest.raises(DeviceError, match="ESPTOOL_BAUD='x'"):
        ports.resolve_baud(None, 115200, env={"ESPTOOL_BAUD": "x"})
    # A flashing rate is never the running app's console rate.
    assert ports.resolve_baud(None, 115200, env={"ESPTOOL_BAUD": "921600"}, names=ports.CONSOLE_BAUD_ENV).value \
        == 115200
