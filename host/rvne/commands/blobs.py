"""Blob commands: init, pack, export, inspect, verify, infer. Each is a thin
layer over rvne.io.blob / contract / reference / weights_io."""

import argparse
import json
import sys

import numpy as np

from .. import plan
from ..errors import RvneError, WeightsFileError, printable, printable_json
from .. import errors as signed_errors
from ..io import blob, formats, npyfile, signed, upstream_init, weights as weights_io
from ..io.atomic import write_atomic
from ..io.formats import base as fmtbase
from ..io.formats import exporting, mapping
from ..io.formats.render import render_text as render_format
from ..io.formats.render import write_json
from ..io.frames import load_frames
from ..io.inspect import inspect_buffer, render_text
from ..model import contract, reference
from ..model.contract import Dims
from ..numbers import c_integer
from ._args import nonnegative, positive
from ._out import blob_fields, emit


# -- argument types (a bad value is a usage error, exit 2) ---------------------------
def _dims_arg(text):
    try:
        return Dims.parse(text).check()
    except RvneError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seed_arg(text):
    seed = c_integer(text)
    if seed is None:
        raise argparse.ArgumentTypeError(f"seed {text!r} is not an integer (decimal or 0x hex)")
    if not 0 < seed < 1 << 64:
        raise argparse.ArgumentTypeError(f"seed {text} must be in 1 .. 2^64-1 (xorshift is stuck at 0)")
    return seed


# -- helpers ---------------------------------------------------------------------------
def _write_blob(args, path, data, conversions=()):
    """A new blob file, then its one-line summary (or JSON), after the
    notes on what was converted or left out (not with -q: the result only;
    always in the JSON's "conversions"); a warning always."""
    write_atomic(path, data)
    parsed = blob.parse(data)
    warning = plan.partition_warning(path, len(data))
    notes = [] if getattr(args, "quiet", False) else list(conversions)
    emit(args, "\n".join([*notes, _summary(path, parsed)]),
         {**blob_fields(path, parsed), "conversions": list(conversions), "warning": warning})
    if warning:
        print(printable(warning), file=sys.stderr)


def _summary(path, parsed):
    h = parsed.header
    return f"{path}: {h.dtype} dims {h.dims} {h.total_len} bytes crc 0x{parsed.crc_stored:08X}"


# -- commands --------------------------------------------------------------------------
def cmd_init(args):
    if not args.force:      # before making the weights: an absurd size fails in a moment, not hours
        contract.check_writable(args.dims, args.fp16)       # beyond the format itself: its own message
        plan.refuse_unholdable(plan.blob_bytes(args.dims, args.fp16), f"dims {args.dims}",
                               None if args.fp16 else plan.blob_bytes(args.dims, True))
    data = upstream_init.init_blob(args.dims, args.seed, args.fp16)
    _write_blob(args, args.out, data)
    return 0


def cmd_pack(args):
    if args.map:
        if args.prefix is not None:
            raise WeightsFileError("--prefix and --map both pick the head's tensors: use one")
        data, lines = mapping.pack(args.weights, args.map, dims=args.dims, fp16=True if args.fp16 else None)
        if not args.force:
            plan.refuse_unholdable(len(data), str(args.weights))
        _write_blob(args, args.out, data, lines)
        return 0
    try:
        weights_io.format_of(args.weights)
    except WeightsFileError as exc:
        try:
            _, mod = _detect(args.weights)
        except (RvneError, OSError):
            raise exc from None
        if mod == "rvne":
            raise
        raise WeightsFileError(f"{args.weights}: a {mod.TITLE} file; its tensor names are not rvne's: "
                               "pass --map MAP (docs/formats.md, \"Import map\")") from None
    arrays, dims, notes = weights_io.load_named(args.weights, args.dims, args.prefix)
    if not args.force:
        plan.refuse_unholdable(plan.blob_bytes(dims, args.fp16), f"{args.weights} (dims {dims})",
                               None if args.fp16 else plan.blob_bytes(dims, True))
    data = blob.from_arrays(arrays, dims, args.fp16)
    _write_blob(args, args.out, data, notes)
    return 0


def _detect(path, partition=False):
    """(Source, reader module or "rvne") of a file, by content. A partition
    dump, an erased (all 0xFF) start or a file too short for any signature
    goes to the RVNE reader, whose errors say more (E_ERASED, E_TOO_SHORT)."""
    buf = blob.map_file(path)
    src = fmtbase.Source(buf, path)
    head = src.bytes(0, 4)
    if partition or head == b"\xff" * 4 or len(head) < 4:
        return src, "rvne"
    if head == b"PK\x03\x04" and str(path).lower().endswith((".npz", ".pt", ".pth")):
        return src, "weights"      # what `rvne pack` reads without --map (and export writes)
    return formats.open_path(path, buf)


# Named weights (.npz as rvne export writes it, a torch.save'd .pt): the
# files `rvne pack` reads without --map; their rules are pack's
# (docs/model.md, "Named tensors for import and export").
WEIGHTS_TITLE = {"npz": "rvne named weights (.npz: rvne names, in x out)",
                 "pt": "PyTorch state dict (.pt: nn.Linear names, out x in)"}


def _named_weights(path, src, dims=None):
    """(format, arrays, dims, notes) as `rvne pack` would read them. An .npz
    none of whose names are docs/model.md's (`rvne export` of a foreign
    file) is refused saying that --map imports it, not pack's first
    complaint about it."""
    fmt = weights_io.format_of(path)
    try:
        return (fmt, *weights_io.load_named(path, dims))
    except WeightsFileError:
        names = [t["name"] for t in _npz_listing(src)] if fmt == "npz" else None
        if names and not any(n == "wc" or n.startswith("layers.") for n in names):
            raise WeightsFileError(f"{path}: an .npz of {len(names)} arrays under other names than docs/model.md's "
                                   "(e.g. every tensor of a foreign file, as `rvne export` writes it): `rvne pack "
                                   "FILE OUT --map MAP` imports it (docs/formats.md, \"Import map\")") from None
        raise


def _npz_listing(src):
    """Each member of an .npz as its .npy header gives it (name, dtype,
    shape), reading headers only: what an .npz holds when pack refuses it
    (another tool's names: export of a foreign file, or --map's input)."""
    import io
    import zipfile

    out = []
    try:
        with zipfile.ZipFile(io.BytesIO(bytes(src.view))) as z:
            for i, info in enumerate(z.infolist()):
                name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                try:
                    with z.open(info) as member:
                        shape, _, dtype, _ = npyfile.header(member.read(4096))
                    out.append({"index": i, "name": name, "dtype": str(dtype), "shape": list(shape), "offset": None,
                                "size": info.file_size, "align": None})
                except (npyfile.NpyError, zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError):
                    out.append({"index": i, "name": name, "dtype": None, "shape": None, "offset": None,
                                "size": info.file_size, "align": None})
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError, NotImplementedError):
        pass
    return out


def _verify_weights(args, src):
    fmt, arrays, dims, notes = _named_weights(args.blob, src, args.dims)
    size = len(src.view)
    emit(args, f"OK {args.blob}: {WEIGHTS_TITLE[fmt]}, {len(arrays)} tensors, dims {dims}: `rvne pack` takes it"
         + "".join(f"; {n}" for n in notes),
         {"ok": True, "path": args.blob, "format": WEIGHTS_TITLE[fmt], "version": None, "tensors": len(arrays),
          "dims": list(dims), "bytes": size, "warnings": []})
    return 0


def _inspect_weights(args, src):
    fmt = weights_io.format_of(args.blob)
    try:
        _, arrays, dims, notes = _named_weights(args.blob, src, args.dims)
        error = None
        tensors = [{"index": i, "name": k, "dtype": "F32", "shape": list(a.shape), "offset": None,
                    "size": a.nbytes, "align": None} for i, (k, a) in enumerate(arrays.items())]
    except WeightsFileError as exc:
        dims, notes = None, []
        error = {"code": exc.code, "status": "fail", "detail": str(exc)}
        tensors = _npz_listing(src) if fmt == "npz" else []
    info = {"path": args.blob, "format": fmt, "title": WEIGHTS_TITLE[fmt], "size": len(src.view), "version": None,
            "fields": {"dims": list(dims) if dims else None}, "tensors": tensors,
            "checks": [error or {"code": "E_WEIGHTS", "status": "ok", "detail": "rvne pack takes it"}],
            "readings": notes, "holes": [], "valid": error is None, "error": error, "bytes_read": len(src.view)}
    if args.json:
        json.dump(printable_json(info), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        lines = [f"{args.blob}: {info['title']}, {info['size']} bytes"]
        if dims:
            lines.append(f"  dims: {dims}")
        lines += [f"  reading: {n}" for n in notes]
        lines.append(f"tensors: {len(tensors)}")
        lines += [f"  {t['name']}: {t['dtype']} {'x'.join(map(str, t['shape'] or ['?']))}" for t in tensors]
        lines.append(f"result: invalid ({error['code']})" if error else "result: valid (rvne pack takes it)")
        print("\n".join(lines))
    if error:
        print(printable(f"rvne: error: {error['detail']}"), file=sys.stderr)
        return 1
    return 0


def cmd_export(args):
    src, mod = _detect(args.blob)
    if mod != "rvne":
        if weights_io.format_of(args.out) != "npz":
            raise WeightsFileError(f"{args.out}: a {mod.TITLE} file exports to .npz only "
                                   "(its tensors are not the head's named weights)")
        report, arrays, raw = exporting.export_npz(args.blob, args.out, src, mod, args.raw)
        emit(args, f"{args.out}: {len(arrays)} arrays from {report.title}",
             {"path": args.out, "arrays": len(arrays), "source": report.title, "raw": list(raw)})
        if raw:
            print(f"rvne: warning: --raw: numpy has no type for {', '.join(raw)}: exported as the stored bytes "
                  "(uint8), not values",
                  file=sys.stderr)
        return 0
    fmt = weights_io.format_of(args.out, write=True)
    parsed = blob.read_file(args.blob, contract=True)
    if parsed.header.int8:
        raise WeightsFileError(f"{args.blob}: an int8 blob holds integers and quantisation parameters, not the "
                               "float tensors export writes; export the float model it was quantised from")
    weights_io.save(args.out, parsed.tensors(), parsed.header.dims)
    # The two files differ on purpose (docs/model.md): .npz is rvne's own
    # layout, .safetensors a PyTorch state dict; say which one this is.
    layout = EXPORT_LAYOUT[fmt]
    emit(args, f"{args.out}: {len(parsed.tensors())} tensors, dims {parsed.header.dims}, {layout[1]}",
         {"path": args.out, "tensors": len(parsed.tensors()), "dims": list(parsed.header.dims), "layout": layout[0]})
    return 0


EXPORT_LAYOUT = {"npz": ("rvne", "rvne's names (layers.0.wq, ...), in x out"),
                 "safetensors": ("state_dict", "PyTorch state-dict names (layers.0.attn.q_proj.weight, ...), "
                                               "out x in as nn.Linear stores them")}


def _inspect_other(args, src, mod):
    report = mod.read(src, data=args.data or args.stats)
    stats = {}
    if args.stats and report.valid:
        for t in report.tensors:
            try:
                stats[t.index] = fmtbase.stats(mod.tensor_array(src, t))
            except fmtbase.FormatError as exc:
                stats[t.index] = {"error": str(exc)}
    if args.json:
        info = {"path": args.blob, **report.as_dict(tensors=False)}
        head = {k: info.pop(k) for k in ("path", "format", "title", "size", "version", "fields")}

        def tensors():
            for t in report.tensors:
                d = t.as_dict()
                if t.index in stats:
                    d["stats"] = stats[t.index]
                yield d

        # Only the path can hold bytes that are not UTF-8 (readers decode names strictly),
        # so a million tensors are not walked again.
        write_json(sys.stdout, printable_json(head), tensors(), printable_json({**info, "bytes_read": src.bytes_read}))
    else:
        print(render_format(args.blob, report, stats))
    err = report.error
    if err:
        print(printable(f"rvne: error: {args.blob}: {err.code}: {err.detail}"), file=sys.stderr)
        return 1
    return 0


def cmd_inspect(args):
    src, mod = _detect(args.blob, args.partition)
    if mod == "weights":
        return _inspect_weights(args, src)
    if mod != "rvne":
        return _inspect_other(args, src, mod)
    buf = src.view
    info = inspect_buffer(buf, exact_length=not args.partition)
    info = {"path": args.blob, **info, "bytes_read": len(buf)}
    if args.json:
        json.dump(printable_json(info), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render_text(info))
    err = info["error"]
    if err:
        print(printable(f"rvne: error: {args.blob}: {err['code']}: {err['detail']}"), file=sys.stderr)
        return 1
    return 0


def cmd_verify(args):
    src, mod = _detect(args.blob, args.partition)
    if mod == "weights":
        return _verify_weights(args, src)
    if mod != "rvne":
        report = mod.read(src, data=True)
        report.raise_first(args.blob)
        warns = [c for c in report.checks if c.status == fmtbase.WARN]
        version = f" version {report.version}" if report.version is not None else ""
        emit(args, f"OK {args.blob}: {report.title}{version}, {len(report.tensors)} tensors, {report.size} bytes"
             + "".join(f"; warning {c.code}: {c.detail}" for c in warns),
             {"ok": True, "path": args.blob, "format": report.title, "version": report.version,
              "tensors": len(report.tensors), "bytes": report.size,
              "warnings": [{"code": c.code, "detail": c.detail} for c in warns]})
        return 0
    del src
    if not args.partition and signed.is_signed(bytes(blob.map_file(args.blob)[:64 * 1024 * 1024])):
        return _verify_signed(args)
    if args.pubkey:
        raise signed_errors.UnsignedError(f"{args.blob}: E_UNSIGNED: no signature to check against "
                                          f"{args.pubkey}: sign it with `rvne sign`")
    parsed = blob.read_file(args.blob, exact_length=not args.partition, contract=not args.container)
    emit(args, f"OK {_summary(args.blob, parsed)}", {"ok": True, "format": "RVNE", **blob_fields(args.blob, parsed)})
    return 0


def _verify_signed(args):
    """A signed model (docs/format.md "Signed models"): its blob and layout;
    with --pubkey, espsecure's own check that that key signed it."""
    data = signed.read_model(args.blob)
    sm = signed.parse(data)
    signers = [b.key_digest.hex() for b in sm.blocks]
    checked = ""
    if args.pubkey:
        digest = signed.key_digest(args.pubkey)
        if digest not in signers:
            raise signed_errors.UntrustedKeyError(f"{args.blob}: E_UNTRUSTED_KEY: not signed by {args.pubkey} "
                                                  f"(digest {digest}); its signers: {', '.join(signers)}")
        try:
            signed.espsecure("verify-signature", args.blob, "--version", "2", "--keyfile", args.pubkey)
        except signed_errors.SignatureError as exc:
            raise signed_errors.BadSignatureError(f"{args.blob}: E_BAD_SIGNATURE: {exc}") from None
        checked = f", signature by {args.pubkey} verified"
    emit(args, f"OK {_summary(args.blob, sm.blob)}; signed model, version {sm.version}, signers "
               f"{', '.join(signers)}{checked or ' (signature not checked: give --pubkey)'}",
         {"ok": True, "format": "RVNE signed", **blob_fields(args.blob, sm.blob), "bytes": len(data),
          "model_version": sm.version, "signers": signers, "verified_with": args.pubkey})
    return 0


def cmd_infer(args):
    parsed = blob.read_file(args.blob, contract=True)
    int8 = parsed.header.int8
    if args.accumulators and not int8:
        raise RvneError(f"{args.blob}: --accumulators: a {parsed.header.dtype} blob has no integer logits; "
                        "it takes an int8 blob (rvne quantize)")
    # The frames `check --frames` takes: [T, D] one stream, or [N, T, D] N
    # sequences, each from a reset state (as check's RUN starts each).
    frames, ndim = load_frames(args.frames, parsed.header.input_dim, sequences=True, with_ndim=True)
    with np.errstate(all="ignore"):     # non-finite logits are reported below, in one line
        if int8:
            model = parsed.int8_model()
            logits = np.stack([model.forward(seq, args.window) for seq in frames])
            if not args.accumulators:
                logits = model.float_logits(logits)
        else:
            logits = np.stack([reference.forward_blob(parsed, seq, args.window) for seq in frames])
    if ndim == 2:
        logits = logits[0]
    import io

    # The accumulators are int32 on a device (|acc| < 2^24): the file says so.
    dtype = np.int32 if args.accumulators else np.float32
    buf = io.BytesIO()
    np.save(buf, logits.astype(dtype, copy=False))
    write_atomic(args.out, buf.getvalue())  # written as named: np.save would append .npy
    bad = 0 if args.accumulators else int((~np.isfinite(logits)).sum())
    what = "int32 logit accumulators" if args.accumulators else "float32"
    emit(args, f"{args.out}: logits {'x'.join(map(str, logits.shape))} {what} (window {args.window}"
               + (", int8 reference" if int8 else "") + ")",
         {"path": args.out, "shape": list(logits.shape), "frames": int(np.prod(logits.shape[:-1])),
          "classes": int(logits.shape[-1]), "window": args.window, "non_finite": bad,
          "dtype": parsed.header.dtype, "accumulators": bool(args.accumulators)})
    if bad:
        print(f"rvne: warning: {bad} logits are not finite: frame values too large for float32 "
              "arithmetic? scale the frames", file=sys.stderr)
    return 0


def _frames_arg(path, input_dim, what):
    """User frames as a list of sequences; any refusal is `what`'s named error."""
    from ..errors import CalibrationError

    try:
        return list(load_frames(path, input_dim, sequences=True))
    except CalibrationError:
        raise
    except RvneError as exc:
        raise CalibrationError(f"{what}: {exc}") from None


QUANTIZE_VECTORS = 8       # generated sequences, each longer than the window


def cmd_quantize(args):
    from .. import check
    from ..model import quantize as qz

    arrays, dims, what = weights_io.load_float_model(args.model, args.dims)
    qz.check_weights(arrays, dims)
    contract.check_writable(dims, "int8")
    length = check.default_length(args.window)

    def generated(seed):
        seqs = check.generated_frames(QUANTIZE_VECTORS, length, args.window, dims.input_dim, seed)
        return seqs, f"{len(seqs)} generated sequences (rvne.check.generated_frames, seed {seed})"

    if args.calibration:
        cal = _frames_arg(args.calibration, dims.input_dim, "calibration frames")
        cal_what = f"{args.calibration} ({len(cal)} sequence(s))"
    else:
        cal, cal_what = generated(args.seed)
    if args.eval:
        ev = _frames_arg(args.eval, dims.input_dim, "evaluation frames")
        ev_what = f"{args.eval} ({len(ev)} sequence(s))"
    else:
        # Another seed than calibration's: the report is on frames it did not see.
        ev, ev_what = generated(args.seed + 1)
    model, ranges = qz.quantize(arrays, dims, cal, args.window, args.x_range)
    data = blob.from_int8(model)
    report = qz.compare(model, arrays, ev, args.window)
    write_atomic(args.out, data)
    parsed = blob.parse(data)
    cal_frames = sum(len(s) for s in cal)
    rel = report["relative_error"]
    lines = [] if args.quiet else [
        f"model: {args.model} ({what}, dims {dims})",
        f"calibration: {cal_what}, {cal_frames} frames; s_0 {float(model.x_scale):.6g}; x ranges (input, then "
        f"after each layer) {', '.join(f'{r:.4g}' for r in ranges.x)} of max |x| "
        f"{', '.join(f'{r:.4g}' for r in ranges.x_max)} (--x-range {args.x_range})",
        f"evaluation: {ev_what}, {report['frames']} frames not calibrated on",
    ]
    lines.append(f"int8 vs float: argmax agreement {100 * report['argmax_agreement']:.2f}%, logit error max "
                 f"{report['max_abs_error']:.4g} ({'-' if rel is None else f'{100 * rel:.2f}%'} of the logit range "
                 f"{report['logit_range']:.4g})")
    lines.append(_summary(args.out, parsed))
    warning = plan.partition_warning(args.out, len(data))
    emit(args, "\n".join(lines),
         {**blob_fields(args.out, parsed), "source": str(args.model), "window": args.window,
          "calibration": {"source": str(args.calibration) if args.calibration else "generated",
                          "seed": None if args.calibration else args.seed,
                          "sequences": len(cal), "frames": cal_frames},
          "evaluation": {"source": str(args.eval) if args.eval else "generated",
                         "seed": None if args.eval else args.seed + 1, **report},
          "ranges": ranges._asdict()})
    if warning:
        print(printable(warning), file=sys.stderr)
    return 0


def register(sub):
    p = sub.add_parser("init", help="write a deterministic random blob (default: upstream's example)",
                       description="Write a blob of xorshift64* weights. With no options: upstream's example "
                                   "blob byte for byte (FP32, dims 16,4,1,32,2,4, 41244 bytes, CRC 0xDC807956).")
    p.add_argument("out", metavar="OUT", help="blob file to write")
    p.add_argument("--fp16", action="store_true", help="store FP16 weights")
    p.add_argument("--dims", type=_dims_arg, default=upstream_init.DIMS, metavar="D,HQ,HKV,HD,L,C",
                   help="model dims (default 16,4,1,32,2,4)")
    p.add_argument("--seed", type=_seed_arg, default=upstream_init.SEED, metavar="S",
                   help="xorshift seed, decimal or 0x hex (default 0xC5110007DEADBEEF)")
    p.add_argument("--force", action="store_true",
                   help="write a blob larger than any board can hold (32 MiB, an ESP32-S3's data mapping); "
                        "only the sim target can load one")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("pack", help="pack named weights (.npz / .safetensors / .pt, or any format with --map) "
                                    "into a blob",
                       description="Pack the tensors of docs/model.md into an RVNE v1 blob. A state dict's "
                                   "prefix common to every name (model., module.) is stripped. With --map, "
                                   "import them from any supported format (docs/formats.md); every dtype "
                                   "conversion is printed.")
    p.add_argument("weights", metavar="WEIGHTS",
                   help=".npz (in x out), or a PyTorch state dict: .safetensors, or .pt/.pth (torch.save, "
                        "read with weights_only: no code runs); with --map also .lwt, Burnpack, MILBlob "
                        "weight.bin, safetensors, .pt or .npz under any names")
    p.add_argument("--map", metavar="MAP", help="JSON map from rvne tensor names to source tensors")
    p.add_argument("--prefix", metavar="P",
                   help="a state dict with more than the head: take the tensors named P + docs/model.md's "
                        "names (e.g. head.) and ignore the rest ('' for top-level names)")
    p.add_argument("out", metavar="OUT", help="blob file to write")
    p.add_argument("--fp16", action="store_true",
                   help="store FP16 weights (round to nearest even; default FP32, or the map's \"dtype\")")
    p.add_argument("--dims", type=_dims_arg, default=None, metavar="D,HQ,HKV,HD,L,C",
                   help="dims, overriding the map's and the file's rvne.dims metadata")
    p.add_argument("--force", action="store_true",
                   help="write a blob larger than any board can hold (32 MiB, an ESP32-S3's data mapping); "
                        "only the sim target can load one")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(func=cmd_pack)

    p = sub.add_parser("export", help="export a blob's (or any supported file's) weights to .npz",
                       description="Write a loadable blob's tensors (decoded to FP32) with rvne.dims metadata "
                                   "to .npz, under rvne's names in x out (docs/model.md), or to .safetensors as a "
                                   "PyTorch state dict (nn.Linear names, out x in); `rvne pack` reads both back. "
                                   "Or every tensor of a valid file of another supported format to .npz, under "
                                   "its own names, decoded exactly (FP16 stays float16).")
    p.add_argument("blob", metavar="FILE", help="a loadable .rvne blob, or .lwt / Burnpack / MILBlob / "
                                                "CNN v2 / safetensors")
    p.add_argument("out", metavar="OUT", help=".npz or .safetensors")
    p.add_argument("--raw", action="store_true",
                   help="export tensors of types numpy lacks (safetensors FP8/FP6/FP4) as their stored bytes "
                        "(uint8); without it such a file is refused, exit 1")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("inspect", help="show a weight file's format, header, tensors and integrity checks",
                       description="Recognise the format by content (RVNE, .lwt, Burnpack, MILBlob, CNN v2, "
                                   "safetensors; a zip named .npz or .pt is the named weights `rvne pack` reads). "
                                   "RVNE: every header field, CRC, contract check and per-tensor "
                                   "statistics. Others: header, every tensor, every rule's result; only "
                                   "headers and indexes are read unless --data or --stats (.npz and .pt: read "
                                   "whole, as pack reads them). Exit 1 when the file is invalid or not loadable.")
    p.add_argument("blob", metavar="FILE", help="the weight file (or, with --partition, an RVNE partition dump)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--data", action="store_true", help="also run the checks that read tensor data (CRC, padding)")
    p.add_argument("--stats", action="store_true", help="also print per-tensor statistics (reads all data)")
    p.add_argument("--partition", action="store_true",
                   help="FILE is a partition image (an RVNE blob followed by anything): bytes after the CRC are ignored")
    p.add_argument("--dims", type=_dims_arg, default=None, metavar="D,HQ,HKV,HD,L,C",
                   help="an .npz or .pt without rvne.dims metadata: its dims, as `rvne pack --dims`")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("verify", help="check a weight file against every rule of its format; one line, exit code",
                       description="Exit 0 and print OK when the file is valid (an RVNE blob: also loadable; "
                                   "an .npz or .pt: `rvne pack` takes it without --map), else exit 1 with the "
                                   "first failing rule's named error. An .npz under other names (`rvne export "
                                   "FILE all.npz` of a foreign file) is not packable as it is: exit 1, saying "
                                   "that `rvne pack --map` imports it.")
    p.add_argument("blob", metavar="FILE", help="the weight file (or, with --partition, an RVNE partition dump)")
    p.add_argument("--partition", action="store_true",
                   help="FILE is a partition image (an RVNE blob followed by anything): bytes after the CRC are ignored")
    p.add_argument("--container", action="store_true", help="check rules 1-13 only, not the head's contract")
    p.add_argument("--pubkey", metavar="PEM",
                   help="a signed model (`rvne sign`): check its signature with this RSA-3072 public (or private) "
                        "key, as `espsecure verify-signature --version 2` does")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--dims", type=_dims_arg, default=None, metavar="D,HQ,HKV,HD,L,C",
                   help="an .npz or .pt without rvne.dims metadata: its dims, as `rvne pack --dims`")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("infer", help="run the numpy reference over frames",
                       description="LOGITS[t] = the reference head's logits after frames 0..t (per sequence).")
    p.add_argument("blob", metavar="BLOB", help="a loadable .rvne blob")
    p.add_argument("frames", metavar="FRAMES.npy",
                   help="finite float frames (numpy.save): [T, input_dim], one stream, or [N, T, input_dim], N "
                        "sequences each from a reset state (what `rvne check --frames` takes)")
    p.add_argument("--window", type=positive("window"), default=reference.DEFAULT_WINDOW, metavar="W",
                   help=f"attention window in frames (default {reference.DEFAULT_WINDOW})")
    p.add_argument("--out", required=True, metavar="LOGITS.npy",
                   help="float32 [T, n_classes] (or [N, T, n_classes]), written as named (replaced whole)")
    p.add_argument("--accumulators", action="store_true",
                   help="an int8 blob: write the int32 logit accumulators (what its device computes, exactly) "
                        "instead of float logits (accumulator x logit_scale)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(func=cmd_infer)

    p = sub.add_parser("quantize", help="quantise a float model into an int8 blob",
                       description="Calibrate a float model (FP32/FP16 blob, .npz, .safetensors, .pt) on frames, "
                                   "write the int8 blob of docs/format.md (replaced whole; nothing written on an "
                                   "error), and report int8 against float on frames it did not calibrate on: "
                                   "argmax agreement and logit error.")
    p.add_argument("model", metavar="MODEL", help="a loadable FP32/FP16 .rvne blob, or .npz / .safetensors / .pt "
                                                  "as `rvne pack` reads them")
    p.add_argument("out", metavar="OUT", help="int8 blob to write")
    p.add_argument("--calibration", metavar="FRAMES.npy",
                   help="calibration frames, finite float [T, input_dim] or [N, T, input_dim] (default: "
                        f"{QUANTIZE_VECTORS} sequences of rvne check's generated frames)")
    p.add_argument("--eval", metavar="FRAMES.npy",
                   help="frames to report int8 against float on (default: generated frames, seed + 1)")
    p.add_argument("--seed", type=nonnegative("seed"), default=0, metavar="N",
                   help="seed of the generated calibration frames (evaluation: N + 1); default 0")
    p.add_argument("--window", type=positive("window", 65535), default=reference.DEFAULT_WINDOW, metavar="W",
                   help=f"attention window in frames (default {reference.DEFAULT_WINDOW})")
    p.add_argument("--x-range", choices=("search", "max"), default="search",
                   help="the ranges of x (the input, then the residual stream after each layer, a scale "
                        "each): max |x| on the calibration frames, or (default) clips of them, down to 1/16, "
                        "whose int8 model agrees best with the float one on them")
    p.add_argument("--dims", type=_dims_arg, default=None, metavar="D,HQ,HKV,HD,L,C",
                   help="an .npz or .pt without rvne.dims metadata: its dims, as `rvne pack --dims`")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(func=cmd_quantize)
