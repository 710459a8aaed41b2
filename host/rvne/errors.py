"""Every error rvne raises on bad input. One class per rule; `code` is the
name docs/format.md and docs/protocol.md give it, shared with the firmware."""

import contextlib
import os


@contextlib.contextmanager
def naming(path):
    """Attach `path` to an OSError raised without a file name (a read()
    failing with EIO names no file), so the CLI's one line says which."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:
            raise type(exc)(exc.errno, exc.strerror, os.fspath(path)) from None
        raise


class RvneError(Exception):
    """Base: a one-line message saying what is wrong and what to do."""

    code = "E_RVNE"


# -- blob container and contract (docs/format.md, rules 1-16) ---------------
class BlobError(RvneError):
    code = "E_BLOB"


class TooShortError(BlobError):
    code = "E_TOO_SHORT"


class ErasedError(BlobError):
    code = "E_ERASED"


class BadMagicError(BlobError):
    code = "E_BAD_MAGIC"


class BadVersionError(BlobError):
    code = "E_BAD_VERSION"


class BadFlagsError(BlobError):
    code = "E_BAD_FLAGS"


class ReservedError(BlobError):
    code = "E_RESERVED"


class LengthError(BlobError):
    code = "E_LENGTH"


class CrcError(BlobError):
    code = "E_CRC"


class ZeroDimError(BlobError):
    code = "E_ZERO_DIM"


class GqaError(BlobError):
    code = "E_GQA"


class NoLayersError(BlobError):
    code = "E_NO_LAYERS"


class FewClassesError(BlobError):
    code = "E_FEW_CLASSES"


class ElemSizeError(BlobError):
    code = "E_ELEM_SIZE"


class ContractError(BlobError):
    code = "E_CONTRACT"


BLOB_ERRORS = {
    cls.code: cls
    for cls in (
        TooShortError, ErasedError, BadMagicError, BadVersionError, BadFlagsError,
        ReservedError, LengthError, CrcError, ZeroDimError, GqaError, NoLayersError,
        FewClassesError, ElemSizeError, ContractError,
    )
}


# -- weights files (npz / safetensors) ----------------------------------------
class WeightsFileError(RvneError):
    code = "E_WEIGHTS"


# -- device, protocol, flashing -----------------------------------------------
class DeviceError(RvneError):
    """The device did not answer, answered garbage, or reported an error."""

    code = "E_DEVICE"


class ProtocolError(DeviceError):
    """An ERR reply; `code` is the device's error code (docs/protocol.md)."""

    def __init__(self, code, message):
        super().__init__(f"device replied {code}: {message}")
        self.code = code


class TargetError(RvneError):
    """A target (virtual device, QEMU board) could not be built or started."""

    code = "E_TARGET"


class InputError(RvneError):
    """A path rvne may not read or replace as asked (docs/files.md)."""

    code = "E_INPUT"


class OutputError(RvneError):
    code = "E_OUTPUT"


class PartitionError(RvneError):
    code = "E_PARTITION"


class FlashError(RvneError):
    code = "E_FLASH"
