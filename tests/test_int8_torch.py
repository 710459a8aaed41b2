"""rvne.torch.TemporalHead.to_blob(dtype="int8"): the quantiser behind
`rvne quantize`, calibrated on the caller's frames (torch or numpy)."""

import numpy as np
import pytest
from torch_required import torch

from rvne.io import blob
from rvne.model import quantize as qz
from rvne.torch import TemporalHead

DIMS = (8, 2, 1, 8, 2, 3)


def test_to_blob_int8(tmp_path):
    torch.manual_seed(0)
    head = TemporalHead(DIMS)
    cal = torch.randn(3, 40, 8)
    path = tmp_path / "h.rvne"
    parsed = head.to_blob(path, dtype="int8", calibration=cal, window=16)
    assert parsed.header.dtype == "int8" and blob.read_file(path, contract=True).to_bytes() == parsed.to_bytes()
    # The same bytes as the quantiser on the head's arrays and the same frames.
    model, _ = qz.quantize(head.arrays(np.float64), head.dims, cal.numpy(), 16)
    assert blob.from_int8(model) == parsed.to_bytes()
    test = torch.randn(2, 40, 8)
    with torch.no_grad():
        ref = head(test, 16).numpy()
    m = parsed.int8_model()
    got = np.stack([m.float_logits(m.forward(s, 16)) for s in test.numpy()])
    assert (ref.argmax(-1) == got.argmax(-1)).mean() >= 0.9


def test_to_blob_int8_needs_calibration(tmp_path):
    with pytest.raises(ValueError, match="calibration"):
        TemporalHead(DIMS).to_blob(tmp_path / "h.rvne", dtype="int8")
    assert not (tmp_path / "h.rvne").exists()
