"""What the head's tensors and dims are called in weight files (docs/model.md,
"Named tensors for import and export"): rvne's names (layers.0.wq, wc) and
PyTorch state-dict keys (layers.0.attn.q_proj.weight, classifier.weight)
both ways, and the `rvne.dims` entry ("D,HQ,HKV,HD,L,C") every weights
file carries."""

import re

DIMS_KEY = "rvne.dims"
_RVNE_NAME = re.compile(r"^layers\.(\d+)\.(wq|wk|wv|wo)$")
_SD_NAME = re.compile(r"^layers\.(\d+)\.attn\.(q|k|v|o)_proj\.weight$")
_SD_OF = {"wq": "q", "wk": "k", "wv": "v", "wo": "o"}
_RVNE_OF = {v: k for k, v in _SD_OF.items()}


def state_dict_key(name):
    """rvne name -> state-dict key."""
    if name == "wc":
        return "classifier.weight"
    m = _RVNE_NAME.match(name)
    if not m:
        raise KeyError(name)
    return f"layers.{m.group(1)}.attn.{_SD_OF[m.group(2)]}_proj.weight"


def rvne_name(key):
    """state-dict key -> rvne name, or None when the key is not in the contract."""
    if key == "classifier.weight":
        return "wc"
    m = _SD_NAME.match(key)
    return f"layers.{m.group(1)}.{_RVNE_OF[m.group(2)]}" if m else None
