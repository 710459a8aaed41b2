"""LightwatchAI2 .lwt reader (docs/format-lwt.md) against files from the
fixture writer, which follows the seed document: round trips, one
malformed file per rule, a mutation/truncation sweep, headers-only reads."""

import mmap
import random
import struct

import numpy as np
import pytest
from fmt_fixtures import lwt as fx
from fmt_fixtures import assert_refused, doc_rule_codes

from rvne.io.formats import base, lwt

WARN = base.WARN


def read(raw, data=True):
    return lwt.read(base.Source(raw), data=data)


def small():
    """Three tensors with sizes that leave alignment gaps between them."""
    return {"a.weight": np.arange(6, dtype=np.float32).reshape(2, 3),
            "b.bias": np.array([1.5, -2.0, 3.25], np.float32),
            "c.weight": np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5)}


def patch(raw, offset, new):
    out = bytearray(raw)
    out[offset:offset + len(new)] = new
    return bytes(out)


def u64(v):
    return struct.pack("<Q", v)


def bits(a):
    return np.ascontiguousarray(a).view(np.uint32)


# -- round trips ------------------------------------------------------------------
@pytest.mark.parametrize("prefix", ["u32", "u64"])
def test_gpt2_fixture_round_trip_bit_exact(prefix):
    cfg = fx.gpt2_config(n_layer=2)
    tensors = fx.gpt2_tensors(n_layer=2)
    raw, layout = fx.build(tensors, prefix=prefix, config=cfg)
    src = base.Source(raw)
    rep = lwt.read(src)
    assert rep.valid, rep.error
    assert rep.version == 1
    assert rep.fields["json_length_prefix"] == prefix
    assert rep.fields["config"] == cfg
    assert rep.fields["model_type"] == "gpt2"
    assert [t.name for t in rep.tensors] == list(tensors)
    assert len(rep.tensors) == 2 + 12 * 2 + 2    # the seed's per-layer names
    for t in rep.tensors:
        want = tensors[t.name]
        assert t.dtype == "F32" and t.shape == want.shape and t.align == 64
        assert t.offset % 64 == 0 and t.offset >= layout.data_offset
        got = lwt.tensor_array(src, t)
        assert got.dtype == np.float32 and got.shape == want.shape
        assert np.array_equal(bits(got), bits(want)), t.name
    # Conv1D weights keep the seed's in x out shape; the map import transposes them
    assert rep.tensors[4].name == "transformer.h.0.attn.c_attn.weight"
    assert rep.tensors[4].shape == (8, 24)
    assert rep.fields["total_bytes"] == layout.data_end - layout.data_offset
    assert not rep.holes
    assert len(raw) == layout.data_end + 4


def test_special_values_scalar_and_empty_tensor_are_exact():
    odd = np.array([np.nan, -0.0, np.inf, -np.inf, 1e-45, 3.4028235e38], np.float32)
    odd_bits = odd.view(np.uint32).copy()
    odd_bits[0] = 0x7FC00123                    # a NaN payload survives
    tensors = [("odd", odd_bits.view(np.float32)), ("scalar", np.float32(7.5).reshape(())),
               ("empty", np.zeros((0, 3), np.float32))]
    raw, _ = fx.build(tensors)
    src = base.Source(raw)
    rep = lwt.read(src)
    assert rep.valid, rep.error
    got = {t.name: lwt.tensor_array(src, t) for t in rep.tensors}
    assert np.array_equal(bits(got["odd"]), odd_bits)
    assert got["scalar"].shape == () and got["scalar"] == np.float32(7.5)
    assert got["empty"].shape == (0, 3)


def test_zero_tensors_is_valid_with_an_empty_data_section():
    raw, layout = fx.build({})
    rep = read(raw)
    assert rep.valid, rep.error
    assert rep.tensors == [] and rep.fields["data_bytes"] == 0
    assert raw[-4:] == b"\0\0\0\0"              # crc32 of nothing


def test_sniff():
    raw, _ = fx.build(small())
    assert lwt.sniff(base.Source(raw))
    for other in (b"", b"LWATCH", b"LWATCHV2" + raw[8:], b"\0" * 64, b"NRUB" + b"\0" * 60):
        assert not lwt.sniff(base.Source(other))


# -- one malformed file per rule ---------------------------------------------------
def built(**kw):
    return fx.build(small(), **kw)


def entry_patch(i, field_offset, new, **kw):
    raw, layout = built(**kw)
    return patch(raw, layout.entry_at(i) + field_offset, new)


def json_variant(text):
    return built(raw_json=text)[0]


def header_variant(**over):
    return built(header_over=over)[0]


def place_variant(offsets):
    return fx.build([("x", np.ones(8, np.float32)), ("y", np.ones(8, np.float32))], offsets=offsets)[0]


def truncated_inside_padding():
    raw, layout = built()
    index_end = layout.index_offset + 3 * fx.ENTRY_SIZE
    assert layout.data_offset > index_end        # there is padding to cut into
    return raw[:index_end + 1]


def pad_variant():
    raw, layout = built()
    return patch(raw, layout.data_offset - 1, b"\x01")


def crc_variant():
    raw, layout = built()
    return patch(raw, layout.data_offset + 5, bytes([raw[layout.data_offset + 5] ^ 0x10]))


def nested(depth):
    return ('{"version":1,"dtype":"float32","byte_order":"little","tensor_count":3,"total_bytes":0,"x":'
            + "[" * depth + "]" * depth + "}").encode()


def total_bytes_variant():
    layout = built()[1]
    return header_variant(total_bytes=layout.data_end - layout.data_offset + 64)

CASES = {
    "E_LWT_MAGIC": lambda: patch(built()[0], 0, b"LWATCHV2"),
    "E_LWT_JSON_LENGTH": lambda: patch(built()[0], 8, struct.pack("<I", lwt.JSON_MAX_BYTES + 1)),
    "E_LWT_JSON_UTF8": lambda: json_variant(b'{"version":1,"model_type":"gpt\xff"}'),
    "E_LWT_JSON_DEPTH": lambda: json_variant(nested(lwt.JSON_MAX_DEPTH + 1)),
    "E_LWT_JSON_SYNTAX": lambda: json_variant(b'{"version":1,'),
    "E_LWT_JSON_DUPKEY": lambda: json_variant(b'{"version":1,"version":2}'),
    "E_LWT_HEADER": lambda: header_variant(dtype=None),
    "E_LWT_VERSION": lambda: header_variant(version=2),
    "E_LWT_DTYPE": lambda: header_variant(dtype="float16"),
    "E_LWT_BYTE_ORDER": lambda: header_variant(byte_order="big"),
    "E_LWT_TENSOR_COUNT": lambda: header_variant(tensor_count=-1),
    "E_LWT_INDEX_BOUNDS": lambda: header_variant(tensor_count=1000),
    "E_LWT_TRUNCATED": truncated_inside_padding,
    "E_LWT_NAME_NUL": lambda: entry_patch(1, 0, b"n" * 128),
    "E_LWT_NAME_EMPTY": lambda: entry_patch(1, 0, b"\0"),
    "E_LWT_NAME_UTF8": lambda: entry_patch(1, 0, b"b\xff\xfe"),
    "E_LWT_NAME_TAIL": lambda: entry_patch(1, 100, b"x"),
    "E_LWT_DUP_NAME": lambda: fx.build([("w", np.ones(2, np.float32)), ("w", np.ones(2, np.float32))])[0],
    "E_LWT_NDIM": lambda: entry_patch(0, 128, struct.pack("<I", 9)),
    "E_LWT_STRUCT_PAD": lambda: entry_patch(0, 132, b"\x01"),
    "E_LWT_SHAPE_TAIL": lambda: entry_patch(1, 136 + 8, u64(1)),        # b.bias is 1-D
    "E_LWT_SIZE": lambda: entry_patch(1, 208, u64(16)),
    "E_LWT_BOUNDS": lambda: entry_patch(2, 200, u64(1 << 20)),
    "E_LWT_ALIGN": lambda: place_variant([0, 36]),
    "E_LWT_OVERLAP": lambda: place_variant([0, 0]),
    "E_LWT_TOTAL_BYTES": total_bytes_variant,
    "E_LWT_PAD": pad_variant,
    "E_LWT_CRC": crc_variant,
}


@pytest.mark.parametrize("code", list(CASES))
def test_each_rule_refuses_with_its_named_error(code):
    assert_refused(read(CASES[code]()), code)


def test_rule_table_in_doc_lists_every_code_in_read_order():
    """The doc's table is the contract: every code the reader emits, in order."""
    order = doc_rule_codes("format-lwt.md", "E_LWT_")
    raw, _ = built()
    emitted = [c.code for c in read(raw).checks]
    assert set(CASES) | {"E_LWT_HOLE"} <= set(order)
    assert [c for c in order if c in emitted] == emitted


@pytest.mark.parametrize("variant", [
    lambda: patch(built()[0], 8, struct.pack("<I", 10 ** 6)),            # past the end of the file
    lambda: built()[0][:11],                                               # inside the prefix
])
def test_json_length_beyond_file(variant):
    assert read(variant()).error.code == "E_LWT_JSON_LENGTH"


@pytest.mark.parametrize("over", [{"tensor_count": "3"}, {"version": True}, {"config": [1]},
                                  {"total_bytes": 1.5}, {"model_type": 3}])
def test_header_types(over):
    assert read(header_variant(**over)).error.code == "E_LWT_HEADER"


def test_header_must_be_an_object():
    assert read(json_variant(b"[1, 2]")).error.code == "E_LWT_HEADER"


def test_size_overflow_is_named():
    """shape [2^62, 4]: 4 * product = 2^66, which a C reader's u64 wraps to 0."""
    raw, layout = built()
    at = layout.entry_at(0)
    raw = patch(raw, at + 136, u64(1 << 62) + u64(4))
    raw = patch(raw, at + 208, u64(0))
    rep = read(raw)
    assert rep.error.code == "E_LWT_SIZE" and "wraps 64 bits" in rep.error.detail


def test_offset_wrapping_2_64_is_named():
    raw = entry_patch(2, 200, u64((1 << 64) - 64))
    rep = read(raw)
    assert rep.error.code == "E_LWT_BOUNDS" and "2^64" in rep.error.detail


def test_holes_are_warned_not_refused():
    raw = place_variant([0, 256])
    rep = read(raw)
    assert rep.valid, rep.error
    hole = [c for c in rep.checks if c.code == "E_LWT_HOLE"][0]
    assert hole.status == WARN
    assert rep.holes and rep.holes[0][1] - rep.holes[0][0] == 256 - 32


def test_u64_prefix_variants_and_bytes_12_to_15():
    raw, layout = built(prefix="u64")
    assert raw[12:16] == b"\0\0\0\0" and raw[16:17] == b"{" and layout.json_offset == 16
    assert read(raw).fields["json_length_prefix"] == "u64"
    assert read(patch(raw, 0, b"X")).error.code == "E_LWT_MAGIC"
    assert read(patch(raw, 8, u64(lwt.JSON_MAX_BYTES + 1))).error.code == "E_LWT_JSON_LENGTH"


def test_data_false_skips_data_rules_only():
    for raw in (pad_variant(), crc_variant()):
        rep = read(raw, data=False)
        assert rep.valid
        skipped = {c.code for c in rep.checks if c.status == base.SKIPPED}
        assert skipped == {"E_LWT_PAD", "E_LWT_CRC"}


def test_entry_failure_keeps_the_tensors_read_before_it():
    rep = read(CASES["E_LWT_NDIM"]())
    assert rep.tensors == []
    rep = read(entry_patch(2, 0, b"\0"))
    assert [t.name for t in rep.tensors] == ["a.weight", "b.bias"]
    assert rep.error.code == "E_LWT_NAME_EMPTY"


def test_tensor_array_refuses_a_tensor_outside_the_file():
    raw, _ = built()
    src = base.Source(raw)
    t = read(raw).tensors[0]
    t.offset = len(raw)
    with pytest.raises(base.FormatError) as exc:
        lwt.tensor_array(src, t)
    assert exc.value.code == "E_LWT_BOUNDS"


# -- robustness ---------------------------------------------------------------------
def try_read(raw):
    src = base.Source(raw)
    for data in (False, True):
        rep = lwt.read(src, data=data)
        assert isinstance(rep, base.Report)
    if rep.valid:
        for t in rep.tensors:
            lwt.tensor_array(src, t)
    return rep


@pytest.mark.parametrize("prefix", ["u32", "u64"])
def test_every_truncation_fails(prefix):
    raw, _ = fx.build(fx.gpt2_tensors(n_layer=1, n_embd=4, vocab_size=4, block_size=4), prefix=prefix)
    for n in range(len(raw)):
        rep = try_read(raw[:n])
        assert not rep.valid, n
        assert not read(raw[:n], data=False).valid, n


def test_seeded_mutation_sweep_never_raises():
    rng = random.Random(1234)
    raw, layout = fx.build(small(), config={"n_layer": 1})
    hot = layout.data_offset + 16               # header, index and padding get most mutants
    outcomes = set()
    for i in range(400):
        m = bytearray(raw)
        kind = i % 4
        if kind == 0:
            for _ in range(rng.randint(1, 4)):
                m[rng.randrange(hot)] = rng.randrange(256)
        elif kind == 1:
            m[rng.randrange(len(m))] ^= 1 << rng.randrange(8)
        elif kind == 2:
            at = layout.index_offset + rng.randrange(3 * fx.ENTRY_SIZE - 8)
            m[at:at + 8] = u64(rng.choice([0, 1, 63, 64, 1 << 31, 1 << 32, (1 << 63), (1 << 64) - 1,
                                           rng.getrandbits(64)]))
        else:
            at = rng.randrange(len(m))
            m[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 9)))
        rep = try_read(bytes(m))
        outcomes.add(rep.error.code if rep.error else "valid")
    assert len(outcomes) > 8                    # the sweep reached many different rules


# -- headers-only reading of a big file ---------------------------------------------
def test_data_false_reads_kilobytes_of_a_1gib_sparse_file(tmp_path):
    path = tmp_path / "big.lwt"
    size = fx.write_sparse(path, fx.sparse_shapes(1 << 30, 4), crc=False)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        src = base.Source(mm)
        rep = lwt.read(src, data=False)
        assert len(src) == size >= 1 << 30
        assert rep.valid, rep.error
        assert len(rep.tensors) == 4 and rep.tensors[-1].end == size - 4
        assert src.bytes_read < 4096
        del src, rep


def test_sparse_writer_crc_is_right(tmp_path):
    path = tmp_path / "mid.lwt"
    fx.write_sparse(path, fx.sparse_shapes(8 << 20, 3))
    assert read(path.read_bytes()).valid


SEED_HEADER = {"version": 1, "model_type": "gpt2",
               "config": {"n_layer": 12, "n_head": 12, "n_embd": 768, "vocab_size": 50257, "block_size": 1024},
               "dtype": "float32", "byte_order": "little", "tensor_count": 148, "total_bytes": 497025024}


def test_seed_example_header_on_gpt2_small_shapes(tmp_path):
    """The seed's header next to GPT-2 small's 148 tensors (sparse, headers
    only). Its shapes hold 124,439,808 fp32 values (the seed's sum says
    124,443,648: its embedding line adds 3,840 too many), a data section of
    497,759,232 bytes, so the seed's total_bytes 497,025,024 is refused."""
    shapes = fx.gpt2_shapes(n_layer=12, n_embd=768, vocab_size=50257, block_size=1024)
    params = 50257 * 768 + 1024 * 768 + 12 * (2 * 768 + 768 * 2304 + 2304 + 768 * 768 + 768 + 2 * 768
                                              + 768 * 3072 + 3072 + 3072 * 768 + 768) + 2 * 768
    assert params == 124_439_808 and len(shapes) == 148
    for total, code in ((497025024, "E_LWT_TOTAL_BYTES"), (4 * params, None)):
        path = tmp_path / f"gpt2-{total}.lwt"
        over = {k: v for k, v in SEED_HEADER.items() if k != "total_bytes"}
        fx.write_sparse(path, shapes, crc=False, header_over=dict(over, total_bytes=total))
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            src = base.Source(mm)
            rep = lwt.read(src, data=False)
            assert (rep.error.code if rep.error else None) == code
            if code:
                assert "497759232" in rep.error.detail
            assert sum(int(np.prod(t.shape)) for t in rep.tensors) == params
            assert src.bytes_read < 64 << 10
            del src, rep
