"""A device of docs/protocol.md written in Python, served on a TCP socket on
127.0.0.1 (socket:// URL), that can be told to misbehave. Used by the client
tests; its protocol side comes from rvne.link.protocol's device half.

The model is any object with dims (D, C), push(frame) -> C logits and reset().
"""

import socket
import threading

import numpy as np

from rvne.link import protocol


class CountingModel:
    """Stateful on purpose: logits depend on how many frames were pushed
    since the reset, so a frame pushed twice shows in the result."""

    def __init__(self, dim=4, n_classes=3):
        self.dim, self.n_classes = dim, n_classes
        self.n = 0

    def reset(self):
        self.n = 0

    def push(self, frame):
        self.n += 1
        return np.array([frame.sum() * (c + 1) + self.n for c in range(self.n_classes)], np.float32)

    info = {}

    @staticmethod
    def expected(frames, n_classes=3, start=0):
        out = []
        for i, f in enumerate(np.asarray(frames, np.float32)):
            out.append([f.sum() * (c + 1) + start + i + 1 for c in range(n_classes)])
        return np.array(out, np.float32)


class ReferenceModel:
    """The numpy reference streaming a blob, with INFO fields to match it;
    `skew` is added to every logit to play a subtly wrong device."""

    def __init__(self, blob_bytes, window=100, skew=0.0):
        from rvne.io import blob
        from rvne.model import reference

        parsed = blob.parse_loadable(blob_bytes)
        h = parsed.header
        self.dim, self.n_classes = h.input_dim, h.n_classes
        self._stream = reference.Stream(parsed.tensors(), h.dims, window)
        self.skew = np.float32(skew)
        self.info = {"dims": str(h.dims), "dtype": h.dtype, "crc": f"{parsed.crc_stored:08X}",
                     "blob_len": h.total_len, "window": window}

    def reset(self):
        self._stream.reset()

    def set_window(self, window):
        from rvne.model import reference

        self._stream = reference.Stream(self._stream._w, self._stream.dims, window)
        self.info["window"] = window

    def push(self, frame):
        return self._stream.push(frame) + self.skew


class FakeDevice:
    """Misbehaviour knobs, each a count of requests still to affect:
    corrupt_replies (flip a byte of the reply), drop_replies (execute, send
    nothing), drop_requests (ignore the request entirely), crc_errors (answer
    `<0 ERR E_CRC` as if the line arrived damaged), disconnect_after (close
    the connection after this many requests, None = never). log_lines puts a
    log line before every reply."""

    def __init__(self, model=None, line_max=1024, window=100, banner=True):
        self.model = model or CountingModel()
        self.line_max = line_max
        self.window = window
        self.corrupt_replies = 0
        self.drop_replies = 0
        self.drop_requests = 0
        self.crc_errors = 0
        self.disconnect_after = None
        self.log_lines = False
        self.executed = []          # commands actually executed, in order
        self.pushes = 0
        self.last_logits = None
        self.last_seq = 0
        self.last_reply = b""
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(1)
        self.url = "socket://127.0.0.1:%d" % self._sock.getsockname()[1]
        self._banner = banner
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def close(self):
        self._stop.set()
        try:
            self._sock.close()
        except OSError:
            pass
        self._thread.join(timeout=2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- serving -------------------------------------------------------------
    def _serve(self):
        self._sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (socket.timeout, OSError):
                continue
            with conn:
                self._talk(conn)

    def _talk(self, conn):
        conn.settimeout(0.1)
        if self._banner:
            conn.sendall(b"rvne/0.0.0 fake ready: OK\n")
        buf = b""
        handled = 0
        while not self._stop.is_set():
            try:
                data = conn.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if not line.strip():
                    continue
                out = self._answer(line)
                handled += 1
                if out:
                    if self.log_lines:
                        out = b"I (123) rvne: a log line between replies\n" + out
                    conn.sendall(out)
                if self.disconnect_after is not None and handled >= self.disconnect_after:
                    conn.shutdown(socket.SHUT_RDWR)
                    return

    def _answer(self, line):
        if self.drop_requests:
            self.drop_requests -= 1
            return b""
        if self.crc_errors:
            self.crc_errors -= 1
            return protocol.build_error(0, "E_CRC", "line CRC mismatch")
        if len(line) > self.line_max:
            return protocol.build_error(0, "E_TOO_LONG", "line too long")
        try:
            req = protocol.parse_request(line)
        except protocol.ReplyCrcError:
            return protocol.build_error(0, "E_CRC", "line CRC mismatch")
        except protocol.MalformedReplyError:
            return protocol.build_error(0, "E_MALFORMED", "bad line")
        if req.seq == self.last_seq:
            reply = self.last_reply
        else:
            reply = self._execute(req)
            self.last_seq, self.last_reply = req.seq, reply
        if self.drop_replies:
            self.drop_replies -= 1
            return b""
        if self.corrupt_replies:
            self.corrupt_replies -= 1
            reply = reply[:1] + (b"9" if reply[1:2] != b"9" else b"8") + reply[2:]
        return reply

    def _arena(self, dims=None):
        """An honest arena: fp32 K and V of every layer for the window."""
        try:
            d = [int(x) for x in (dims or getattr(self.model, "info", {}).get("dims", "")).split(",")]
            per_frame = 2 * d[4] * d[2] * d[3] * 4
        except (ValueError, IndexError):
            per_frame = 8
        return self.window * per_frame

    def _execute(self, req):
        self.executed.append(req.cmd)
        m = self.model
        if req.cmd == "PING":
            return protocol.build_reply(req.seq)
        if req.cmd == "INFO":
            fields = {
                "fw": "0.0.0", "port": "fake", "status": "loaded", "reason": "OK",
                "dims": f"{m.dim},1,1,1,1,{m.n_classes}", "dtype": "fp32", "crc": "DEADBEEF",
                "blob_len": 28, "window": self.window, "arena": self._arena(), "line_max": self.line_max,
                "clock": "none", **getattr(m, "info", {})}
            if "arena" not in getattr(m, "info", {}):
                fields["arena"] = self._arena(fields["dims"])
            return protocol.build_reply(req.seq, fields)
        if req.cmd == "RESET":
            m.reset()
            self.last_logits = None
            return protocol.build_reply(req.seq)
        if req.cmd in ("PUSH", "RUN"):
            if len(req.args) != 2:
                return protocol.build_error(req.seq, "E_ARGS", "PUSH N B64")
            n = int(req.args[0])
            try:
                frames = protocol.decode_f32(req.args[1], n * m.dim).reshape(n, m.dim)
            except protocol.MalformedReplyError as exc:
                return protocol.build_error(req.seq, "E_FRAME_SIZE", str(exc))
            if req.cmd == "RUN":
                m.reset()
            logits = np.stack([m.push(f) for f in frames])
            self.last_logits = logits[-1]
            self.pushes += n
            return protocol.build_reply(req.seq, {"n": n, "pushes": self.pushes,
                                                  "logits": protocol.encode_f32(logits)})
        if req.cmd == "WINDOW":
            self.window = int(req.args[0])
            if hasattr(m, "set_window"):
                m.set_window(self.window)
            m.reset()
            return protocol.build_reply(req.seq, {"window": self.window, "arena": self._arena()})
        if req.cmd == "LOGITS":
            if self.last_logits is None:
                return protocol.build_error(req.seq, "E_NO_FRAME", "no push since reset")
            return protocol.build_reply(req.seq, {"logits": protocol.encode_f32(self.last_logits)})
        if req.cmd == "STATS":
            return protocol.build_reply(req.seq, {"pushes": self.pushes, "clock": "none"})
        return protocol.build_error(req.seq, "E_UNKNOWN_CMD", f"unknown {req.cmd}")
