"""The temporal-head model contract of docs/model.md: which named matrices
the weights of a blob hold, their shapes and offsets, and the exact FP16
decode. Weights <-> named arrays goes through here and nowhere else."""

from typing import NamedTuple

import numpy as np

from ..errors import ContractError, WeightsFileError

DIM_FIELDS = ("input_dim", "n_q_heads", "n_kv_heads", "head_dim", "n_layers", "n_classes")
LAYER_TENSORS = ("wq", "wk", "wv", "wo")
ELEM_SIZE = {False: 4, True: 2}  # keyed by fp16
WIRE_DTYPE = {False: np.dtype("<f4"), True: np.dtype("<u2")}
U16_MAX = 0xFFFF
DTYPES = ("fp32", "fp16", "int8")
DTYPE_ELEM_SIZE = {"fp32": 4, "fp16": 2, "int8": 1}
# An int8 model's logits are int32 accumulators sent as f32: |acc| <= D*127*128
# stays below 2^24, where every integer is exact in an f32, only up to this D.
INT8_MAX_INPUT_DIM = 1024
INT8_EXP_LEN = 256


def dtype_name(fp16_or_dtype):
    """"fp32", "fp16" or "int8" from a dtype name or the historical fp16 bool."""
    if isinstance(fp16_or_dtype, str):
        if fp16_or_dtype not in DTYPES:
            raise ValueError(f"dtype {fp16_or_dtype!r} is not one of {', '.join(DTYPES)}")
        return fp16_or_dtype
    return "fp16" if fp16_or_dtype else "fp32"


class Dims(NamedTuple):
    input_dim: int
    n_q_heads: int
    n_kv_heads: int
    head_dim: int
    n_layers: int
    n_classes: int

    @classmethod
    def of(cls, obj):
        """Dims from a Dims, a Header (anything with the six fields), a
        6-sequence, or the "D,HQ,HKV,HD,L,C" string of the CLI and metadata."""
        if isinstance(obj, cls):
            return obj
        if isinstance(obj, str):
            return cls.parse(obj)
        if all(hasattr(obj, f) for f in DIM_FIELDS):
            return cls(*(int(getattr(obj, f)) for f in DIM_FIELDS))
        values = tuple(int(v) for v in obj)
        if len(values) != 6:
            raise ContractError(f"dims need 6 values D,HQ,HKV,HD,L,C, got {len(values)}")
        return cls(*values)

    @classmethod
    def parse(cls, text):
        from ..numbers import decimal

        def signed(p):      # a minus sign gets the range's message below, not the syntax's
            v = decimal(p[1:] if p[:1] == "-" else p)
            return None if v is None else (-v if p[:1] == "-" else v)

        values = [signed(p) for p in str(text).replace(" ", "").split(",")]
        if None in values or len(values) != 6:
            raise ContractError(f"dims {text!r} are not 6 decimal integers D,HQ,HKV,HD,L,C (e.g. 16,4,1,32,2,4)")
        for name, v in zip(DIM_FIELDS, values):
            if not 0 <= v <= U16_MAX:
                raise ContractError(f"dims {text!r}: {name}={v} does not fit the header's u16 (0..65535)")
        return cls(*values)

    def __str__(self):
        return ",".join(str(v) for v in self)

    @property
    def q_dim(self):
        return self.n_q_heads * self.head_dim

    @property
    def kv_dim(self):
        return self.n_kv_heads * self.head_dim

    @property
    def group(self):
        return self.n_q_heads // self.n_kv_heads

    def check(self):
        """The dims half of format.md rules 9-12, for writers (a reader gets
        the same verdict, in the same order, from blob.parse)."""
        from ..errors import FewClassesError, GqaError, NoLayersError, ZeroDimError

        for name in DIM_FIELDS[:4]:
            if getattr(self, name) == 0:
                raise ZeroDimError(f"{name} is 0 (dims {self}): input_dim, n_q_heads, n_kv_heads and head_dim must be non-zero")
        if self.n_q_heads % self.n_kv_heads:
            raise GqaError(
                f"n_q_heads {self.n_q_heads} is not divisible by n_kv_heads {self.n_kv_heads}: "
                "GQA needs every kv head to serve the same number of query heads"
            )
        if self.n_layers < 1:
            raise NoLayersError(f"n_layers is {self.n_layers}: the head needs at least 1 layer")
        if self.n_classes < 2:
            raise FewClassesError(f"n_classes is {self.n_classes}: a classifier needs at least 2 classes")
        return self


class TensorSpec(NamedTuple):
    name: str
    shape: tuple  # (in, out): y = x @ W
    offset: int   # in elements from the first weight
    size: int     # elements


def tensor_specs(dims):
    """The named matrices in blob order, with element offsets."""
    d = Dims.of(dims)
    D, Q, K, C = d.input_dim, d.q_dim, d.kv_dim, d.n_classes
    shapes = {"wq": (D, Q), "wk": (D, K), "wv": (D, K), "wo": (Q, D)}
    specs, offset = [], 0
    for layer in range(d.n_layers):
        for t in LAYER_TENSORS:
            shape = shapes[t]
            size = shape[0] * shape[1]
            specs.append(TensorSpec(f"layers.{layer}.{t}", shape, offset, size))
            offset += size
    specs.append(TensorSpec("wc", (D, C), offset, D * C))
    return specs


def tensor_names(dims):
    return [s.name for s in tensor_specs(dims)]


def n_params(dims):
    d = Dims.of(dims)
    D, Q, K = d.input_dim, d.q_dim, d.kv_dim
    return d.n_layers * (2 * D * Q + 2 * D * K) + D * d.n_classes


def int8_param_words(dims):
    """4-byte words of an int8 blob's parameter block (docs/format.md):
    in_scale_inv, x_scale, per layer the (mult, shift) pairs of q, k, v,
    the score, the attention output, wo and x, then logit_scale[C]."""
    d = Dims.of(dims)
    return 2 + d.n_layers * 2 * (d.q_dim + 2 * d.kv_dim + d.input_dim + 3) + d.n_classes


def int8_sections(dims):
    """(parameter block, exp tables, int8 weights) byte lengths."""
    d = Dims.of(dims)
    return 4 * int8_param_words(d), 2 * INT8_EXP_LEN * d.n_layers, n_params(d)


def expected_weights_len(dims, fp16=False):
    """Bytes of weights the head needs (format.md rule 14); a Python int, so
    it never wraps. `fp16` is the historical bool or a dtype name."""
    dtype = dtype_name(fp16)
    if dtype == "int8":
        return sum(int8_sections(dims))
    return n_params(dims) * DTYPE_ELEM_SIZE[dtype]


WEIGHTS_LEN_MAX = 0xFFFFFFFF    # the header's u32


def check_writable(dims, fp16=False):
    """A writer's check before it makes any weights: the dims' weights must
    fit the header's u32 weights_len, or no blob can hold them."""
    d = Dims.of(dims)
    need = expected_weights_len(d, fp16)
    if need > WEIGHTS_LEN_MAX:
        raise ContractError(
            f"dims {d} need {need} bytes of {dtype_name(fp16).upper()} weights ({n_params(d)} parameters), "
            f"more than a blob's u32 weights_len holds ({WEIGHTS_LEN_MAX}); use smaller dims"
        )
    if dtype_name(fp16) == "int8":
        check_int8_dims(d)
    return d


def check_int8_dims(dims):
    d = Dims.of(dims)
    if d.input_dim > INT8_MAX_INPUT_DIM:
        raise ContractError(
            f"input_dim is {d.input_dim}: an int8 head needs input_dim <= {INT8_MAX_INPUT_DIM}, so its int32 "
            "logit accumulators stay exact as f32 on the wire (|acc| < 2^24)"
        )
    return d


def check_weights_len(dims, fp16, weights_len):
    expected = expected_weights_len(dims, fp16)
    if weights_len != expected:
        dtype = dtype_name(fp16).upper()
        raise ContractError(
            f"weights_len is {weights_len} but the temporal head with dims {Dims.of(dims)} {dtype} "
            f"needs {expected} bytes ({n_params(dims)} parameters): the blob is not loadable"
        )
    if dtype_name(fp16) == "int8":
        check_int8_dims(dims)


# -- FP16 ----------------------------------------------------------------------
def fp16_to_f32(bits):
    """Exact IEEE binary16 -> binary32 from raw u16 patterns, by integer bit
    manipulation: subnormals, +-0, +-inf and NaN payloads (never quietened).
    This is the definition the firmware's rvne_fp16_to_f32 must match bit for
    bit; `fp16_to_f32(np.arange(65536, dtype=np.uint16))` is its table."""
    h = np.asarray(bits)
    if h.dtype != np.uint16:
        if h.dtype.kind not in "ui" or (h.size and (h.min() < 0 or h.max() > U16_MAX)):
            raise ValueError("fp16_to_f32 takes u16 bit patterns")
        h = h.astype(np.uint16)
    h = h.astype(np.uint32)
    sign = (h & 0x8000) << 16
    exp = (h >> 10) & 0x1F
    mant = h & 0x3FF

    normal = sign | ((exp + (127 - 15)) << 23) | (mant << 13)
    special = sign | 0x7F800000 | (mant << 13)

    # A subnormal m·2^-24 with leading bit p (0..9) becomes 1.f·2^(p-24).
    lead = np.zeros_like(mant)
    for p in range(1, 10):
        lead = np.where(mant >> p != 0, np.uint32(p), lead)
    sub = sign | ((lead + (127 - 24)) << 23) | ((mant << (23 - lead)) & 0x7FFFFF)

    out = np.where(exp == 0x1F, special, normal)
    out = np.where(exp == 0, np.where(mant == 0, sign, sub), out)
    return out.astype(np.uint32).view(np.float32)


def f32_to_fp16_bits(values, *, name="weights"):
    """Round to nearest even (numpy's cast). A finite value that overflows to
    inf is refused: it would silently change the model."""
    v = np.asarray(values, dtype=np.float32)
    with np.errstate(over="ignore"):     # overflow is detected and reported below
        h = v.astype(np.float16)
    overflow = np.isfinite(v) & ~np.isfinite(h)
    if overflow.any():
        worst = float(np.abs(v[overflow]).max())
        raise WeightsFileError(
            f"{name}: {int(overflow.sum())} value(s) up to {worst:g} exceed the FP16 range (65504); pack as FP32"
        )
    return h.view(np.uint16)


# -- weights bytes <-> named arrays -----------------------------------------------
def weights_to_arrays(weights, dims, fp16=False):
    """Named (in x out) float32 arrays from a weights buffer of exactly the
    contract's length. FP32 arrays are read-only views into `weights` (no
    copy); FP16 ones are decoded copies."""
    d = Dims.of(dims)
    if dtype_name(fp16) == "int8":
        raise ContractError("an int8 blob holds integer weights and quantisation parameters, not float tensors: "
                            "read it with rvne.model.int8 (Blob.int8_model())")
    fp16 = dtype_name(fp16) == "fp16"
    check_weights_len(d, fp16, memoryview(weights).nbytes)
    flat = np.frombuffer(weights, dtype=WIRE_DTYPE[bool(fp16)])
    if fp16:
        flat = fp16_to_f32(flat)
    out = {}
    for spec in tensor_specs(d):
        a = flat[spec.offset:spec.offset + spec.size].reshape(spec.shape)
        a.flags.writeable = False  # a view into the caller's blob must not be written through
        out[spec.name] = a
    return out


def check_arrays(arrays, dims, *, source="weights", key=None, transposed=False):
    """Every contract tensor present, with its shape, nothing extra. `key`
    maps an rvne name to the name the user sees in their file; with
    `transposed` shapes are reported out x in (a PyTorch state dict)."""
    d = Dims.of(dims)
    specs = tensor_specs(d)
    key = key or (lambda name: name)
    want = {s.name for s in specs}
    missing = [s.name for s in specs if s.name not in arrays]
    if missing:
        raise WeightsFileError(f"{source}: missing tensor {key(missing[0])} (dims {d}; {len(missing)} missing in all)")
    extra = sorted(set(arrays) - want)
    if extra:
        raise WeightsFileError(f"{source}: unexpected tensor {key(extra[0])} (dims {d} have {d.n_layers} layer(s))")
    for s in specs:
        shape = tuple(np.shape(arrays[s.name]))
        if shape != s.shape:
            want_shape, layout = (s.shape[::-1], "out x in") if transposed else (s.shape, "in x out")
            got = shape[::-1] if transposed else shape
            raise WeightsFileError(f"{source}: tensor {key(s.name)} has shape {got}, dims {d} need {want_shape} ({layout})")


def weight_chunks(arrays, dims, fp16=False):
    """The weights as contiguous little-endian numpy chunks in blob order;
    joining them gives the weights bytes (one copy, made by the joiner)."""
    d = Dims.of(dims)
    check_arrays(arrays, d)
    chunks = []
    for s in tensor_specs(d):
        a = np.asarray(arrays[s.name])
        if a.dtype.kind not in "fiu":
            raise WeightsFileError(f"tensor {s.name} has dtype {a.dtype}, need a floating-point type")
        a = a.astype("<f4", copy=False)
        if fp16:
            a = f32_to_fp16_bits(a, name=f"tensor {s.name}").astype("<u2", copy=False)
        chunks.append(np.ascontiguousarray(a).reshape(-1))
    return chunks


def arrays_to_weights(arrays, dims, fp16=False):
    """The weights bytes of a blob from named (in x out) arrays."""
    return b"".join(weight_chunks(arrays, dims, fp16))
