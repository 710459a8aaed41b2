"""One session with a labgrid coordinator (docs/farm.md): find places by
name or tags, acquire and release them, and hand back each place's serial
port as a pyserial URL.

labgrid's client session is asyncio code; it runs here on its own event
loop in a thread of its own, so the boards' blocking serial I/O in other
threads never stalls the gRPC stream, and a signal in the main thread can
still release what was acquired. Every call into the session has a bound:
an unreachable coordinator is a one-line FarmError, never a hang."""

import asyncio
import concurrent.futures
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from ..errors import FarmError, PlaceBusyError

DEFAULT_COORDINATOR = "127.0.0.1:20408"     # labgrid's own default (LG_COORDINATOR unset)
CONNECT_TIMEOUT = 10.0      # seconds to reach the coordinator and receive its places
CALL_TIMEOUT = 10.0         # seconds for one acquire or release
# The keepalive labgrid's client sets (a dead coordinator is noticed within ~20 s).
KEEPALIVE = [("grpc.keepalive_time_ms", 7500), ("grpc.keepalive_timeout_ms", 10000),
             ("grpc.http2.ping_timeout_ms", 10000), ("grpc.http2.max_pings_without_data", 0)]
WAIT_POLL = 0.25            # seconds between looks at a busy place (--wait)
MISSING = ("--place needs labgrid, which is not installed: pip install 'rvne[farm]' "
           "(labgrid needs Python 3.10 or later)")


def _labgrid():
    """labgrid's client module, grpc and its protobuf messages, or the one line
    saying how to get them."""
    # gRPC's fork handlers, run in a child forked while its threads run (a target
    # or esptool started beside a session), can crash that child before its exec.
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
    try:
        import grpc
        from labgrid.remote import client
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb2
        from labgrid.util.proxy import proxymanager
    except (ImportError, SyntaxError):      # SyntaxError: an old Python importing labgrid's 3.10 code
        raise FarmError(MISSING) from None
    return client, grpc, pb2, proxymanager


def coordinator_address(given: Optional[str] = None, env=None) -> str:
    """--coordinator, else LG_COORDINATOR (labgrid's variable), else labgrid's default."""
    env = os.environ if env is None else env
    return given or env.get("LG_COORDINATOR") or DEFAULT_COORDINATOR


@dataclass
class Board:
    """An acquired place, as rvne talks to it."""

    place: str
    url: str                    # the serial port: rfc2217://host:port (ser2net) or socket://host:port (raw)
    speed: int                  # the exporter's baud rate for the port
    acquired: bool              # rvne acquired it, so rvne releases it (else the user already held it)
    resources: Dict = field(default_factory=dict, repr=False)   # (name, cls) -> labgrid ResourceEntry


def serial_url(args: dict) -> str:
    """A NetworkSerialPort's pyserial URL. ser2net's telnet accepter speaks RFC 2217;
    ign_set_control: ser2net does not confirm modem-line changes, which pyserial
    would otherwise wait for (labgrid's own SerialDriver passes it too)."""
    host, port = args.get("host"), args.get("port")
    if args.get("protocol", "rfc2217") == "raw":
        return f"socket://{host}:{port}"
    return f"rfc2217://{host}:{port}?ign_set_control"


class Coordinator:
    """A client session; close() (or `with`) ends it. Not thread-safe beyond
    this: each method may be called from any one thread at a time."""

    def __init__(self, address: Optional[str] = None, timeout: Optional[float] = None):
        timeout = CONNECT_TIMEOUT if timeout is None else timeout
        self._client, self._grpc, self._pb2, proxymanager = _labgrid()
        self.address = coordinator_address(address)
        self.session = None
        _quiet(logging.getLogger())
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="labgrid-session", daemon=True)
        self._thread.start()
        try:
            target = proxymanager.get_grpc_address(self.address, default_port=20408)
            self.session = self._call(self._start(target), timeout,
                                      f"the labgrid coordinator at {self.address} did not answer within "
                                      f"{timeout:g} s; check it runs there, or set LG_COORDINATOR")
        except BaseException:
            self._stop_loop()
            raise
        self.me = f"{self.session.gethostname()}/{self.session.getuser()}"

    async def _start(self, target):
        session = self._client.ClientSession(target, self._loop)
        # gRPC shares a connection among a process's channels of equal options, and the
        # coordinator refuses a second session from one peer (a process with two, such as
        # tools/farm_lab.py's beside rvne's): this session's channel gets a connection of its own.
        from labgrid.remote.generated import labgrid_coordinator_pb2_grpc

        shared, session.channel = session.channel, self._grpc.aio.insecure_channel(
            target, options=[("grpc.use_local_subchannel_pool", 1), *KEEPALIVE])
        session.stub = labgrid_coordinator_pb2_grpc.CoordinatorStub(session.channel)
        await shared.close()
        try:
            await session.start()
        except self._client.Error:
            await session.close()
            raise FarmError(f"cannot reach the labgrid coordinator at {self.address}: start "
                            "labgrid-coordinator there, or set LG_COORDINATOR (or --coordinator) to where "
                            "it runs") from None
        return session

    @property
    def loop(self):
        """The session's event loop (running in its own thread)."""
        return self._loop

    # -- calls into the session's loop ---------------------------------------
    def _call(self, coro, timeout: Optional[float], late: str):
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise FarmError(late) from None
        except self._client.Error as exc:
            # labgrid's Error prints as "Error: ..."; the CLI says "rvne: error: " itself.
            raise FarmError(str(exc.args[0] if exc.args else exc)) from None
        except self._grpc.aio.AioRpcError as exc:
            raise FarmError(f"the coordinator at {self.address} refused: {exc.details()}") from None
        except BaseException:
            fut.cancel()        # a signal or Ctrl-C while waiting: stop the coroutine too
            raise

    def _lost(self):
        if self.session.stopping.is_set():
            raise FarmError(f"lost the labgrid coordinator at {self.address}; check it still runs")

    def _sync(self, fn, *args):
        """fn(*args) on the session's loop (the session's dicts change there)."""
        async def run():
            self._lost()
            return fn(*args)
        return self._call(run(), CALL_TIMEOUT, f"the coordinator at {self.address} stopped answering")

    # -- places ---------------------------------------------------------------
    def select(self, patterns: Sequence[str] = (), tags: Optional[Dict[str, str]] = None) -> List[str]:
        """Place names: each pattern as labgrid-client -p resolves it (a name,
        a unique part of one or an alias), then every place carrying all `tags`;
        in that order, each once."""
        return self._sync(self._select, list(patterns), dict(tags or {}))

    def _select(self, patterns, tags):
        names = [self.session.get_place(p).name for p in patterns]
        if tags:
            tagged = sorted(n for n, p in self.session.places.items()
                            if all(p.tags.get(k) == v for k, v in tags.items()))
            if not tagged:
                want = " ".join(f"{k}={v}" for k, v in tags.items())
                raise FarmError(f"no place on {self.address} has the tags {want}; list them with "
                                "`labgrid-client -v places`, tag one with `labgrid-client -p NAME set-tags K=V`")
            names += tagged
        return list(dict.fromkeys(names))

    def holder(self, name: str) -> Optional[str]:
        """Who holds place `name` ("host/user"), None when it is free."""
        return self._sync(lambda: self.session.get_place(name).acquired)

    def acquire(self, name: str, wait: Optional[float] = 0.0) -> bool:
        """Acquire place `name`; True when rvne acquired it, False when this
        user on this host already held it (then it stays held after). A place
        held by another: PlaceBusyError naming the holder, at once (`wait` 0)
        or after `wait` seconds of trying (None: until it is free)."""
        until = None if wait is None else time.monotonic() + wait
        bound = None if wait is None else wait + CALL_TIMEOUT
        return self._call(self._acquire(name, until), bound,
                          f"the coordinator at {self.address} did not acquire place {name} in time")

    async def _acquire(self, name, until):
        s = self.session
        while True:
            self._lost()
            place = s.get_place(name)
            if place.acquired == self.me:
                return False
            if not place.acquired:
                try:
                    s.check_matches(place)
                except self._client.Error as exc:
                    raise FarmError(f"place {place.name}: {exc.args[0] if exc.args else exc}; is its exporter "
                                    "running? (`labgrid-client resources` lists what is published)") from None
                try:
                    await s.stub.AcquirePlace(self._pb2.AcquirePlaceRequest(placename=place.name))
                    await s.sync_with_coordinator()
                    return True
                except self._grpc.aio.AioRpcError as exc:
                    await s.sync_with_coordinator()
                    if not s.get_place(name).acquired:      # not a lost race: a real refusal
                        raise FarmError(f"place {place.name}: the coordinator refused to acquire it: "
                                        f"{exc.details()}") from None
                    place = s.get_place(name)
            if until is not None and time.monotonic() >= until:
                raise PlaceBusyError(f"place {place.name} is acquired by {place.acquired}; wait for it with "
                                     f"--wait, or ask them to release it (labgrid-client -p {place.name} release)")
            await asyncio.sleep(WAIT_POLL)

    def board(self, name: str, acquired: bool) -> Board:
        """The acquired place's serial port (its one NetworkSerialPort)."""
        return self._sync(self._board, name, acquired)

    def _board(self, name, acquired):
        place = self.session.get_place(name)
        resources = self.session.get_target_resources(place)
        ports = sorted((n, r) for (n, cls), r in resources.items() if cls == "NetworkSerialPort")
        if not ports:
            raise FarmError(f"place {name} has no serial port: add a match for its exporter's RawSerialPort or "
                            "USBSerialPort (docs/farm.md)")
        rname, res = ports[0]
        if not res.avail or not res.args.get("port"):
            raise FarmError(f"place {name}: its serial port {rname} is not available on its exporter (board "
                            "unplugged, or ser2net not running there)")
        return Board(name, serial_url(res.args), int(res.args.get("speed") or 115200), acquired, resources)

    def release(self, name: str):
        """Release place `name` if this user on this host holds it."""
        async def run():
            await self.session.stub.ReleasePlace(self._pb2.ReleasePlaceRequest(placename=name, fromuser=self.me))
            await self.session.sync_with_coordinator()
        self._call(run(), CALL_TIMEOUT, f"the coordinator at {self.address} did not release place {name} "
                                        f"in time; release it with `labgrid-client -p {name} release`")

    # -- the end ---------------------------------------------------------------
    def close(self):
        if self.session is not None:
            session, self.session = self.session, None

            async def stop():
                await session.stop()
                await session.close()
            try:
                self._call(stop(), 5.0, "")
            except FarmError:
                pass
        self._stop_loop()

    def _stop_loop(self):
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5.0)
        if not self._loop.is_running():
            self._loop.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _quiet(root):
    """labgrid logs through the root logger; with no handler there, logging's
    last resort would print its messages (a traceback among them) on stderr
    beside rvne's one error line. A program that configured logging keeps its own."""
    if not root.handlers:
        root.addHandler(logging.NullHandler())
