"""RVNE v1 blobs (docs/format.md): the header, parsing with the format's
rules applied in their order, and serialisation.

parse() reads bytes, a memoryview or an mmap in place: the weights it hands
back are views into that buffer, never copies."""

import os
import struct
from dataclasses import dataclass, replace

import numpy as np

from ..errors import (
    BadFlagsError, BlobError, BadMagicError, BadVersionError, CrcError, ElemSizeError, ErasedError,
    LengthError, NonFiniteError, ReservedError, TooShortError, naming,
)
from ..model import contract
from ..model.contract import Dims
from . import files
from .crc import byte_view, crc32

MAGIC = 0x52564E45
VERSION = 1
FLAG_FP16 = 0x01
FLAG_INT8 = 0x02
FLAGS_DEFINED = FLAG_FP16 | FLAG_INT8
FLAGS_OF_DTYPE = {"fp32": 0, "fp16": FLAG_FP16, "int8": FLAG_INT8}
HEADER_LEN = 24
FOOTER_LEN = 4
MIN_LEN = HEADER_LEN + FOOTER_LEN
_HEADER = struct.Struct("<IHBB6HI")
_CRC = struct.Struct("<I")
assert _HEADER.size == HEADER_LEN

# The bytes of MAGIC as a big-endian writer would put them: ASCII "RVNE".
SWAPPED_MAGIC = int.from_bytes(b"RVNE", "little")
ERASED_MAGIC = 0xFFFFFFFF


@dataclass(frozen=True)
class Header:
    """The 24 header bytes, field for field in wire order. Construct with
    keywords or Header.for_dims(); unpack() does not validate."""

    magic: int = MAGIC
    version: int = VERSION
    flags: int = 0
    reserved: int = 0
    input_dim: int = 0
    n_q_heads: int = 0
    n_kv_heads: int = 0
    head_dim: int = 0
    n_layers: int = 0
    n_classes: int = 0
    weights_len: int = 0

    @classmethod
    def for_dims(cls, dims, fp16=False, weights_len=None):
        """`fp16`: the historical bool, or a dtype name ("fp32", "fp16", "int8")."""
        d = Dims.of(dims)
        dtype = contract.dtype_name(fp16)
        if weights_len is None:
            weights_len = contract.expected_weights_len(contract.check_writable(d, dtype), dtype)
        return cls(flags=FLAGS_OF_DTYPE[dtype], weights_len=weights_len, **d._asdict())

    @classmethod
    def unpack(cls, buf):
        return cls(*_HEADER.unpack_from(buf, 0))

    def pack(self):
        try:
            return _HEADER.pack(
                self.magic, self.version, self.flags, self.reserved, *self.dims, self.weights_len
            )
        except struct.error as exc:
            raise contract.ContractError(f"header field out of range for its wire type: {exc} ({self})") from None

    @property
    def fp16(self):
        return bool(self.flags & FLAG_FP16)

    @property
    def int8(self):
        return bool(self.flags & FLAG_INT8)

    @property
    def dtype(self):
        return "int8" if self.int8 else "fp16" if self.fp16 else "fp32"

    @property
    def elem_size(self):
        return contract.DTYPE_ELEM_SIZE[self.dtype]

    @property
    def dims(self):
        return Dims.of(self)

    @property
    def total_len(self):
        return MIN_LEN + self.weights_len

    @property
    def expected_weights_len(self):
        return contract.expected_weights_len(self.dims, self.dtype)

    @property
    def loadable(self):
        return self.weights_len == self.expected_weights_len

    def check_contract(self):
        """format.md rule 14: the head can use these weights (an int8
        blob's parameters are Blob.check_contract()'s: they need the bytes)."""
        contract.check_weights_len(self.dims, self.dtype, self.weights_len)
        return self


@dataclass(frozen=True)
class Blob:
    """A container-valid blob (rules 1-13). `raw` is the blob's own bytes
    [0, total_len) and `weights` its weights, both memoryviews into the
    parsed buffer."""

    header: Header
    raw: memoryview
    crc_stored: int
    crc_computed: int

    @property
    def weights(self):
        return self.raw[HEADER_LEN:HEADER_LEN + self.header.weights_len]

    @property
    def weight_array(self):
        """The flat weights as stored: '<f4' values, '<u2' FP16 bit
        patterns, or an int8 blob's bytes ('u1': parameters, tables and
        weights); a read-only view, no copy."""
        wire = np.dtype("u1") if self.header.int8 else contract.WIRE_DTYPE[self.header.fp16]
        a = np.frombuffer(self.weights, dtype=wire)
        a.flags.writeable = False
        return a

    @property
    def loadable(self):
        return self.header.loadable

    def check_contract(self):
        """Rule 14, for an int8 blob rule 17 (E_QPARAM), else rule 18 (E_NONFINITE)."""
        self.header.check_contract()
        if self.header.int8:
            self.int8_model()
        else:
            self.check_finite()
        return self

    def check_finite(self):
        """Rule 18: every FP32 / FP16 weight is finite (a NaN or inf weight
        makes every logit NaN or inf; the device refuses it as at boot)."""
        a = self.weight_array
        bits = a if self.header.fp16 else a.view("<u4")
        bad = np.flatnonzero((bits & 0x7C00) == 0x7C00 if self.header.fp16 else (bits & 0x7F800000) == 0x7F800000)
        if bad.size:
            i = int(bad[0])
            value = a[i:i + 1].view("<f2")[0] if self.header.fp16 else a[i]
            raise NonFiniteError(f"weight {i} (byte offset {HEADER_LEN + i * self.header.elem_size}) is {float(value)}; "
                                 f"{bad.size} weights are NaN or infinite: fix the model before packing it")
        return self

    def int8_model(self):
        """An int8 blob's parameters and weights (rvne.model.int8.Int8Model),
        validated; ContractError / QParamError when they break a rule."""
        if not self.header.int8:
            raise contract.ContractError(f"a {self.header.dtype} blob has no int8 model: quantise it with rvne quantize")
        from ..model.int8 import Int8Model

        return Int8Model.from_weights(self.weights, self.header.dims)

    def tensors(self):
        """Named float32 (in x out) arrays; raises ContractError when the
        weights do not match the dims (rule 14), or for an int8 blob (its
        integers are int8_model()'s)."""
        return contract.weights_to_arrays(self.weights, self.header.dims, self.header.dtype)

    def to_bytes(self):
        return bytes(self.raw)


def _fmt_magic(value):
    return f"0x{value:08X} (bytes {' '.join(f'{b:02X}' for b in value.to_bytes(4, 'little'))})"


def check_header_fields(h):
    """Rules 3-6 on an unpacked header (rule 2 is the caller's: it needs the
    raw bytes, identical to the magic here)."""
    if h.magic == ERASED_MAGIC:
        raise ErasedError("magic is FF FF FF FF: erased flash? flash a blob with rvne flash")
    if h.magic != MAGIC:
        if h.magic == SWAPPED_MAGIC:
            raise BadMagicError(
                f"magic is {_fmt_magic(h.magic)}, the file starts with ASCII \"RVNE\": wrong byte order; "
                f"the magic 0x{MAGIC:08X} is written little-endian, so a blob starts with \"ENVR\" (45 4E 56 52)"
            )
        raise BadMagicError(
            f"magic is {_fmt_magic(h.magic)}, expected 0x{MAGIC:08X} (bytes 45 4E 56 52): not an RVNE blob"
        )
    if h.version != VERSION:
        raise BadVersionError(f"version is {h.version}, this reader supports only version {VERSION}: re-export the blob as RVNE v1")
    if h.flags & ~FLAGS_DEFINED & 0xFF:
        raise BadFlagsError(
            f"flags is 0x{h.flags:02X}: reserved bits 0x{h.flags & ~FLAGS_DEFINED & 0xFF:02X} are set "
            "(only bit 0, FP16, and bit 1, int8, are defined)"
        )
    if h.flags & FLAGS_DEFINED == FLAGS_DEFINED:
        raise BadFlagsError(f"flags is 0x{h.flags:02X}: bit 0 (FP16) and bit 1 (int8) are both set; a blob is one dtype")
    if h.reserved != 0:
        raise ReservedError(f"reserved byte (offset 0x07) is 0x{h.reserved:02X}, must be 0")


def check_dims(h):
    """Rules 9-13."""
    h.dims.check()
    if h.weights_len % h.elem_size:
        raise ElemSizeError(
            f"weights_len {h.weights_len} is not a multiple of the {h.dtype.upper()} element size {h.elem_size}"
        )


def parse(buf, *, exact_length=True):
    """Check rules 1-13 of docs/format.md in order over `buf` (bytes,
    bytearray, memoryview, mmap, numpy uint8 array) and return a Blob whose
    views point into `buf`. exact_length=False reads a partition: the bytes
    after the CRC are ignored. Rule 14 (the head's contract) is
    Blob.check_contract(); see also parse_loadable()."""
    view = byte_view(buf)
    n = len(view)
    what = "blob" if exact_length else "partition"
    if n < MIN_LEN:
        raise TooShortError(
            f"{what} is {n} bytes, shorter than the {MIN_LEN}-byte minimum (24-byte header + 4-byte CRC): truncated?"
        )
    h = Header.unpack(view)
    check_header_fields(h)
    total = h.total_len
    if exact_length and n != total:
        raise LengthError(
            f"blob is {n} bytes but 28 + weights_len ({h.weights_len}) = {total}: "
            + ("truncated?" if n < total else "trailing bytes after the CRC (a partition image? read it as one: --partition)")
        )
    if not exact_length and total > n:
        raise LengthError(f"28 + weights_len ({h.weights_len}) = {total} bytes does not fit the {n}-byte partition")
    body = view[:total - FOOTER_LEN]
    stored = _CRC.unpack_from(view, total - FOOTER_LEN)[0]
    computed = crc32(body)
    if stored != computed:
        raise CrcError(f"CRC mismatch: stored 0x{stored:08X}, computed 0x{computed:08X}: the blob is corrupted, re-create or re-copy it")
    check_dims(h)
    return Blob(h, view[:total], stored, computed)


def parse_loadable(buf, *, exact_length=True):
    """Rules 1-14: what the firmware loads."""
    return parse(buf, exact_length=exact_length).check_contract()


def serialize(header, weights):
    """Header + weights + CRC. weights_len is taken from `weights` (a
    buffer, or a list of buffers to concatenate); the other fields from
    `header`. Refuses to write a blob a reader would refuse (rules 3-13); a
    blob that misses the head's contract (rule 14) can be written, as
    upstream can produce one."""
    chunks = [byte_view(c) for c in (weights if isinstance(weights, (list, tuple)) else [weights])]
    header = replace(header, weights_len=sum(len(c) for c in chunks))
    check_header_fields(header)
    check_dims(header)
    head = header.pack()
    crc = crc32(head)
    for c in chunks:
        crc = crc32(c, crc)
    # One copy of the weights, made by join.
    return b"".join([head, *chunks, _CRC.pack(crc)])


def from_arrays(arrays, dims, fp16=False):
    """A blob's bytes from named (in x out) arrays of the contract."""
    d = Dims.of(dims).check()
    return serialize(Header.for_dims(d, fp16), contract.weight_chunks(arrays, d, fp16))


def from_int8(model):
    """An int8 blob's bytes from an rvne.model.int8.Int8Model (validated
    first: a writer refuses what a reader refuses)."""
    model.validate()
    return serialize(Header.for_dims(model.dims, "int8"), model.weight_chunks())


def read_file(path, *, exact_length=True, contract=False):
    """Parse a blob file in place: a regular file is memory-mapped (nothing
    copied; the map lives as long as the returned Blob's views), anything
    else (a pipe, an empty file) is read. With `contract`, rule 14 too. A
    refusal's message starts with the path (a command may read several
    files, and "erased flash?" must not be taken for the image's)."""
    buf = map_file(path)
    try:
        parsed = parse(buf, exact_length=exact_length)
        return parsed.check_contract() if contract else parsed
    except BlobError as exc:
        raise type(exc)(f"{os.fspath(path)}: {exc.code}: {exc}") from None


def map_file(path):
    """A read-only buffer of the file's bytes: an mmap for a non-empty
    regular file, bytes for a pipe (read once, docs/files.md). A directory
    raises IsADirectoryError, a device InputError."""
    return files.load(path)
