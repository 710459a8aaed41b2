"""Replacing a file whole: a reader (or a crash) sees the old file or the new
one, never a mix, and a failure leaves no half-written file behind
(docs/files.md, "Outputs")."""

import os
import secrets
import stat
import tempfile

from ..errors import OutputError
from . import files


def check_target(path, shown):
    """The stat of the file `path` would replace (None when there is none),
    after refusing what rvne must not replace: a directory, a device node,
    FIFO or socket (renaming over /dev/null would turn it into a file), a
    file nobody may write (root could; the mode says the owner did not want
    it), one the user may not write, one with other hard links (a rename
    would silently split them)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "Is a directory", shown)
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{shown}: is a {files._kind(st.st_mode)}; rvne writes only regular files "
                          "(it replaces the file whole): give the path of a file")
    if not st.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise OutputError(f"{shown}: is read-only (mode {stat.S_IMODE(st.st_mode):04o}); rvne leaves it as "
                          "it is: make it writable (chmod u+w) or write elsewhere")
    if st.st_nlink > 1:
        raise OutputError(f"{shown}: has {st.st_nlink} hard links; replacing it would split them: "
                          "write elsewhere, or remove the other links first")
    return st


def _unnamed(directory):
    """An fd of a new file in `directory` that has no name yet (O_TMPFILE):
    if we are killed while writing it, nothing is left behind. None when
    the file system cannot do it."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):   # the name is given through /proc
        return None
    try:
        return os.open(directory, flag | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    except OSError:
        return None


def write_atomic(path, data, prefix=".rvne-"):
    """Write `data` to a new file in `path`'s directory, fsync it, and rename
    it over `path`. A new file gets the usual mode (0666 less the umask), a
    replaced one keeps its mode and (when we may) its owner. A symbolic link
    is followed: the file it points to is replaced, the link stays. Errors
    name `path`, never the temporary file."""
    shown = os.fspath(path)
    path = os.path.realpath(shown)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "Is a directory", shown)
    old = check_target(path, shown)
    directory = os.path.dirname(path)
    tmp = None
    fd = _unnamed(directory)
    try:
        if fd is None:
            fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    except OSError as exc:  # name the caller's path, not the temporary one
        raise type(exc)(exc.errno, f"{exc.strerror} (cannot create the output)", shown) from None
    undo = files.at_fatal(lambda: tmp and os.unlink(tmp))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if old is not None:
                os.fchmod(f.fileno(), stat.S_IMODE(old.st_mode))
                if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                    try:
                        os.fchown(f.fileno(), old.st_uid, old.st_gid)
                    except PermissionError:
                        pass
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(f.fileno(), 0o666 & ~umask)
            os.fsync(f.fileno())
            if tmp is None:
                # The name exists only from here to the rename.
                name = f"{prefix}{secrets.token_hex(6)}.tmp"
                dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                try:   # a dir fd makes os.link call linkat(AT_SYMLINK_FOLLOW), needed here
                    os.link(f"/proc/self/fd/{f.fileno()}", name, dst_dir_fd=dfd)
                finally:
                    os.close(dfd)
                tmp = os.path.join(directory, name)
        os.replace(tmp, path)
        tmp = None
    except BaseException as exc:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if isinstance(exc, OSError) and exc.errno is not None:
            raise type(exc)(exc.errno, f"{exc.strerror} (the output was left as it was)", shown) from None
        raise
    finally:
        undo()
