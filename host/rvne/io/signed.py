"""Signed models (docs/format.md, "Signed models"): an RVNE blob, byte for
byte, then a 16-byte trailer carrying the model's version, 0xFF to a 4 KiB
boundary, then the signature sector `espsecure sign_data --version 2`
appends (up to three 1,216-byte Secure Boot v2 blocks, RSA-3072 PSS over
SHA-256 of everything before the sector).

Signing is espsecure's (rvne.commands.sign runs it); this module lays the
bytes out, reads them back and checks a signature with the `cryptography`
package espsecure itself uses. The firmware's twin is
firmware/core/src/rvne_sig.c."""

import hashlib
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from dataclasses import dataclass
from typing import List, Optional

from ..errors import (BadSignatureError, RevokedKeyError, RollbackError, SignatureError, UnsignedError,
                      UntrustedKeyError)
from . import blob as blobmod

TRAILER_MAGIC = b"RVS1"
TRAILER_LEN = 16
SECTOR = 4096
BLOCK_LEN = 1216
MAX_BLOCKS = 3
BLOCK_MAGIC, BLOCK_RSA = 0xE7, 0x02
KEY = slice(36, 812)           # n, e, rinv, m': what a key digest covers (espsecure digest_sbv2_public_key)


def payload_len(blob_len: int) -> int:
    """Bytes the signature covers: the blob, the trailer, 0xFF to 4 KiB."""
    return -(-(blob_len + TRAILER_LEN) // SECTOR) * SECTOR


def total_len(blob_len: int) -> int:
    return payload_len(blob_len) + SECTOR


def payload(blob_bytes: bytes, version: int) -> bytes:
    """What espsecure signs: the blob, its trailer, 0xFF to the sector."""
    if not 1 <= int(version) <= 0xFFFFFFFF:
        raise BadSignatureError(f"model version {version} is outside 1 ... 4294967295")
    n = len(blob_bytes)
    body = bytes(blob_bytes) + TRAILER_MAGIC + struct.pack("<III", int(version), n, 0)
    return body + b"\xff" * (payload_len(n) - len(body))


@dataclass
class Block:
    index: int
    key_digest: bytes          # SHA-256 of the key as the block holds it
    digest: bytes              # the block's SHA-256 of the payload
    n: int
    e: int
    signature: bytes           # big-endian

    def holds(self, payload_bytes: bytes) -> bool:
        """The block's digest is the payload's and its RSA-PSS signature
        verifies with the key it carries (cryptography, as espsecure checks)."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding, rsa, utils

        digest = hashlib.sha256(payload_bytes).digest()
        if digest != self.digest or self.n.bit_length() != 3072:
            return False
        try:
            rsa.RSAPublicNumbers(self.e, self.n).public_key().verify(
                self.signature, digest, padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32),
                utils.Prehashed(hashes.SHA256()))
        except (InvalidSignature, ValueError):
            return False
        return True


@dataclass
class SignedModel:
    blob: blobmod.Blob
    version: int
    blocks: List[Block]
    raw: bytes

    @property
    def payload(self) -> bytes:
        return self.raw[:payload_len(self.blob.header.total_len)]


def is_signed(data: bytes) -> bool:
    """A trailer follows the blob its header describes."""
    try:
        n = blobmod.Header.unpack(bytes(data[:24])).total_len
    except Exception:
        return False
    return len(data) >= n + TRAILER_LEN and bytes(data[n:n + 4]) == TRAILER_MAGIC


def parse(data: bytes) -> SignedModel:
    """Rules S1-S3 of docs/format.md, after rules 1-18 on the blob: the
    blob's named error, UnsignedError or BadSignatureError."""
    data = bytes(data)
    b = blobmod.parse(data, exact_length=False).check_contract()
    n = b.header.total_len
    if not is_signed(data):
        raise UnsignedError(f"no signature: the {len(data)}-byte file is the blob alone "
                            "(sign it with `rvne sign`)" if len(data) == n else
                            f"no signature trailer (RVS1) after the {n}-byte blob")
    version, blob_len, reserved = struct.unpack_from("<III", data, n + 4)
    want = total_len(n)
    if len(data) != want:
        raise BadSignatureError(f"a signed model of this blob is {want} bytes, the file is {len(data)}: "
                                "its signature sector is truncated or padded")
    if version == 0 or blob_len != n or reserved != 0:
        raise BadSignatureError(f"trailer fields: version {version} (>= 1), blob_len {blob_len} (must be {n}), "
                                f"reserved {reserved} (must be 0)")
    pl = payload_len(n)
    if data[n + TRAILER_LEN:pl] != b"\xff" * (pl - n - TRAILER_LEN):
        raise BadSignatureError("the padding after the trailer is not all 0xFF")
    blocks = []
    sector = data[pl:]
    for i in range(MAX_BLOCKS):
        blk = sector[i * BLOCK_LEN:(i + 1) * BLOCK_LEN]
        if not (blk[0] == BLOCK_MAGIC and blk[1] == BLOCK_RSA and blk[2:4] == b"\0\0"
                and struct.unpack_from("<I", blk, 1196)[0] == zlib.crc32(blk[:1196]) and blk[1200:] == bytes(16)):
            break
        e = struct.unpack_from("<I", blk, 420)[0]
        blocks.append(Block(i, hashlib.sha256(blk[KEY]).digest(), blk[4:36], int.from_bytes(blk[36:420], "little"),
                            e, blk[812:1196][::-1]))
    rest = sector[len(blocks) * BLOCK_LEN:]
    if not blocks or rest != b"\xff" * len(rest):
        raise BadSignatureError(f"the signature sector holds {len(blocks)} valid blocks followed by bytes that "
                                "are not 0xFF: a block is damaged" if blocks else
                                "the signature sector holds no valid Secure Boot v2 block (magic, CRC)")
    return SignedModel(b, version, blocks, data)


@dataclass
class Trust:
    """A board's policy as INFO reports it (docs/protocol.md)."""

    policy: str = "unsigned"
    keys: tuple = ()
    revoked: tuple = ()
    version: Optional[int] = None

    @classmethod
    def from_info(cls, info) -> "Trust":
        f = info.fields

        def digests(name):
            v = f.get(name, "-")
            return tuple(bytes.fromhex(d) for d in v.split(",")) if v not in ("-", "") else ()

        ver = f.get("version", "-")
        return cls(f.get("policy", "unsigned"), digests("keys"), digests("revoked"),
                   None if ver in ("-", "") else int(ver))


def judge(data: bytes, trust: Trust) -> Optional[SignedModel]:
    """What a board with `trust` says of `data` (rules S1-S5), before
    anything is sent: the same named error it would give. Unsigned policy:
    a bare blob, or a signed model laid out right (not checked further)."""
    if trust.policy != "signed":
        return parse(data) if is_signed(data) else None
    sm = parse(data)
    bad = revoked = False
    for blk in sm.blocks:
        if blk.key_digest in trust.revoked:
            revoked = True
        elif blk.key_digest in trust.keys:
            if blk.holds(sm.payload):
                if trust.version is not None and sm.version < trust.version:
                    raise RollbackError(f"model version {sm.version} is below the version {trust.version} "
                                        "the board serves")
                return sm
            bad = True
    if bad:
        raise BadSignatureError("the block by a trusted key does not verify: the model or its signature was "
                                "changed after signing")
    if revoked:
        raise RevokedKeyError(f"signed by a key the board has revoked ({sm.blocks[0].key_digest.hex()[:16]}...)")
    raise UntrustedKeyError("signed by no key the board trusts (signers "
                            + ", ".join(b.key_digest.hex()[:16] + "..." for b in sm.blocks) + ")")


# -- espsecure (the esptool package, rvne's dependency): every signature is its ---
def espsecure(*argv):
    """Run espsecure in this interpreter; its last output line is the
    reason on failure (SignatureError)."""
    proc = subprocess.run([sys.executable, "-m", "espsecure", *map(str, argv)], capture_output=True, text=True)
    if proc.returncode != 0:
        # Its reason, without the frame its CLI draws around it.
        lines = [ln.strip(" │╭╮╰╯─") for ln in (proc.stderr + proc.stdout).splitlines()]
        lines = [ln for ln in lines if ln and not ln.startswith(("espsecure v", "Usage:", "Try "))]
        raise SignatureError(f"espsecure {argv[0]} failed: {lines[-1] if lines else f'exit {proc.returncode}'}")
    return proc.stdout


def key_digest(keyfile) -> str:
    """The key's Secure Boot v2 digest in hex, by `espsecure digest-sbv2-public-key`:
    what a board's trusted-key list (RVNE_TRUSTED_KEYS) holds."""
    with tempfile.TemporaryDirectory(prefix="rvne-key-") as tmp:
        out = Path(tmp) / "digest.bin"
        espsecure("digest-sbv2-public-key", "--keyfile", keyfile, "--output", out)
        return out.read_bytes().hex()


def sign_model(data: bytes, version: int, keyfiles=(), pub_keys=(), signatures=(), hsm_config=None) -> bytes:
    """Blob `data` signed as model `version` by espsecure: with private
    `keyfiles`, pre-calculated `signatures` of signed.payload() with their
    `pub_keys`, or an HSM. Returns the signed model's bytes."""
    with tempfile.TemporaryDirectory(prefix="rvne-sign-") as tmp:
        src, dst = Path(tmp) / "payload.bin", Path(tmp) / "signed.bin"
        src.write_bytes(payload(data, version))
        # The data file first: espsecure's --keyfile and --pub-key take several values.
        argv = ["sign-data", src, "--version", "2", "--output", dst]
        for k in keyfiles:
            argv += ["--keyfile", k]
        for k, s in zip(pub_keys, signatures):
            argv += ["--pub-key", k, "--signature", s]
        if hsm_config:
            argv += ["--hsm", "--hsm-config", hsm_config]
        espsecure(*argv)
        return dst.read_bytes()


def check_model(data: bytes) -> blobmod.Blob:
    """A model file as a board takes it over the line or by `rvne flash`:
    a loadable blob (rules 1-18, its exact length), or a signed model laid
    out right around one (rules S1-S3; the signature is the board's to
    judge, `judge` says what it will say). Returns the blob."""
    if is_signed(data):
        return parse(data).blob
    return blobmod.parse_loadable(data)


def read_model(path) -> bytes:
    """`path`'s bytes, checked by check_model; a refusal names the file."""
    from ..errors import BlobError, SignatureError

    buf = blobmod.map_file(path)
    try:
        data = bytes(buf)
        check_model(data)
        return data
    except (BlobError, SignatureError) as exc:
        import os

        raise type(exc)(f"{os.fspath(path)}: {exc.code}: {exc}") from None
