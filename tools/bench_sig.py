#!/usr/bin/env python3
"""Instructions to check a signed model on the emulated LX6 core (issue 33):
rvne_sig_check (docs/format.md "Signed models", rules S1-S5: SHA-256 of the
payload, the Secure Boot v2 block, RSA-3072 PSS verification) over Mbed TLS
built from Debian's source package with the board's compiler (clang/llc-22
for -mcpu=esp32), run on QEMU's lx60 de233_fpu under -icount shift=0
(firmware/ports/lx6/bench/sig_verify.c, `make lx6-bench-sig`).

The models: rvne's default head (41,244-byte FP32 blob) and a larger one,
each signed by a fresh RSA-3072 key (`espsecure generate-signing-key
--version 2`, `rvne sign`). Printed per model: the check's instructions,
the SHA-256 of the payload alone (the baseline measured in the same run),
and the rest (the block, the RSA verification), with instructions per
payload byte. The run also checks the model with one byte flipped: the
check must refuse it (else exit 1).

    python tools/bench_sig.py [--json]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_icount import BenchError, Tree, qemu  # noqa: E402
from rvne.io import signed, upstream_init  # noqa: E402
from rvne.model.contract import Dims  # noqa: E402

CALIB = re.compile(r"^calib loop_insns=(\d+) loop_ticks=(\d+)$", re.M)
CHECK = re.compile(r"^check bytes=(\d+) rc=(\w+) ticks=(\d+)$", re.M)
SHA = re.compile(r"^sha256 bytes=(\d+) ticks=(\d+)$", re.M)
TAMPERED = re.compile(r"^tampered rc=(\w+)$", re.M)
# (name, dims): the default head, and one twice as wide (sig_verify.c reads up to 96 KiB).
MODELS = (("default head 16,4,1,32,2,4", None), ("32,4,1,32,2,4", Dims(32, 4, 1, 32, 2, 4)))


def build() -> str:
    tree = Tree.current()
    elf = os.path.join(tree.build, "lx6", "bench", "sig_verify.elf")
    done = subprocess.run(tree.make("lx6-bench-sig"), capture_output=True, text=True)
    if done.returncode != 0 or not os.path.isfile(elf):
        raise BenchError(f"`make lx6-bench-sig` failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    return elf


def measure(elf, model: bytes, key_digest: bytes, workdir: Path) -> dict:
    """sig_verify.elf's counts for `model` signed by the key of `key_digest`."""
    (workdir / "sig_model.bin").write_bytes(model)
    (workdir / "sig_key.bin").write_bytes(key_digest)
    cmd = [qemu.QEMU, "-M", "lx60", "-cpu", "de233_fpu", "-semihosting", "-nographic", "-monitor", "none",
           "-serial", "none", "-icount", "shift=0", "-kernel", elf]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=workdir)
    text = done.stdout
    cal, chk, sha, tam = CALIB.search(text), CHECK.search(text), SHA.search(text), TAMPERED.search(text)
    if done.returncode != 0 or not (cal and chk and sha and tam):
        raise BenchError(f"sig_verify exited {done.returncode}: {text.strip()[-300:]!r}")
    per_tick = int(cal.group(1)) / int(cal.group(2))
    check, sha_insns = int(chk.group(3)) * per_tick, int(sha.group(2)) * per_tick
    return {"bytes": int(chk.group(1)), "rc": chk.group(2), "payload": int(sha.group(1)),
            "check": round(check), "sha256": round(sha_insns), "rest": round(check - sha_insns),
            "tampered_rc": tam.group(1)}


def run() -> list:
    elf = build()
    out = []
    with tempfile.TemporaryDirectory(prefix="rvne-bench-sig-") as tmp:
        tmp = Path(tmp)
        key = tmp / "key.pem"
        signed.espsecure("generate-signing-key", "--version", "2", "--scheme", "rsa3072", key)
        digest = bytes.fromhex(signed.key_digest(key))
        for name, dims in MODELS:
            blob = upstream_init.init_blob() if dims is None else upstream_init.init_blob(dims=dims)
            r = measure(elf, signed.sign_model(blob, 1, [key]), digest, tmp)
            out.append({"model": name, "blob": len(blob), **r})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        rows = run()
    except BenchError as exc:
        print(f"bench_sig: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print("signed-model check on the emulated LX6 (QEMU lx60 de233_fpu, -icount shift=0), Mbed TLS "
              "(Debian's source) over rvne_sig_check; instructions")
        for r in rows:
            print(f"  {r['model']}: blob {r['blob']} B, signed {r['bytes']} B, rc={r['rc']}: check "
                  f"{r['check']:,} = SHA-256 of {r['payload']:,} B {r['sha256']:,} "
                  f"({r['sha256'] / r['payload']:.1f}/byte, the baseline) + block and RSA-3072 {r['rest']:,} "
                  f"({r['check'] / r['sha256']:.2f}x the hash alone); one byte flipped: {r['tampered_rc']}")
    bad = [r for r in rows if r["rc"] != "OK" or r["tampered_rc"] == "OK"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
