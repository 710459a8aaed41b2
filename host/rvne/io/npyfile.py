"""One .npy array from bytes, read no further than its header allows: the
header's shape and dtype must account for exactly the bytes that follow,
checked before anything is allocated (np.load would allocate what a forged
header asks for, and unpickle an object array)."""

import io

import numpy as np


class NpyError(ValueError):
    """Not a readable .npy array; the message says why."""


def header(data):
    """(shape, fortran_order, dtype, data offset) of the .npy in `data`."""
    f = io.BytesIO(bytes(data[:65536 + 16]))    # a v1/v2 header is far shorter
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise NpyError(f"unsupported .npy version {version}")
    except NpyError:
        raise
    except Exception as exc:    # ValueError, EOFError, SyntaxError from a forged header
        raise NpyError(f"bad .npy header ({type(exc).__name__}: {exc})") from None
    if dtype.hasobject:
        raise NpyError("holds Python objects (pickles), which rvne never loads")
    return shape, fortran, dtype, f.tell()


def load(data):
    """The array in `data` (bytes-like), a read-only view where possible."""
    shape, fortran, dtype, offset = header(data)
    count = 1
    for n in shape:
        count *= n
    need = count * dtype.itemsize
    have = len(data) - offset
    if need != have:
        raise NpyError(f"header promises {need} bytes of {dtype} {shape}, the file holds {have}")
    arr = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
    return arr.reshape(shape[::-1]).T if fortran else arr.reshape(shape)
