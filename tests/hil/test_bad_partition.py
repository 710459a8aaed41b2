"""A partition that holds no loadable blob is reported by INFO with the
loader's reason, and the device stays up: it answers, refuses work with
E_NO_MODEL, and keeps answering."""

import numpy as np
import pytest

from rvne import protocol
from rvne.errors import ProtocolError

REASONS = {"erased": "E_ERASED", "corrupt": "E_CRC", "contract": "E_CONTRACT"}


@pytest.mark.parametrize("partition_kind", sorted(REASONS))
def test_info_reports_the_reason(device, partition_kind, partition_bytes):
    info = device.info()
    assert (info.status, info.reason) == ("error", REASONS[partition_kind])
    part = partition_bytes(partition_kind)
    if partition_kind == "erased":
        assert info.dims is None and info.dtype is None
    else:
        # The header is readable, so INFO still says what the blob claims.
        assert info.dims == (16, 4, 1, 32, 2, 4) and info.dtype == "fp32"
        assert info.crc == int.from_bytes(part[-4:], "little")


@pytest.mark.parametrize("partition_kind", sorted(REASONS))
def test_device_stays_up_without_a_model(raw, partition_kind):
    b64 = protocol.encode_f32(np.zeros(16, np.float32))
    for cmd, args in [("PUSH", (1, b64)), ("RUN", (1, b64)), ("LOGITS", ())]:
        seq = raw.seq()
        raw.request(seq, cmd, *args)
        r = raw.reply()
        assert (r.seq, r.ok, r.code) == (seq, False, "E_NO_MODEL")
        assert REASONS[partition_kind] in r.message
        seq = raw.seq()
        raw.request(seq, "PING")
        r = raw.reply()
        assert (r.seq, r.ok) == (seq, True)
