"""Device commands: `rvne device info|stats|window|reset|monitor` and
`rvne check`. Thin layers over rvne.link.device, rvne.check, rvne.targets and
rvne.link.reset; the port and baud follow esptool's conventions
(rvne.link.ports: -p/-b, ESPPORT/ESPTOOL_PORT, IDF_MONITOR_BAUD/MONITORBAUD, one Espressif
board detected)."""

import contextlib
import json

import time

from .. import check as checkmod
from .. import results
from ..errors import DeviceError, RvneError
from ..io import blob as blobmod
from ..io import weights as weights_io
from ..io.frames import load_frames
from ..link import reset as board_reset
from ..link.device import DEFAULT_RETRIES, DEFAULT_TIMEOUT
from ..targets import TARGETS, start_target
from . import _progress as progress
from ._args import UsageError, nonnegative, positive, seconds, tolerance
from ._farm import farm_args, leased, on_board, plain, report_many, single, wanted
from ._link import PORT_HELP, _baud, _baud_arg, _link_args, _open, _port
from ._out import announcing_builds, emit, note

U32_MAX = 0xFFFFFFFF      # WINDOW W travels as a u32 (docs/protocol.md)


def _device_parser(dsub, name, help, description, func, requests=True):
    """A `device` action; `requests`: it sends requests, so a reply timeout
    and resends mean something (not for monitor, which only listens)."""
    p = dsub.add_parser(name, help=help, description=description)
    p.add_argument("-p", "--port", metavar="URL", help=PORT_HELP)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object, typed values")
    if requests:
        _link_args(p)
    else:
        _baud_arg(p)
        p.set_defaults(timeout=DEFAULT_TIMEOUT, retries=DEFAULT_RETRIES)
    farm_args(p)
    p.set_defaults(func=single(func))
    return p


def register(sub):
    dev = sub.add_parser("device", help="talk to a device running rvne firmware")
    dsub = dev.add_subparsers(dest="device_command", metavar="ACTION")
    dsub.required = True
    _device_parser(dsub, "info", "print the device's INFO (firmware, model, blob CRC, window)",
                   "Ask the device for INFO (docs/protocol.md) and print its fields: firmware, port, load "
                   "status and reason, dims, dtype, blob CRC, window, arena. Exit 1 when the device cannot "
                   "be reached.", cmd_device_info)
    _device_parser(dsub, "stats", "print the device's STATS (pushes, drops, timing)",
                   "Ask the device for STATS (docs/protocol.md): pushes, drops (frames a firmware producer "
                   "lost), push timing in the device's clock.", cmd_device_stats)
    w = _device_parser(dsub, "window", "set the attention window W (the device resets its state)",
                       "Send WINDOW W; print the window and the arena it takes. Exit 1 when the device "
                       "refuses it (E_TOO_LARGE: beyond its arena or RVNE_MAX_WINDOW).", cmd_device_window)
    w.add_argument("window", type=positive("window", U32_MAX), metavar="W", help="frames")
    r = _device_parser(dsub, "reset", "reset the board (DTR/RTS, like esptool) and print its boot banner",
                       "Pulse RTS with DTR released (esptool's hard reset: EN low, boot from flash), then read "
                       "the boot banner. A port without modem lines (a pty, a socket) is closed and opened "
                       "again instead, which a virtual device answers with its banner. --soft sends the "
                       "protocol's RESET instead (clears the frame history, keeps the board running).",
                       cmd_device_reset)
    r.add_argument("--soft", action="store_true", help="protocol RESET: clear the head's state only")
    m = _device_parser(dsub, "monitor", "print what the device writes (its banner, log lines)",
                       "Print each line the device sends until Ctrl-C, --seconds or --lines. With --json one "
                       "JSON object per line.", cmd_device_monitor, requests=False)
    m.add_argument("--seconds", type=seconds, default=None, metavar="S", help="stop after S seconds")
    m.add_argument("--lines", type=positive("lines"), default=None, metavar="N", help="stop after N lines")

    chk = sub.add_parser(
        "check", help="verify a device computes what the reference computes from BLOB",
        description="Read INFO, compare the blob CRC and dims with BLOB, stream seeded random "
                    "sequences longer than W (or --frames) and judge every logit against the float64 "
                    "reference: within its error bound (docs/model.md), or within --atol/--rtol. "
                    "Exit 1 on any mismatch.")
    chk.add_argument("blob", metavar="BLOB", help="the blob the device should hold")
    where = chk.add_mutually_exclusive_group()
    where.add_argument("-p", "--port", metavar="URL",
                       help="a device already running (pyserial URL; default: ESPPORT, ESPTOOL_PORT, else "
                            "the one Espressif board attached)")
    where.add_argument("--target", choices=TARGETS,
                       help="start this target on BLOB (building it if needed) and stop it after")
    chk.add_argument("--image", metavar="IMG",
                     help="with --target: boot this flash image as it is (`rvne image IMG [--target T]`, then "
                          "`rvne flash BLOB --image IMG`, or after `rvne update`) instead of writing BLOB into a "
                          "temporary copy of the built one")
    chk.add_argument("--vectors", type=positive("vectors"), metavar="N",
                     help="random sequences to stream (default 4)")
    chk.add_argument("--seed", type=nonnegative("seed"), metavar="S",
                     help="seed of the random sequences (default 0)")
    chk.add_argument("--frames", metavar="FILE.npy",
                     help="stream these frames instead: float [T, D] (one sequence) or [N, T, D]")
    chk.add_argument("--atol", type=tolerance("atol"), metavar="A",
                     help="your own contract |a-b| <= A + R*|ref| instead of the error bound (R default 0)")
    chk.add_argument("--rtol", type=tolerance("rtol"), metavar="R",
                     help="relative part of your own contract (A default 0)")
    chk.add_argument("--save", metavar="FILE.npz",
                     help="write frames, device logits, float64 reference and bounds (docs in rvne.results)")
    chk.add_argument("--plot", metavar="FILE.png",
                     help="draw per class the device and reference logits and the error over its bound")
    chk.add_argument("--window", type=positive("window", U32_MAX), metavar="W",
                     help="send WINDOW W first (default: keep the device's)")
    chk.add_argument("--length", type=positive("length"), metavar="N",
                     help="frames of the longest sequence (default W plus a few, so the window slides; "
                          "docs/model.md, \"What `rvne check` streams\")")
    chk.add_argument("--float-model", metavar="MODEL",
                     help="an int8 BLOB's float origin (FP32/FP16 blob, .npz, .safetensors, .pt): also report the "
                          "device's int8 logits against its FP32 reference, as accuracy only (the verdict is exact)")
    chk.add_argument("--json", action="store_true", help="print the report as JSON")
    chk.add_argument("--trace", choices=checkmod.TRACE_MODES, default=None,
                     help="judge the device step by step from its trace (docs/model.md): every push "
                          "(default with --target), a sample of the first pushes of each sequence sized "
                          "to at most double the link time (default with a port), or off (default with "
                          "--atol/--rtol)")
    _link_args(chk)
    farm_args(chk, many=True)
    chk.set_defaults(func=cmd_check)


def cmd_device_info(args):
    with _open(args, _port(args)) as dev:
        info = dev.info()
    width = max(len(k) for k in info.fields)
    emit(args, "\n".join(f"{key:<{width}}  {value}" for key, value in info.fields.items()), info.to_json())
    return 0


def cmd_device_stats(args):
    with _open(args, _port(args)) as dev:
        stats = dev.stats()
    width = max(len(k) for k in stats) if stats else 0
    emit(args, "\n".join(f"{k:<{width}}  {v}" for k, v in stats.items()), stats)
    return 0


def cmd_device_window(args):
    with _open(args, _port(args)) as dev:
        window, arena = dev.window(args.window)
    emit(args, f"window {window} frames, arena {arena} bytes", {"window": window, "arena": arena})
    return 0


def cmd_device_reset(args):
    url = _port(args)
    if args.soft:
        with _open(args, url) as dev:
            dev.reset()
        emit(args, f"reset the head's state on {url}", {"port": url, "reset": "soft"})
        return 0
    power = None
    farm = getattr(args, "_farm", None)
    if farm is not None:
        from ..farm.power import power_cycle, power_resource

        if power_resource(farm[1]) is not None:
            power = lambda: power_cycle(*farm)      # noqa: E731
    got = board_reset.reset_and_read_banner(url, _baud(args), timeout=max(args.timeout, 5.0), power=power)
    emit(args, f"{got.how} on {url}; banner: {got.banner}",
         {"port": url, "reset": got.how, "banner": got.banner, "lines": got.lines})
    return 0


def cmd_device_monitor(args):
    url = _port(args)
    note(args, f"rvne: monitoring {url} (Ctrl-C to stop)")
    end = None if args.seconds is None else time.monotonic() + args.seconds
    count = 0
    with _open(args, url) as dev:
        while args.lines is None or count < args.lines:
            now = time.monotonic()
            if end is not None and now >= end:
                break
            line = dev.read_line(now + 0.2 if end is None else min(end, now + 0.2))
            if line is None:
                continue
            text = line.decode("utf-8", "replace")
            if getattr(args, "json", False):
                print(json.dumps({"line": text}), flush=True)
            else:
                print(text, flush=True)
            count += 1
    return 0


CHECK_FRAMES_MAX = 20000     # frames per sequence a check streams unless --length says more


def _bound_length(dev, args):
    """A device's INFO sizes the check (length = W plus a few): refuse a
    window that would make it run for hours before streaming a frame."""
    if args.length is not None:
        return
    window = args.window or dev.info().window
    length = checkmod.default_length(window)
    if length > CHECK_FRAMES_MAX:
        raise DeviceError(f"the device's window is {window} frames, so a check would stream {length} frames per "
                          f"sequence; pass --window W (or --length N) to check a smaller one")


class _ProgressDevice:
    """A Device whose run() streams in batches and reports frames done:
    RUN for the first batch, PUSH for the rest, so the device sees the same
    frames in the same order (docs/protocol.md)."""

    def __init__(self, dev, bar):
        self._dev, self._bar = dev, bar

    def __getattr__(self, name):
        return getattr(self._dev, name)

    def run(self, frames):
        import numpy as np

        arr = np.asarray(frames, dtype=np.float32)
        step = max(1, self._dev.frames_per_request()) * 4
        out = []
        for start in range(0, max(len(arr), 1), step):
            batch = arr[start:start + step]
            out.append(self._dev.run(batch) if start == 0 else self._dev.push(batch))
            self._bar.advance(len(batch))
        return np.concatenate(out)

    def stream_traced(self, frames, traced, floats):
        import numpy as np

        arr = np.asarray(frames, dtype=np.float32)
        head, traces = self._dev.stream_traced(arr[:traced], traced, floats)
        self._bar.advance(len(head))
        out = [head]
        step = max(1, self._dev.frames_per_request()) * 4
        for start in range(len(head), len(arr), step):
            out.append(self._dev.push(arr[start:start + step]))
            self._bar.advance(len(out[-1]))
        return np.concatenate(out), traces


def _default_trace(args):
    """--trace's default: every push on a started target, a sample on a
    port; off with the user's own tolerance (the step rule knows only
    correct FP32, which an approximate device they accept is not)."""
    if args.atol is not None or args.rtol is not None:
        return "off"
    return "all" if args.target else "sample"


def cmd_check(args):
    patterns, tags = wanted(args)       # a usage error before any file is read
    if args.image and not args.target:
        raise UsageError("--image goes with --target")
    quiet = getattr(args, "quiet", False) or args.json
    if args.frames and (args.vectors is not None or args.seed is not None or args.length is not None):
        raise UsageError("--frames gives the sequences; drop --vectors, --seed and --length")
    # A bad file fails before any target starts.
    checked = blobmod.read_file(args.blob, contract=True)
    blob_bytes = checked.to_bytes()
    if checked.header.int8 and (args.atol is not None or args.rtol is not None):
        raise UsageError("an int8 blob is judged exactly (docs/model.md): drop --atol/--rtol")
    float_model = None
    if args.float_model:
        if not checked.header.int8:
            raise UsageError("--float-model goes with an int8 BLOB (its float origin, compared for accuracy)")
        arrays, fdims, _ = weights_io.load_float_model(args.float_model, checked.header.dims)
        if tuple(fdims) != tuple(checked.header.dims):
            raise UsageError(f"--float-model {args.float_model} has dims {fdims}, BLOB {checked.header.dims}")
        float_model = (args.float_model, arrays)
    frames = None
    if args.frames:
        dim = blobmod.parse_loadable(blob_bytes).header.input_dim
        frames = load_frames(args.frames, dim, sequences=True)
    if patterns or tags:
        with leased(args, patterns, tags) as (_, boards):
            if len(boards) > 1:
                if args.save or args.plot:
                    raise UsageError("--save and --plot go with one board; check several boards without them")
                return _check_many(args, boards, blob_bytes, frames, float_model)
            report = _check_on(on_board(args, boards[0]), blob_bytes, frames, float_model, quiet)
    else:
        report = _check_on(args, blob_bytes, frames, float_model, quiet)
    return _print_check(args, report)


def _check_on(args, blob_bytes, frames, float_model, quiet):
    """Check one device: a started --target, or the one on args.port."""
    emulated = (args.target or "").startswith("qemu")
    with contextlib.ExitStack() as stack:
        url = args.port
        if args.target:
            with announcing_builds(args), \
                    progress.status(f"starting the {args.target} target (building its firmware if needed)", quiet):
                if args.image:
                    # The board boots what `rvne flash --image` wrote; INFO's CRC
                    # check below proves the image holds BLOB.
                    target = stack.enter_context(start_target(args.target, None, image=args.image, icount=emulated))
                else:
                    target = stack.enter_context(start_target(args.target, blob_bytes, icount=emulated))
            url = target.url
            # An emulated core is slow: at least the reply time its target needs.
            args.timeout = max(args.timeout, getattr(target, "reply_timeout", 0.0))
        else:
            url = _port(args)
        dev = stack.enter_context(_open(args, url))
        if frames is None:
            _bound_length(dev, args)
        if progress.enabled(quiet):
            if frames is not None:
                total = frames.shape[0] * frames.shape[1]
            else:
                window = args.window or dev.info().window
                total = sum(checkmod.sequence_lengths(args.vectors or 4, args.length or checkmod.default_length(window),
                                                      window, args.seed or 0))
            bar = stack.enter_context(progress.Frames(total, "check", quiet))
            dev = _ProgressDevice(dev, bar)
        report = checkmod.run_check(dev, blob_bytes, vectors=args.vectors or 4, seed=args.seed or 0,
                                    window=args.window, length=args.length, frames=frames,
                                    atol=args.atol, rtol=args.rtol,
                                    trace=args.trace or _default_trace(args), float_model=float_model)
        if emulated and report.instructions_per_push is None:
            report.instructions_per_push = target.instructions(report.device_push)
    return report


def _check_many(args, boards, blob_bytes, frames, float_model):
    """Every board at once (rvne.farm.many), one report each and the summary table."""
    from ..farm.many import run_all

    outcomes = run_all(boards, _check_board, plain(args), blob_bytes, frames, float_model)

    def row(r):
        step = "-" if r.step_max_ratio is None else f"{r.step_max_ratio:.3g}"
        ipp = "-" if r.instructions_per_push is None else f"{r.instructions_per_push:,.0f}"
        return ["pass" if r.passed else "FAIL", f"{r.max_ratio:.3g}", step, f"{r.frames_per_s:.1f}", ipp]

    return report_many(args, outcomes, checkmod.render, lambda r: {"check": r.to_dict()},
                       ["board", "verdict", "worst ratio", "worst step ratio", "frames/s", "instructions/push"], row)


def _check_board(board, args, blob_bytes, frames, float_model):
    """One farm board's check, in its own process (rvne.farm.many)."""
    return _check_on(on_board(args, board), blob_bytes, frames, float_model, True)


def _print_check(args, report):
    if args.json:
        # One object on stdout: the files are written first, and a failed
        # write is the error object (the report inside it), exit 1.
        doc = report.to_dict()
        try:
            doc["written"] = _write_results(args, report)
        except (RvneError, OSError) as exc:
            exc.json_extra = {"check": doc}
            raise
        print(json.dumps(doc, indent=2))
    else:
        # The verdict stands as printed; the files are extras written after it.
        print(checkmod.render(report), flush=True)
        _write_results(args, report)
    return 0 if report.passed else 1


def _write_results(args, report):
    """--save and --plot; each file written is said on stderr (unless -q)
    and listed in the result."""
    written = []
    if report.arrays is None:
        if args.save or args.plot:
            note(args, "rvne check: nothing streamed, so no --save/--plot file was written")
        return written
    if args.save:
        results.save_npz(report, args.save)
        note(args, f"rvne: wrote {args.save} (frames, device logits, float64 reference, bounds)")
        written.append(args.save)
    if args.plot:
        results.plot_png(report, args.plot)
        note(args, f"rvne: wrote {args.plot} (logits and error over its bound, per class)")
        written.append(args.plot)
    return written
