"""Keys, signed models and a signed-policy virtual device for the signed
model tests (tests/test_update_signed.py) and tools/powerloss.py --signed.
Keys come from `espsecure generate-signing-key --version 2 --scheme
rsa3072`, made fresh in a temp directory (no key is committed); the
device is `make posix-signed` with their digests as the build option."""

import base64
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from rvne.errors import ProtocolError
from rvne.io import blob, signed
from rvne.io.signed import espsecure, key_digest, sign_model
from rvne.model import verdict

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

    def make(self, *goals, variables=()):
        """`make GOALS` of this checkout's firmware into this setup's own
        build directory, trusting k1-k3 with k3 revoked."""
        trusted = ",".join(self.digests[n] for n in ("k1", "k2", "k3"))
        cmd = ["make", "-C", str(ROOT / "firmware"), "-j2", f"BUILD={self.exe.parents[1]}",
               f"PYTHON={sys.executable}", f"RVNE_TRUSTED_KEYS={trusted}",
               f"RVNE_REVOKED_KEYS={self.digests['k3']}", *variables, *goals]
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, (done.stderr or done.stdout)[-2000:]

    def board_images(self):
        """(production, power-cut) flash images of the lx6 board built with
        the signed policy (`make lx6 lx6-cut LX6_SIGNED=1`)."""
        self.make("lx6", "lx6-cut", variables=("LX6_SIGNED=1",))
        out = self.exe.parents[1] / "lx6-signed"
        return out / "flash.img", out / "flash-cut.img"


def make(directory: Path) -> Setup:
    directory = Path(directory)
    keys, digests = {}, {}
    for name in KEYS:
        keys[name] = directory / f"{name}.pem"
        espsecure("generate-signing-key", "--version", "2", "--scheme", "rsa3072", keys[name])
        digests[name] = key_digest(keys[name])
    setup = Setup(keys, digests, directory / "build" / "posix-signed" / "rvne-vdev")
    setup.make("posix-signed")
    return setup


def with_blob_crc(data: bytes) -> bytes:
    """`data` with its blob's CRC made right again after a change."""
    n = 28 + struct.unpack_from("<I", data, 20)[0]
    out = bytearray(data)
    out[n - 4:n] = struct.pack("<I", zlib.crc32(bytes(out[:n - 4])))
    return bytes(out)


def flip(data: bytes, at: int) -> bytes:
    out = bytearray(data)
    out[at] ^= 0x01
    return bytes(out)


def attacks(setup, new, third, new_blob, third_blob):
    """(what, bytes, the named error) of issue 33's attacks, against a device
    serving `new` (version 2, by k2); `third` is a version 3 model by k1."""
    n = len(new_blob)
    pl = signed.payload_len(n)
    other_sector = third[signed.payload_len(len(third_blob)):]
    return [
        ("untrusted key", setup.sign(third_blob, 3, "k4"), "E_UNTRUSTED_KEY"),
        ("revoked key", setup.sign(third_blob, 3, "k3"), "E_REVOKED_KEY"),
        ("unsigned blob", third_blob, "E_UNSIGNED"),
        ("older version by a trusted key", setup.sign(third_blob, 1, "k1"), "E_ROLLBACK"),
        ("a flipped weight byte, CRC fixed", with_blob_crc(flip(new, 24 + 999)), "E_BAD_SIGNATURE"),
        ("a flipped byte in the signature", flip(new, pl + 812 + 100), "E_BAD_SIGNATURE"),
        ("a flipped byte in the version", flip(new, n + 4), "E_BAD_SIGNATURE"),
        ("a flipped byte in the digest field", flip(new, pl + 4), "E_BAD_SIGNATURE"),
        ("a valid signature of another blob", new[:pl] + other_sector, "E_BAD_SIGNATURE"),
        ("the signature sector truncated", new[:-100], "E_BAD_SIGNATURE"),
        ("the signature sector padded", new + b"\xff" * 4096, "E_BAD_SIGNATURE"),
        ("the signature sector gone, trailer kept", new[:pl], "E_BAD_SIGNATURE"),
    ]


def serves(dev, data, version=None, signer=None):
    info = dev.info()
    parsed = signed.check_model(data)
    assert info.loaded and info.crc == parsed.crc_stored and info.blob_len == parsed.header.total_len, info.fields
    x = np.random.default_rng(3).standard_normal((4, parsed.header.input_dim)).astype(np.float32)
    assert verdict.against_blob(dev.run(x), parsed, x, info.window)["ok"]
    if version is not None:
        assert info.fields["version"] == str(version) and info.fields["signer"] == signer
    return info


def send(dev, data, step=9000):
    crc = blob.parse(data, exact_length=False).crc_stored      # the blob's, whatever follows it
    dev.request("UPDATE_BEGIN", len(data), f"{crc:08X}")
    for off in range(0, len(data), step):
        piece = data[off:off + step]
        dev.request("UPDATE_CHUNK", off, f"{zlib.crc32(piece):08X}", base64.b64encode(piece).decode())
    return crc


def refused_at_commit(dev, data, code):
    crc = send(dev, data)
    with pytest.raises(ProtocolError) as exc:
        dev.request("UPDATE_COMMIT", f"{crc:08X}")
    assert exc.value.code == code, str(exc.value)
    assert "old model serves" in str(exc.value) and "\n" not in str(exc.value)
    assert dev.info().fields["refused"] == code
