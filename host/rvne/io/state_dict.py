"""Which entries of a PyTorch state dict (.pt, .safetensors) are the head's
tensors (docs/model.md, "Named tensors for import and export").

The names must be the contract's state-dict keys. A prefix common to every
key (`model.`, `module.`, `module.model.` ...: a wrapper, DataParallel) is
stripped when that makes them so. Entries beyond the head's are taken only
when the user says how: `--prefix P` takes the keys under P (P stripped) and
ignores the rest, or `--map`. Every refusal names what was expected, what
was found, and the option that fixes it."""

import json
import re
from typing import NamedTuple, Optional

from ..errors import WeightsFileError
from ..model import contract
from ..model.contract import Dims
from .names import rvne_name, state_dict_key

_SUFFIX = re.compile(r"^(.*?)(layers\.\d+\.attn\.[qkvo]_proj|classifier)\.(weight|bias)$")
SHOWN = 6       # names listed in a message before "... (N in all)"


class Entry(NamedTuple):
    key: str
    shape: Optional[tuple]      # None: not a tensor (an epoch count, a string...)


class Selection(NamedTuple):
    keys: dict          # rvne name -> the file's key
    prefix: str         # stripped from the head's keys
    ignored: list       # keys left out (with --prefix)


def _listed(names):
    names = list(names)
    shown = ", ".join(names[:SHOWN])
    return shown + (f", ... ({len(names)} in all)" if len(names) > SHOWN else "")


def _expected(dims):
    if dims is None:
        return "layers.N.attn.{q,k,v,o}_proj.weight for N = 0 .. L-1, and classifier.weight (out x in)"
    top = dims.n_layers - 1
    layers = "layers.0" if top == 0 else f"layers.{{0..{top}}}"
    return f"{layers}.attn.{{q,k,v,o}}_proj.weight and classifier.weight (out x in, dims {dims})"


def _dotted_prefixes(keys):
    """'' and every dotted prefix shared by all keys, shortest first."""
    keys = list(keys)
    common = keys[0].split(".")[:-1] if keys else []
    for k in keys[1:]:
        parts = k.split(".")[:-1]
        n = 0
        while n < min(len(common), len(parts)) and common[n] == parts[n]:
            n += 1
        common = common[:n]
    return [""] + [".".join(common[:i]) + "." for i in range(1, len(common) + 1)]


def _take(entries, prefix, source):
    """{rvne name: key} of the entries under `prefix` that are contract
    tensors; a bias of a contract matrix is refused (the head has none)."""
    out = {}
    for e in entries:
        if not e.key.startswith(prefix):
            continue
        rest = e.key[len(prefix):]
        m = _SUFFIX.match(rest)
        if m and not m.group(1) and m.group(3) == "bias" and e.shape is not None:
            raise WeightsFileError(f"{source}: tensor {e.key}: biases are not part of the contract "
                                   "(docs/model.md): train with nn.Linear(..., bias=False)")
        name = rvne_name(rest)
        if name is not None:
            out[name] = e.key
    return out


def _head_prefix(entries):
    """The one prefix under which contract-named tensors sit, or None."""
    found = {m.group(1) for m in (_SUFFIX.match(e.key) for e in entries) if m and m.group(3) == "weight"}
    found = {p for p in found if p == "" or p.endswith(".")}
    return found.pop() if len(found) == 1 else None


def suggest_map(entries, dims):
    """A --map pairing the contract's tensors, in blob order, with the
    file's matrices in file order by shape (out x in first, then in x out);
    None when they do not pair up. Without dims they are guessed from the
    matrices when those are exactly 4L + 1."""
    mats = [e for e in entries if e.shape is not None and len(e.shape) == 2]
    if dims is not None:
        wants = [(s.name, s.shape) for s in contract.tensor_specs(dims)]
    else:
        if len(mats) < 5 or (len(mats) - 1) % 4:
            return None
        (Q, D), K, C = mats[0].shape, mats[1].shape[0], mats[-1].shape[0]
        shapes = {"wq": (D, Q), "wk": (D, K), "wv": (D, K), "wo": (Q, D)}
        wants = [(f"layers.{n}.{t}", shapes[t]) for n in range((len(mats) - 1) // 4) for t in shapes]
        wants.append(("wc", (D, C)))
    used, tensors = set(), {}
    for name, shape in wants:
        pick = next(((e, True) for e in mats if e.key not in used and tuple(e.shape) == shape[::-1]), None) \
            or next(((e, False) for e in mats if e.key not in used and tuple(e.shape) == shape), None)
        if pick is None:
            return None
        used.add(pick[0].key)
        tensors[name] = {"source": pick[0].key, "transpose": True} if pick[1] else pick[0].key
    doc = {"dims": str(dims)} if dims is not None else {}
    doc["tensors"] = tensors
    return doc


def select(entries, source, prefix=None, dims=None):
    """The head's tensors among `entries` (Entry list, file order). `prefix`
    is the user's --prefix (None: only a prefix common to every key may be
    stripped); `dims` (or None) serve the messages only."""
    d = Dims.of(dims) if dims is not None else None
    if prefix is not None:
        keys = _take(entries, prefix, source)
        if not keys:
            under = [e.key for e in entries if e.key.startswith(prefix)]
            raise WeightsFileError(f"{source}: no tensor under --prefix {prefix!r} is the head's: expected "
                                   f"{prefix}{_expected(d)}; found {_listed(under or [e.key for e in entries])}")
        taken = set(keys.values())
        return Selection(keys, prefix, [e.key for e in entries if e.key not in taken])
    for p in _dotted_prefixes(e.key for e in entries):
        keys = _take(entries, p, source)
        if keys and len(keys) == len(entries):
            return Selection(keys, p, [])
    head = _head_prefix(entries)
    if head is not None:
        keys = _take(entries, head, source)
        taken = set(keys.values())
        extra = [e.key for e in entries if e.key not in taken]
        raise WeightsFileError(
            f"{source}: {len(extra)} entries besides the head's tensors (under {head!r}): {_listed(extra)}; "
            f"to take the head's and ignore the rest pass --prefix {head or chr(39) * 2}, or pick them with "
            "--map MAP (docs/formats.md, \"Import map\")")
    doc = suggest_map(entries, d)
    if doc is not None:
        fix = (f"pass --map MAP with MAP = {json.dumps(doc)} (paired by order and shape: check it"
               + ("; add --dims D,HQ,HKV,HD,L,C" if d is None else "") + "; docs/formats.md, \"Import map\")")
    else:
        fix = ("write a map from those names and pass --map MAP (docs/formats.md, \"Import map\")"
               + ("; with --dims rvne suggests one" if d is None else ""))
    raise WeightsFileError(f"{source}: tensor names are not the head's: expected {_expected(d)}; found "
                           f"{_listed(e.key for e in entries)}; no common prefix makes them match: {fix}")


def source_key(selection):
    """rvne name -> the key the user sees in their file (for messages)."""
    return lambda name: selection.keys.get(name, selection.prefix + state_dict_key(name))
