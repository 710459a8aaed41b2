"""Keys, signed models and a signed-policy virtual device for the signed
model tests (tests/test_update_signed.py) and tools/powerloss.py --signed.
Keys come from `espsecure generate-signing-key --version 2 --scheme
rsa3072`, made fresh in a temp directory (no key is committed); the
device is `make posix-signed` with their digests as the build option."""

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rvne.io.signed import espsecure, key_digest, sign_model

ROOT = Path(__file__).resolve().parents[1]
# trusted: k1, k2 and k3, k3 revoked since; k4 never trusted.
KEYS = ("k1", "k2", "k3", "k4")


@dataclass
class Setup:
    keys: dict                  # name -> PEM path
    digests: dict               # name -> hex digest
    exe: Path                   # build/posix-signed/rvne-vdev of that build

    def sign(self, data: bytes, version: int, *names) -> bytes:
        return sign_model(data, version, [self.keys[n] for n in names or ("k1",)])


def make(directory: Path) -> Setup:
    directory = Path(directory)
    keys, digests = {}, {}
    for name in KEYS:
        keys[name] = directory / f"{name}.pem"
        espsecure("generate-signing-key", "--version", "2", "--scheme", "rsa3072", keys[name])
        digests[name] = key_digest(keys[name])
    build = directory / "build"
    trusted = ",".join(digests[n] for n in ("k1", "k2", "k3"))
    cmd = ["make", "-C", str(ROOT / "firmware"), "-j2", f"BUILD={build}", f"PYTHON={sys.executable}",
           f"RVNE_TRUSTED_KEYS={trusted}", f"RVNE_REVOKED_KEYS={digests['k3']}", "posix-signed"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return Setup(keys, digests, build / "posix-signed" / "rvne-vdev")
