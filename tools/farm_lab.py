#!/usr/bin/env python3
"""A labgrid farm on this machine, of emulated boards (docs/farm.md, "A farm
on one machine"): labgrid's own coordinator and exporters as processes on
127.0.0.1, on free ports, for tests/test_farm.py and tools/bench_farm.py.

    with Lab(workdir) as lab:
        vdev = lab.board("sim", blob)                     # the virtual device, on a pty
        lab.exporter("rack1", {"vdev": lab.serial(vdev)}) # through ser2net, as RFC 2217
        lab.place("vdev-1", ["rack1/vdev/*"], tags={"kind": "vdev"})
        ... rvne check BLOB --place vdev-1 (LG_COORDINATOR=lab.address)

Everything it started stops when the block ends, however it ends; each
process is its own process group, so an exporter goes with its ser2net."""

import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import tty
from pathlib import Path

VENV_BIN = Path(sys.executable).parent
START_TIMEOUT = 20.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tool(name):
    path = VENV_BIN / name
    return str(path) if path.exists() else name


class Lab:
    def __init__(self, workdir):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.address = f"127.0.0.1:{free_port()}"
        self.procs = {}             # name -> Popen
        self.targets = []
        self.coord = None

    # -- processes -------------------------------------------------------------
    def _spawn(self, name, argv):
        log = open(self.workdir / f"{name}.log", "wb")
        env = {**os.environ, "LG_COORDINATOR": self.address, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(argv, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.procs[name] = proc
        return proc

    def log(self, name) -> str:
        return (self.workdir / f"{name}.log").read_text(errors="replace")

    def kill(self, name, sig=signal.SIGKILL):
        """Stop process `name` and its children (an exporter's ser2net): the host going down."""
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def __enter__(self):
        try:
            self._spawn("coordinator", [_tool("labgrid-coordinator"), "-l", self.address])
            self._wait_listening()
            from rvne.farm.coordinator import Coordinator

            self.coord = Coordinator(self.address)
        except BaseException:
            self.close()
            raise
        return self

    def _wait_listening(self):
        host, port = self.address.rsplit(":", 1)
        end = time.monotonic() + START_TIMEOUT
        while time.monotonic() < end:
            if self.procs["coordinator"].poll() is not None:
                raise RuntimeError(f"labgrid-coordinator exited: {self.log('coordinator')[-2000:]}")
            with socket.socket() as s:
                if s.connect_ex((host, int(port))) == 0:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"labgrid-coordinator did not listen on {self.address} within {START_TIMEOUT:g} s")

    def close(self):
        if self.coord is not None:
            self.coord.close()
            self.coord = None
        for name in [n for n in self.procs if n != "coordinator"] + ["coordinator"]:
            self.kill(name, signal.SIGTERM)
        for t in self.targets:
            t.stop()
        self.targets = []

    def __exit__(self, *exc):
        self.close()
        return False

    # -- boards, exporters, places ---------------------------------------------------
    def board(self, kind, blob, **options):
        """Start an emulated board (rvne.targets: "sim", "qemu", ...) stopped with the lab."""
        from rvne.targets import start_target

        target = start_target(kind, blob, **options)
        self.targets.append(target)
        return target

    @staticmethod
    def serial(target) -> dict:
        """The exporter resource publishing `target`'s serial port: a pty as a
        RawSerialPort (ser2net, RFC 2217), a TCP socket as a raw NetworkSerialPort."""
        if target.url.startswith("socket://"):
            host, port = target.url[len("socket://"):].rstrip("/").rsplit(":", 1)
            return {"NetworkSerialPort": {"host": host, "port": int(port), "protocol": "raw", "speed": 115200}}
        return {"RawSerialPort": {"port": target.url, "speed": 115200}}

    def exporter(self, name, groups: dict, wait=True):
        """Start labgrid-exporter `name` publishing `groups` ({group: {cls: params}})."""
        lines = []
        for group, resources in groups.items():
            lines.append(f"{group}:")
            for cls, params in resources.items():
                lines.append(f"  {cls}:")
                lines += [f"    {k}: {v!r}" if isinstance(v, str) else f"    {k}: {v}" for k, v in params.items()]
        config = self.workdir / f"{name}.yaml"
        config.write_text("\n".join(lines) + "\n")
        self._spawn(name, [_tool("labgrid-exporter"), "-n", name, "--hostname", "127.0.0.1", str(config)])
        if wait:
            self.wait_resources(name, sum(len(r) for r in groups.values()))

    def wait_resources(self, exporter, count):
        """Until `count` resources of `exporter` are published and available."""
        end = time.monotonic() + START_TIMEOUT
        while time.monotonic() < end:
            proc = self.procs.get(exporter)
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"labgrid-exporter {exporter} exited: {self.log(exporter)[-2000:]}")
            groups = self.coord._sync(lambda: self.coord.session.resources.get(exporter, {}))
            ready = [r for g in groups.values() for r in g.values() if r.avail]
            if len(ready) >= count:
                return
            time.sleep(0.1)
        raise RuntimeError(f"labgrid-exporter {exporter} did not publish {count} resources within "
                           f"{START_TIMEOUT:g} s: {self.log(exporter)[-2000:]}")

    def published_port(self, exporter):
        """The TCP port of the serial port `exporter` publishes; None until a
        place holding it is acquired (labgrid's exporter starts ser2net then)."""
        groups = self.coord._sync(lambda: self.coord.session.resources.get(exporter, {}))
        ports = [r.args.get("port") for g in groups.values() for r in g.values() if r.cls == "NetworkSerialPort"]
        return next((p for p in ports if p), None)

    def place(self, name, matches, tags=None):
        """Create place `name` matching `matches` (exporter/group/cls[/name]) with `tags`."""
        pb2 = self.coord._pb2
        s = self.coord.session

        async def make():
            await s.stub.AddPlace(pb2.AddPlaceRequest(name=name))
            for pattern in matches:
                await s.stub.AddPlaceMatch(pb2.AddPlaceMatchRequest(placename=name, pattern=pattern))
            if tags:
                await s.stub.SetPlaceTags(pb2.SetPlaceTagsRequest(placename=name, tags=tags))
            await s.sync_with_coordinator()
        self.coord._call(make(), 10.0, f"the coordinator did not create place {name}")

    def client(self, *argv, user=None, check=True):
        """labgrid-client ARGV against this lab's coordinator (as `user`, LG_USERNAME)."""
        env = {**os.environ, "LG_COORDINATOR": self.address}
        if user:
            env["LG_USERNAME"] = user
        done = subprocess.run([_tool("labgrid-client"), *argv], env=env, capture_output=True, text=True,
                              timeout=30)
        if check and done.returncode:
            raise RuntimeError(f"labgrid-client {' '.join(argv)}: {done.stderr.strip()}")
        return done

    def holder(self, place):
        return self.coord.holder(place)


class Bridge:
    """A raw TCP serial server in front of a serial device path that may change
    under it (a board re-enumerating after a flash: tests/hil/standin.py's
    link): each connection opens the path afresh, and ends when either side
    does. labgrid publishes it as a raw NetworkSerialPort, as a farm would a
    terminal server's port."""

    def __init__(self, path):
        self.path = str(path)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="farm-bridge")
        self._thread.start()

    @property
    def resource(self) -> dict:
        return {"NetworkSerialPort": {"host": "127.0.0.1", "port": self.port, "protocol": "raw", "speed": 115200}}

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with conn:
                try:
                    fd = os.open(os.path.realpath(self.path), os.O_RDWR | os.O_NOCTTY)
                except OSError:
                    continue            # the board is between ptys: the client sees the line drop
                try:
                    tty.setraw(fd)
                    self._pump(conn, fd)
                finally:
                    os.close(fd)

    def _pump(self, conn, fd):
        while not self._stop.is_set():
            ready, _, _ = select.select([conn, fd], [], [], 0.2)
            try:
                if conn in ready:
                    data = conn.recv(65536)
                    if not data:
                        return
                    os.write(fd, data)
                if fd in ready:
                    data = os.read(fd, 65536)
                    if not data:
                        return
                    conn.sendall(data)
            except OSError:             # the pty went (the board restarted) or the client left
                return

    def close(self):
        self._stop.set()
        self.sock.close()
        self._thread.join(5)
