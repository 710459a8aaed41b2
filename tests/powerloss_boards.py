"""Power cuts during a model update on the emulated boards through their
real flash path: QEMU lx60, both cores (the CFI driver), and the ESP-IDF
app on Espressif's QEMU (`qemu-esp32s3`: esp_partition_erase_range /
esp_partition_write into the emulated SPI flash). Shared by
tests/test_update_powerloss_qemu.py (a reduced set in CI) and
tools/powerloss.py (the full set and its table).

One cut: boot an image serving OLD, start updating it to NEW, and cut:
- "bytes": after `at` bytes of the update's request stream reached the
  board's UART (the production firmware), then SIGKILL QEMU `delay`
  seconds later: mid-line, or while the board erases or programs the chunk
  it just received, or while it commits;
- "erase", "prog", "sel-erase", "sel-prog": inside the board's `at`-th
  flash operation of that kind (the lx60 boards' power-cut build,
  xtensa/board/flash_cut.h; the S3 app's RVNE_FLASH_CUT, on in its QEMU
  configuration, esp32s3/main/flash_cut.h: it halts there and says so;
  then SIGKILL). The control block naming the cut sits in the flash's
  last 4 KiB.
QEMU writes the flash through to the image file at each command, so the
file keeps what the flash held at the cut. Then the same file boots
again: it must serve OLD or NEW (INFO's CRC, the slot's bytes in the file
equal to that blob: never a mix), never nothing, OLD whenever the cut came
before the commit could write its record; and a second update (to a third
model, AGAIN, into the other slot) must succeed. docs/flash-layout.md, "Power-loss
tests on the boards"."""

import base64
import itertools
import socket
import tempfile
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import List

import numpy as np

from rvne.errors import RvneError
from rvne.flash import image as flash_image, slots
from rvne.io import signed
from rvne.io.upstream_init import init_blob
from rvne.link import protocol
from rvne.link.device import Device
from rvne.link.update import update_device
from rvne.model import verdict
from rvne.targets import build, esp32s3_qemu, qemu

ROOT = Path(__file__).resolve().parents[1]
CUT_BLOCK_FROM_END = 0x1000   # the control block: the flash's last 4 KiB (both flash_cut.h)
CUT_MAGIC = b"RVNECUT1"
OP_KINDS = {"erase": 1, "prog": 2, "sel-erase": 3, "sel-prog": 4}
S3 = esp32s3_qemu.NAME
REPLY_TIMEOUT = 60.0          # a chunk's erase + program on a loaded machine
DELAYS = (0.0, 0.002, 0.01, 0.03)   # seconds from the last byte sent to SIGKILL
RUN_FRAMES = 5                # frames run after a restart, judged against the reference
COMMIT_SPAN = 0.04            # the commit line's cuts: killed 0 .. this many seconds after it
# The S3's UART on QEMU moves ~6 kB/s and its commit erases and programs a
# selector sector through ESP-IDF: its switch from OLD to NEW comes later.
COMMIT_SPAN_S3 = 0.4
# The signed lx6 board's commit also checks the model's signature (SHA-256 and
# RSA-3072 on the emulated core, ~32-40 M instructions): it switches later too.
COMMIT_SPAN_SIGNED = 0.6


@dataclass(frozen=True)
class Models:
    old: bytes                # served before the cut
    new: bytes                # the update that is cut
    again: bytes              # the second update, after the restart

    @staticmethod
    def default(target="qemu"):
        """NEW spans more than one erase sector (the lx60's 64 KiB: 72,156
        bytes, two erases and six chunks; the S3's 4 KiB: 6,428 bytes, two
        erases and three chunks, kept short as its UART on QEMU moves only
        ~6 kB/s); OLD and AGAIN are small, so the part of each cut that is
        not the cut update itself stays cheap."""
        new = (16, 2, 1, 16, 1, 4) if target == S3 else (28, 4, 1, 32, 2, 4)
        return Models(init_blob((8, 2, 1, 8, 1, 2), seed=11), init_blob(new, seed=12),
                      init_blob((8, 2, 1, 8, 1, 2), seed=13))

    def crc(self, data):
        """The blob's stored CRC (a signed model carries more after it); needs no instance."""
        n = 28 + int.from_bytes(data[20:24], "little")
        return int.from_bytes(data[n - 4:n], "little")


@dataclass(frozen=True)
class Cut:
    kind: str                 # "bytes" or one of OP_KINDS
    at: int                   # bytes of the stream, or the N-th operation (1-based)
    delay: float = 0.0        # "bytes": seconds before the kill

    def __str__(self):
        return f"{self.kind}:{self.at}" + (f"+{self.delay * 1000:g}ms" if self.kind == "bytes" else "")


@dataclass
class Outcome:
    cut: Cut
    halted: bool              # the cut happened (op cuts: the board reported it)
    committed: bool           # the commit line had been sent in full
    served: str               # "old", "new", "none", or "other:<crc>"
    slot: str = "-"
    seq: str = "-"
    second: bool = False      # the second update succeeded
    problems: List[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self):
        return not self.problems


class Link:
    """The protocol over QEMU's serial socket, raw enough to stop anywhere:
    send part of a line, or read until a reply or the power-cut marker."""

    def __init__(self, url, timeout=REPLY_TIMEOUT):
        host, port = url[len("socket://"):].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        # A cut's partial line leaves at once, not when Nagle sees fit.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = b""
        self.seq = 0
        self.log = []

    def close(self):
        self.sock.close()

    def line(self, cmd, *args) -> bytes:
        self.seq += 1
        return b"\n" + protocol.build_request(self.seq, cmd, *args)

    def send(self, data: bytes):
        self.sock.sendall(data)

    def wait(self, seq):
        """The reply to seq, or "CUT" when the board halted for a cut."""
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\n" in self.buf:
                ln, _, self.buf = self.buf.partition(b"\n")
                if b" CUT " in ln and not ln.startswith(b"<"):
                    return "CUT"
                if ln.startswith(b"<"):
                    r = protocol.parse_reply(ln)
                    if r.seq == seq:
                        return r
                elif ln.strip():
                    self.log.append(ln.decode("utf-8", "replace"))
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no reply to request {seq} in {self.timeout:g} s (log: {self.log[-3:]})")
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("QEMU closed the serial socket")
            self.buf += chunk

    def request(self, cmd, *args):
        self.send(self.line(cmd, *args))
        return self.wait(self.seq)


def update_lines(data, chunk):
    """The requests (command and arguments) of updating to `data` after
    UPDATE_BEGIN, chunk by chunk, then the commit."""
    crc = Models.crc(None, data)
    out = []
    for off in range(0, len(data), chunk):
        piece = data[off:off + chunk]
        out.append(("UPDATE_CHUNK", off, f"{zlib.crc32(piece):08X}", base64.b64encode(piece).decode()))
    out.append(("UPDATE_COMMIT", f"{crc:08X}"))
    return out


def stream_length(models: Models, chunk: int) -> int:
    """Bytes of the whole request stream of an OLD -> NEW update (SEQ widths
    as a fresh link numbers them)."""
    seq = 1
    total = len(b"\n" + protocol.build_request(seq, "UPDATE_BEGIN", len(models.new), f"{models.crc(models.new):08X}"))
    for args in update_lines(models.new, chunk):
        seq += 1
        total += len(b"\n" + protocol.build_request(seq, *args))
    return total


def op_counts(models: Models, chunk: int, sector: int) -> dict:
    """How many flash operations of each kind an OLD -> NEW update makes
    (rvne_update.c: one erase per `sector` ahead of the data, one program
    per chunk (a multiple of the program unit), one erase and one program
    of the selector copy)."""
    n = len(models.new)
    return {"erase": -(-n // sector), "prog": -(-n // chunk), "sel-erase": 1, "sel-prog": 1}


class Rig:
    """Images and runs for one board ("qemu", "qemu-lx106" or "qemu-esp32s3")."""

    def __init__(self, target, models: Models = None, workdir=None, images=None, commit_span=None):
        self.target = target
        self.s3 = target == S3
        self.board = None if self.s3 else qemu.BOARDS[target]
        self.name = "esp32s3" if self.s3 else self.board.core
        self.sector = 0x1000 if self.s3 else 0x10000      # the flash's erase sector
        # commit_span: a board whose commit takes longer (a signed model's check) cuts later after it.
        self.commit_span = commit_span or (COMMIT_SPAN_S3 if self.s3 else COMMIT_SPAN)
        self.models = models or Models.default(target)
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="rvne-powerloss-"))
        # images: (production, power-cut) flash images of another build (the signed lx6 board's).
        prod, cut = images or self._images()
        self.base = {"bytes": flash_image.with_model(prod.read_bytes(), self.models.old),
                     "ops": flash_image.with_model(cut.read_bytes(), self.models.old)}
        self.cut_block = len(self.base["ops"]) - CUT_BLOCK_FROM_END
        self.layout = slots.layout(flash_image.read_table(self.base["bytes"]))
        self.chunk = None
        self._serial = itertools.count()      # image names unique even for a repeated cut

    def _images(self):
        if self.s3:
            # One image: the cut points are in the QEMU configuration, inert
            # while the control block is erased.
            prod = esp32s3_qemu.ensure_built()
            return prod, prod
        prod = qemu.ensure_built(self.board)
        cut = ROOT / "build" / self.board.core / "flash-cut.img"
        sources = [ROOT / s for s in self.board.sources]
        stale = lambda: build.is_stale(cut, sources)   # noqa: E731
        if stale():
            build.run_make(ROOT, f"{self.board.core}-cut", cut, stale, f"the {self.board.core} power-cut build", 900)
        return prod, cut

    # -- one boot ---------------------------------------------------------------------
    def boot(self, img):
        if self.s3:
            return esp32s3_qemu.start(image=img, persist=True, start_timeout=60)
        return qemu.start(image=img, persist=True, board=self.target, start_timeout=60)

    def served(self, img, dev):
        """(name, slot, seq, problems) of what the board serves: INFO's CRC
        names the blob, the slot INFO names must hold exactly that blob in
        the image file, and a RUN of a few frames must agree with that
        blob's reference (the verdict of `rvne check`)."""
        info = dev.info()
        f = info.fields
        slot, seq = f.get("slot", "-"), f.get("seq", "-")
        if not info.loaded:
            return "none", slot, seq, [f"serves no model: reason={info.reason}"]
        name = {self.models.crc(getattr(self.models, k)): k for k in ("old", "new", "again")}.get(info.crc)
        if name is None:
            return f"other:{info.crc:08X}", slot, seq, [f"serves crc {info.crc:08X}"]
        blob = getattr(self.models, name)
        problems = []
        if f.get("policy") == "signed" and f.get("signer", "-") == "-":
            problems.append(f"serves the {name} model without a verified signature")
        part = self.layout.slots[0 if slot == "a" else 1]
        if Path(img).read_bytes()[part.offset:part.offset + len(blob)] != blob:
            problems.append(f"slot {slot} in the image file differs from the {name} blob it serves")
        parsed = signed.check_model(blob)       # a blob, or a signed model around one
        x = np.random.default_rng(5).standard_normal((RUN_FRAMES, parsed.header.input_dim)).astype(np.float32)
        if not verdict.against_blob(dev.run(x), parsed, x, info.window)["ok"]:
            problems.append(f"its logits disagree with the {name} blob's reference")
        return name, slot, seq, problems

    def update(self, dev, data):
        """A whole `rvne update` of `data`; None on success, else why not."""
        try:
            update_device(dev, data)
        except RvneError as exc:
            return str(exc)
        return None

    # -- one cut ----------------------------------------------------------------------
    def run(self, cut: Cut) -> Outcome:
        t0 = time.monotonic()
        img = self.workdir / f"{self.name}-{cut.kind}-{cut.at}-{int(cut.delay * 1000)}-{next(self._serial)}.img"
        base = bytearray(self.base["bytes" if cut.kind == "bytes" else "ops"])
        if cut.kind != "bytes":
            base[self.cut_block:self.cut_block + 16] = (CUT_MAGIC + OP_KINDS[cut.kind].to_bytes(4, "little")
                                              + cut.at.to_bytes(4, "little"))
        img.write_bytes(bytes(base))
        out = Outcome(cut, halted=False, committed=False, served="none")
        try:
            self._cut(img, cut, out)
            self._after(img, out)
        except (OSError, TimeoutError, ConnectionError, RvneError) as exc:
            out.problems.append(f"{type(exc).__name__}: {exc}")
        finally:
            img.unlink(missing_ok=True)
        out.seconds = time.monotonic() - t0
        return out

    def _cut(self, img, cut, out):
        tg = self.boot(img)
        link = Link(tg.url)
        try:
            new = self.models.new
            begin = link.line("UPDATE_BEGIN", len(new), f"{self.models.crc(new):08X}")
            if cut.kind == "bytes" and cut.at <= len(begin):
                link.send(begin[:cut.at])
                time.sleep(cut.delay)
                out.halted = True
                return
            link.send(begin)
            r = link.wait(link.seq)
            if r == "CUT" or not r.ok:
                out.problems.append(f"UPDATE_BEGIN: {getattr(r, 'code', r)}")
                return
            sent = len(begin)
            lines = update_lines(new, int(r.field("chunk")))
            for i, args in enumerate(lines):
                ln = link.line(*args)
                last = i == len(lines) - 1
                if cut.kind == "bytes" and sent + len(ln) >= cut.at:
                    link.send(ln[:cut.at - sent])
                    out.committed = last and cut.at - sent == len(ln)
                    time.sleep(cut.delay)
                    out.halted = True
                    return
                link.send(ln)
                out.committed = last
                r = link.wait(link.seq)
                if r == "CUT":
                    out.halted = True
                    return
                if not r.ok:
                    out.problems.append(f"{args[0]}: {r.code} {r.message}")
                    return
                sent += len(ln)
            if cut.kind == "bytes":
                out.problems.append(f"cut at byte {cut.at} lies past the stream ({sent} bytes)")
            else:
                out.problems.append(f"the board never halted for {cut}: the update completed")
        finally:
            # The cut: no goodbye, no flush beyond what QEMU already wrote.
            tg.proc.kill()
            tg.proc.wait()
            link.close()
            tg.stop()

    def _after(self, img, out):
        if out.cut.kind != "bytes":
            # The power-cut build boots as the firmware does without its block.
            with open(img, "r+b") as fh:
                fh.seek(self.cut_block)
                fh.write(b"\xff" * 16)
        tg = self.boot(img)
        dev = Device(tg.url, timeout=REPLY_TIMEOUT)
        try:
            out.served, out.slot, out.seq, problems = self.served(img, dev)
            out.problems += problems
            must_be_old = not out.committed
            if out.served == "new" and must_be_old:
                out.problems.append("serves NEW although the cut came before the commit was sent")
            if out.served not in ("old", "new"):
                if not out.problems:
                    out.problems.append(f"serves {out.served} after the cut")
                return
            why = self.update(dev, self.models.again)
            if why:
                out.problems.append(f"second update failed: {why}")
                return
            name, slot, _, problems = self.served(img, dev)
            out.second = name == "again" and slot != out.slot and not problems
            if not out.second:
                out.problems.append(f"after the second update serves {name}: {problems}")
        finally:
            dev.close()
            tg.stop()


def run_cuts(rig: Rig, cuts, workers=2, progress=None) -> List[Outcome]:
    """Every cut, `workers` boards at a time (QEMU processes: one core each)."""
    outcomes = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for out in pool.map(rig.run, cuts):
            outcomes.append(out)
            if progress:
                progress(out)
    return outcomes


def plan(rig: Rig, n_bytes: int, op_repeat: int = 1) -> List[Cut]:
    """n_bytes byte cuts: most spread evenly over the update's request
    stream (kill delays cycling through DELAYS), an eighth (at least four)
    with the commit line sent whole and killed 0 to COMMIT_SPAN seconds
    later, where the outcome turns from OLD to NEW; then every flash
    operation of the update cut inside, op_repeat times each."""
    chunk = rig_chunk(rig)
    total = stream_length(rig.models, chunk)
    n_commit = min(n_bytes, max(4, n_bytes // 8))
    spread = n_bytes - n_commit
    cuts = [Cut("bytes", max(1, round(total * (i + 1) / (spread + 1))), DELAYS[i % len(DELAYS)])
            for i in range(spread)]
    cuts += [Cut("bytes", total, round(rig.commit_span * i / max(1, n_commit - 1), 4)) for i in range(n_commit)]
    for kind, n in op_counts(rig.models, chunk, rig.sector).items():
        for at in range(1, n + 1):
            cuts += [Cut(kind, at)] * op_repeat
    return cuts


def rig_chunk(rig: Rig) -> int:
    """The chunk size the board offers (asked once, on a throwaway boot)."""
    if rig.chunk is None:
        img = rig.workdir / "probe.img"
        img.write_bytes(rig.base["bytes"])
        tg = rig.boot(img)
        link = Link(tg.url)
        try:
            new = rig.models.new
            r = link.request("UPDATE_BEGIN", len(new), f"{rig.models.crc(new):08X}")
            rig.chunk = int(r.field("chunk"))
        finally:
            link.close()
            tg.stop()
            img.unlink(missing_ok=True)
    return rig.chunk


def table(outcomes: List[Outcome]) -> str:
    """Per cut kind: cuts, served old / new / none-or-mix, second update
    ok, problems; then the total."""
    kinds = ["bytes", *OP_KINDS]
    rows = [("cut", "cuts", "old", "new", "none/mix", "2nd update ok", "problems", "s/cut")]
    commit = [o for o in outcomes if o.cut.kind == "bytes" and o.committed]
    tot = [0, 0, 0, 0, 0, 0, 0.0]
    for k in kinds:
        sel = [o for o in outcomes if o.cut.kind == k]
        if not sel:
            continue
        v = [len(sel), sum(o.served == "old" for o in sel), sum(o.served == "new" for o in sel),
             sum(o.served not in ("old", "new") for o in sel), sum(o.second for o in sel),
             sum(not o.ok for o in sel), sum(o.seconds for o in sel)]
        tot = [a + b for a, b in zip(tot, v)]
        rows.append((k, *map(str, v[:6]), f"{v[6] / v[0]:.2f}"))
    rows.append(("all", *map(str, tot[:6]), f"{tot[6] / max(1, tot[0]):.2f}"))
    if commit:
        rows.append(("(bytes: commit sent)", str(len(commit)), str(sum(o.served == "old" for o in commit)),
                     str(sum(o.served == "new" for o in commit)),
                     str(sum(o.served not in ("old", "new") for o in commit)), str(sum(o.second for o in commit)),
                     str(sum(not o.ok for o in commit)), f"{sum(o.seconds for o in commit) / len(commit):.2f}"))
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w[i]) if i else c.ljust(w[i]) for i, c in enumerate(r)) for r in rows)


def report(target, n_cuts=200, workers=2, verbose=False, say=print, rig=None):
    """tools/powerloss.py --target qemu|qemu-lx106|qemu-esp32s3: n_cuts cuts on one board
    (every flash operation once, the rest by bytes), a line per cut when
    verbose or broken, the table; returns the outcomes. `rig`: another
    board build and models (--signed: the signed lx6 board, signed models)."""
    rig = rig or Rig(target)
    chunk = rig_chunk(rig)
    n_ops = sum(op_counts(rig.models, chunk, rig.sector).values())
    cuts = plan(rig, max(4, n_cuts - n_ops))
    m = rig.models
    say(f"powerloss: {target}: {len(cuts)} cuts over an update of {len(m.new)} bytes "
        f"({stream_length(m, chunk)} bytes on the line; flash operations {op_counts(m, chunk, rig.sector)}) from "
        f"{len(m.old)} bytes, second update {len(m.again)} bytes, {workers} boards at a time")
    t0 = time.monotonic()

    def show(o):
        if verbose or not o.ok:
            say(f"  {str(o.cut):<22} serves {o.served:<5} slot {o.slot} seq {o.seq:<3} second update "
                f"{'ok' if o.second else 'FAILED'}  {o.seconds:.2f} s  {'; '.join(o.problems)}")

    outcomes = run_cuts(rig, cuts, workers=workers, progress=show)
    wall = time.monotonic() - t0
    say(table(outcomes))
    bad = sum(not o.ok for o in outcomes)
    say(f"{target}: {len(outcomes)} cuts in {wall:.0f} s ({wall / len(outcomes):.2f} s per cut, {workers} at a "
        f"time); " + ("PASS: every cut served the old or the new model, whole, and took a second update"
                      if bad == 0 else f"FAIL: {bad} cuts broke a rule"))
    return outcomes
