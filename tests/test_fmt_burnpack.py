"""Burnpack reader (docs/format-burnpack.md) against files from the fixture
writer, which lays files out as Burn's writer does: round trips of every
dtype, one malformed file per rule, the cases Burn's own reader misses, a
mutation/truncation sweep, headers-only reads of a sparse 1 GiB file."""

import mmap
import random
import struct

import cbor2
import numpy as np
import pytest
from fmt_fixtures import burnpack as fx
from fmt_fixtures import assert_refused, doc_rule_codes

from rvne.io.formats import base, burnpack

U64 = (1 << 64) - 1


def read(raw, data=True):
    return burnpack.read(base.Source(raw), data=data)


def patch(raw, offset, new):
    out = bytearray(raw)
    out[offset:offset + len(new)] = new
    return bytes(out)


def small():
    """Three tensors whose sizes leave alignment padding between them."""
    return {"enc.0.q.weight": np.arange(6, dtype=np.float32).reshape(2, 3),
            "enc.0.q.bias": np.array([1.5, -2.0, 3.25], np.float32),
            "head.weight": np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5)}


def built(**kw):
    return fx.build(small(), **kw)


def same_bits(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


# -- round trips ----------------------------------------------------------------------
def all_dtypes():
    rng = np.random.default_rng(3)
    bf16_bits = np.array([0x3F80, 0xC000, 0x7F80, 0xFF80, 0x7FC1, 0x0001, 0x8000], np.uint16)
    return [
        ("f64", rng.standard_normal((2, 3))), ("f32", rng.standard_normal((3, 2)).astype(np.float32)),
        ("f16", rng.standard_normal(5).astype(np.float16)), ("bf16", bf16_bits, "BF16"),
        ("flex32", np.array([1.0, -0.5], np.float32), "Flex32"),
        ("i64", np.array([-(1 << 63), (1 << 63) - 1], np.int64)), ("i32", np.arange(-3, 3, dtype=np.int32)),
        ("i16", np.array([-32768, 32767], np.int16)), ("i8", np.array([-128, 127], np.int8)),
        ("u64", np.array([U64, 0], np.uint64)), ("u32", np.array([1, 2, 3], np.uint32)),
        ("u16", np.array([65535], np.uint16)), ("u8", np.arange(7, dtype=np.uint8)),
        ("bool_old", np.array([True, False, True])), ("bool_native", np.array([False, True]), {"Bool": "Native"}),
        ("bool_u8", np.array([1, 0], np.uint8), {"Bool": "U8"}),
        ("bool_u32", np.array([1, 0, 1], np.uint32), {"Bool": "U32"}),
        ("scalar", np.float32(2.5).reshape(())), ("empty", np.zeros((0, 4), np.float32)),
    ]


def test_every_dtype_round_trips_bit_exact():
    items = all_dtypes()
    raw, layout = fx.build(items, metadata={"rvne.dims": "16,4,1,32,2,4", "format": "burnpack"})
    src = base.Source(raw)
    rep = burnpack.read(src)
    assert rep.valid, rep.error
    assert rep.version == 1 and raw[:4] == bytes.fromhex("4E525542")
    assert rep.fields["metadata"] == {"rvne.dims": "16,4,1,32,2,4", "format": "burnpack"}
    assert [t.name for t in rep.tensors] == sorted(n for n, *_ in items)   # Burn's BTreeMap order
    want_dtype = {"bf16": "BF16", "flex32": "F32", "bool_old": "BOOL", "bool_native": "BOOL",
                  "bool_u8": "BOOL", "bool_u32": "U32", "scalar": "F32", "empty": "F32"}
    by_name = {n: a for n, a, *_ in items}
    for t in rep.tensors:
        assert t.offset % 256 == 0 and t.align == 256
        assert (t.offset, t.end) == layout.offsets[t.name]
        assert t.dtype == want_dtype.get(t.name, t.name.upper()), t.name
        got = burnpack.tensor_array(src, t)
        want = by_name[t.name]
        if t.name == "bf16":
            want = (want.astype(np.uint32) << 16).view(np.float32)
            assert got.dtype == np.float32
        elif t.dtype == "BOOL":
            want = want.astype(bool)
        assert same_bits(got, want), t.name
    assert rep.tensors[0].extra["burn_dtype"] == "BF16"
    assert {t.name: t.extra["burn_dtype"] for t in rep.tensors}["bool_u32"] == "Bool(U32)"


def test_param_ids_scalars_and_unknown_keys_are_shown():
    tensors = [("w", np.ones(3, np.float32), None, 12345678901234567890), ("b", np.zeros(2, np.float32))]
    scalars = {"step": {"UInt": 10}, "lr": {"Float": 0.001}, "warm": {"Bool": True}, "neg": {"Int": -3}}
    raw, _ = fx.build(tensors, scalars=scalars, top_over={"future": [1, 2]}, desc_over={"b": {"note": "x"}})
    rep = read(raw)
    assert rep.valid, rep.error
    t = {t.name: t for t in rep.tensors}
    assert t["w"].extra["param_id"] == 12345678901234567890 and "param_id" not in t["b"].extra
    assert t["b"].extra["cbor.note"] == "x"
    assert rep.fields["scalars"] == scalars and rep.fields["cbor.future"] == [1, 2]


def test_zero_tensors_is_a_valid_file_padded_to_256():
    raw, layout = fx.build({})
    rep = read(raw)
    assert rep.valid, rep.error
    assert len(raw) == layout.data_offset == 256 and rep.tensors == []


def test_sniff():
    raw, _ = built()
    assert burnpack.sniff(base.Source(raw))
    assert burnpack.sniff(base.Source(b"BURN" + raw[4:]))     # so the swapped file gets its own error
    for other in (b"", b"NRU", b"NRUC", b"LWATCHV1", b"\0" * 16):
        assert not burnpack.sniff(base.Source(other))


# -- one malformed file per rule --------------------------------------------------------
def truncated_in_padding():
    raw, layout = fx.build({})
    meta_end = fx.HEADER_SIZE + layout.metadata_size
    assert layout.data_offset > meta_end + 1
    return raw[:meta_end + 1]


def pad_variant():
    raw, layout = built()
    return patch(raw, layout.data_offset - 1, b"\x01")


def nested_cbor(depth):
    return b"\xa1" + cbor2.dumps("tensors") + b"\xa1" + cbor2.dumps("x") + b"\x81" * depth + b"\xa0"


CASES = {
    "E_BP_SWAPPED": lambda: patch(built()[0], 0, b"BURN"),
    "E_BP_MAGIC": lambda: patch(built()[0], 0, b"NRUC"),
    "E_BP_HEADER": lambda: built()[0][:9],
    "E_BP_VERSION": lambda: built(version=2)[0],
    "E_BP_META_SIZE": lambda: patch(built()[0], 6, struct.pack("<I", burnpack.META_MAX_BYTES + 1)),
    "E_BP_TRUNCATED": truncated_in_padding,
    "E_BP_CBOR": lambda: built(raw_metadata=nested_cbor(200))[0],
    "E_BP_DUP_NAME": lambda: fx.build([("w", np.ones(2, np.float32)), ("w", np.ones(2, np.float32))])[0],
    "E_BP_SCHEMA": lambda: built(desc_over={"head.weight": {"shape": None}})[0],
    "E_BP_DTYPE": lambda: built(desc_over={"head.weight": {"dtype": "F8E4M3"}})[0],
    "E_BP_OFFSETS": lambda: built(desc_over={"enc.0.q.bias": {"data_offsets": [256, 244]}})[0],
    "E_BP_SIZE": lambda: built(desc_over={"head.weight": {"shape": [4, 6]}})[0],
    # 10 GiB + 4 bytes: shape and offsets agree, Burn's cap refuses it before the bounds do
    "E_BP_TENSOR_SIZE": lambda: built(desc_over={"head.weight": {"shape": [(10 << 30) // 4 + 1],
                                                               "data_offsets": [512, 512 + (10 << 30) + 4]}})[0],
    "E_BP_BOUNDS": lambda: built()[0][:-1],
    "E_BP_ALIGN": lambda: fx.build([("x", np.ones(8, np.float32)), ("y", np.ones(8, np.float32))],
                                   offsets=[0, 64])[0],
    "E_BP_OVERLAP": lambda: fx.build([("x", np.ones(8, np.float32)), ("y", np.ones(8, np.float32))],
                                     offsets=[0, 0])[0],
    "E_BP_PAD": pad_variant,
}


@pytest.mark.parametrize("code", list(CASES))
def test_each_rule_refuses_with_its_named_error(code):
    assert_refused(read(CASES[code]()), code)


def test_a_file_over_burns_100_gib_cap_is_refused(tmp_path):
    """Burn's MAX_FILE_SIZE; a sparse file, so the disk stays empty."""
    path = tmp_path / "huge.bpk"
    path.write_bytes(built()[0])
    with open(path, "r+b") as f:
        f.truncate(burnpack.MAX_FILE_BYTES + 1)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        src = base.Source(m, path)
        assert_refused(burnpack.read(src, data=False), "E_BP_FILE_SIZE")
        assert src.bytes_read < 4096
        del src
    path.write_bytes(built()[0])
    with open(path, "r+b") as f:
        f.truncate(burnpack.MAX_FILE_BYTES)        # at the cap: the next rule speaks (bytes after the tensors)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        rep = burnpack.read(base.Source(m, path), data=False)
        assert [c.status for c in rep.checks if c.code == "E_BP_FILE_SIZE"] == [base.OK]


def test_rule_table_in_doc_lists_every_code_in_read_order():
    order = doc_rule_codes("format-burnpack.md", "E_BP_")
    emitted = [c.code for c in read(built()[0]).checks]
    assert set(CASES) | {"E_BP_HOLE", "E_BP_FILE_SIZE"} == set(order)
    assert emitted == order


def test_swapped_magic_says_so_and_the_seed_comment_writes_it():
    # the seed document's comment: magic 0x4E525542 written little-endian = bytes 42 55 52 4E, "BURN"
    raw = patch(built()[0], 0, struct.pack("<I", 0x4E525542))
    assert raw[:4] == b"BURN"
    err = read(raw).error
    assert err.code == "E_BP_SWAPPED" and "byte-swapped" in err.detail


@pytest.mark.parametrize("version", [0, 2, 0xFFFF])
def test_only_version_1(version):
    assert read(built(version=version)[0]).error.code == "E_BP_VERSION"


def test_metadata_size_past_the_end_of_the_file():
    raw, layout = built()
    assert read(patch(raw, 6, struct.pack("<I", len(raw)))).error.code == "E_BP_META_SIZE"
    assert read(raw[:fx.HEADER_SIZE + layout.metadata_size - 1]).error.code == "E_BP_META_SIZE"


@pytest.mark.parametrize("meta", [b"", b"\xa1", cbor2.dumps({"tensors": {}}) + b"\x00", b"\x1c",
                                  b"\xa1\x67tensors\xa1\x61\xff\xa0"])
def test_malformed_cbor(meta):
    assert read(built(raw_metadata=meta)[0]).error.code == "E_BP_CBOR"


def test_duplicate_key_inside_a_descriptor_is_named_too():
    desc = fx.cbor_map([("dtype", "F32"), ("shape", [2]), ("dtype", "F32"), ("data_offsets", [0, 8])])
    meta = b"\xa1" + cbor2.dumps("tensors") + fx.map_header(1) + cbor2.dumps("w") + desc
    err = read(fx.build([("w", np.ones(2, np.float32))], raw_metadata=meta)[0]).error
    assert err.code == "E_BP_DUP_NAME" and "tensors.w" in err.detail


@pytest.mark.parametrize("kw", [
    {"top_over": {"tensors": cbor2.dumps([1, 2])}},
    {"raw_metadata": cbor2.dumps({"metadata": {}})},
    {"raw_metadata": cbor2.dumps([1])},
    {"metadata": {"k": 3}},
    {"scalars": {"s": {"Int": 1 << 63}}},
    {"scalars": {"s": {"Complex": 1}}},
    {"scalars": {"s": {"Bool": 1}}},
    {"desc_over": {"head.weight": {"shape": [4, -5]}}},
    {"desc_over": {"head.weight": {"shape": [4, True]}}},
    {"desc_over": {"head.weight": {"shape": "4x5"}}},
    {"desc_over": {"head.weight": {"data_offsets": [512]}}},
    {"desc_over": {"head.weight": {"data_offsets": [512, 1 << 64]}}},
    {"desc_over": {"head.weight": {"param_id": -1}}},
    {"desc_over": {"head.weight": {"dtype": 4}}},
])
def test_schema_types(kw):
    assert read(built(**kw)[0]).error.code == "E_BP_SCHEMA"


@pytest.mark.parametrize("dtype", ["f32", "F128", {"Bool": "U16"}, {"Bool": 1}, {"F32": None},
                                   {"QFloat": 1}, {"Bool": "U8", "x": 1}])
def test_unknown_dtypes(dtype):
    assert read(built(desc_over={"head.weight": {"dtype": dtype}})[0]).error.code == "E_BP_DTYPE"


def test_qfloat_is_recognised_but_not_decoded():
    scheme = {"level": "Tensor", "mode": "Symmetric", "value": "Q8S", "store": "Native", "param": "F32"}
    raw, _ = fx.build([("q", np.arange(12, dtype=np.int8), {"QFloat": scheme})],
                      desc_over={"q": {"shape": [2, 4]}})
    src = base.Source(raw)
    rep = burnpack.read(src)
    assert rep.valid, rep.error
    t = rep.tensors[0]
    assert t.dtype == "QFLOAT" and t.extra["burn_dtype"] == "QFloat"
    with pytest.raises(base.FormatError) as exc:
        burnpack.tensor_array(src, t)
    assert exc.value.code == "E_BP_DTYPE"


def test_size_product_past_2_64_is_named():
    """shape [2^62, 8] of F32 = 2^67 bytes, which a 64-bit product wraps to 0."""
    rep = read(built(desc_over={"head.weight": {"shape": [1 << 62, 8], "data_offsets": [512, 512]}})[0])
    assert rep.error.code == "E_BP_SIZE" and "2^64" in rep.error.detail


def test_a_huge_shape_is_refused_quickly():
    rep = read(built(desc_over={"head.weight": {"shape": [U64] * 5000}})[0])
    assert rep.error.code == "E_BP_SIZE" and "2^130" in rep.error.detail


def test_offsets_wrapping_2_64_are_named():
    start = U64 - 255 - 24 + 1
    rep = read(built(desc_over={"enc.0.q.weight": {"data_offsets": [start, start + 24]}})[0])
    assert rep.error.code == "E_BP_BOUNDS" and "2^64" in rep.error.detail


def test_burns_own_truncation_check_misses_what_rvne_refuses():
    """Burn's reader requires only len >= 10 + N + max(end): up to 255 bytes
    short of the data section start + max(end). rvne refuses every such file."""
    raw, layout = built()
    meta_end = fx.HEADER_SIZE + layout.metadata_size
    max_end = max(b for _, b in layout.offsets.values()) - layout.data_offset
    burn_minimum = meta_end + max_end
    assert burn_minimum < len(raw)
    for n in range(burn_minimum, len(raw)):
        assert read(raw[:n]).error.code == "E_BP_BOUNDS", n


def test_tensors_truncated_inside_the_padding_before_the_data():
    raw, layout = built()
    meta_end = fx.HEADER_SIZE + layout.metadata_size
    for n in range(meta_end, layout.data_offset):
        assert read(raw[:n]).error.code == "E_BP_TRUNCATED", n


def test_trailing_bytes():
    n = len(built()[0])
    up = -(-n // 256) * 256
    assert up > n
    rep = read(built(tail=b"\0" * (up - n))[0])  # up to the next multiple of 256: alignment explains them
    assert rep.valid and not rep.holes
    rep = read(built(tail=b"\0" * (up - n + 1))[0])  # one more: a hole, warned
    assert rep.valid and rep.holes
    hole = [c for c in rep.checks if c.code == "E_BP_HOLE"][0]
    assert hole.status == base.WARN
    assert read(built(tail=b"\0\0\x07")[0]).error.code == "E_BP_PAD"


def test_non_zero_padding_between_tensors():
    raw, layout = built()
    first_end = min(layout.offsets.values())[1]
    assert read(patch(raw, first_end, b"\x09")).error.code == "E_BP_PAD"


def test_holes_between_tensors_are_warned():
    raw, _ = fx.build([("x", np.ones(8, np.float32)), ("y", np.ones(8, np.float32))], offsets=[0, 512])
    rep = read(raw)
    assert rep.valid and rep.holes == [(rep.tensors[0].end, rep.tensors[1].offset)]


def test_data_false_skips_only_the_padding_rule():
    rep = read(pad_variant(), data=False)
    assert rep.valid
    assert {c.code for c in rep.checks if c.status == base.SKIPPED} == {"E_BP_PAD"}


def test_descriptor_failure_keeps_the_tensors_read_before_it():
    rep = read(built(desc_over={"head.weight": {"dtype": "F8"}})[0])
    assert [t.name for t in rep.tensors] == ["enc.0.q.bias", "enc.0.q.weight"]
    assert rep.error.code == "E_BP_DTYPE"


def test_tensor_array_refuses_a_tensor_outside_the_file():
    raw, _ = built()
    src = base.Source(raw)
    t = burnpack.read(src).tensors[0]
    t.offset = len(raw)
    with pytest.raises(base.FormatError) as exc:
        burnpack.tensor_array(src, t)
    assert exc.value.code == "E_BP_BOUNDS"


def test_bool_bytes_other_than_0_1_are_refused_on_decode():
    raw, _ = fx.build([("m", np.array([0, 2], np.uint8), "Bool")])
    src = base.Source(raw)
    with pytest.raises(base.FormatError):
        burnpack.tensor_array(src, burnpack.read(src).tensors[0])


# -- robustness ---------------------------------------------------------------------------
def try_read(raw):
    src = base.Source(raw)
    for data in (False, True):
        rep = burnpack.read(src, data=data)
        assert isinstance(rep, base.Report)
    if rep.valid:
        for t in rep.tensors:
            burnpack.tensor_array(src, t)
    return rep


def test_every_truncation_fails():
    raw, _ = fx.build([("b", np.ones(3, np.float16)), ("a", np.arange(5, dtype=np.int32))],
                      metadata={"k": "v"})
    for n in range(len(raw)):
        assert not try_read(raw[:n]).valid, n
        assert not read(raw[:n], data=False).valid, n


def test_seeded_mutation_sweep_never_raises():
    rng = random.Random(4321)
    raw, layout = built(metadata={"rvne.dims": "16,4,1,32,2,4"})
    meta_end = fx.HEADER_SIZE + layout.metadata_size
    outcomes = set()
    for i in range(500):
        m = bytearray(raw)
        kind = i % 4
        if kind == 0:
            for _ in range(rng.randint(1, 3)):
                m[rng.randrange(meta_end)] = rng.randrange(256)
        elif kind == 1:
            m[rng.randrange(len(m))] ^= 1 << rng.randrange(8)
        elif kind == 2:
            del m[rng.randrange(len(m)):]
        else:
            at = rng.randrange(fx.HEADER_SIZE, meta_end)
            m[at:at] = bytes([rng.choice([0xFF, 0x9F, 0xBF, 0x1B, 0x5F, rng.randrange(256)])])
        rep = try_read(bytes(m))
        outcomes.add(rep.error.code if rep.error else "valid")
    assert len(outcomes) > 8, outcomes


def test_random_descriptor_values_never_raise():
    rng = random.Random(99)
    values = [0, 1, 255, 256, U64, 1 << 63, -1, 2.5, "x", b"\0", None, True, [], {}, [0], [0, 1, 2],
              [U64, U64], {"Bool": "U8"}, cbor2.CBORTag(2, b"\x01" * 9)]
    for _ in range(300):
        over = {rng.choice(["dtype", "shape", "data_offsets", "param_id"]): rng.choice(values)
                for _ in range(rng.randint(1, 3))}
        try_read(built(desc_over={rng.choice(list(small())): over})[0])


# -- headers-only reading of a big file ----------------------------------------------------
def test_data_false_reads_kilobytes_of_a_1gib_sparse_file(tmp_path):
    path = tmp_path / "big.bpk"
    size = fx.write_sparse(path, fx.sparse_shapes(1 << 30, 4), metadata={"model": "big"})
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        src = base.Source(mm)
        rep = burnpack.read(src, data=False)
        assert len(src) == size >= 1 << 30
        assert rep.valid, rep.error
        assert len(rep.tensors) == 4 and max(t.end for t in rep.tensors) == size
        assert src.bytes_read < 4096
        del src, rep


def test_sparse_writer_output_verifies_with_data(tmp_path):
    path = tmp_path / "mid.bpk"
    fx.write_sparse(path, [("a", (1000,)), ("b", (3, 7))])
    assert read(path.read_bytes()).valid
