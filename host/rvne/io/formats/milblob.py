"""Core ML MILBlob `weight.bin` (docs/format-milblob.md): a 64-byte storage
header (u32 count, u32 version 2, zeros), then per blob a 64-byte metadata
record (sentinel 0xDEADBEEF, dtype code, size, absolute data offset,
padding bits, zeros) followed by its data; every record at a multiple of 64.
Blobs have no names and no shapes: a Core ML program names a blob by the
offset of its metadata record."""

import struct

import numpy as np

from .base import FormatError, Report, Tensor, align_up, check_layout, decode

NAME = "milblob"
TITLE = "Core ML MILBlob weight.bin"

ALIGN = 64
HEADER_SIZE = 64
RECORD_SIZE = 64
VERSION = 2
SENTINEL = 0xDEADBEEF
# sentinel, mil_dtype, sizeInBytes, offset, padding_size_in_bits, reserved_1..4
_RECORD = struct.Struct("<IIQQQ32s")
# Core ML's BlobDataType code -> (rvne dtype name, bits per element). The seed
# lists 1-7, 14, 15; 8-13 (sub-byte) and 16-17 (FP8) are Core ML's too.
DTYPES = {
    1: ("F16", 16), 2: ("F32", 32), 3: ("U8", 8), 4: ("I8", 8), 5: ("BF16", 16), 6: ("I16", 16),
    7: ("U16", 16), 8: ("INT4", 4), 9: ("UINT1", 1), 10: ("UINT2", 2), 11: ("UINT4", 4),
    12: ("UINT3", 3), 13: ("UINT6", 6), 14: ("I32", 32), 15: ("U32", 32), 16: ("F8_E4M3", 8),
    17: ("F8_E5M2", 8),
}
# Codes a pre-iOS-18 writer (coremltools <= 7) could write. Its records left
# bytes 24..63 uninitialised (padding_size_in_bits did not exist yet: it took
# over reserved_0 in coremltools 8, without a version bump), and Core ML
# ignores them for these whole-byte types, so such a record is read as Core ML
# reads it. Sub-byte and newer types (8..17) come only from writers that
# zero the record, so there the bytes are trusted and checked.
LEGACY_CODES = frozenset(range(1, 8))
LEGACY = "W_MIL_LEGACY_RESERVED"
_RECORD_CODES = ("E_MIL_META_BOUNDS", "E_MIL_SENTINEL", "E_MIL_DTYPE", "E_MIL_META_RESERVED",
                 "E_MIL_PADDING_BITS", "E_MIL_EMPTY", "E_MIL_SIZE")
_RECONVERT = ("re-convert the model with coremltools 8 or later (saving an MLModel again copies weight.bin "
              "unchanged)")
_NEEDS_DATA = "reads the data section: run rvne verify or inspect --data"

READINGS = (
    "records are found as Core ML's own reader walks them: record 0 at byte 64, record i+1 at the first "
    "multiple of 64 at or after the end of blob i's data",
    "a blob's data starts right after its record (record offset + 64), as the seed document draws it and "
    "Core ML's writer writes it; Core ML's reader would read data anywhere",
    "the last blob's data may end the file unpadded (Core ML's writer does so) or be zero-padded to a "
    "multiple of 64 (the seed document's drawing); a file ending inside that padding is truncated",
    "dtype codes 1-17 of Core ML's BlobDataType are known (the seed lists 9); sub-byte types are packed "
    "least significant bit first, INT4 is two's complement; FP8 (16, 17) widens to float32 exactly",
    "padding_size_in_bits is checked where the writer zeroed the record (types 8-17): 0 for whole-byte "
    "types, < 8 for sub-byte types; the unused bits are zero",
    "a blob of size 0 is refused: Core ML's writer writes one for an empty array, but Core ML's reader "
    "cannot read it back",
    "the header's reserved bytes are zero; a record's bytes 24..63 (padding_size_in_bits and reserved) "
    "are zero, except that a record of a whole-byte type 1-7 with other bytes there is a pre-iOS-18 "
    "record (coremltools <= 7 left them uninitialised): read as Core ML reads it, ignoring them, with the "
    "warning W_MIL_LEGACY_RESERVED",
    "count is exact: a record where the writer would put the next one means the header is stale",
)


def sniff(src):
    try:
        if len(src) < HEADER_SIZE:
            return False
        head = src.bytes(0, HEADER_SIZE)
        count, version = struct.unpack_from("<II", head)
        if version != VERSION:
            return False
        # With a record, its sentinel identifies the file even when the
        # header's reserved bytes are not zero (E_MIL_RESERVED then says so).
        if src.bytes(HEADER_SIZE, 4) == struct.pack("<I", SENTINEL):
            return True
        return count == 0 and not head[8:].strip(b"\0")
    except Exception:  # sniff never raises, whatever the buffer
        return False


def read(src, *, data=True):
    rep = Report(NAME, TITLE, len(src), readings=list(READINGS))
    _read(src, rep, data)
    return rep


def _read(src, rep, data):
    count = _header(src, rep)
    if rep.error:
        return
    metas, complete = _walk(src, rep, count)
    if rep.error:
        return
    owned = [(m, m + RECORD_SIZE) for m in metas]
    if not check_layout(rep, rep.tensors, prefix="E_MIL", region=(HEADER_SIZE, len(src)), align=ALIGN,
                        owned=owned, owned_label="metadata #{}"):
        return
    if not _chain(rep, metas, complete) or not _counted(src, rep, count, metas) or not _end(src, rep):
        return
    if not data:
        rep.skip("E_MIL_PAD", _NEEDS_DATA)
        rep.skip("E_MIL_TAIL_BITS", _NEEDS_DATA)
        return
    if _padding(src, rep):
        _tail_bits(src, rep)


def _header(src, rep):
    """The blob count; on a broken header rule, records it (rep.error)."""
    size = len(src)
    if size < HEADER_SIZE:
        return rep.fail("E_MIL_TOO_SHORT", f"{size} bytes; a MILBlob file has at least its {HEADER_SIZE}-byte "
                        "storage header")
    rep.ok("E_MIL_TOO_SHORT", f"{size} bytes")
    head = src.bytes(0, HEADER_SIZE)
    count, version = struct.unpack_from("<II", head)
    rep.fields["count"] = count
    rep.fields["version"] = version
    rep.version = version
    if version != VERSION:
        hint = " (version 1 is Espresso's blob_v1, another format)" if version == 1 else ""
        return rep.fail("E_MIL_VERSION", f"storage header version {version}{hint}; rvne reads version {VERSION}")
    rep.ok("E_MIL_VERSION", f"version {VERSION}")
    if head[8:].strip(b"\0"):
        at = 8 + next(i for i, b in enumerate(head[8:]) if b)
        return rep.fail("E_MIL_RESERVED", f"storage header byte {at} is non-zero; bytes 8..63 are reserved "
                        "and must be zero")
    rep.ok("E_MIL_RESERVED", "header bytes 8..63 zero")
    need = HEADER_SIZE + count * RECORD_SIZE
    if need > size:
        return rep.fail("E_MIL_COUNT", f"count {count} needs at least {need} bytes of header and metadata "
                        f"but the file has {size}; count is corrupt or the file is truncated")
    rep.ok("E_MIL_COUNT", f"{count} blobs fit in {size} bytes")
    return count


def _walk(src, rep, count):
    """([metadata offsets], walked all `count`) with rep.tensors filled; a
    broken record rule is recorded (rep.error). The walk stops early,
    leaving the verdict to the layout rules, at a blob whose data is not
    inside the file or not right after its record: the next record cannot
    be found."""
    size = len(src)
    metas, cursor, legacy = [], HEADER_SIZE, []
    for i in range(count):
        at = f"blob #{i} metadata at {cursor}"
        if cursor + RECORD_SIZE > size:
            rep.fail("E_MIL_META_BOUNDS", f"{at}: the record runs past the end of the file ({size} bytes); "
                     f"count {count} is too high or the file is truncated")
            return metas, False
        fields = _RECORD.unpack(src.bytes(cursor, RECORD_SIZE))
        failure = _record_failure(at, *fields)
        if failure:
            rep.fail(*failure)
            return metas, False
        _, code, nbytes, offset, pad, reserved = fields
        if code in LEGACY_CODES and (pad or reserved.strip(b"\0")):
            legacy.append(i)
            pad = 0          # not a field yet when such a record was written
        name, bits = DTYPES[code]
        rep.tensors.append(Tensor(i, None, name, None, offset, nbytes, ALIGN,
                                  {"metadata_offset": cursor, "dtype_code": code, "padding_bits": pad,
                                   "elements": (nbytes * 8 - pad) // bits}))
        metas.append(cursor)
        if offset != cursor + RECORD_SIZE or offset + nbytes > size:
            complete = False
            break
        cursor = align_up(offset + nbytes, ALIGN)
    else:
        complete = True
    for code in _RECORD_CODES:
        rep.ok(code, f"{len(metas)} metadata records")
    _legacy(rep, legacy)
    return metas, complete


def _legacy(rep, legacy):
    if not legacy:
        return
    t = rep.tensors[legacy[0]]
    rep.warn(LEGACY, f"{len(legacy)} of {len(rep.tensors)} metadata records (first {t.label} at "
             f"{t.extra['metadata_offset']}) have non-zero bytes 24..63: written before iOS 18 (coremltools "
             f"<= 7 left them uninitialised); read as Core ML reads them, ignoring those bytes; to get a clean "
             f"file, {_RECONVERT}")


def _record_failure(at, sentinel, code, nbytes, offset, pad, reserved):
    """(code, detail) of the first rule one metadata record breaks, or None."""
    if sentinel != SENTINEL:
        return "E_MIL_SENTINEL", f"{at}: sentinel 0x{sentinel:08X}, not 0xDEADBEEF; count is wrong or the record " \
                                 "is corrupt"
    if code not in DTYPES:
        return "E_MIL_DTYPE", f"{at}: unknown dtype code {code} (Core ML's BlobDataType has 1..{max(DTYPES)})"
    name, bits = DTYPES[code]
    if code in LEGACY_CODES:
        pad = 0   # bytes 24..63 may be a pre-iOS-18 writer's garbage (LEGACY_CODES): not checked
    elif reserved.strip(b"\0"):
        return "E_MIL_META_RESERVED", f"{at}: reserved bytes 32..63 of a {name} blob are {reserved.hex()}, not " \
                                      f"zero; only writers that zero them write {name} (iOS 18 on), so the " \
                                      f"record is corrupt; {_RECONVERT}"
    elif bits % 8 == 0 and pad:
        return "E_MIL_PADDING_BITS", f"{at}: padding_size_in_bits {pad} on a {name} blob; only sub-byte types " \
                                     "have padding bits"
    elif pad >= 8:
        return "E_MIL_PADDING_BITS", f"{at}: padding_size_in_bits {pad} on a {name} blob; it must be < 8"
    if nbytes == 0:
        return "E_MIL_EMPTY", f"{at}: {name} blob of size 0; Core ML's reader cannot read an empty blob"
    if (nbytes * 8 - pad) % bits:
        return "E_MIL_SIZE", f"{at}: {nbytes} bytes less {pad} padding bits is not a whole number of {bits}-bit " \
                             f"{name} elements; the record is corrupt"
    return None


def _chain(rep, metas, complete):
    if complete:
        rep.ok("E_MIL_CHAIN", "every blob's data follows its metadata record")
        return True
    t = rep.tensors[len(metas) - 1]
    return rep.fail("E_MIL_CHAIN", f"{t.label}: data at {t.offset}, not right after its metadata record at "
                    f"{metas[-1]} (expected {metas[-1] + RECORD_SIZE}); the blobs after it cannot be found")


def _counted(src, rep, count, metas):
    at = align_up(rep.tensors[-1].end, ALIGN) if metas else HEADER_SIZE
    if src.has(at, 4) and src.u32(at) == SENTINEL:
        return rep.fail("E_MIL_UNCOUNTED", f"a metadata record follows the last counted blob at {at}; the "
                        f"header's count {count} is stale (a writer stopped early?)")
    rep.ok("E_MIL_UNCOUNTED", f"no record after blob #{count - 1}" if count else "no record after the header")
    return True


def _end(src, rep):
    if not rep.tensors:
        rep.ok("E_MIL_END", "no blobs")
        return True
    end = rep.tensors[-1].end
    padded = align_up(end, ALIGN)
    if end < len(src) < padded:
        return rep.fail("E_MIL_END", f"the file ends at {len(src)}, inside the padding [{end}, {padded}) after "
                        "the last blob; it is truncated")
    rep.ok("E_MIL_END", "the file ends at the last blob's data or its padding to 64")
    return True


def _padding(src, rep):
    """Alignment padding after each blob's data is zero."""
    for t in rep.tensors:
        stop = min(align_up(t.end, ALIGN), len(src))
        pad = src.bytes(t.end, stop - t.end)
        if pad.strip(b"\0"):
            at = t.end + next(i for i, b in enumerate(pad) if b)
            return rep.fail("E_MIL_PAD", f"padding byte {at} after {t.label}'s data is non-zero; the file is "
                            "corrupt")
    rep.ok("E_MIL_PAD", "alignment padding zero")
    return True


def _tail_bits(src, rep):
    """The unused high bits of a sub-byte blob's last byte are zero."""
    for t in rep.tensors:
        pad = t.extra["padding_bits"]
        if pad and src.bytes(t.end - 1, 1)[0] >> (8 - pad):
            return rep.fail("E_MIL_TAIL_BITS", f"{t.label}: the {pad} unused bits of its last byte (at "
                            f"{t.end - 1}) are not zero; the blob is corrupt")
    rep.ok("E_MIL_TAIL_BITS", "unused bits of sub-byte blobs zero")
    return True


# -- decoding -----------------------------------------------------------------------
def _e4m3fn_table():
    """float32 value of every FP8 E4M3FN byte: bias 7, no infinities,
    S.1111.111 is NaN; exact, since every such value is a float32."""
    b = np.arange(256)
    exp, man = (b >> 3) & 0xF, (b & 7).astype(np.float64)
    mag = np.where(exp == 0, man / 8 * 2.0 ** -6, (1 + man / 8) * 2.0 ** (exp - 7))
    mag[(b & 0x7F) == 0x7F] = np.nan
    return np.where(b & 0x80, -mag, mag).astype(np.float32)


_E4M3FN = _e4m3fn_table()


def _unpack_bits(raw, bits, count, signed):
    """`count` elements of `bits` bits, least significant bit first, one
    uint8 (int8 when signed, two's complement) per element."""
    stream = np.unpackbits(np.frombuffer(raw, np.uint8), bitorder="little")[:count * bits]
    cols = np.zeros((count, 8), np.uint8)
    cols[:, :bits] = stream.reshape(count, bits)
    vals = np.packbits(cols, axis=1, bitorder="little").reshape(count)
    if signed:
        shift = 8 - bits
        return (vals.view(np.int8) << shift) >> shift
    return vals


def tensor_array(src, tensor):
    """1-D array of the blob's elements, exactly as stored: whole-byte types
    in their numpy type (BF16 and FP8 widened to float32), sub-byte types
    as one uint8 (INT4: int8) per element."""
    code = tensor.extra.get("dtype_code")
    pad = tensor.extra.get("padding_bits", 0)
    if code not in DTYPES or not src.has(tensor.offset, tensor.size):
        raise FormatError("E_MIL_BOUNDS", f"{tensor.label}: [{tensor.offset}, {tensor.end}) is not a blob inside "
                          "the file; run rvne verify")
    name, bits = DTYPES[code]
    if tensor.size == 0 or not 0 <= pad < 8 or (tensor.size * 8 - pad) % bits:
        raise FormatError("E_MIL_SIZE", f"{tensor.label}: {tensor.size} bytes do not hold whole {name} "
                          "elements; run rvne verify")
    raw = src.window(tensor.offset, tensor.size)
    if bits < 8:
        return _unpack_bits(raw, bits, (tensor.size * 8 - pad) // bits, signed=name == "INT4")
    if name == "F8_E4M3":
        return _E4M3FN[np.frombuffer(raw, np.uint8)]
    if name == "F8_E5M2":  # the high byte of an IEEE half
        return (np.frombuffer(raw, np.uint8).astype(np.uint16) << 8).view(np.float16).astype(np.float32)
    return decode(src, tensor)
