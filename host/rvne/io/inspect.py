"""What `rvne inspect` reports about a blob: every header field, dtype,
sizes, stored and computed CRC, parameter count, the container verdict and
the head's contract check, and per-tensor statistics. Reports as much as can
be read even from a blob that fails a rule."""

import numpy as np

from ..errors import BlobError, RvneError
from ..model import contract
from . import blob as blobmod
from .crc import byte_view, crc32

# docs/format.md's rules in their order: a reader stops at the first failure,
# so every rule before it passed and every rule after it was not reached.
RULES = ("E_TOO_SHORT", "E_ERASED", "E_BAD_MAGIC", "E_BAD_VERSION", "E_BAD_FLAGS", "E_RESERVED", "E_LENGTH",
         "E_CRC", "E_ZERO_DIM", "E_GQA", "E_NO_LAYERS", "E_FEW_CLASSES", "E_ELEM_SIZE", "E_CONTRACT")
INT8_RULES = RULES + ("E_QPARAM",)
TITLE = "RVNE v1 blob"


def _checks(failed, rules=RULES):
    """One {code, status, detail} per rule, as the other formats report them."""
    out, reached = [], True
    for code in rules:
        if not reached:
            out.append({"code": code, "status": "skipped", "detail": "not reached: an earlier rule failed"})
        elif code == failed:
            out.append({"code": code, "status": "fail", "detail": "see error"})
            reached = False
        else:
            out.append({"code": code, "status": "ok", "detail": "passed"})
    return out


def _tensor_stats(name, shape, offset_bytes, a):
    a = np.asarray(a, dtype=np.float64)
    finite = np.isfinite(a)
    vals = a[finite]
    return {
        "name": name,
        "shape": list(shape),
        "offset": offset_bytes,
        "min": float(vals.min()) if vals.size else None,
        "max": float(vals.max()) if vals.size else None,
        "mean": float(vals.mean()) if vals.size else None,
        "std": float(vals.std()) if vals.size else None,
        "nan": int(np.isnan(a).sum()),
        "inf": int(np.isinf(a).sum()),
    }


def inspect_buffer(buf, *, exact_length=True):
    """A JSON-ready dict describing `buf` (a blob file's bytes, or a
    partition with exact_length=False): the keys every format's inspect
    has (format, title, size, version, fields, tensors, checks, readings,
    holes, valid, error) plus RVNE's own (header, crc, contract, ...)."""
    info = _inspect(byte_view(buf), exact_length)
    err = info["error"]
    if err is None and not info["loadable"]:
        err = info["error"] = {"code": "E_CONTRACT", "status": "fail", "detail": info["contract"]["message"]}
    int8 = bool(info["header"]) and info.get("dtype") == "int8"
    info["checks"] = _checks(err["code"] if err else None, INT8_RULES if int8 else RULES)
    for c in info["checks"]:
        if c["status"] == "fail":
            c["detail"] = err["detail"]
    info["valid"] = err is None
    info["fields"] = info["header"] or {}
    info["version"] = info["header"]["version"] if info["header"] else None
    return info


def _inspect(view, exact_length):
    n = len(view)
    info = {"format": "rvne", "title": TITLE, "size": n, "version": None, "fields": {}, "tensors": [],
            "checks": [], "readings": [], "holes": [],
            "valid": False, "container_valid": False, "loadable": False, "error": None, "header": None,
            "crc": None}
    try:
        parsed = blobmod.parse(view, exact_length=exact_length)
    except BlobError as exc:
        parsed = None
        info["error"] = {"code": exc.code, "status": "fail", "detail": str(exc)}
    if n < blobmod.HEADER_LEN:
        return info

    h = parsed.header if parsed else blobmod.Header.unpack(view)
    info["header"] = {
        "magic": h.magic,
        "version": h.version,
        "flags": h.flags,
        "reserved": h.reserved,
        **{f: getattr(h, f) for f in contract.DIM_FIELDS},
        "weights_len": h.weights_len,
    }
    info["dtype"] = h.dtype
    info["elem_size"] = h.elem_size
    info["total_len"] = h.total_len
    if h.total_len <= n:
        stored = int.from_bytes(view[h.total_len - 4:h.total_len], "little")
        computed = crc32(view[:h.total_len - 4])
        info["crc"] = {"stored": stored, "computed": computed, "match": stored == computed}

    if parsed is None and info["error"]["code"] in ("E_ERASED", "E_BAD_MAGIC"):
        return info     # not an RVNE header: its "dims" mean nothing
    try:
        d = contract.Dims.of(h).check()
    except RvneError:
        return info
    info["q_dim"], info["kv_dim"], info["group"] = d.q_dim, d.kv_dim, d.group
    info["params"] = contract.n_params(d)
    expected = contract.expected_weights_len(d, h.dtype)
    info["contract"] = {
        "expected_weights_len": expected,
        "weights_len": h.weights_len,
        "ok": expected == h.weights_len,
        "message": "weights_len matches the temporal head" if expected == h.weights_len else (
            f"weights_len is {h.weights_len} but the head needs {expected}: "
            + ("container-valid, not loadable" if parsed is not None else "not loadable")
        ),
    }
    if parsed is None:
        return info
    info["container_valid"] = True
    info["loadable"] = info["contract"]["ok"]
    if not info["loadable"]:
        return info
    if h.int8:
        return _inspect_int8(info, parsed, d)
    tensors = parsed.tensors()
    info["tensors"] = [
        {"index": i, "dtype": {"fp32": "F32", "fp16": "F16"}[h.dtype], "size": tensors[s.name].size * h.elem_size, "align": None,
         **_tensor_stats(s.name, s.shape, blobmod.HEADER_LEN + s.offset * h.elem_size, tensors[s.name])}
        for i, s in enumerate(contract.tensor_specs(d))
    ]
    info["nan"] = sum(t["nan"] for t in info["tensors"])
    info["inf"] = sum(t["inf"] for t in info["tensors"])
    return info


def _rq_summary(mult, shift):
    m = np.asarray(mult, dtype=np.float64) * np.exp2(-np.asarray(shift, dtype=np.float64))
    return {"pairs": int(m.size), "min": float(m.min()), "max": float(m.max())}


def _inspect_int8(info, parsed, d):
    """An int8 blob: its parameters summarised, rule 17 (E_QPARAM), and
    statistics of its int8 weights."""
    P, T, Wn = contract.int8_sections(d)
    info["int8"] = {"param_bytes": P, "exp_bytes": T, "weight_bytes": Wn}
    try:
        model = parsed.int8_model()
    except BlobError as exc:
        info["loadable"] = False
        info["error"] = {"code": exc.code, "status": "fail", "detail": str(exc)}
        return info
    ls = np.asarray(model.logit_scale, dtype=np.float64)
    info["int8"].update({
        "in_scale_inv": float(model.in_scale_inv), "x_scale": float(model.x_scale),
        "residual_scales": model.residual_scales(),
        "logit_scale": {"min": float(ls.min()), "max": float(ls.max())},
        # Each requantisation as its factor M = mult * 2^-shift, over every layer.
        "rq": {n: _rq_summary(*model.rq[n]) for n in model.rq},
        "exp": [{"first": int(e[0]), "last": int(e[-1]), "nonzero": int((e > 0).sum())} for e in model.exp],
    })
    offset = blobmod.HEADER_LEN + P + T
    info["tensors"] = [
        {"index": i, "dtype": "I8", "size": s.size, "align": None,
         **_tensor_stats(s.name, s.shape, offset + s.offset, model.weights[s.name])}
        for i, s in enumerate(contract.tensor_specs(d))
    ]
    info["nan"] = info["inf"] = 0
    return info


def _num(v):
    return "-" if v is None else f"{v:+.6g}"


def render_text(info):
    """The human rendering of inspect_buffer's dict."""
    out = []
    where = f"{info['path']}: " if info.get("path") else ""
    out.append(f"{where}{info['size']} bytes")
    h = info["header"]
    if h:
        out.append("header:")
        for k, v in h.items():
            shown = f"0x{v:0{8 if k == 'magic' else 2}X}" if k in ("magic", "flags") else v
            out.append(f"  {k:<12} {shown}")
        out.append(f"dtype          {info['dtype']} ({info['elem_size']}-byte elements)")
        out.append(f"total_len      {info['total_len']} (28 + weights_len)")
    if info["crc"]:
        c = info["crc"]
        out.append(f"crc            stored 0x{c['stored']:08X}, computed 0x{c['computed']:08X} "
                   f"({'match' if c['match'] else 'MISMATCH'})")
    if "params" in info:
        out.append(f"params         {info['params']} (Q={info['q_dim']} K={info['kv_dim']} G={info['group']})")
    if "contract" in info:
        out.append(f"contract       {'ok' if info['contract']['ok'] else 'FAIL'}: {info['contract']['message']}")
    q = info.get("int8")
    if q and "x_scale" in q:
        out.append(f"int8           parameters {q['param_bytes']} bytes, exp tables {q['exp_bytes']}, "
                   f"weights {q['weight_bytes']}")
        out.append(f"  x_scale      {q['x_scale']:.6g} (in_scale_inv {q['in_scale_inv']:.6g})")
        out.append(f"  x scales     {', '.join(f'{s:.6g}' for s in q['residual_scales'])} "
                   "(s_0 the input's, then after each layer)")
        out.append(f"  logit_scale  {q['logit_scale']['min']:.6g} .. {q['logit_scale']['max']:.6g}")
        for n, r in q["rq"].items():
            out.append(f"  rq {n:<9} {r['pairs']} pair(s), M = mult*2^-shift in {r['min']:.6g} .. {r['max']:.6g}")
        for layer, e in enumerate(q["exp"]):
            out.append(f"  exp layer {layer}  EXP[0] {e['first']}, EXP[255] {e['last']}, {e['nonzero']} non-zero")
    if info.get("tensors"):
        out.append(f"{'tensor':<16} {'shape':<10} {'offset':>8} {'min':>13} {'max':>13} {'mean':>13} {'std':>13} nan inf")
        for t in info["tensors"]:
            shape = "x".join(str(s) for s in t["shape"])
            out.append(
                f"{t['name']:<16} {shape:<10} {t['offset']:>8} {_num(t['min']):>13} {_num(t['max']):>13} "
                f"{_num(t['mean']):>13} {_num(t['std']):>13} {t['nan']:>3} {t['inf']:>3}"
            )
        out.append(f"non-finite     {info['nan']} NaN, {info['inf']} Inf")
    if info["error"]:
        out.append(f"verdict        INVALID {info['error']['code']}: {info['error']['detail']}")
    else:
        out.append("verdict        OK: container-valid and loadable by the temporal head")
    return "\n".join(out)
