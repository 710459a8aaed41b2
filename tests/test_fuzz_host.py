"""Bad input never crashes the host side: seeded mutations of a valid blob
and of valid reply lines are either accepted or refused with the typed error
of docs/format.md / docs/protocol.md — never another exception. Bounded
(a few thousand cases) and deterministic."""

import random

import numpy as np

from rvne.errors import BlobError, DeviceError
from rvne.io import blob, upstream_init
from rvne.link import protocol

CASES = 3000


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    kind = rng.randrange(5)
    if kind == 0:                                   # flip bits, header-heavy
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(min(len(b), 64)) if rng.random() < 0.7 else rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif kind == 1:                                 # truncate
        del b[rng.randrange(len(b)):]
    elif kind == 2:                                 # extend with junk
        b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    elif kind == 3:                                 # overwrite a header field with an extreme value
        off = rng.choice([4, 6, 7, 8, 10, 12, 14, 16, 18, 20])
        width = 4 if off == 20 else (1 if off in (6, 7) else 2)
        b[off:off + width] = rng.choice([0, 1, 2, 0xFF, 0xFFFF, 0xFFFFFFFF]).to_bytes(8, "little")[:width]
    else:                                           # splice a random window
        i = rng.randrange(len(b))
        b[i:i + 8] = bytes(rng.randrange(256) for _ in range(8))
    return bytes(b)


def test_mutated_blobs_parse_or_raise_a_blob_error():
    rng = random.Random(1234)
    seeds = [upstream_init.init_blob(), upstream_init.init_blob(fp16=True)]
    outcomes = {"ok": 0}
    for _ in range(CASES):
        data = mutate(rng.choice(seeds), rng)
        for exact in (True, False):
            try:
                parsed = blob.parse_loadable(data, exact_length=exact)
            except BlobError as exc:
                msg = str(exc)
                assert msg and "\n" not in msg, msg       # one line, non-empty
                outcomes[exc.code] = outcomes.get(exc.code, 0) + 1
            else:
                # Anything accepted is really loadable: the header's own sizes hold.
                assert memoryview(parsed.weights).nbytes == parsed.header.weights_len
                outcomes["ok"] += 1
    # The mutations reached the refusals that matter, not just one of them.
    for code in ("E_TOO_SHORT", "E_BAD_MAGIC", "E_BAD_VERSION", "E_LENGTH", "E_CRC"):
        assert outcomes.get(code, 0) > 0, outcomes


def canonical(line):
    body, _, crc = bytes(line).strip(b"\r\n").rpartition(b"*")
    return body + b"*" + crc.upper()


def test_garbled_reply_lines_raise_device_errors_only():
    rng = random.Random(99)
    good = [
        protocol.build_reply(7, {"n": 2, "logits": protocol.encode_f32(np.arange(8, dtype=np.float32))}),
        protocol.build_error(3, "E_CRC", "bad line"),
        protocol.build_reply(1),
    ]
    refused = 0
    for _ in range(CASES):
        line = bytearray(rng.choice(good))
        for _ in range(rng.randint(1, 3)):
            op = rng.randrange(3)
            i = rng.randrange(len(line)) if line else 0
            if op == 0 and line:
                line[i] = rng.randrange(256)
            elif op == 1:
                line.insert(i, rng.randrange(256))
            elif line:
                del line[i]
        try:
            reply = protocol.parse_reply(bytes(line))
        except DeviceError as exc:
            assert str(exc) and "\n" not in str(exc)
            refused += 1
        else:
            # Only a mutation that left the line itself intact (line ending
            # aside) may pass: anything else would need a CRC-32 collision.
            # (The CRC's hex digits may be either case: docs/protocol.md.)
            assert canonical(line) in {canonical(g) for g in good}, (line, reply)
    assert refused > CASES * 0.95
