"""Child processes and their files that cannot outlive rvne (docs/files.md,
"Processes").

- spawn(): the child asks the kernel for SIGKILL when its parent dies
  (prctl PR_SET_PDEATHSIG, set between fork and exec), so even a SIGKILLed
  rvne leaves no virtual device or QEMU running; it also runs in its own
  process group, which stop() kills whole.
- anonymous_file(): a temporary file unlinked as soon as it is created. The
  parent keeps its descriptor and names it /dev/fd/N, and the child gets
  the same descriptor number (pass_fds), so both open it by that name.
  When the last holder dies, however it dies, the kernel frees it: no
  temporary image or log can be left behind.

The death signal is tied to the thread that spawned the child: spawn from a
thread that lives as long as the child (the CLI's main thread does).
"""

import ctypes
import fcntl
import os
import signal
import subprocess
import tempfile

PR_SET_PDEATHSIG = 1

try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _prctl = _libc.prctl
except (OSError, AttributeError):      # not Linux: stop() and the CLI's handlers still apply
    _prctl = None


def _die_with(parent):
    def preexec():
        os.setpgid(0, 0)               # its own group: stop() kills it whole
        if _prctl is not None:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:     # the parent died before prctl took effect
            os._exit(1)
    return preexec


def spawn(args, *, pass_fds=(), **popen_kw):
    """subprocess.Popen(args) for a child that dies with this process."""
    return subprocess.Popen(args, preexec_fn=_die_with(os.getpid()), pass_fds=tuple(pass_fds), **popen_kw)


def stop(proc, grace):
    """Terminate the child's process group, kill it after `grace` seconds;
    safe to call again and on a child that already exited."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait(timeout=grace)


class AnonymousFile:
    """A file with no name on disk; `path` (/dev/fd/N) opens it in this
    process and, with `fd` in pass_fds, in a child. close() frees it."""

    def __init__(self, prefix, data=b""):
        fd, name = tempfile.mkstemp(prefix=prefix)
        os.unlink(name)
        os.set_inheritable(fd, False)
        # Appending: a child's log stays whole across truncate() and retries.
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
        self.fd = fd
        self._gone = name           # what fspath() says once closed: a name that no longer exists
        if data:
            view = memoryview(data).cast("B")
            while view:
                view = view[os.write(fd, view):]

    @property
    def path(self):
        return f"/dev/fd/{self.fd}" if self.fd is not None else self._gone

    def __fspath__(self):
        return self.path

    def truncate(self):
        os.ftruncate(self.fd, 0)

    def read(self):
        """Everything written to it so far (a child's log)."""
        out, pos = [], 0
        while True:
            chunk = os.pread(self.fd, 1 << 16, pos)
            if not chunk:
                return b"".join(out)
            out.append(chunk)
            pos += len(chunk)

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
