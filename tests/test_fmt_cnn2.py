"""CNN v2 `.bin` reader (docs/format-cnn2.md): files from the seed-document
fixture writer round-trip bit-exactly, every rule refuses its malformed
variant with its own named error, mutants never crash the reader and
inspection reads only the header and layer records."""

import random
import struct

import numpy as np
import pytest

from fmt_fixtures import assert_refused
from fmt_fixtures import cnn2 as fx
from rvne.io.formats import base, cnn2


def report_of(raw, data=True):
    return cnn2.read(base.Source(raw), data=data)


def status(rep, code):
    return [c.status for c in rep.checks if c.code == code]


def test_seed_example_is_3028_bytes_and_valid():
    layers = fx.example_layers()
    raw, layout = fx.build(layers)
    assert len(raw) == fx.EXAMPLE_SIZE == 16 + 3 * 20 + 1476 * 2 == 3028
    assert [r[4] for r in layout.records] == [1080, 288, 108] and [r[3] for r in layout.records] == [0, 1080, 1368]
    rep = report_of(raw)
    assert rep.valid, rep.error
    assert not [c for c in rep.checks if c.status == base.WARN], rep.checks
    assert rep.fields["num_layers"] == 3 and rep.fields["total_weights"] == 1476 and rep.version == 1
    assert [t.key for t in rep.tensors] == ["layer_1", "layer_2", "layer_3"]
    assert [t.offset for t in rep.tensors] == [0x4C, 0x4C + 2160, 0x4C + 2736]
    assert [t.shape for t in rep.tensors] == [(8, 15, 3, 3), (4, 8, 3, 3), (3, 4, 3, 3)]
    assert rep.tensors[1].extra == {"key": "layer_2", "kernel_size": 3, "in_channels": 8,
                                    "out_channels": 4, "weight_offset": 1080}
    assert rep.readings


def test_seed_table_total_of_1528_bytes_fails_the_size_rule():
    raw, _ = fx.build(fx.example_layers())
    rep = report_of(raw[:fx.EXAMPLE_TABLE_TOTAL])
    assert rep.error.code == "E_CNN2_SIZE"
    assert "3028" in rep.error.detail and "1528" in rep.error.detail


def test_round_trip_bit_exact_against_the_seed_unpacking():
    layers = fx.example_layers(seed=3)
    raw, layout = fx.build(layers)
    src = base.Source(raw)
    rep = cnn2.read(src)
    data = raw[layout.data_offset:]
    flat_index = 0
    for t, want in zip(rep.tensors, layers):
        got = cnn2.tensor_array(src, t)
        assert got.dtype == np.float16 and got.shape == want.shape
        assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
        # the seed's weight_idx formula and its C unpacking, element by element
        out, cin, k, _ = want.shape
        for o, i, ky, kx in [(0, 0, 0, 0), (out - 1, cin - 1, k - 1, k - 1), (out // 2, cin // 2, 1, 2)]:
            idx = flat_index + o * (cin * k * k) + i * k * k + ky * k + kx
            assert fx.unpack_f16(data, idx).view(np.uint16) == got[o, i, ky, kx].view(np.uint16)
        flat_index += want.size


def test_odd_starts_and_odd_total_decode_exactly():
    rng = np.random.default_rng(7)
    layers = [rng.standard_normal((1, 3, 3, 3)).astype(np.float16),      # 27: layer 2 starts at odd index
              rng.standard_normal((3, 1, 1, 1)).astype(np.float16)]      # total 30
    layers.append(rng.standard_normal((1, 3, 1, 1)).astype(np.float16))  # starts at 30, total 33 (odd)
    raw, layout = fx.build(layers)
    assert len(raw) == 16 + 3 * 20 + 2 * 33
    src = base.Source(raw)
    rep = cnn2.read(src)
    assert rep.valid, rep.error
    assert status(rep, "E_CNN2_ODD_TOTAL") == [base.WARN]
    data = raw[layout.data_offset:]
    start = 0
    for t, want in zip(rep.tensors, layers):
        got = cnn2.tensor_array(src, t)
        assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
        seed_way = [fx.unpack_f16(data, start + j).view(np.uint16) for j in range(want.size)]
        assert list(got.ravel().view(np.uint16)) == seed_way
        start += want.size


def test_sniff():
    raw, _ = fx.build(fx.example_layers())
    assert cnn2.sniff(base.Source(raw))
    for junk in (b"", b"CNN", b"2NNC" + raw[4:], b"\xff" * 16):
        assert not cnn2.sniff(base.Source(junk))


def _ok_layers():
    rng = np.random.default_rng(1)
    return [rng.standard_normal((4, 9, 3, 3)).astype(np.float16),
            rng.standard_normal((2, 4, 1, 1)).astype(np.float16)]


def _with_record(i, field, value):
    raw, layout = fx.build(_ok_layers())
    recs = [list(r) for r in layout.records]
    recs[i][field] = value
    return fx.build(_ok_layers(), records=recs)[0]


def _malformed():
    ok, layout = fx.build(_ok_layers())
    n_total = sum(r[4] for r in layout.records)   # 324 + 8
    big = (1 << 32) - 1
    return {
        "E_CNN2_MAGIC": b"CNN1" + ok[4:],
        "E_CNN2_HEADER": ok[:12],
        "E_CNN2_VERSION": fx.build(_ok_layers(), version=2)[0],
        "E_CNN2_LAYERS": fx.build(_ok_layers(), num_layers=0)[0],
        # 20 * 0x0CCCCCCD wraps 32 bits to 4: records must still fit in the file
        "E_CNN2_LAYERS wrap": fx.build(_ok_layers(), num_layers=0x0CCCCCCD)[0],
        "E_CNN2_SIZE": ok + b"\0\0",
        "E_CNN2_SIZE short": ok[:-1],
        "E_CNN2_SIZE total": fx.build(_ok_layers(), total_weights=n_total + 1)[0],
        "E_CNN2_SIZE wrap": fx.build(_ok_layers(), total_weights=1 << 31)[0],
        "E_CNN2_KERNEL": _with_record(1, 0, 0),
        "E_CNN2_IN_CHANNELS": _with_record(0, 1, 0),
        "E_CNN2_OUT_CHANNELS": _with_record(0, 2, 9),
        "E_CNN2_OUT_CHANNELS zero": _with_record(1, 2, 0),
        "E_CNN2_WEIGHT_COUNT": _with_record(1, 4, 7),
        # out*in*k*k = 8 * big * big^2 wraps in 32 bits; the count cannot match it
        "E_CNN2_WEIGHT_COUNT wrap": _with_record(1, 0, big),
        "E_CNN2_OFFSET": _with_record(1, 3, 323),
        "E_CNN2_OFFSET first": _with_record(0, 3, 1),
    }


@pytest.mark.parametrize("case", sorted(_malformed()))
def test_each_rule_refuses_its_malformed_variant(case):
    raw = _malformed()[case]
    assert_refused(report_of(raw), case.split()[0], case)


def test_total_mismatch_with_a_consistent_size():
    # total_weights agrees with the file size but not with the layers
    layers = _ok_layers()
    raw, layout = fx.build(layers, tail=b"\0\0")
    raw = raw[:12] + struct.pack("<I", 333) + raw[16:]
    rep = report_of(raw)
    assert rep.error.code == "E_CNN2_TOTAL"
    assert "332" in rep.error.detail and "333" in rep.error.detail


def test_wrap_messages_name_the_32_bit_value():
    rep = report_of(_malformed()["E_CNN2_LAYERS wrap"])
    assert "in 32 bits gets 20" in rep.error.detail
    rep = report_of(_malformed()["E_CNN2_WEIGHT_COUNT wrap"])
    assert "in 32 bits" in rep.error.detail


def test_warnings_static_chain_kernel_nan():
    rng = np.random.default_rng(2)
    layers = [rng.standard_normal((4, 3, 2, 2)).astype(np.float16),   # in 3 < 8, even kernel
              rng.standard_normal((2, 5, 1, 1)).astype(np.float16)]   # in 5 != previous out 4
    layers[1][0, 0, 0, 0] = np.nan
    layers[1][1, 2, 0, 0] = np.inf
    raw, _ = fx.build(layers)
    rep = report_of(raw)
    assert rep.valid
    for code in ("E_CNN2_STATIC", "E_CNN2_CHAIN", "E_CNN2_KERNEL_ODD", "E_CNN2_F16"):
        assert status(rep, code) == [base.WARN], code
    assert "2 weights are NaN or Inf" in next(c.detail for c in rep.checks if c.code == "E_CNN2_F16")
    head = report_of(raw, data=False)
    assert status(head, "E_CNN2_F16") == [base.SKIPPED]


def test_layers_before_a_broken_record_are_kept():
    rep = report_of(_malformed()["E_CNN2_KERNEL"])
    assert [t.key for t in rep.tensors] == ["layer_1"]


def test_mutation_and_truncation_sweep_never_raises():
    raw, _ = fx.build(fx.example_layers(seed=5)[:2])
    rng = random.Random(1234)
    for n in range(len(raw)):
        rep = report_of(raw[:n])
        assert rep.error is not None, n
    for _ in range(400):
        buf = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(0, 96 if rng.random() < 0.8 else len(buf))
            buf[at] = rng.randrange(256)
        if rng.random() < 0.2:
            at = rng.randrange(4, 56)
            buf[at:at + 4] = struct.pack("<I", rng.choice([0, 1, 0xFFFFFFFF, 0x80000000]))
        for data in (True, False):
            rep = report_of(bytes(buf), data=data)
            if rep.valid:
                src = base.Source(bytes(buf))
                for t in rep.tensors:
                    assert cnn2.tensor_array(src, t).size * 2 == t.size


def test_tensor_array_refuses_a_tensor_outside_the_file():
    raw, _ = fx.build(_ok_layers())
    rep = report_of(raw)
    t = rep.tensors[1]
    t.offset = len(raw)
    with pytest.raises(base.FormatError) as exc:
        cnn2.tensor_array(base.Source(raw), t)
    assert exc.value.code == "E_CNN2_BOUNDS"


def test_inspect_of_a_sparse_1gib_file_reads_only_the_header(tmp_path):
    import mmap
    path = tmp_path / "big.bin"
    size = fx.write_sparse(path)
    assert (1 << 30) * 0.99 < size <= 1 << 30
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        src = base.Source(m, path)
        rep = cnn2.read(src, data=False)
        assert rep.valid and not [c for c in rep.checks if c.status == base.WARN], rep.checks
        assert src.bytes_read < 1024
        assert rep.tensors[1].size == size - 16 - 40 - 2 * 576
        del src, rep


def test_rule_table_in_doc_lists_every_code_in_read_order():
    from fmt_fixtures import doc_rule_codes

    order = doc_rule_codes("format-cnn2.md", "E_CNN2_")
    emitted = [c.code for c in cnn2.read(base.Source(fx.build(fx.example_layers())[0])).checks]
    assert emitted == order
