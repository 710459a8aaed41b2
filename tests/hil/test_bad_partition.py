"""A partition that holds no loadable blob is reported by INFO with the
loader's reason, and the device stays up: it answers, refuses work with
E_NO_MODEL, and keeps answering."""

import numpy as np
import pytest

from rvne.errors import ProtocolError
from rvne.link import protocol

REASONS = {"erased": "E_ERASED", "corrupt": "E_CRC", "contract": "E_CONTRACT"}


@pytest.mark.parametrize("partition_kind", sorted(REASONS))
def test_reported_by_info_and_device_stays_up(device, partition_kind, partition_bytes):
    info = device.info()
    assert (info.status, info.reason) == ("error", REASONS[partition_kind])
    part = partition_bytes(partition_kind)
    if partition_kind == "erased":
        assert info.dims is None and info.dtype is None
    else:
        # The header is readable, so INFO still says what the blob claims.
        assert info.dims == (16, 4, 1, 32, 2, 4) and info.dtype == "fp32"
        assert info.crc == int.from_bytes(part[-4:], "little")

    frame = protocol.encode_f32(np.zeros(16, np.float32))
    for cmd, args in [("PUSH", (1, frame)), ("RUN", (1, frame)), ("LOGITS", ())]:
        with pytest.raises(ProtocolError) as exc:
            device.request(cmd, *args)
        assert exc.value.code == "E_NO_MODEL", cmd
        assert REASONS[partition_kind] in str(exc.value)
        device.ping()
    assert device.info().reason == REASONS[partition_kind]
