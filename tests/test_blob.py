"""RVNE v1 container: golden bytes, CRC against crcmod, round trips, and
each refusal of docs/format.md in its rule order."""

import mmap
import re
import struct

import crcmod.predefined
import numpy as np
import pytest

from rvne import errors
from rvne.io import blob
from rvne.io.crc import CHECK_INPUT, CHECK_VALUE, crc32
from rvne.model import contract

GOLDEN_HEADER = bytes.fromhex("45 4e 56 52 01 00 00 00 10 00 04 00 01 00 20 00 02 00 04 00 00 a1 00 00")
DIMS = (16, 4, 1, 32, 2, 4)
ORACLE = crcmod.predefined.mkCrcFun("crc-32")


def make(dims=DIMS, fp16=False, seed=0):
    rng = np.random.default_rng(seed)
    arrays = {s.name: rng.standard_normal(s.shape).astype(np.float32) for s in contract.tensor_specs(dims)}
    return arrays, blob.from_arrays(arrays, dims, fp16)


def with_header(data, **fields):
    """`data` with header fields changed and the CRC recomputed (so the rule
    under test, not the CRC, is what fails)."""
    h = blob.Header.unpack(data)
    values = {**h.__dict__, **fields}
    raw = bytearray(data)
    raw[:24] = struct.pack("<IHBB6HI", *(values[f] for f in blob.Header.__dataclass_fields__))
    end = len(raw) - 4
    raw[end:] = struct.pack("<I", ORACLE(bytes(raw[:end])))
    return bytes(raw)


def test_crc_check_value_against_crcmod():
    assert crc32(CHECK_INPUT) == CHECK_VALUE == ORACLE(CHECK_INPUT)


@pytest.mark.parametrize("size", [0, 1, 1000, (1 << 22) + 17])
def test_crc_chunked_equals_oracle(size):
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    assert crc32(data) == ORACLE(data)
    assert crc32(data, chunk=7) == ORACLE(data)
    # chaining like zlib
    half = size // 2
    assert crc32(data[half:], crc32(data[:half])) == ORACLE(data)


def test_golden_header():
    h = blob.Header.for_dims(DIMS)
    assert h.weights_len == 41216
    assert h.pack() == GOLDEN_HEADER
    assert blob.Header.unpack(GOLDEN_HEADER) == h


@pytest.mark.parametrize("fp16", [False, True])
def test_blob_crc_matches_crcmod_and_round_trips(fp16):
    arrays, data = make(fp16=fp16)
    assert len(data) == 28 + contract.expected_weights_len(DIMS, fp16)
    assert struct.unpack("<I", data[-4:])[0] == ORACLE(data[:-4])
    b = blob.parse(data)
    assert b.header.fp16 is fp16 and b.header.dims == DIMS
    assert b.crc_stored == b.crc_computed == ORACLE(data[:-4])
    assert b.to_bytes() == data
    assert blob.serialize(b.header, b.weights) == data
    got = b.tensors()
    for name, a in arrays.items():
        want = a.astype(np.float16).astype(np.float32) if fp16 else a
        np.testing.assert_array_equal(got[name], want)


def test_parse_is_zero_copy_over_mmap(tmp_path):
    _, data = make()
    path = tmp_path / "m.rvne"
    path.write_bytes(data)
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    b = blob.parse(mm)
    arr = b.weight_array
    assert not arr.flags.owndata and not arr.flags.writeable
    # The view's memory is the mmap's: same address as the mmap's weights.
    base = np.frombuffer(mm, dtype=np.uint8)
    assert arr.__array_interface__["data"][0] == base.__array_interface__["data"][0] + 24
    t = b.tensors()["layers.0.wq"]
    assert np.shares_memory(t, base)
    del arr, t, b, base


def test_bytearray_views_share_memory():
    _, data = make()
    buf = bytearray(data)
    b = blob.parse(buf)
    assert np.shares_memory(b.weight_array, np.frombuffer(buf, np.uint8))


def test_partition_ignores_trailing_bytes():
    _, data = make()
    part = data + b"\xff" * 4096
    with pytest.raises(errors.LengthError, match="trailing"):
        blob.parse(part)
    b = blob.parse(part, exact_length=False)
    assert b.to_bytes() == data
    with pytest.raises(errors.LengthError, match="partition"):
        blob.parse(data[:-1], exact_length=False)


# -- refusals, one per rule ----------------------------------------------------------------
def test_rule1_too_short():
    for n in (0, 1, 27):
        with pytest.raises(errors.TooShortError, match=f"{n} bytes"):
            blob.parse(b"\x00" * n)


def test_rule2_erased_before_magic():
    _, data = make()
    with pytest.raises(errors.ErasedError, match="erased flash\\? flash a blob with rvne flash"):
        blob.parse(b"\xff" * 4 + data[4:])
    with pytest.raises(errors.ErasedError):
        blob.parse(b"\xff" * 64, exact_length=False)


def test_rule3_bad_magic_and_byte_order():
    _, data = make()
    with pytest.raises(errors.BadMagicError, match="byte order") as e:
        blob.parse(b"RVNE" + data[4:])
    assert "0x52564E45" in str(e.value)
    with pytest.raises(errors.BadMagicError, match="0x00000000") as e:
        blob.parse(b"\x00" * 4 + data[4:])
    assert "byte order" not in str(e.value)


def test_rule4_version():
    _, data = make()
    with pytest.raises(errors.BadVersionError, match="version is 2"):
        blob.parse(with_header(data, version=2))


def test_rule5_flags():
    _, data = make()
    with pytest.raises(errors.BadFlagsError, match="0x04"):
        blob.parse(with_header(data, flags=0x04))
    with pytest.raises(errors.BadFlagsError, match="both set"):
        blob.parse(with_header(data, flags=0x03))
    # Bit 1 is int8 now: an FP32 blob's bytes under it are container-valid, but not the int8 head's length.
    relabelled = blob.parse(with_header(data, flags=0x02))
    assert relabelled.header.dtype == "int8"
    with pytest.raises(errors.ContractError):
        relabelled.check_contract()


def test_rule6_reserved():
    _, data = make()
    with pytest.raises(errors.ReservedError, match="0x07"):
        blob.parse(with_header(data, reserved=7))


def test_rule7_length():
    _, data = make()
    with pytest.raises(errors.LengthError, match="41243 bytes.*41244"):
        blob.parse(data[:-1])
    with pytest.raises(errors.LengthError, match="truncated"):
        blob.parse(data[:100])
    # weights_len near 2^32 must not wrap: 28 + 0xFFFFFFF0 is way past the buffer.
    with pytest.raises(errors.LengthError, match=str(28 + 0xFFFFFFF0)):
        blob.parse(with_header(data, weights_len=0xFFFFFFF0))


def test_rule8_crc_names_both():
    _, data = make()
    bad = bytearray(data)
    bad[100] ^= 0x40
    stored = struct.unpack("<I", data[-4:])[0]
    computed = ORACLE(bytes(bad[:-4]))
    with pytest.raises(errors.CrcError) as e:
        blob.parse(bytes(bad))
    assert f"0x{stored:08X}" in str(e.value) and f"0x{computed:08X}" in str(e.value)


@pytest.mark.parametrize("field", ["input_dim", "n_q_heads", "n_kv_heads", "head_dim"])
def test_rule9_zero_dim(field):
    _, data = make()
    with pytest.raises(errors.ZeroDimError, match=field):
        blob.parse(with_header(data, **{field: 0}))


def test_rule10_gqa():
    _, data = make()
    with pytest.raises(errors.GqaError, match="GQA") as e:
        blob.parse(with_header(data, n_q_heads=4, n_kv_heads=3))
    assert "4" in str(e.value) and "3" in str(e.value)


def test_rule11_no_layers():
    _, data = make()
    with pytest.raises(errors.NoLayersError, match="n_layers is 0"):
        blob.parse(with_header(data, n_layers=0))


def test_rule12_few_classes():
    _, data = make()
    with pytest.raises(errors.FewClassesError, match="n_classes is 1"):
        blob.parse(with_header(data, n_classes=1))


def test_rule13_elem_size():
    h = blob.Header.for_dims(DIMS)
    raw = h.pack()[:20] + struct.pack("<I", 6) + b"\x00" * 6
    raw += struct.pack("<I", ORACLE(raw))
    with pytest.raises(errors.ElemSizeError, match="weights_len 6.*FP32.*4"):
        blob.parse(raw)


def test_rule14_contract_is_separate():
    # Container-valid (FP32, 8 bytes of weights), but not what the head needs.
    h = blob.Header.for_dims(DIMS)
    data = blob.serialize(h, b"\x00" * 8)
    b = blob.parse(data)
    assert not b.loadable
    with pytest.raises(errors.ContractError, match="weights_len is 8 .* needs 41216"):
        b.check_contract()
    with pytest.raises(errors.ContractError):
        blob.parse_loadable(data)
    with pytest.raises(errors.ContractError):
        b.tensors()


def test_rules_apply_in_order():
    """Several faults at once: the lowest-numbered rule wins."""
    _, data = make()
    multi = with_header(data, version=3, flags=0x80, reserved=1, n_layers=0)
    with pytest.raises(errors.BadVersionError):
        blob.parse(multi)
    with pytest.raises(errors.BadFlagsError):
        blob.parse(with_header(data, flags=0x80, reserved=1))
    with pytest.raises(errors.LengthError):  # length before CRC
        blob.parse(b"RVNE"[::-1] + data[4:-8])
    bad_crc = bytearray(with_header(data, n_classes=1, n_layers=0))
    bad_crc[-1] ^= 1
    with pytest.raises(errors.CrcError):  # CRC before dims
        blob.parse(bytes(bad_crc))
    with pytest.raises(errors.ZeroDimError):  # zero dim before GQA
        blob.parse(with_header(data, n_kv_heads=0, n_layers=0))
    with pytest.raises(errors.NoLayersError):
        blob.parse(with_header(data, n_layers=0, n_classes=0))


def test_every_refusal_is_a_blob_error_with_its_code():
    assert set(errors.BLOB_ERRORS) >= {
        "E_TOO_SHORT", "E_ERASED", "E_BAD_MAGIC", "E_BAD_VERSION", "E_BAD_FLAGS", "E_RESERVED", "E_LENGTH",
        "E_CRC", "E_ZERO_DIM", "E_GQA", "E_NO_LAYERS", "E_FEW_CLASSES", "E_ELEM_SIZE", "E_CONTRACT",
    }


def test_writer_refuses_what_a_reader_refuses():
    with pytest.raises(errors.GqaError):
        blob.from_arrays({}, (16, 3, 2, 8, 1, 2))
    with pytest.raises(errors.BadFlagsError):
        blob.serialize(blob.Header(flags=4, input_dim=1, n_q_heads=1, n_kv_heads=1, head_dim=1,
                                   n_layers=1, n_classes=2), b"")


def test_numpy_uint8_buffer():
    _, data = make()
    b = blob.parse(np.frombuffer(data, dtype=np.uint8))
    assert b.header.dims == DIMS


def test_bench_quick_smoke():
    """The benchmark runs and reports its fields (numbers are not judged)."""
    import pathlib
    import subprocess
    import sys

    script = pathlib.Path(__file__).resolve().parent.parent / "tools" / "bench_blob.py"
    proc = subprocess.run([sys.executable, str(script), "--quick", "--repeat", "1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for field in ("floor zlib.crc32", "floor np.frombuffer", "parse+verify (bytes)", "parse+verify (mmap",
                  "parse extra memory (tracemalloc)", "pack (named arrays", "summary: parse+verify/crc32 ="):
        assert field in proc.stdout, field
    assert re.search(r"weights copied by parse\s+no", proc.stdout)
