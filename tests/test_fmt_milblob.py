"""Core ML MILBlob weight.bin reader (docs/format-milblob.md) against files
from Core ML's own writer (coremltools) and from the fixture writer:
round trips both ways, one malformed file per rule, a mutation/truncation
sweep, headers-only reads of a 1 GiB sparse file."""

import mmap
import random
import struct

import numpy as np
import pytest
from fmt_fixtures import milblob as fx
from fmt_fixtures import assert_refused, doc_rule_codes

from rvne.io.formats import base, milblob

U64 = (1 << 64) - 1


def read(raw, data=True):
    return milblob.read(base.Source(raw), data=data)


def patch(raw, offset, new):
    out = bytearray(raw)
    out[offset:offset + len(new)] = new
    return bytes(out)


def u32(v):
    return struct.pack("<I", v)


def small():
    """F32 (24 bytes), UINT3 (7 elements: 3 bytes, 3 padding bits), F16 (6 bytes)."""
    return [("F32", np.arange(6, dtype=np.float32) - 2.5), ("UINT3", np.arange(1, 8)),
            ("F16", np.array([1.5, -0.0, 65504], np.float16))]


def built(**kw):
    return fx.build(small(), **kw)


# -- Core ML's own writer ------------------------------------------------------------
def cml():
    from coremltools import libmilstoragepython   # in the test extras: an oracle, never skipped

    return libmilstoragepython


def real_write(path, blobs):
    """Core ML's StorageWriter; [(kind, array)] -> metadata offsets. The
    writer flushes the header count when it is destroyed, so no bound
    method may outlive this call."""
    w = cml()._BlobStorageWriter(str(path))
    offsets = [getattr(w, f"write_{kind}_data")(arr) for kind, arr in blobs]
    del w
    return offsets


def real_blobs(seed=7):
    """(writer kind, rvne dtype, array as given to the writer, expected decoded array)."""
    rng = np.random.default_rng(seed)
    f32 = rng.standard_normal(37).astype(np.float32)
    f32[:4] = [np.inf, -0.0, 1e-45, np.float32(3.4028235e38)]
    f16 = rng.standard_normal(11).astype(np.float16)
    out = [("float", "F32", f32, f32), ("fp16", "F16", f16.view(np.uint16), f16)]
    for kind, dt, np_dt in (("int8", "I8", np.int8), ("uint8", "U8", np.uint8), ("int16", "I16", np.int16),
                            ("uint16", "U16", np.uint16), ("int32", "I32", np.int32),
                            ("uint32", "U32", np.uint32)):
        info = np.iinfo(np_dt)
        a = rng.integers(info.min, info.max, 13, endpoint=True, dtype=np.int64).astype(np_dt)
        out.append((kind, dt, a, a))
    a = rng.integers(-8, 7, 23, endpoint=True).astype(np.int8)
    a[:2] = [-8, 7]
    out.append(("int4", "INT4", a, a))
    for bits in (1, 2, 3, 4, 6):
        a = rng.integers(0, (1 << bits) - 1, 29 + bits, endpoint=True).astype(np.uint8)
        a[0] = (1 << bits) - 1
        out.append((f"uint{bits}", f"UINT{bits}", a, a))
    return out


def test_core_ml_writer_round_trip_every_type(tmp_path):
    blobs = real_blobs()
    path = tmp_path / "weight.bin"
    offsets = real_write(path, [(k, a) for k, _, a, _ in blobs])
    raw = path.read_bytes()
    src = base.Source(raw)
    assert milblob.sniff(src)
    rep = milblob.read(src)
    assert rep.valid, rep.error
    assert rep.version == 2 and rep.fields["count"] == len(blobs)
    assert [t.extra["metadata_offset"] for t in rep.tensors] == offsets
    for t, (_, dtype, _, want) in zip(rep.tensors, blobs):
        assert t.dtype == dtype and t.name is None and t.shape is None and t.align == 64
        assert t.offset == t.extra["metadata_offset"] + 64
        got = milblob.tensor_array(src, t)
        assert got.dtype == want.dtype and got.shape == want.shape, dtype
        assert got.tobytes() == want.tobytes(), dtype
    assert len(raw) == rep.tensors[-1].end         # Core ML leaves the last blob unpadded


def test_fixture_writer_writes_what_core_ml_writes(tmp_path):
    """Byte for byte: the fixture writer is a faithful stand-in for the
    malformed variants and the types coremltools' Python binding lacks."""
    blobs = real_blobs(seed=3)
    path = tmp_path / "weight.bin"
    real_write(path, [(k, a) for k, _, a, _ in blobs])
    mine, _ = fx.build([(dtype, want) for _, dtype, _, want in blobs])
    assert mine == path.read_bytes()


def test_core_ml_reader_reads_fixture_files(tmp_path):
    blobs = real_blobs(seed=5)
    path = tmp_path / "weight.bin"
    layout = fx.write(path, [(dtype, want) for _, dtype, _, want in blobs])
    reader = cml()._BlobStorageReader(str(path))
    src = base.Source(path.read_bytes())
    rep = milblob.read(src)
    assert rep.valid, rep.error
    for meta, t, (kind, _, _, want) in zip(layout.meta, rep.tensors, blobs):
        theirs = np.asarray(getattr(reader, f"read_{kind}_data")(meta))
        ours = milblob.tensor_array(src, t)
        assert theirs.tobytes() == (want.view(np.uint16) if kind == "fp16" else want).tobytes()
        assert ours.tobytes() == want.tobytes()


def test_no_blobs_is_valid(tmp_path):
    path = tmp_path / "empty.bin"
    real_write(path, [])
    raw = path.read_bytes()
    assert raw == struct.pack("<II", 0, 2) + bytes(56)
    rep = read(raw)
    assert rep.valid and rep.tensors == []


def test_core_ml_empty_blob_is_refused_as_core_ml_cannot_read_it(tmp_path):
    path = tmp_path / "w.bin"
    offsets = real_write(path, [("float", np.ones(2, np.float32)), ("float", np.zeros(0, np.float32))])
    with pytest.raises(ValueError):
        cml()._BlobStorageReader(str(path)).read_float_data(offsets[1])
    rep = read(path.read_bytes())
    assert rep.error.code == "E_MIL_EMPTY"
    assert len(rep.tensors) == 1                   # the blob before it stays readable


@pytest.mark.parametrize("variant", ["misaligned", "reserved", "padding_field", "stale_count"])
def test_stricter_than_core_ml(tmp_path, variant):
    """Files Core ML's reader reads without complaint and no real writer
    writes, each refused here."""
    blobs = [("F32", np.arange(16, dtype=np.float32)), ("F32", np.ones(2, np.float32))]
    read_first = "read_float_data"
    if variant == "misaligned":
        raw, lay = fx.build(blobs, overrides={0: {"offset": 132, "size": 8}})
        code = "E_MIL_ALIGN"
    elif variant in ("reserved", "padding_field"):
        # I32 is written only by coremltools 8 on, which zeroes the record.
        blobs[0] = ("I32", np.arange(16, dtype=np.int32))
        read_first = "read_int32_data"
        change = {"reserved": b"\x01"} if variant == "reserved" else {"padding": 5}
        raw, lay = fx.build(blobs, overrides={0: change})
        code = "E_MIL_META_RESERVED" if variant == "reserved" else "E_MIL_PADDING_BITS"
    else:
        raw, lay = fx.build(blobs, count=1)
        code = "E_MIL_UNCOUNTED"
    path = tmp_path / "w.bin"
    path.write_bytes(raw)
    assert getattr(cml()._BlobStorageReader(str(path)), read_first)(lay.meta[0]).size > 0
    assert_refused(read(raw), code)


GARBAGE = bytes(range(0xA1, 0xA1 + 40))    # what a pre-iOS-18 writer left in bytes 24..63


@pytest.mark.parametrize("dtype", ["F16", "F32", "U8", "I8", "BF16", "I16", "U16"])
def test_pre_ios18_records_are_read_as_core_ml_reads_them(tmp_path, dtype):
    """Types 1-7 with garbage in bytes 24..63 (padding field and reserved):
    accepted with W_MIL_LEGACY_RESERVED, values as Core ML's reader gives them."""
    values = np.arange(1, 10).astype(fx.DTYPES[dtype][1])
    raw, lay = fx.build([(dtype, values), ("F32", np.ones(3, np.float32))],
                        overrides={0: {"padding": int.from_bytes(GARBAGE[:8], "little"), "reserved": GARBAGE[8:]}})
    src = base.Source(raw)
    rep = milblob.read(src)
    assert rep.valid, rep.error
    warns = [c for c in rep.checks if c.status == base.WARN]
    assert [c.code for c in warns] == ["W_MIL_LEGACY_RESERVED"]
    assert "1 of 2" in warns[0].detail and "re-convert" in warns[0].detail and "re-save" not in warns[0].detail
    assert rep.tensors[0].extra["padding_bits"] == 0 and rep.tensors[0].extra["elements"] == 9
    want = (values.astype(np.uint32) << 16).view(np.float32) if dtype == "BF16" else values
    assert milblob.tensor_array(src, rep.tensors[0]).tobytes() == want.tobytes()
    if dtype in ("F16", "F32", "U8", "I8", "I16", "U16"):   # what the Python binding can read
        kind = {"F16": "fp16", "F32": "float", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16"}[dtype]
        path = tmp_path / "w.bin"
        path.write_bytes(raw)
        theirs = np.asarray(getattr(cml()._BlobStorageReader(str(path)), f"read_{kind}_data")(lay.meta[0]))
        assert theirs.tobytes() == values.tobytes()


@pytest.mark.parametrize("dtype", ["UINT3", "INT4", "I32", "U32", "F8_E4M3"])
def test_garbage_is_trusted_to_be_corruption_in_types_of_zeroing_writers(dtype):
    values = [1, 2, 3, 4, 5] if dtype != "F8_E4M3" else np.array([0x38] * 5, np.uint8)
    rep = read(fx.build([(dtype, values)], overrides={0: {"reserved": GARBAGE[8:]}})[0])
    assert_refused(rep, "E_MIL_META_RESERVED")
    assert "re-convert" in rep.error.detail and "re-save" not in rep.error.detail


# -- the fixture writer: types Core ML's Python binding cannot write -----------------
def test_bf16_and_fp8_decode_exactly():
    bf16 = np.array([0x3F80, 0xC000, 0x7F80, 0x0001, 0x8000, 0x7FC1], np.uint16)   # 1, -2, inf, tiny, -0, NaN
    e4m3 = np.array([0x00, 0x01, 0x08, 0x38, 0x7E, 0xFE, 0x7F, 0x80, 0xB8], np.uint8)
    e5m2 = np.array([0x00, 0x01, 0x3C, 0x7B, 0x7C, 0xFC, 0x7D, 0x80], np.uint8)
    raw, _ = fx.build([("BF16", bf16), ("F8_E4M3", e4m3), ("F8_E5M2", e5m2)])
    src = base.Source(raw)
    rep = milblob.read(src)
    assert rep.valid, rep.error
    got = [milblob.tensor_array(src, t) for t in rep.tensors]
    assert all(g.dtype == np.float32 for g in got)
    assert np.array_equal(got[0].view(np.uint32), bf16.astype(np.uint32) << 16)
    want_e4m3 = [0.0, 2.0 ** -9, 2.0 ** -6, 1.0, 448.0, -448.0, np.nan, -0.0, -1.0]
    want_e5m2 = [0.0, 2.0 ** -16, 1.0, 57344.0, np.inf, -np.inf, np.nan, -0.0]
    for g, w in ((got[1], want_e4m3), (got[2], want_e5m2)):
        w = np.array(w, np.float32)
        assert np.array_equal(g, w, equal_nan=True)
        assert np.array_equal(np.signbit(g), np.signbit(w))


def test_fixture_round_trip_keeps_nan_payloads_and_padded_last_blob():
    f32 = np.array([1.0, 2.0, 3.0], np.float32)
    f32.view(np.uint32)[1] = 0x7FC00123
    raw, lay = fx.build([("F32", f32), ("UINT1", [1, 0, 1])], pad_last=True)
    assert len(raw) % 64 == 0
    src = base.Source(raw)
    rep = milblob.read(src)
    assert rep.valid, rep.error
    assert milblob.tensor_array(src, rep.tensors[0]).tobytes() == f32.tobytes()
    assert list(milblob.tensor_array(src, rep.tensors[1])) == [1, 0, 1]
    assert rep.tensors[1].extra == {"metadata_offset": lay.meta[1], "dtype_code": 9, "padding_bits": 5,
                                    "elements": 3}


def test_sniff():
    raw, _ = built()
    assert milblob.sniff(base.Source(raw))
    assert milblob.sniff(base.Source(fx.header(0)))
    # A record's sentinel identifies the file even with a damaged header, so
    # that E_MIL_RESERVED, not "unknown format", reports the damage.
    assert milblob.sniff(base.Source(patch(raw, 40, b"\x01")))
    for other in (b"", raw[:63], patch(raw, 4, u32(1)), patch(raw, 64, b"\0"),
                  fx.header(0, reserved=b"\x01"), b"LWATCHV1" + bytes(120)):
        assert not milblob.sniff(base.Source(other))


# -- one malformed file per rule ------------------------------------------------------
def with_tail(raw, n):
    return raw + bytes(n)


def variant(overrides, **kw):
    return built(overrides=overrides, **kw)[0]


def truncated_in_last_padding():
    raw, lay = built(pad_last=True)
    end = lay.data[-1] + lay.sizes[-1]
    assert len(raw) > end + 1
    return raw[:end + 1]


def pad_variant():
    raw, lay = built()
    return patch(raw, lay.data[0] + lay.sizes[0] + 3, b"\x02")


def tail_bits_variant():
    raw, lay = built()
    last = lay.data[1] + lay.sizes[1] - 1          # UINT3: 3 unused high bits
    return patch(raw, last, bytes([raw[last] | 0x80]))


CASES = {
    "E_MIL_TOO_SHORT": lambda: built()[0][:63],
    "E_MIL_VERSION": lambda: patch(built()[0], 4, u32(1)),
    "E_MIL_RESERVED": lambda: patch(built()[0], 40, b"\x01"),
    "E_MIL_COUNT": lambda: patch(built()[0], 0, u32(0xFFFFFFFF)),
    "E_MIL_META_BOUNDS": lambda: built(count=4)[0],
    "E_MIL_SENTINEL": lambda: variant({1: {"sentinel": 0xDEADBEEE}}),
    "E_MIL_DTYPE": lambda: variant({1: {"code": 18}}),
    # Blob 1 is UINT3: a type only writers that zero the record write (types 1-7 see W_MIL_LEGACY_RESERVED).
    "E_MIL_META_RESERVED": lambda: variant({1: {"reserved": bytes(31) + b"\x01"}}),
    "E_MIL_PADDING_BITS": lambda: variant({1: {"padding": 8}}),
    "E_MIL_EMPTY": lambda: fx.build([("F32", [1.0]), ("F32", []), ("F32", [2.0])])[0],
    "E_MIL_SIZE": lambda: variant({0: {"size": 22}}),
    "E_MIL_BOUNDS": lambda: variant({2: {"size": 64}}),
    "E_MIL_ALIGN": lambda: variant({2: {"offset": fx.up(390) - 62}}, pad_last=True),
    "E_MIL_OVERLAP": lambda: variant({1: {"offset": 128}}),
    "E_MIL_CHAIN": lambda: with_tail(variant({2: {"offset": 448}}, pad_last=True), 64),
    "E_MIL_UNCOUNTED": lambda: built(count=2)[0],
    "E_MIL_END": truncated_in_last_padding,
    "E_MIL_PAD": pad_variant,
    "E_MIL_TAIL_BITS": tail_bits_variant,
}


@pytest.mark.parametrize("code", list(CASES))
def test_each_rule_refuses_with_its_named_error(code):
    assert_refused(read(CASES[code]()), code)


def test_small_layout_is_what_the_cases_assume():
    raw, lay = built()
    assert lay.meta == [64, 192, 320] and lay.data == [128, 256, 384] and lay.sizes == [24, 3, 6]
    assert len(raw) == 390 and lay.padding == [0, 3, 0]
    assert read(raw).valid


def test_rule_table_in_doc_lists_every_code_in_read_order():
    order = doc_rule_codes("format-milblob.md", "E_MIL_")
    emitted = [c.code for c in read(built()[0]).checks]
    assert set(CASES) | {"E_MIL_HOLE"} <= set(order)
    assert set(emitted) <= set(order)
    assert [c for c in order if c in emitted] == emitted


def test_offset_plus_size_wrapping_2_64_is_named():
    rep = read(variant({2: {"offset": U64 - 63, "size": 128}}))
    assert rep.error.code == "E_MIL_BOUNDS" and "2^64" in rep.error.detail


def test_data_pointing_into_a_metadata_record_overlaps():
    rep = read(variant({1: {"offset": 64}}))
    assert rep.error.code == "E_MIL_OVERLAP" and "metadata #0" in rep.error.detail


@pytest.mark.parametrize("dtype,raw,pad", [("UINT3", b"\x01", 7), ("UINT6", b"\x01\x02", 3),
                                           ("INT4", b"\x01", 2), ("UINT1", b"\x01", 8)])
def test_sub_byte_padding_and_size(dtype, raw, pad):
    rep = read(fx.build([(dtype, raw, pad)])[0])
    assert rep.error.code == ("E_MIL_PADDING_BITS" if pad >= 8 else "E_MIL_SIZE")


def test_truncation_inside_a_middle_record_and_count_too_high():
    raw, lay = built()
    assert read(raw[:lay.meta[2] + 10]).error.code == "E_MIL_META_BOUNDS"
    assert read(patch(raw, 0, u32(6))).error.code == "E_MIL_COUNT"


def test_holes_are_warned_not_refused():
    raw = with_tail(built(pad_last=True)[0], 128)
    rep = read(raw)
    assert rep.valid, rep.error
    hole = [c for c in rep.checks if c.code == "E_MIL_HOLE"][0]
    assert hole.status == base.WARN and rep.holes == [(390, len(raw))]


def test_data_false_skips_data_rules_only():
    for raw in (pad_variant(), tail_bits_variant()):
        rep = read(raw, data=False)
        assert rep.valid, rep.error
        assert {c.code for c in rep.checks if c.status == base.SKIPPED} == {"E_MIL_PAD", "E_MIL_TAIL_BITS"}


def test_record_failure_keeps_the_blobs_read_before_it():
    rep = read(CASES["E_MIL_DTYPE"]())
    assert [t.dtype for t in rep.tensors] == ["F32"]
    assert [t.dtype for t in read(CASES["E_MIL_PADDING_BITS"]()).tensors] == ["F32"]


def test_tensor_array_refuses_a_blob_outside_the_file():
    raw, _ = built()
    src = base.Source(raw)
    t = read(raw).tensors[0]
    t.offset = len(raw) - 4
    with pytest.raises(base.FormatError) as exc:
        milblob.tensor_array(src, t)
    assert exc.value.code == "E_MIL_BOUNDS"


# -- robustness -----------------------------------------------------------------------
def try_read(raw):
    src = base.Source(raw)
    for data in (False, True):
        rep = milblob.read(src, data=data)
        assert isinstance(rep, base.Report)
    if rep.valid:
        for t in rep.tensors:
            milblob.tensor_array(src, t)
    return rep


def test_every_truncation_fails():
    raw, _ = fx.build(small() + [("INT4", [-8, 7, 1]), ("U16", [1, 2, 3])])
    for n in range(len(raw)):
        assert not try_read(raw[:n]).valid, n


def test_truncating_the_optional_last_padding():
    raw, lay = built(pad_last=True)
    end = lay.data[-1] + lay.sizes[-1]
    for n in range(end, len(raw) + 1):
        rep = read(raw[:n])
        assert rep.valid == (n in (end, len(raw))), n


def test_seeded_mutation_sweep_never_raises():
    rng = random.Random(4321)
    raw, lay = built()
    outcomes = set()
    for i in range(400):
        m = bytearray(raw)
        kind = i % 4
        if kind == 0:
            for _ in range(rng.randint(1, 3)):
                m[rng.choice([rng.randrange(64), rng.choice(lay.meta) + rng.randrange(64)])] = rng.randrange(256)
        elif kind == 1:
            m[rng.randrange(len(m))] ^= 1 << rng.randrange(8)
        elif kind == 2:
            at = rng.choice(lay.meta) + rng.choice([8, 16, 24])
            m[at:at + 8] = struct.pack("<Q", rng.choice([0, 1, 63, 64, 128, 1 << 32, 1 << 63, U64,
                                                          rng.getrandbits(64)]))
        else:
            at = rng.randrange(len(m))
            m[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 9)))
        rep = try_read(bytes(m))
        outcomes.add(rep.error.code if rep.error else "valid")
    assert len(outcomes) > 8


# -- headers-only reading of a big file -----------------------------------------------
def test_data_false_reads_under_a_kilobyte_of_a_1gib_sparse_file(tmp_path):
    path = tmp_path / "weight.bin"
    size = fx.write_sparse(path, total=1 << 30, count=4)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        src = base.Source(mm)
        rep = milblob.read(src, data=False)
        assert len(src) == size >= (1 << 30) - 4 * 128
        assert rep.valid, rep.error
        assert len(rep.tensors) == 4 and rep.tensors[-1].end == size
        assert src.bytes_read < 1024
        del src, rep


def test_sparse_writer_makes_a_valid_file(tmp_path):
    path = tmp_path / "mid.bin"
    fx.write_sparse(path, total=4 << 20, count=3)
    rep = read(path.read_bytes())
    assert rep.valid, rep.error
    assert len(rep.tensors) == 3
