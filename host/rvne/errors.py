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


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text) -> str:
    """`text` safe for one line on a terminal and for strict JSON: control
    bytes (newline, ESC, BEL, C1), line separators and the lone surrogates
    Python makes of bytes that are not UTF-8 (a file name's) become escapes
    (`\\n`, `\\x1b`, `\\xff`), so a hostile file name can neither split the one
    error line nor drive the terminal."""
    text = str(text)
    if text.isprintable():
        return text
    out = []
    for ch in text:
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:            # os.fsdecode's stand-in for a byte that is not UTF-8
            out.append(f"\\x{o - 0xDC00:02x}")
        elif ch in _NAMED:
            out.append(_NAMED[ch])
        elif o < 0x20 or 0x7F <= o <= 0x9F:
            out.append(f"\\x{o:02x}")
        elif 0xD800 <= o <= 0xDFFF or o in (0x2028, 0x2029):
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    return "".join(out)


def printable_json(value):
    """A JSON-ready value whose strings have no lone surrogates (strict JSON
    readers refuse them); other characters json.dumps escapes itself."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return "".join(ch if not 0xD800 <= ord(ch) <= 0xDFFF else printable(ch) for ch in value)
    if isinstance(value, dict):
        return {printable_json(k): printable_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_json(v) for v in value]
    return value


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


class QParamError(BlobError):
    """An int8 blob's quantisation parameter breaks a rule of docs/model.md
    ("Integer model"): the message names the parameter, layer, index, value."""

    code = "E_QPARAM"


class NonFiniteError(BlobError):
    """Rule 18: an FP32 or FP16 weight is NaN or infinite."""

    code = "E_NONFINITE"


BLOB_ERRORS = {
    cls.code: cls
    for cls in (
        TooShortError, ErasedError, BadMagicError, BadVersionError, BadFlagsError,
        ReservedError, LengthError, CrcError, ZeroDimError, GqaError, NoLayersError,
        FewClassesError, ElemSizeError, ContractError, QParamError, NonFiniteError,
    )
}


# -- weights files (npz / safetensors) ----------------------------------------
class WeightsFileError(RvneError):
    code = "E_WEIGHTS"


# -- quantisation (rvne quantize) ----------------------------------------------
class QuantizeError(RvneError):
    """The float model or its calibration cannot give an int8 model."""

    code = "E_QUANTIZE"


class ZeroRangeError(QuantizeError):
    """An activation is all zeros on the calibration frames: no scale maps it."""

    code = "E_ZERO_RANGE"


class ScaleRangeError(QuantizeError):
    """A requantisation factor falls outside what (mult, shift) can hold."""

    code = "E_SCALE_RANGE"


class CalibrationError(QuantizeError):
    """Calibration frames that are empty, of the wrong width, or not finite."""

    code = "E_CALIBRATION"


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


# -- signed models (docs/format.md "Signed models") ---------------------------
class SignatureError(RvneError):
    code = "E_SIGNATURE"


class UnsignedError(SignatureError):
    """No trailer after the blob, where the board's policy asks for a signature."""

    code = "E_UNSIGNED"


class BadSignatureError(SignatureError):
    """The trailer, the layout, the signature sector or a signature does not hold."""

    code = "E_BAD_SIGNATURE"


class UntrustedKeyError(SignatureError):
    code = "E_UNTRUSTED_KEY"


class RevokedKeyError(SignatureError):
    code = "E_REVOKED_KEY"


class RollbackError(SignatureError):
    """The model's version is below the one the board serves."""

    code = "E_ROLLBACK"


SIGNATURE_ERRORS = {cls.code: cls for cls in (UnsignedError, BadSignatureError, UntrustedKeyError,
                                              RevokedKeyError, RollbackError)}


# -- board farms through labgrid (docs/farm.md) ------------------------------
class FarmError(RvneError):
    """The coordinator cannot be reached, a place is unknown or has no serial
    port, or labgrid is not installed."""

    code = "E_FARM"


class PlaceBusyError(FarmError):
    """The place is acquired by someone else (named in the message)."""

    code = "E_PLACE_BUSY"


class UpdateError(RvneError):
    """`rvne update` refused or failed; `code` is the device's refusal
    (docs/protocol.md, "Updating the model") when it gave one."""

    code = "E_UPDATE"

    def __init__(self, message, code=None):
        super().__init__(message)
        if code:
            self.code = code
