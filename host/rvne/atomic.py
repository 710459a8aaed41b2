"""Replacing a file whole: a reader (or a crash) sees the old file or the new
one, never a mix, and a failure leaves no half-written file behind."""

import os
import tempfile


def write_atomic(path, data, prefix=".rvne-"):
    """Write `data` to a temporary file (named `prefix`...) in `path`'s
    directory, fsync it, and rename it over `path`. A new file gets the
    usual mode (0666 less the umask), a replaced one keeps its mode. A
    symbolic link is followed: the file it points to is replaced, the link
    stays. Errors name `path`, never the temporary file."""
    shown = os.fspath(path)
    path = os.path.realpath(shown)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "Is a directory", shown)
    directory = os.path.dirname(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    except OSError as exc:  # name the caller's path, not the temporary one
        raise type(exc)(exc.errno, f"{exc.strerror} (cannot create the output)", shown) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o777)
        else:  # mkstemp made it 0600
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and exc.errno is not None:
            raise type(exc)(exc.errno, f"{exc.strerror} (the output was left as it was)", shown) from None
        raise
