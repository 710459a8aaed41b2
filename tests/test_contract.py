"""The model contract: tensor layout, expected sizes, named arrays <-> bytes,
and the exact FP16 decode."""

import numpy as np
import pytest

from rvne import errors
from rvne.model import contract
from rvne.model.contract import Dims

DIMS = Dims(16, 4, 1, 32, 2, 4)


def test_layout_order_shapes_offsets():
    specs = contract.tensor_specs(DIMS)
    assert [s.name for s in specs] == [
        "layers.0.wq", "layers.0.wk", "layers.0.wv", "layers.0.wo",
        "layers.1.wq", "layers.1.wk", "layers.1.wv", "layers.1.wo", "wc",
    ]
    assert [s.shape for s in specs[:4]] == [(16, 128), (16, 32), (16, 32), (128, 16)]
    assert specs[-1].shape == (16, 4)
    # contiguous, no padding
    offset = 0
    for s in specs:
        assert s.offset == offset and s.size == s.shape[0] * s.shape[1]
        offset += s.size
    assert offset == contract.n_params(DIMS) == 10304


@pytest.mark.parametrize("dims", [(16, 4, 1, 32, 2, 4), (7, 6, 3, 5, 3, 2), (1, 1, 1, 1, 1, 2)])
def test_expected_weights_len_formula(dims):
    d = Dims(*dims)
    D, Q, K, L, C = d.input_dim, d.q_dim, d.kv_dim, d.n_layers, d.n_classes
    assert contract.expected_weights_len(d, False) == (L * (2 * D * Q + 2 * D * K) + D * C) * 4
    assert contract.expected_weights_len(d, True) == (L * (2 * D * Q + 2 * D * K) + D * C) * 2
    assert sum(s.size for s in contract.tensor_specs(d)) == contract.n_params(d)


def test_expected_len_does_not_wrap():
    big = Dims(65535, 65535, 65535, 65535, 65535, 65535)
    assert contract.expected_weights_len(big) > 1 << 64


def test_dims_parse_and_refusals():
    assert Dims.parse("16,4,1,32,2,4") == DIMS
    assert str(DIMS) == "16,4,1,32,2,4"
    for bad in ("1,2,3", "a,b,c,d,e,f", "1,2,3,4,5,70000", ""):
        with pytest.raises(errors.ContractError):
            Dims.parse(bad)
    with pytest.raises(errors.GqaError, match="GQA"):
        Dims(16, 6, 4, 8, 1, 2).check()


def test_bytes_arrays_round_trip_fp32_is_view():
    rng = np.random.default_rng(0)
    arrays = {s.name: rng.standard_normal(s.shape).astype(np.float32) for s in contract.tensor_specs(DIMS)}
    raw = contract.arrays_to_weights(arrays, DIMS)
    assert len(raw) == contract.expected_weights_len(DIMS)
    # Placement: Wk of layer 1 lies at its documented element offset, row-major.
    spec = {s.name: s for s in contract.tensor_specs(DIMS)}["layers.1.wk"]
    flat = np.frombuffer(raw, "<f4")
    np.testing.assert_array_equal(flat[spec.offset:spec.offset + spec.size], arrays["layers.1.wk"].ravel())
    back = contract.weights_to_arrays(raw, DIMS)
    for k, v in arrays.items():
        np.testing.assert_array_equal(back[k], v)
        assert np.shares_memory(back[k], flat)  # a view into raw, not a copy


def test_fp16_round_trip_and_overflow():
    rng = np.random.default_rng(1)
    arrays = {s.name: rng.standard_normal(s.shape).astype(np.float32) for s in contract.tensor_specs(DIMS)}
    raw = contract.arrays_to_weights(arrays, DIMS, fp16=True)
    assert len(raw) == contract.expected_weights_len(DIMS, True)
    back = contract.weights_to_arrays(raw, DIMS, fp16=True)
    for k, v in arrays.items():
        np.testing.assert_array_equal(back[k], v.astype(np.float16).astype(np.float32))
    # round trip again is exact: FP16 values survive FP16
    assert contract.arrays_to_weights(back, DIMS, fp16=True) == raw
    arrays["wc"][0, 0] = 1e6
    with pytest.raises(errors.WeightsFileError, match="wc.*FP16 range"):
        contract.arrays_to_weights(arrays, DIMS, fp16=True)


def test_wrong_length_refused():
    with pytest.raises(errors.ContractError, match="41216"):
        contract.weights_to_arrays(b"\x00" * 40, DIMS)


def _fp16_reference_decode(h):
    """Scalar decode by arithmetic on Python floats (exact in float64):
    sign * 2^(e-15) * (1 + m/1024), subnormal sign * 2^-14 * m/1024."""
    s = -1.0 if h & 0x8000 else 1.0
    e = (h >> 10) & 0x1F
    m = h & 0x3FF
    if e == 0x1F:
        return s * float("inf") if m == 0 else float("nan")
    if e == 0:
        return s * m * 2.0 ** -24
    return s * (1 + m / 1024) * 2.0 ** (e - 15)


def test_fp16_decode_all_65536_patterns():
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    ours = contract.fp16_to_f32(bits)
    assert ours.dtype == np.float32 and ours.shape == (65536,)
    theirs = bits.view(np.float16).astype(np.float32)
    nan = np.isnan(theirs)
    assert np.array_equal(np.isnan(ours), nan)
    assert nan.sum() == 2 * 1023
    # non-NaN: bit-identical (so +0/-0 and subnormals are exact)
    assert np.array_equal(ours[~nan].view(np.uint32), theirs[~nan].view(np.uint32))
    # NaNs keep sign and payload, as the firmware decoder must
    u = ours.view(np.uint32)[nan]
    hb = bits[nan].astype(np.uint32)
    assert np.array_equal(u >> 31, hb >> 15)
    assert np.array_equal((u >> 13) & 0x3FF, hb & 0x3FF)
    # a third, independent oracle on a spread of patterns
    for h in list(range(0, 65536, 97)) + [0x0001, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0x8000, 0xFC00]:
        want = _fp16_reference_decode(h)
        got = float(ours[h])
        assert (np.isnan(want) and np.isnan(got)) or got == want, hex(h)
    assert np.signbit(ours[0x8000]) and not np.signbit(ours[0])


def test_fp16_to_f32_rejects_out_of_range():
    with pytest.raises(ValueError):
        contract.fp16_to_f32(np.array([70000]))


def test_check_arrays_messages():
    arrays = {s.name: np.zeros(s.shape, np.float32) for s in contract.tensor_specs(DIMS)}
    missing = dict(arrays)
    del missing["layers.1.wv"]
    with pytest.raises(errors.WeightsFileError, match="missing tensor layers.1.wv"):
        contract.check_arrays(missing, DIMS)
    extra = {**arrays, "layers.2.wq": arrays["layers.0.wq"]}
    with pytest.raises(errors.WeightsFileError, match="unexpected tensor layers.2.wq"):
        contract.check_arrays(extra, DIMS)
    bad = {**arrays, "wc": np.zeros((4, 16), np.float32)}
    with pytest.raises(errors.WeightsFileError, match=r"wc has shape \(4, 16\).*\(16, 4\)"):
        contract.check_arrays(bad, DIMS)
