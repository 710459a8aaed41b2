"""Power cuts during an update on the virtual device (tools/powerloss.py,
reduced set for CI; the script runs 200+): killed inside every slot erase
and program, inside the selector's erase and program, after every request
line and at bytes spread over the transfer, the device restarts from the
same flash serving the old or the new model, whole (CRC, INFO, logits
against that model's reference), and takes a second update."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def powerloss():
    spec = importlib.util.spec_from_file_location("powerloss", ROOT / "tools" / "powerloss.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("erase_size, n_cuts", [(4096, 45), (65536, 12)], ids=["s3-sectors", "lx60-sectors"])
def test_every_cut_serves_old_or_new_and_a_second_update_succeeds(powerloss, erase_size, n_cuts):
    lines = []
    cuts, total = powerloss.run(n_cuts, erase_size, say=lines.append)
    assert len(cuts) >= n_cuts and total > 41244 * 4 // 3
    broken = [c for c in cuts if not c.ok]
    assert not broken, "\n".join(lines)
    rows = powerloss.table(cuts)
    # Every kind of cut point was reached, not just planned.
    assert {"erase", "prog", "sel-erase", "sel-prog", "rx"} <= set(rows)
    assert all(r["killed"] == r["cuts"] for k, r in rows.items() if k != "rx")
    # Cuts before the record is whole keep the old model; after COMMIT, the new one.
    assert rows["sel-prog"]["old"] == 1 and rows["rx"]["new"] >= 1 and rows["rx"]["old"] >= 1


def test_a_cut_that_is_never_reached_is_a_finished_update(powerloss, tmp_path):
    old, new, third = powerloss.blobs()
    cut = powerloss.run_cut(powerloss.Cut("prog", 1000), old, new, third, 4096, tmp_path)
    assert not cut.died and cut.served == "new" and cut.ok


def test_cuts_in_a_signed_update_serve_old_or_new_verified(powerloss, tmp_path):
    """Issue 33: a signed transfer cut anywhere leaves the old or the new
    model, verified (INFO's signer), never none and never an unverified one;
    the second update is signed too. `tools/powerloss.py --signed` runs 200."""
    lines = []
    models, exe = powerloss.signed_rig(tmp_path, say=lines.append)
    cuts, total = powerloss.run(24, 4096, say=lines.append, models=models, exe=exe)
    assert len(cuts) >= 24 and total > len(models[1]) * 4 // 3
    assert not [c for c in cuts if not c.ok], "\n".join(lines)
    rows = powerloss.table(cuts)
    assert {"erase", "prog", "sel-erase", "sel-prog", "rx"} <= set(rows)
    assert rows["sel-prog"]["old"] == 1 and rows["rx"]["new"] >= 1 and rows["rx"]["old"] >= 1
