"""CNN v2 `.bin` weights (docs/format-cnn2.md): a 16-byte header, one
20-byte record per layer, then every layer's f16 weights packed two to a
little-endian u32 (low half first), layer after layer with no gaps."""

import struct

import numpy as np

from .base import FormatError, Report, Tensor, check_layout, decode

NAME = "cnn2"
TITLE = "CNN v2 .bin"

MAGIC = b"CNN2"            # u32 0x324E4E43 written little-endian
VERSION = 1
HEADER_SIZE = 16
RECORD_SIZE = 20
MAX_OUT_CHANNELS = 8
STATIC_FEATURES = 8        # layer 1 sees these plus 0..7 outputs fed back
MAX_FIRST_IN = STATIC_FEATURES + 7
U32_MAX = (1 << 32) - 1
_HEADER = struct.Struct("<4sIII")
_RECORD = struct.Struct("<5I")
CHUNK = 1 << 22            # weights per step of the NaN/Inf scan
_NEEDS_DATA = "reads the data section: run rvne verify or inspect --data"

READINGS = (
    "the magic is the u32 0x324E4E43 stored little-endian, i.e. the bytes \"CNN2\"",
    "num_layers must be at least 1 and its 20-byte records must fit in the file",
    "the file is exactly 16 + 20*num_layers + 2*total_weights bytes, as the seed's size check "
    "computes; with an odd total_weights the last u32 holds one weight and its high half is "
    "absent from the file (warned: a loader reading whole u32 words reads 2 bytes past the end)",
    "kernel_size must be >= 1; an even kernel_size is a warning (the seed lists 3, 5, 7 'etc.' "
    "and the layout does not depend on it)",
    "out_channels must be 1..8 (the seed's 'max 8'); in_channels must be >= 1",
    "layer 1 in_channels outside 8..15 (8 static features + 0..7 outputs) is a warning, and so "
    "is a layer whose in_channels differs from the previous layer's out_channels, as in the "
    "seed's example (15->8, 8->4, 4->3): the container is still readable",
    "weight i of the data section is the f16 at byte 2*i of it (the packing u32 = hi<<16 | lo "
    "stored little-endian is a plain little-endian f16 array), so a layer may start at an odd "
    "index; tensors are shaped (out_channels, in_channels, k, k) by the seed's weight index",
    "NaN or Inf weights are a warning of the data check (the file is well formed)",
)


def sniff(src):
    return src.bytes(0, len(MAGIC)) == MAGIC  # short files give fewer bytes, never raise


def read(src, *, data=True):
    rep = Report(NAME, TITLE, len(src), readings=list(READINGS))
    _read(src, rep, data)
    return rep


def _read(src, rep, data):
    head = _header(src, rep)
    if head is None:
        return
    num_layers, total = head
    if not _layer_count(rep, num_layers) or not _size(rep, num_layers, total):
        return
    data_start = HEADER_SIZE + num_layers * RECORD_SIZE
    records = _records(src, num_layers)
    if not _layers(rep, records, data_start) or not _total(rep, records, total):
        return
    _architecture(rep, records, total)
    check_layout(rep, rep.tensors, prefix="E_CNN2", region=(data_start, len(src)), align=None)
    if data:
        _finite(src, rep, data_start, total)
    else:
        rep.skip("E_CNN2_F16", _NEEDS_DATA)


def _header(src, rep):
    """(num_layers, total_weights), or None after a failed header rule."""
    size = len(src)
    got = src.bytes(0, len(MAGIC))
    if got != MAGIC:
        return rep.fail("E_CNN2_MAGIC", f"first bytes are {got!r}, not {MAGIC!r}; not a CNN v2 file") or None
    rep.ok("E_CNN2_MAGIC", "CNN2")
    if size < HEADER_SIZE:
        return rep.fail("E_CNN2_HEADER", f"the file has {size} bytes, fewer than the {HEADER_SIZE}-byte "
                        "header; it is truncated") or None
    rep.ok("E_CNN2_HEADER", f"{HEADER_SIZE} bytes")
    magic, version, num_layers, total = _HEADER.unpack(src.bytes(0, HEADER_SIZE))
    rep.version = version
    rep.fields.update(magic=magic.decode(), version=version, num_layers=num_layers, total_weights=total)
    if version != VERSION:
        return rep.fail("E_CNN2_VERSION", f"version is {version}; rvne reads only version {VERSION}") or None
    rep.ok("E_CNN2_VERSION", f"version {VERSION}")
    return num_layers, total


def _wraps(value):
    return f" (a loader computing it in 32 bits gets {value & U32_MAX})" if value > U32_MAX else ""


def _layer_count(rep, n):
    end = HEADER_SIZE + n * RECORD_SIZE
    if n < 1:
        return rep.fail("E_CNN2_LAYERS", "num_layers is 0; a network needs at least one layer")
    if end > rep.size:
        return rep.fail("E_CNN2_LAYERS", f"{n} layer records need bytes [16, {end}){_wraps(end)} but the "
                        f"file has {rep.size}; num_layers is wrong or the file is truncated")
    rep.ok("E_CNN2_LAYERS", f"{n} layer records in [16, {end})")
    rep.fields["data_offset"] = end
    return True


def _size(rep, n, total):
    want = HEADER_SIZE + n * RECORD_SIZE + 2 * total
    if rep.size != want:
        return rep.fail("E_CNN2_SIZE", f"size mismatch: the file has {rep.size} bytes, 16 + 20*{n} + "
                        f"2*{total} = {want}{_wraps(want)}; the file is truncated or extended, or "
                        "total_weights is wrong")
    rep.ok("E_CNN2_SIZE", f"{want} bytes = 16 + 20*{n} + 2*{total}")
    return True


def _records(src, n):
    raw = src.bytes(HEADER_SIZE, n * RECORD_SIZE)
    return [_RECORD.unpack_from(raw, i * RECORD_SIZE) for i in range(n)]


def _layer_failure(i, rec, cumulative):
    """(code, detail) of the first rule layer i (1-based) breaks, or None."""
    k, cin, cout, offset, count = rec
    at = f"layer {i} (record at byte {HEADER_SIZE + (i - 1) * RECORD_SIZE})"
    if k < 1:
        return "E_CNN2_KERNEL", f"{at}: kernel_size is 0; it must be >= 1"
    if cin < 1:
        return "E_CNN2_IN_CHANNELS", f"{at}: in_channels is 0; it must be >= 1"
    if not 1 <= cout <= MAX_OUT_CHANNELS:
        return "E_CNN2_OUT_CHANNELS", f"{at}: out_channels is {cout}; it must be 1..{MAX_OUT_CHANNELS}"
    want = cout * cin * k * k
    if count != want:
        return "E_CNN2_WEIGHT_COUNT", f"{at}: weight_count {count} != out*in*k*k = {cout}*{cin}*{k}*{k} = " \
                                      f"{want}{_wraps(want)}; the record is corrupt"
    if offset != cumulative:
        return "E_CNN2_OFFSET", f"{at}: invalid offset: weight_offset {offset} != {cumulative}, the sum of " \
                                "the earlier layers' weight_count; the record is corrupt"
    return None


def _layers(rep, records, data_start):
    """Appends one tensor per valid layer; False at the first broken rule."""
    cumulative = 0
    for i, rec in enumerate(records, 1):
        failure = _layer_failure(i, rec, cumulative)
        if failure:
            return rep.fail(*failure)
        k, cin, cout, offset, count = rec
        rep.tensors.append(Tensor(i - 1, None, "F16", (cout, cin, k, k), data_start + 2 * offset, 2 * count,
                                  None, {"key": f"layer_{i}", "kernel_size": k, "in_channels": cin,
                                         "out_channels": cout, "weight_offset": offset}))
        cumulative += count
    n = len(records)
    for code, what in (("E_CNN2_KERNEL", "kernel_size >= 1"), ("E_CNN2_IN_CHANNELS", "in_channels >= 1"),
                       ("E_CNN2_OUT_CHANNELS", f"out_channels 1..{MAX_OUT_CHANNELS}"),
                       ("E_CNN2_WEIGHT_COUNT", "weight_count = out*in*k*k"),
                       ("E_CNN2_OFFSET", "weight_offset = sum of earlier counts")):
        rep.ok(code, f"{n} layers: {what}")
    return True


def _total(rep, records, total):
    cumulative = sum(rec[4] for rec in records)
    if cumulative != total:
        return rep.fail("E_CNN2_TOTAL", f"total mismatch: the layers hold {cumulative} weights but "
                        f"total_weights is {total}; the header is corrupt")
    rep.ok("E_CNN2_TOTAL", f"{total} weights")
    return True


def _architecture(rep, records, total):
    """Warnings only: what the seed says of the network, not of the container."""
    even = [i for i, rec in enumerate(records, 1) if rec[0] % 2 == 0]
    if even:
        rep.warn("E_CNN2_KERNEL_ODD", f"layer {even[0]} has an even kernel_size {records[even[0] - 1][0]} "
                 f"({len(even)} layers); the seed's kernels are odd (3, 5, 7)")
    else:
        rep.ok("E_CNN2_KERNEL_ODD", "every kernel_size is odd")
    first_in = records[0][1]
    if not STATIC_FEATURES <= first_in <= MAX_FIRST_IN:
        rep.warn("E_CNN2_STATIC", f"layer 1 in_channels is {first_in}, not {STATIC_FEATURES}..{MAX_FIRST_IN} "
                 f"({STATIC_FEATURES} static features + 0..7 fed-back outputs)")
    else:
        rep.ok("E_CNN2_STATIC", f"layer 1 in_channels {first_in}")
    bad = [i for i in range(1, len(records)) if records[i][1] != records[i - 1][2]]
    if bad:
        i = bad[0]
        rep.warn("E_CNN2_CHAIN", f"layer {i + 1} in_channels {records[i][1]} != layer {i} out_channels "
                 f"{records[i - 1][2]} ({len(bad)} such layers)")
    else:
        rep.ok("E_CNN2_CHAIN", "each layer's in_channels = the previous layer's out_channels")
    if total % 2:
        rep.warn("E_CNN2_ODD_TOTAL", f"total_weights {total} is odd: the last u32 holds one weight and its "
                 "high half is not in the file; a loader reading whole u32 words reads 2 bytes past the end")
    else:
        rep.ok("E_CNN2_ODD_TOTAL", f"{total // 2} whole u32 words")


def _finite(src, rep, data_start, total):
    bits = np.frombuffer(src.window(data_start, 2 * total), dtype="<u2")
    count, first = 0, None
    for at in range(0, bits.size, CHUNK):  # chunks: no temporary as big as a 1 GiB file
        bad = np.flatnonzero((bits[at:at + CHUNK] & 0x7C00) == 0x7C00)  # exponent all ones: Inf or NaN
        if bad.size and first is None:
            first = at + int(bad[0])
        count += bad.size
    if count:
        rep.warn("E_CNN2_F16", f"{count} weights are NaN or Inf, the first is weight {first} "
                 f"(byte {data_start + 2 * first})")
    else:
        rep.ok("E_CNN2_F16", f"{total} weights finite")


def tensor_array(src, tensor):
    """float16 array (out, in, k, k), exactly as stored."""
    want = 2
    for d in tensor.shape:
        want *= d
    if tensor.size != want or tensor.offset % 2 or not src.has(tensor.offset, tensor.size):
        raise FormatError("E_CNN2_BOUNDS", f"{tensor.label}: [{tensor.offset}, {tensor.end}) of {want} bytes "
                          "is not inside the file; run rvne verify")
    return decode(src, tensor)
