"""INFO (and the boot banner) describe the blob the device was given."""

import pytest

from rvne.io import blob


@pytest.mark.parametrize("partition_kind", ["fp32", "fp16"])
def test_info_matches_the_blob(device, partition_kind, partition_bytes):
    parsed = blob.parse_loadable(partition_bytes(partition_kind))
    info = device.info()
    assert (info.status, info.reason) == ("loaded", "OK")
    assert info.crc == parsed.crc_stored
    assert info.dims == tuple(parsed.header.dims)
    assert info.dtype == parsed.header.dtype == partition_kind
    assert info.blob_len == parsed.header.total_len
    assert info.line_max >= 1024
    assert info.window >= 1 and info.arena > 0
    assert info.clock in ("ns", "cycles", "insns", "none")
    # How the weights are held (docs/model.md, "FP16 weights"); firmware
    # older than the field has none.
    if "weights" in info.fields:
        want = {"fp32"} if partition_kind == "fp32" else {"expanded", "decoded", "no-room"}
        assert info.fields["weights"] in want


@pytest.mark.parametrize("partition_kind", ["fp32", "fp16"])
def test_banner_names_the_blob(running_target, partition_kind, partition_bytes):
    # On a board: the banner read at the reset after the suite flashed it.
    crc = int.from_bytes(partition_bytes(partition_kind)[-4:], "little")
    ready = [ln for ln in running_target.banner.splitlines() if " ready: " in ln]
    assert ready, running_target.banner
    assert ready[-1].startswith("rvne/")
    assert " ready: OK" in ready[-1]
    assert f"crc={crc:08X}" in ready[-1]
