"""rvne.link.protocol: the line codec of docs/protocol.md."""

import base64
import zlib

import numpy as np
import pytest

from rvne.errors import DeviceError
from rvne.link import protocol


def test_doc_example_lines():
    # docs/protocol.md "Example" holds these exact bytes.
    assert protocol.build_request(1, "PING") == b">1 PING*59D3F528\n"
    assert protocol.build_reply(1) == b"<1 OK*44C6B06C\n"


def test_request_crc_covers_sigil_and_body():
    line = protocol.build_request(4294967295, "WINDOW", 7)
    body, crc = line.rstrip(b"\n").split(b"*")
    assert body == b">4294967295 WINDOW 7"
    assert int(crc, 16) == zlib.crc32(body)
    assert crc == crc.upper()


@pytest.mark.parametrize("seq", [0, -1, 2**32, "1"])
def test_request_seq_out_of_range(seq):
    with pytest.raises(ValueError):
        protocol.build_request(seq, "PING")


def test_request_argument_with_space_refused():
    with pytest.raises(ValueError):
        protocol.build_request(1, "PUSH", "a b")


def test_parse_ok_reply_fields():
    r = protocol.parse_reply(protocol.build_reply(12, {"window": 7, "arena": 1234}))
    assert (r.seq, r.ok, r.fields) == (12, True, {"window": "7", "arena": "1234"})
    assert r.field("window") == "7"
    with pytest.raises(protocol.MalformedReplyError, match="lacks field 'nope'"):
        r.field("nope")


def test_parse_err_reply_keeps_message():
    r = protocol.parse_reply(protocol.build_error(0, "E_CRC", "stored 00000000 computed 12345678"))
    assert (r.seq, r.ok, r.code) == (0, False, "E_CRC")
    assert r.message == "stored 00000000 computed 12345678"


def test_parse_accepts_crlf_and_lowercase_crc():
    body = b"<3 OK n=1"
    line = body + b"*%08x\r\n" % zlib.crc32(body)
    assert protocol.parse_reply(line).fields == {"n": "1"}


@pytest.mark.parametrize("line, err", [
    (b"<1 OK*00000000", protocol.ReplyCrcError),
    (b"<1 OK", protocol.ReplyCrcError),
    (b"<1 OK*44C6B06", protocol.ReplyCrcError),
    (b">1 PING*59D3F528", protocol.MalformedReplyError),
])
def test_parse_rejects_damaged_lines(line, err):
    with pytest.raises(err):
        protocol.parse_reply(line)


@pytest.mark.parametrize("body", [b"<01 OK", b"<x OK", b"<1 MAYBE", b"<1 OK novalue", b"<1 ERR oops",
                                  b"<99999999999 OK"])
def test_parse_rejects_bad_syntax_with_good_crc(body):
    with pytest.raises(protocol.MalformedReplyError):
        protocol.parse_reply(body + b"*%08X" % zlib.crc32(body))


def test_flipped_bit_is_caught():
    line = bytearray(protocol.build_reply(5, {"logits": protocol.encode_f32([1.0, 2.0])}))
    line[10] ^= 0x01
    with pytest.raises(protocol.ReplyCrcError, match="stored"):
        protocol.parse_reply(bytes(line))


def test_request_roundtrip():
    line = protocol.build_request(77, "PUSH", 2, protocol.encode_f32(np.arange(8)))
    req = protocol.parse_request(line)
    assert (req.seq, req.cmd) == (77, "PUSH")
    assert np.array_equal(protocol.decode_f32(req.args[1], 8), np.arange(8, dtype=np.float32))


def test_f32_tensor_is_little_endian_base64():
    values = np.array([1.0, -2.5, np.inf, 1e-45], dtype=np.float32)
    text = protocol.encode_f32(values)
    assert base64.b64decode(text) == values.astype("<f4").tobytes()
    assert text == base64.b64encode(b"\x00\x00\x80\x3f" + b"\x00\x00\x20\xc0"
                                    + b"\x00\x00\x80\x7f" + b"\x01\x00\x00\x00").decode()
    assert np.array_equal(protocol.decode_f32(text, 4), values)


def test_f32_nan_bits_survive():
    bits = np.array([0x7FC00001, 0xFFFFFFFF], dtype="<u4")
    back = protocol.decode_f32(protocol.encode_f32(bits.view("<f4")))
    assert np.array_equal(back.view("<u4"), bits)


@pytest.mark.parametrize("text, count", [("AAAA", None), ("AAAAAAAAAAA=", 1), ("!!!!", None), ("AAAAAAA", None)])
def test_decode_f32_rejects(text, count):
    with pytest.raises(protocol.MalformedReplyError):
        protocol.decode_f32(text, count)


@pytest.mark.parametrize("line_max, dim, n_classes", [
    (1024, 16, 4), (1024, 1, 2), (4096, 16, 4), (1024, 180, 2), (1024, 16, 150), (65536, 3, 1000)])
def test_frames_per_push_is_the_largest_that_fits(line_max, dim, n_classes):
    n = protocol.frames_per_push(line_max, dim, n_classes)
    assert n >= 1

    def longest(k):
        seq = 4294967295
        req = protocol.build_request(seq, "PUSH", k, protocol.encode_f32(np.zeros(k * dim)))
        rep = protocol.build_reply(seq, {"n": k, "pushes": 4294967295,
                                         "logits": protocol.encode_f32(np.zeros(k * n_classes))})
        return max(len(req), len(rep)) - 1     # LF not counted

    assert longest(n) <= line_max
    assert longest(n + 1) > line_max


def test_frames_per_push_when_nothing_fits():
    with pytest.raises(DeviceError, match="line_max=1024"):
        protocol.frames_per_push(1024, 400, 4)


def test_chunks_cover_every_frame_once():
    parts = protocol.chunks(23, 5)
    assert [len(r) for r in parts] == [5, 5, 5, 5, 3]
    assert [i for r in parts for i in r] == list(range(23))
    assert protocol.chunks(0, 5) == []
