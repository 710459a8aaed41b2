#!/usr/bin/env python3
"""Power cuts during `rvne update` (docs/flash-layout.md, "Slots and
selector"): the device is killed at many points spread over an update and
restarted from the same flash; each time it must serve the old model or the
new one (CRC-valid, INFO and a RUN that agrees with that model's
reference), never none and never a mix, and a second update must succeed.

    python tools/powerloss.py [--target sim] [--cuts N] [--erase-size E] [--json]
    python tools/powerloss.py --target qemu|qemu-lx106|qemu-esp32s3 [--cuts N] [--json]

Cut points on the virtual device (`rvne-vdev --flash`, RVNE_VDEV_CUT):
  rx:N         SIGKILL after the device received N bytes of the update's
               lines (spread evenly over all of them: mid-line, mid-chunk,
               around BEGIN and COMMIT)
  erase:N      inside the N-th erase of the slot (half of it erased)
  prog:N       inside the N-th program of the slot (half of it written)
  sel-erase:1  inside the selector copy's erase
  sel-prog:1   inside the selector record's program (a torn record)
On the emulated boards (QEMU lx60, their CFI flash path; the ESP-IDF app
on Espressif's QEMU, its esp_partition_* path) the same rules, cut by
bytes sent and inside every flash operation by the boards' cut points:
tests/powerloss_boards.py, docs/flash-layout.md ("Power-loss tests on the
boards").
Prints one row per cut and a summary table; exit 1 if any cut broke a rule.
tests/test_update_powerloss_sim.py runs a reduced set of the same cuts.
"""

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "host"))

import numpy as np  # noqa: E402

from rvne.errors import RvneError  # noqa: E402
from rvne.flash import image as flash_image, partition  # noqa: E402
from rvne.io import signed  # noqa: E402
from rvne.io import upstream_init  # noqa: E402
from rvne.link.device import Device  # noqa: E402
from rvne.link.update import update_device  # noqa: E402
from rvne.model import verdict  # noqa: E402
from rvne.targets import sim  # noqa: E402

OLD_SEED, NEW_SEED, THIRD_SEED = upstream_init.SEED, 11, 23
FRAMES = 5


@dataclass
class Cut:
    kind: str
    n: int
    died: bool = False          # the cut point was reached (the device was killed)
    served: str = ""            # "old", "new", or what broke the rule
    second_update: bool = False
    ok: bool = False
    seconds: float = 0.0


def blobs():
    old = upstream_init.init_blob(seed=OLD_SEED)
    new = upstream_init.init_blob(seed=NEW_SEED)
    third = upstream_init.init_blob(seed=THIRD_SEED)
    return old, new, third


def fresh_image(path: Path, old: bytes):
    """A flash image of the project's layout with `old` flashed (slot A and
    a selector naming it), as `rvne flash --image` leaves it."""
    table = partition.read_csv(ROOT / "partitions.csv")
    path.write_bytes(flash_image.with_model(flash_image.build_image(b"", b"", table), old))


class Counter:
    """Counts what the host writes to the device during an update; `ends`:
    the byte count at the end of each request line."""

    def __init__(self, dev):
        self.n = 0
        self.ends = []
        self._write = dev.write_raw
        dev.write_raw = self.write

    def write(self, data):
        self.n += len(data)
        self.ends.append(self.n)
        return self._write(data)


def rx_lines(old, new, erase_size, exe=None):
    """(bytes the device receives during one whole update, the count at the
    end of each line): rx cuts are spread over the first, and made exactly
    at each of the second (a line received whole, its reply never sent)."""
    with tempfile.TemporaryDirectory(prefix="rvne-powerloss-") as tmp:
        img = Path(tmp) / "flash.img"
        fresh_image(img, old)
        with sim.start(None, image=img, erase_size=erase_size, exe=exe) as t, Device(t.url, timeout=5) as dev:
            c = Counter(dev)
            update_device(dev, new)
            return c.n, c.ends


def flash_ops(old, new, erase_size, exe=None):
    """(slot erases, slot programs) of one update: each is a cut point."""
    n_erase = -(-len(new) // erase_size)
    with tempfile.TemporaryDirectory(prefix="rvne-powerloss-") as tmp:
        img = Path(tmp) / "flash.img"
        fresh_image(img, old)
        # Count programs by cutting at ever later ones until one is not reached.
        n_prog = 0
        for n in range(1, 64):
            fresh_image(img, old)
            if not _update_dies(img, new, erase_size, f"prog:{n}", exe):
                break
            n_prog = n
    return n_erase, n_prog


def _update_dies(img, new, erase_size, cut, exe=None) -> bool:
    t = sim.start(None, image=img, erase_size=erase_size, env={"RVNE_VDEV_CUT": cut}, exe=exe)
    try:
        with Device(t.url, timeout=1.0, retries=0) as dev:
            try:
                update_device(dev, new)
            except RvneError:
                pass
        # A killed device is gone at once; give its exit a moment to show.
        for _ in range(50):
            if not t.alive:
                return True
            time.sleep(0.01)
        return False
    finally:
        t.stop()


def plan(n_cuts, old, new, erase_size, exe=None):
    """Cut points: every erase, every program, the selector's erase and
    program, and the rest spread over the bytes received."""
    n_erase, n_prog = flash_ops(old, new, erase_size, exe)
    cuts = [Cut("erase", n) for n in range(1, n_erase + 1)]
    cuts += [Cut("prog", n) for n in range(1, n_prog + 1)]
    cuts += [Cut("sel-erase", 1), Cut("sel-prog", 1)]
    total, ends = rx_lines(old, new, erase_size, exe)
    cuts += [Cut("rx", n) for n in ends]
    n_rx = max(n_cuts - len(cuts), 1)
    cuts += [Cut("rx", max(1, round(total * (i + 0.5) / n_rx))) for i in range(n_rx)]
    return cuts, total


def _served(dev, models):
    """'old' / 'new' when the device serves that model whole, else why not."""
    info = dev.info()
    if not info.loaded:
        return f"no model ({info.reason})"
    if info.fields.get("policy") == "signed" and info.fields.get("signer", "-") == "-":
        return "a model whose signature was not verified"
    for name, data in models.items():
        parsed = signed.check_model(data)          # a blob, or a signed model around one
        if info.crc == parsed.crc_stored and info.blob_len == parsed.header.total_len:
            x = np.random.default_rng(5).standard_normal((FRAMES, parsed.header.input_dim)).astype(np.float32)
            got = dev.run(x)
            v = verdict.against_blob(got, parsed, x, info.window)
            return name if v["ok"] else f"{name} by CRC but its logits disagree"
    return f"an unknown model (crc={info.crc:08X})"


def run_cut(cut: Cut, old, new, third, erase_size, tmp: Path, exe=None) -> Cut:
    t0 = time.monotonic()
    img = tmp / f"cut-{cut.kind}-{cut.n}.img"
    fresh_image(img, old)
    cut.died = _update_dies(img, new, erase_size, f"{cut.kind}:{cut.n}", exe)
    # Power back on: the same flash, no cut.
    with sim.start(None, image=img, erase_size=erase_size, exe=exe) as t, Device(t.url, timeout=5) as dev:
        cut.served = _served(dev, {"old": old, "new": new})
        try:
            res = update_device(dev, third)
            cut.second_update = res.info.crc == signed.check_model(third).crc_stored
        except RvneError as exc:
            cut.second_update = False
            cut.served += f"; second update failed: {exc}"
    img.unlink()
    cut.ok = cut.served in ("old", "new") and cut.second_update and (cut.died or cut.served == "new")
    cut.seconds = time.monotonic() - t0
    return cut


def run(n_cuts=200, erase_size=4096, say=print, models=None, exe=None):
    """`models`: (old, new, third) bytes (default blobs()); `exe`: the
    rvne-vdev build to cut (default the sim target's; the signed one with
    --signed)."""
    old, new, third = models or blobs()
    cuts, total = plan(n_cuts, old, new, erase_size, exe)
    say(f"powerloss: {len(cuts)} cuts over an update of {len(new)} bytes ({total} bytes on the line), "
        f"erase size {erase_size}")
    with tempfile.TemporaryDirectory(prefix="rvne-powerloss-") as tmp:
        for cut in cuts:
            run_cut(cut, old, new, third, erase_size, Path(tmp), exe)
            say(f"  {cut.kind:>9}:{cut.n:<6} killed={'yes' if cut.died else 'no ':3}  serves {cut.served:<4}  "
                f"second update {'ok' if cut.second_update else 'FAILED'}  {'ok' if cut.ok else 'BROKEN'}")
    return cuts, total


def signed_rig(directory: Path, say=print):
    """((old, new, third) signed as versions 1, 2, 3, the signed-policy
    rvne-vdev trusting their key): tests/signed_setup.py."""
    sys.path.insert(0, str(ROOT / "tests"))
    import signed_setup

    say("powerloss: fresh RSA-3072 keys (espsecure) and `make posix-signed` with their digests")
    rig = signed_setup.make(directory)
    return tuple(rig.sign(b, v, "k1") for b, v in zip(blobs(), (1, 2, 3))), rig.exe


def signed_board_rig(directory: Path, pb, say=print):
    """The lx6 board built with the signed policy (tests/signed_setup.py) and
    powerloss_boards' models signed as versions 1, 2 and 3 by a trusted key."""
    sys.path.insert(0, str(ROOT / "tests"))
    import signed_setup

    say("powerloss: fresh RSA-3072 keys (espsecure) and the lx6 board with the signed policy")
    setup = signed_setup.make(directory)
    m = pb.Models.default("qemu")
    models = pb.Models(*(setup.sign(b, v, "k1") for b, v in ((m.old, 1), (m.new, 2), (m.again, 3))))
    return pb.Rig("qemu", models, workdir=directory, images=setup.board_images(), commit_span=pb.COMMIT_SPAN_SIGNED)


def table(cuts):
    """Per kind: cuts, killed, serving old, serving new, broken."""
    rows = {}
    for c in cuts:
        r = rows.setdefault(c.kind, {"cuts": 0, "killed": 0, "old": 0, "new": 0, "broken": 0})
        r["cuts"] += 1
        r["killed"] += c.died
        r["old"] += c.served == "old"
        r["new"] += c.served == "new"
        r["broken"] += not c.ok
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=["sim", "qemu", "qemu-lx106", "qemu-esp32s3"], default="sim",
                    help="the device to cut: sim (the virtual device), qemu, qemu-lx106 or qemu-esp32s3 (the emulated boards)")
    ap.add_argument("--cuts", type=int, default=200, help="cut points (default 200)")
    ap.add_argument("--erase-size", type=int, default=4096,
                    help="the flash's sector: 4096 (ESP32-S3, default) or 65536 (the lx60's CFI flash)")
    ap.add_argument("--json", action="store_true", help="one JSON object: every cut and the table")
    ap.add_argument("--workers", type=int, default=2, help="boards: how many run at once (default 2)")
    ap.add_argument("--signed", action="store_true",
                    help="sim or qemu: cut a signed update (fresh espsecure keys, `make posix-signed` or the lx6 "
                         "board with LX6_SIGNED=1 trusting them; the models signed as versions 1, 2 and 3)")
    args = ap.parse_args(argv)
    if args.target != "sim":
        return _boards(args)
    say = (lambda s: None) if args.json else print
    with tempfile.TemporaryDirectory(prefix="rvne-powerloss-keys-") as keys:
        models = exe = None
        if args.signed:
            models, exe = signed_rig(Path(keys), say)
        cuts, total = run(args.cuts, args.erase_size, say=say, models=models, exe=exe)
    rows = table(cuts)
    if args.json:
        json.dump({"cuts": [asdict(c) for c in cuts], "table": rows, "rx_bytes": total, "signed": args.signed},
                  sys.stdout, indent=2)
        print()
    else:
        print(f"\n{'kind':>9} {'cuts':>5} {'killed':>7} {'old':>5} {'new':>5} {'broken':>7}")
        for kind, r in rows.items():
            print(f"{kind:>9} {r['cuts']:>5} {r['killed']:>7} {r['old']:>5} {r['new']:>5} {r['broken']:>7}")
        tot = {k: sum(r[k] for r in rows.values()) for k in ("cuts", "killed", "old", "new", "broken")}
        print(f"{'all':>9} {tot['cuts']:>5} {tot['killed']:>7} {tot['old']:>5} {tot['new']:>5} {tot['broken']:>7}")
        print("PASS: every cut served the old or the new model, whole, and took a second update"
              if tot["broken"] == 0 else "FAIL")
    return 0 if all(c.ok for c in cuts) else 1


def _boards(args):
    sys.path.insert(0, str(ROOT / "tests"))
    import powerloss_boards as pb

    say = (lambda s: None) if args.json else (lambda s: print(s, flush=True))
    tmp = tempfile.TemporaryDirectory(prefix="rvne-powerloss-signed-")
    try:
        rig = None
        if args.signed:
            if args.target != "qemu":
                print(f"powerloss: --signed runs on sim and qemu (the lx6 board), not {args.target}", file=sys.stderr)
                return 2
            rig = signed_board_rig(Path(tmp.name), pb, say)
        outcomes = pb.report(args.target, args.cuts, args.workers, verbose=True, say=say, rig=rig)
    except RvneError as exc:
        print(f"powerloss: {args.target}: {exc}", file=sys.stderr)
        return 1
    finally:
        tmp.cleanup()
    if args.json:
        json.dump({"target": args.target, "signed": args.signed, "cuts": [{"kind": o.cut.kind, "at": o.cut.at, "delay": o.cut.delay,
                                                    "served": o.served, "slot": o.slot, "seq": o.seq,
                                                    "second_update": o.second, "ok": o.ok,
                                                    "problems": o.problems, "seconds": round(o.seconds, 3)}
                                                   for o in outcomes]}, sys.stdout, indent=2)
        print()
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
