"""rvne's bounded CBOR decoder (host/rvne/io/formats/cbor.py) against cbor2:
the same values on random objects in definite, indefinite and non-minimal
encodings; every malformed input of RFC 8949 Appendix F refused; mutants
accepted by rvne decode as cbor2 decodes them, and mutants cbor2 accepts but
rvne refuses are refused only for rvne's documented strictness."""

import math
import random
import struct
from collections.abc import Mapping

import cbor2
import pytest

from rvne.io.formats import cbor

SAFE_TAGS = (4000, 6001, 7777, 40000, 1 << 33)   # tags cbor2 gives no meaning to


def same(ours, theirs):
    if isinstance(theirs, cbor2.CBORTag):
        return isinstance(ours, cbor.Tagged) and ours.tag == theirs.tag and same(ours.value, theirs.value)
    if isinstance(theirs, cbor2.CBORSimpleValue):
        return isinstance(ours, cbor.Simple) and ours.value == theirs.value
    if theirs is cbor2.undefined:
        return ours == cbor.Simple(23)
    if isinstance(theirs, float):
        return isinstance(ours, float) and (math.isnan(ours) and math.isnan(theirs) or
                                            ours == theirs and math.copysign(1, ours) == math.copysign(1, theirs))
    if isinstance(theirs, (list, tuple)):   # cbor2 freezes containers inside tags and keys
        return isinstance(ours, list) and len(ours) == len(theirs) and all(map(same, ours, theirs))
    if isinstance(theirs, Mapping):
        return (isinstance(ours, dict) and len(ours) == len(theirs)
                and all(same(a, b) and same(ours[a], theirs[b]) for a, b in zip(ours, theirs)))
    return type(ours) is type(theirs) and ours == theirs


# -- a test encoder that picks definite or indefinite lengths and argument widths --------
def head(major, n, rng):
    widths = [w for w, lim in ((0, 24), (1, 1 << 8), (2, 1 << 16), (4, 1 << 32), (8, 1 << 64)) if n < lim]
    w = widths[0] if rng.random() < 0.7 else rng.choice(widths)
    if w == 0:
        return bytes([major << 5 | n])
    ai = {1: 24, 2: 25, 4: 26, 8: 27}[w]
    return bytes([major << 5 | ai]) + n.to_bytes(w, "big")


def encode(obj, rng):
    if isinstance(obj, bool) or obj is None:
        return cbor2.dumps(obj)
    if isinstance(obj, int):
        return head(0, obj, rng) if obj >= 0 else head(1, -1 - obj, rng)
    if isinstance(obj, float):
        kind = rng.choice(["d", "f", "e"])
        for fmt, ai in (("e", 25), ("f", 26)):
            if kind == fmt and _fits(obj, fmt):
                return bytes([0xE0 | ai]) + struct.pack(">" + fmt, obj)
        return b"\xfb" + struct.pack(">d", obj)
    if isinstance(obj, (bytes, str)):
        major = 2 if isinstance(obj, bytes) else 3
        raw = obj if major == 2 else obj.encode()
        if rng.random() < 0.25 and major == 2:
            cut = rng.randint(0, len(raw))
            return bytes([major << 5 | 31]) + head(major, cut, rng) + raw[:cut] + head(major, len(raw) - cut, rng) \
                + raw[cut:] + b"\xff"
        return head(major, len(raw), rng) + raw
    if isinstance(obj, list):
        body = b"".join(encode(x, rng) for x in obj)
        return (b"\x9f" + body + b"\xff") if rng.random() < 0.3 else head(4, len(obj), rng) + body
    if isinstance(obj, dict):
        body = b"".join(encode(k, rng) + encode(v, rng) for k, v in obj.items())
        return (b"\xbf" + body + b"\xff") if rng.random() < 0.3 else head(5, len(obj), rng) + body
    if isinstance(obj, cbor2.CBORTag):
        return head(6, obj.tag, rng) + encode(obj.value, rng)
    raise TypeError(obj)


def _fits(x, fmt):
    """x survives a round trip through half ('e') or single ('f') precision."""
    try:
        return math.isnan(x) or struct.unpack(">" + fmt, struct.pack(">" + fmt, x))[0] == x
    except (OverflowError, struct.error):
        return False


def random_scalar(rng):
    kind = rng.randrange(8)
    if kind == 0:
        return rng.choice([0, 1, 23, 24, 255, 256, 65535, 65536, (1 << 32) - 1, 1 << 32, (1 << 64) - 1])
    if kind == 1:
        return -rng.choice([1, 24, 25, 256, 257, 1 << 32, 1 << 64])
    if kind == 2:
        return rng.choice([0.0, -0.0, 1.5, -2.25, 1e300, float("inf"), float("-inf"), float("nan"),
                           rng.uniform(-1e6, 1e6)])
    if kind == 3:
        return "".join(rng.choice("ab\u00e9\u4e2d\U0001f600") for _ in range(rng.randrange(6)))
    if kind == 4:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(6)))
    if kind == 5:
        return rng.choice([True, False, None])
    return rng.randrange(-(1 << 40), 1 << 40)


def random_obj(rng, depth=0):
    r = rng.random()
    if depth > 4 or r < 0.45:
        return random_scalar(rng)
    if r < 0.7:
        return [random_obj(rng, depth + 1) for _ in range(rng.randrange(5))]
    if r < 0.9:
        return {rng.choice([random_scalar(rng), f"k{rng.randrange(99)}"]): random_obj(rng, depth + 1)
                for _ in range(rng.randrange(5))}
    return cbor2.CBORTag(rng.choice(SAFE_TAGS), random_obj(rng, depth + 1))


def _keys_distinct(obj):
    """Python merges 1, 1.0 and True as dict keys; CBOR does not. Skip such objects."""
    if isinstance(obj, Mapping):
        if len({(type(k), k if not (isinstance(k, float) and math.isnan(k)) else "nan") for k in obj}) \
                != len(obj) or any(isinstance(k, float) and math.isnan(k) for k in obj):
            return False
        return all(_keys_distinct(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return all(map(_keys_distinct, obj))
    if isinstance(obj, cbor2.CBORTag):
        return _keys_distinct(obj.value)
    return True


def test_random_objects_decode_like_cbor2():
    rng = random.Random(2024)
    done = 0
    while done < 600:
        obj = random_obj(rng)
        if not _keys_distinct(obj):
            continue
        for raw in (cbor2.dumps(obj), encode(obj, rng)):
            theirs = cbor2.loads(raw)
            ours = cbor.loads(raw)
            assert same(ours, theirs), (raw.hex(), ours, theirs)
        done += 1


@pytest.mark.parametrize("hexstr,value", [
    ("00", 0), ("17", 23), ("1818", 24), ("1bffffffffffffffff", (1 << 64) - 1),
    ("3bffffffffffffffff", -(1 << 64)), ("f93c00", 1.0), ("f97c00", math.inf), ("fa47c35000", 100000.0),
    ("f4", False), ("f5", True), ("f6", None), ("f7", cbor.Simple(23)), ("f0", cbor.Simple(16)),
    ("f8ff", cbor.Simple(255)), ("c11a514b67b0", cbor.Tagged(1, 1363896240)),
    ("5f42010243030405ff", b"\x01\x02\x03\x04\x05"), ("7f657374726561646d696e67ff", "streaming"),
    ("9f018202039f0405ffff", [1, [2, 3], [4, 5]]), ("bf61610161629f0203ffff", {"a": 1, "b": [2, 3]}),
    ("a201020304", {1: 2, 3: 4}), ("80", []), ("a0", {}), ("5fff", b""), ("7fff", ""),
])
def test_rfc8949_appendix_a_examples(hexstr, value):
    assert cbor.loads(bytes.fromhex(hexstr)) == value


# RFC 8949 Appendix F: not well-formed, by kind
MALFORMED = [
    # end of input in a head
    "18", "19", "1a", "1b", "1901", "1a0102", "1b01020304050607", "38", "58", "78", "98", "9a01ff00",
    "b8", "d8", "f8", "f900", "fa0000", "fb000000",
    # definite-length strings / containers with short data
    "41", "61", "5affffffff00", "5bffffffffffffffff010203", "7affffffff00", "81", "818181818181818181",
    "8200", "a1", "a20102", "a100", "a2000000",
    # tag without content, indefinite items without break
    "c0", "5f4100", "7f6100", "9f", "9f0102", "bf", "bf01020102", "819f", "9f8000", "9f9f9f9f9fffffffff",
    # reserved additional information 28-30
    "1c", "1d", "1e", "3c", "3d", "3e", "5c", "5d", "5e", "7c", "7d", "7e", "9c", "9d", "9e", "bc", "bd",
    "be", "dc", "dd", "de", "fc", "fd", "fe",
    # simple values 0..31 in the two-byte form
    "f800", "f801", "f818", "f81f",
    # indefinite strings with wrong or nested-indefinite chunks
    "5f00ff", "5f21ff", "5f6100ff", "5f80ff", "5fa0ff", "5fc000ff", "5fe0ff", "7f4100ff", "5f5f4100ffff",
    "7f7f6100ffff",
    # break outside an indefinite item, and ai 31 where it is not allowed
    "ff", "81ff", "8200ff", "a1ff", "a1ff00", "a100ff", "9f81ff", "82009f0000", "1f", "3f", "df",
    "bf00ff", "bf000000ff",
    # invalid UTF-8 in text strings
    "6180", "62c328", "63e28228", "7f6180ff", "62eda080",
]


@pytest.mark.parametrize("hexstr", MALFORMED)
def test_malformed_inputs_are_refused_and_cbor2_agrees(hexstr):
    raw = bytes.fromhex(hexstr)
    with pytest.raises(cbor.CborError):
        cbor.loads(raw)
    with pytest.raises(Exception):
        cbor2.loads(raw)


@pytest.mark.parametrize("hexstr,kind", [
    ("0102", "trailing"),                       # cbor2.loads ignores the second item
    ("a2616101616102", "duplicate"),            # cbor2 keeps the last value
    ("bf6161016161ff", "syntax"),               # break between key and value
    ("a1810102", "key"),                        # an array as a map key
])
def test_rvne_is_stricter_where_documented(hexstr, kind):
    with pytest.raises(cbor.CborError) as exc:
        cbor.loads(bytes.fromhex(hexstr))
    assert exc.value.kind == kind


def test_duplicate_key_path_names_the_map():
    raw = bytes.fromhex("a1") + cbor2.dumps("tensors") + bytes.fromhex("a2") + cbor2.dumps("w") + b"\x01" \
        + cbor2.dumps("w") + b"\x02"
    with pytest.raises(cbor.CborError) as exc:
        cbor.loads(raw)
    assert exc.value.kind == "duplicate" and exc.value.path == ("tensors", "w")


def test_caps_size_depth_items_and_declared_lengths():
    with pytest.raises(cbor.CborError) as exc:
        cbor.loads(b"\x00" * 11, max_bytes=10)
    assert exc.value.kind == "size"
    deep = b"\x81" * 100000 + b"\x00"               # recursion would die; the stack says no
    with pytest.raises(cbor.CborError) as exc:
        cbor.loads(deep)
    assert exc.value.kind == "depth"
    assert cbor.loads(b"\x81" * 128 + b"\x00", max_depth=128) is not None
    with pytest.raises(cbor.CborError) as exc:
        cbor.loads(b"\x81" * 129 + b"\x00", max_depth=128)
    assert exc.value.kind == "depth"
    tags = b"\xc6" * 5000 + b"\x00"                  # tag chains nest too
    with pytest.raises(cbor.CborError) as exc:
        cbor.loads(tags)
    assert exc.value.kind == "depth"
    with pytest.raises(cbor.CborError) as exc:
        cbor.loads(cbor2.dumps(list(range(100))), max_items=50)
    assert exc.value.kind == "items"
    # a declared length of 2^64 - 1 items is refused before anything is allocated
    for raw in (b"\x9b" + b"\xff" * 8, b"\xbb" + b"\xff" * 8, b"\x5b" + b"\xff" * 8):
        with pytest.raises(cbor.CborError) as exc:
            cbor.loads(raw)
        assert exc.value.kind == "truncated"


def mutate(raw, rng):
    m = bytearray(raw)
    kind = rng.randrange(4)
    if kind == 0 and m:
        m[rng.randrange(len(m))] = rng.randrange(256)
    elif kind == 1 and m:
        m[rng.randrange(len(m))] ^= 1 << rng.randrange(8)
    elif kind == 2:
        del m[rng.randrange(len(m) + 1):]
    else:
        at = rng.randrange(len(m) + 1)
        m[at:at] = bytes([rng.choice([0xFF, 0x9F, 0xBF, 0x5F, 0x7F, 0x1C, 0xF8, rng.randrange(256)])])
    return bytes(m)


REFUSED = object()


def test_mutants_agree_with_cbor2_or_fail_for_a_documented_reason():
    rng = random.Random(77)
    refused_alone = {}
    n = 0
    while n < 1500:
        obj = random_obj(rng)
        if not _keys_distinct(obj):
            continue
        n += 1
        raw = mutate(encode(obj, rng), rng)
        try:
            ours = cbor.loads(raw)
        except cbor.CborError as exc:
            ours = exc
        try:
            theirs = cbor2.loads(raw)
        except Exception:
            theirs = REFUSED
        if isinstance(ours, cbor.CborError):
            if theirs is not REFUSED:
                refused_alone[ours.kind] = refused_alone.get(ours.kind, 0) + 1
            continue
        assert theirs is not REFUSED, raw.hex()  # rvne never accepts what cbor2 refuses ...
        if _comparable(theirs):
            assert same(ours, theirs), raw.hex()  # ... and then reads the same value
    # cbor2 accepts trailing bytes, repeated keys and arrays as keys; rvne does not
    assert set(refused_alone) <= {"trailing", "duplicate", "key"}, refused_alone
    assert refused_alone.get("trailing")


_PLAIN = (int, float, str, bytes, bool, type(None), cbor2.CBORSimpleValue, type(cbor2.undefined))


def _comparable(v):
    """cbor2 gave plain values only (a mutated tag number may make it build a datetime, a set...)."""
    if isinstance(v, cbor2.CBORTag):
        return _comparable(v.value)
    if isinstance(v, (list, tuple)):
        return all(map(_comparable, v))
    if isinstance(v, Mapping):
        return _keys_distinct(v) and all(_comparable(k) and _comparable(x) for k, x in v.items())
    return isinstance(v, _PLAIN)


def test_never_raises_anything_but_cbor_error_on_random_bytes():
    rng = random.Random(5)
    for _ in range(3000):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 24)))
        try:
            cbor.loads(raw)
        except cbor.CborError:
            pass
