"""Lines a good client never sends get an error reply (SEQ 0 when the SEQ
cannot be trusted), and the next good request works."""

import numpy as np

from rvne.link import protocol


def ping_works(raw):
    seq = raw.seq()
    raw.request(seq, "PING")
    r = raw.reply()
    assert (r.seq, r.ok) == (seq, True)


UNTRUSTED = [
    (b"hello device\n", "E_MALFORMED"),
    (b"\x00\xff\xfe binary noise \x80\n", "E_MALFORMED"),
    (b">1 PING\n", "E_CRC"),
    (b">1 PING*00000000\n", "E_CRC"),
    (b">1 PING*59D3F5\n", "E_CRC"),
]


def test_untrusted_lines(raw):
    for line, code in UNTRUSTED:
        raw.send(line)
        r = raw.reply()
        assert (r.seq, r.ok, r.code) == (0, False, code), line
        ping_works(raw)


def _sealed(body: bytes) -> bytes:
    return body + b"*%08X\n" % protocol.line_crc(body)


def test_bad_seq_with_good_crc(raw):
    raw.send(_sealed(b">0 PING"))
    r = raw.reply()
    assert (r.seq, r.code) == (0, "E_MALFORMED")
    raw.send(_sealed(b">x PING"))
    assert raw.reply().code == "E_MALFORMED"
    ping_works(raw)


def test_request_errors_echo_the_seq(raw, input_dim):
    one = protocol.encode_f32(np.zeros(input_dim, np.float32))
    cases = [
        (("NOPE",), "E_UNKNOWN_CMD"),
        (("PUSH",), "E_ARGS"),
        (("PUSH", 1), "E_ARGS"),
        (("WINDOW", 0), "E_ARGS"),
        (("PING", "extra"), "E_ARGS"),
        (("PUSH", 1, "!!!!"), "E_BASE64"),
        (("PUSH", 2, one), "E_FRAME_SIZE"),
    ]
    for args, code in cases:
        seq = raw.seq()
        raw.request(seq, *args)
        r = raw.reply()
        assert (r.seq, r.ok, r.code) == (seq, False, code), args
    ping_works(raw)


def test_logits_before_any_push(raw):
    raw.request(raw.seq(), "RESET")
    assert raw.reply().ok
    seq = raw.seq()
    raw.request(seq, "LOGITS")
    assert raw.reply().code == "E_NO_FRAME"


def test_half_line_then_good_line(raw):
    # The half line and the next request arrive as one line: one error for
    # it, then the device is back in step.
    raw.send(b">77 PI")
    raw.send(protocol.build_request(raw.seq(), "PING"))
    r = raw.reply()
    assert (r.seq, r.ok) == (0, False) and r.code in ("E_CRC", "E_MALFORMED")
    raw.send(b"*ABC")
    raw.send(b"\n")
    assert raw.reply().code in ("E_CRC", "E_MALFORMED")
    ping_works(raw)


def test_crlf_lowercase_crc_and_empty_lines(raw):
    seq = raw.seq()
    body = b">%d PING" % seq
    raw.send(b"\n\r\n" + body + b"*%08x\r\n" % protocol.line_crc(body))
    r = raw.reply()           # empty lines got no reply: the first is PING's
    assert (r.seq, r.ok) == (seq, True)


def test_over_long_line_is_dropped(raw, device_line_max):
    raw.send(b">9 " + b"A" * (device_line_max + 100) + b"\n")
    r = raw.reply()
    assert (r.seq, r.code) == (0, "E_TOO_LONG")
    # A long line with a valid shape is dropped the same way.
    big = protocol.encode_f32(np.zeros(device_line_max // 3, np.float32))
    raw.request(raw.seq(), "PUSH", device_line_max // 12, big)
    assert raw.reply().code == "E_TOO_LONG"
    ping_works(raw)


def test_repeated_seq_is_replayed_not_reexecuted(raw, input_dim):
    frame = protocol.encode_f32(np.ones(input_dim, np.float32))
    seq = raw.seq()
    line = raw.request(seq, "PUSH", 1, frame)
    first = raw.reply_line()
    assert protocol.parse_reply(first).ok
    raw.send(line)                       # the same request again
    assert raw.reply_line() == first     # byte for byte: pushes= did not move
    # Even another command under the same SEQ gets the stored reply.
    raw.request(seq, "RESET")
    assert raw.reply_line() == first
    pushes = int(protocol.parse_reply(first).fields["pushes"])
    s2 = raw.seq()
    raw.request(s2, "STATS")
    stats = raw.reply()
    assert stats.seq == s2 and int(stats.fields["pushes"]) == pushes
    # RESET was not executed: LOGITS still has the pushed frame.
    raw.request(raw.seq(), "LOGITS")
    assert raw.reply().ok
