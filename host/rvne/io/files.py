"""Opening the files rvne reads (docs/files.md, "Inputs").

Every input is opened without blocking (a FIFO nobody writes would block
open() forever), checked with fstat before a byte is read, and read no
further than the caller's limit:

- a regular file is memory-mapped (or read whole, when small) once its size
  is known to fit the limit;
- a pipe (`/dev/stdin`, `<(cat blob)`, a FIFO) is the one documented
  exception: read once into memory, at most STREAM_MAX bytes, and kept, so
  a second open of the same pipe in this process gets the same bytes
  instead of the nothing a drained pipe would give;
- anything else (a directory, a character device like /dev/zero or a tty, a
  socket) is refused before it is read.

A mapped file that another program truncates would kill the process with
SIGBUS; the first mapping installs a handler that prints one line and exits
with status 1 instead (sigbus_guard).
"""

import ctypes
import fcntl
import mmap
import os
import signal
import stat
import time

from ..errors import InputError, naming

STREAM_MAX = 256 << 20          # bytes read from a pipe
FIFO_GRACE = 1.0                # seconds a FIFO may wait for its writer to open it
_READ_CHUNK = 1 << 20
_streams = {}                   # (st_dev, st_ino, st_ctime_ns) of a pipe -> its bytes


def _kind(mode):
    for test, name in ((stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISFIFO, "FIFO")):
        if test(mode):
            return name
    return "special file"


def open_input(path, *, pipes=True):
    """(fd, stat) of `path` opened read-only without blocking; a directory
    raises IsADirectoryError, a device or socket InputError. `pipes=False`
    refuses pipes too (a flash image is rewritten in place, so it must be
    a file). The caller closes fd."""
    with naming(path):
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory", os.fspath(path))
        if not (stat.S_ISREG(st.st_mode) or (pipes and stat.S_ISFIFO(st.st_mode))):
            also = " or a pipe" if pipes else ""
            raise InputError(f"{os.fspath(path)}: is a {_kind(st.st_mode)}, not a regular file{also}; "
                             "give the path of a file")
        # Reads of a pipe may block from here on: its writer is there or gone.
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _too_big(path, size, limit, what):
    return InputError(f"{os.fspath(path)}: {what} is {size} bytes, more than the {limit} this input "
                      "can be; check that it is the right file")


def read_fd(fd, path, size):
    """Up to `size` bytes from a regular file's fd (fewer if it shrank)."""
    parts, got = [], 0
    with naming(path):
        while got < size:
            chunk = os.pread(fd, min(_READ_CHUNK, size - got), got)
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
    return b"".join(parts)


def _read_stream(fd, path, limit, keep=True):
    """A pipe's bytes (kept for a second open), or those of a file whose
    size fstat does not know (/proc files say 0)."""
    st = os.fstat(fd)
    # ctime too: a later pipe (or FIFO made at a freed inode) is another input.
    key = (st.st_dev, st.st_ino, st.st_ctime_ns)
    if keep and key in _streams:
        return _streams[key]
    cap = STREAM_MAX if limit is None else min(limit, STREAM_MAX)
    parts, got = [], 0
    grace = time.monotonic() + FIFO_GRACE
    with naming(path):
        while True:
            chunk = os.read(fd, min(_READ_CHUNK, cap + 1 - got))
            if not chunk and not got and keep and time.monotonic() < grace:
                # A FIFO's writer may open it just after we did (`cat f > fifo &`):
                # until one has, a read says EOF at once. Wait for it a moment.
                time.sleep(0.01)
                continue
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
            if got > cap:
                raise InputError(f"{os.fspath(path)}: more than {cap} bytes from a pipe or special file, "
                                 "more than this input can be; save it to a file and pass the file")
    data = b"".join(parts)
    st = os.fstat(fd)        # the writes changed its ctime: key it as a second open will see it
    key = (st.st_dev, st.st_ino, st.st_ctime_ns)
    if keep and not data:
        raise InputError(f"{os.fspath(path)}: the pipe gave no bytes (nothing was writing to it?); "
                         "give the path of a file, or write the whole file into the pipe")
    if keep:
        _streams[key] = data
    return data


def load(path, limit=None, *, map_ok=True):
    """A read-only buffer of the file's bytes: an mmap of a regular file
    (when `map_ok` and it is not empty), else bytes. `limit`: the most
    bytes this input may have; a larger file is refused before reading."""
    fd, st = open_input(path)
    try:
        if not stat.S_ISREG(st.st_mode):
            return _read_stream(fd, path, limit)
        if limit is not None and st.st_size > limit:
            raise _too_big(path, st.st_size, limit, "the file")
        if st.st_size == 0:
            return _read_stream(fd, path, limit, keep=False)
        if map_ok:
            sigbus_guard()
            with naming(path):
                return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        return read_fd(fd, path, st.st_size)
    finally:
        os.close(fd)


def read(path, limit=None):
    """The file's bytes (a copy), under the same rules as load()."""
    return load(path, limit, map_ok=False)


# -- a file truncated under a map ----------------------------------------------------
SIGBUS_MESSAGE = (b"rvne: error: a file rvne was reading shrank under it (another program truncated or "
                  b"rewrote it); retry once nothing else is writing it\n")
_handler = None
_on_fatal = []                  # callables run before the SIGBUS exit (temp-file cleanup)


def at_fatal(fn):
    """Run `fn()` before the process exits on SIGBUS; returns an undo."""
    _on_fatal.append(fn)
    return lambda: _on_fatal.remove(fn) if fn in _on_fatal else None


def _on_sigbus(_sig):
    # Runs in the signal's context: only write, unlink and _exit.
    for fn in list(_on_fatal):
        try:
            fn()
        except BaseException:
            pass
    os.write(2, SIGBUS_MESSAGE)
    os._exit(1)


def sigbus_guard():
    """Install the SIGBUS handler once. Python's own signal handlers run
    between bytecodes, never inside the memcpy that faulted (which would
    fault again forever), so the handler is a C-level one through ctypes."""
    global _handler
    if _handler is not None:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        proto = ctypes.CFUNCTYPE(None, ctypes.c_int)
        handler = proto(_on_sigbus)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = [ctypes.c_int, proto]
        libc.signal(signal.SIGBUS, handler)
    except (OSError, AttributeError):     # no libc signal(): keep the default action
        handler = False
    _handler = handler


# -- a lock on a file rewritten by rename ---------------------------------------------
LOCK_WAIT = 30.0


def lock_regular(path, wait=LOCK_WAIT):
    """(fd, stat) of the regular file `path`, opened read-only and holding
    an exclusive flock. A writer replaces the file by rename, so the lock
    is on the inode the path names *after* locking (retried when another
    writer swapped it meanwhile). Closing fd releases the lock."""
    deadline = time.monotonic() + wait
    while True:
        fd, st = open_input(path, pipes=False)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise InputError(f"{os.fspath(path)}: another rvne is writing it (locked for more "
                                         f"than {wait:g} s); retry when it has finished") from None
                    time.sleep(0.02)
            try:
                now = os.stat(path)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                return fd, os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)                        # replaced while we waited: lock the new one
