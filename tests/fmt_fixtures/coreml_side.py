"""Run under a side venv's coremltools (fmt_fixtures.venvs), never imported
by the tests: Core ML's own writer and reader of MILBlob files at that
version.

  coreml_side.py write DIR   -> DIR/storage.bin from StorageWriter (every type
                                this version's binding writes), DIR/model_fp32
                                and DIR/model_fp16 .mlpackage from the
                                converter; prints JSON {"version", "kinds"}
  coreml_side.py read FILE OUT.npz KIND@OFFSET...
                             -> OUT.npz, key "OFFSET", Core ML's reader's array
"""

import json
import sys

import numpy as np


def _write(out):
    import coremltools as ct
    from coremltools import libmilstoragepython as storage
    from coremltools.converters.mil import Builder as mb

    rng = np.random.default_rng(11)
    kinds = sorted(m[len("write_"):-len("_data")] for m in dir(storage._BlobStorageWriter)
                   if m.startswith("write_"))
    arrays = {}
    for kind in kinds:
        if kind == "float":
            arrays[kind] = rng.standard_normal(37).astype(np.float32)
        elif kind == "fp16":
            arrays[kind] = rng.standard_normal(21).astype(np.float16).view(np.uint16)
        elif kind.startswith(("int", "uint")):
            bits = int(kind.lstrip("uint"))
            signed = kind.startswith("int")
            lo, hi = (-(1 << bits - 1), (1 << bits - 1) - 1) if signed else (0, (1 << bits) - 1)
            np_dt = {8: "int8", 16: "int16", 32: "int32"}.get(max(bits, 8)) if signed else \
                {8: "uint8", 16: "uint16", 32: "uint32"}.get(max(bits, 8))
            arrays[kind] = rng.integers(lo, hi, 29, endpoint=True).astype(np_dt)
    writer = storage._BlobStorageWriter(f"{out}/storage.bin")
    offsets = [[kind, getattr(writer, f"write_{kind}_data")(arrays[kind])] for kind in kinds]
    del writer   # the count in the header is written when the writer goes

    w1 = rng.standard_normal((48, 16)).astype(np.float32)
    w2 = rng.standard_normal((8, 48)).astype(np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 16))])
    def prog(x):
        return mb.linear(x=mb.relu(x=mb.linear(x=x, weight=w1)), weight=w2)

    for name, precision in (("model_fp32", ct.precision.FLOAT32), ("model_fp16", ct.precision.FLOAT16)):
        ct.convert(prog, convert_to="mlprogram", compute_precision=precision).save(f"{out}/{name}.mlpackage")
    print(json.dumps({"version": ct.__version__, "kinds": kinds, "offsets": offsets}))


def _read(path, out, specs):
    from coremltools import libmilstoragepython as storage

    reader = storage._BlobStorageReader(path)
    got = {}
    for spec in specs:
        kind, offset = spec.split("@")
        got[offset] = np.asarray(getattr(reader, f"read_{kind}_data")(int(offset)))
    np.savez(out, **got)


if __name__ == "__main__":
    if sys.argv[1] == "write":
        _write(sys.argv[2])
    else:
        _read(sys.argv[2], sys.argv[3], sys.argv[4:])
