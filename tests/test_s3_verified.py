"""firmware/s3-verified.json against the tree (tools/s3_verified.py;
README, "What was verified where"): what only Espressif's tools verify
(the ESP-IDF app, the S3 kernels, the S3 counts) cannot change unless the
change is listed as not re-verified, and README and docs/targets.md show
the record as it is."""

import importlib.util
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tool():
    spec = importlib.util.spec_from_file_location("s3_verified", ROOT / "tools" / "s3_verified.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_tree_matches_the_record_or_says_what_is_not_re_verified():
    found = tool().problems(str(ROOT))
    assert found == [], "\n".join(found)


def test_the_record_covers_the_app_the_s3_kernels_and_the_counts():
    record = json.loads((ROOT / "firmware" / "s3-verified.json").read_text())
    names = set(record["sources"])
    assert "firmware/ports/esp32s3/main/temporal_task.c" in names
    assert {p for p in names if p.endswith("_aes3.S")} == {
        str(p.relative_to(ROOT)) for p in (ROOT / "firmware/kernels").glob("*/*_aes3.S")}
    assert "host/rvne/icount.json#counts.esp32s3" in names
    assert len(record["verified"]["commit"]) == 40


def clone(tmp_path):
    dst = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(dst)], check=True)
    # The clone is of the last commit: bring the record, the tool and the
    # docs as they are in this tree (they may be uncommitted while working).
    for rel in ("firmware/s3-verified.json", "README.md", "docs/targets.md"):
        (dst / rel).write_bytes((ROOT / rel).read_bytes())
    for rel in tool().covered_files(str(ROOT)):
        if (ROOT / rel).exists():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            (dst / rel).write_bytes((ROOT / rel).read_bytes())
    (dst / "host/rvne/icount.json").write_bytes((ROOT / "host/rvne/icount.json").read_bytes())
    subprocess.run(["git", "add", "-A"], cwd=dst, check=True)
    return dst


def test_an_unlisted_change_fails_until_it_is_marked_and_shown(tmp_path):
    s3 = tool()
    repo = clone(tmp_path)
    kernel = "firmware/kernels/wsum/wsum_f32_aes3.S"
    # What the tree already lists as changed (a change since the record, marked) stays listed.
    before = [u["path"] for u in s3.load(str(repo))["unverified"] if "path" in u]
    with open(repo / kernel, "a") as f:
        f.write("\n/* an edit no S3 run has seen */\n")
    found = s3.problems(str(repo))
    assert any(kernel in line and "not listed as unverified" in line for line in found), found

    rows = s3.mark(str(repo))
    since = s3.load(str(repo))["verified"]["commit"][:12]
    assert sorted(r["path"] for r in rows) == sorted(before + [kernel])
    assert [r["note"] for r in rows if r["path"] == kernel] == [f"changed, not re-verified on the S3 model since {since}"]
    assert s3.problems(str(repo)) == []
    for doc in ("README.md", "docs/targets.md"):
        text = (repo / doc).read_text()
        assert f"`{kernel}`: changed, not re-verified on the S3 model since {since}" in text

    # Reverting the edit leaves a stale entry, which fails too.
    (repo / kernel).write_bytes((ROOT / kernel).read_bytes())
    assert any("matches the record" in line for line in s3.problems(str(repo)))


def test_new_s3_counts_or_a_new_app_source_are_changes_too(tmp_path):
    s3 = tool()
    repo = clone(tmp_path)
    rec = json.loads((repo / "host/rvne/icount.json").read_text())
    rec["counts"]["esp32s3"]["asm"]["fp32"]["push"] += 1
    (repo / "host/rvne/icount.json").write_text(json.dumps(rec))
    (repo / "firmware/ports/esp32s3/main/int8_path.c").write_text("/* new */\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    found = "\n".join(s3.problems(str(repo)))
    assert "host/rvne/icount.json#counts.esp32s3" in found
    assert "firmware/ports/esp32s3/main/int8_path.c" in found
    rows = s3.mark(str(repo))
    assert {r["note"].split(",")[0] for r in rows} == {"changed", "added"}


def test_a_doc_out_of_step_with_the_record_fails(tmp_path):
    s3 = tool()
    repo = clone(tmp_path)
    text = (repo / "docs/targets.md").read_text()
    (repo / "docs/targets.md").write_text(text.replace("This repository's CI cannot rerun it.", "Verified."))
    assert any("docs/targets.md does not show" in line for line in s3.problems(str(repo)))


def test_a_feature_listed_by_hand_is_kept_by_mark_and_must_name_the_commit(tmp_path):
    s3 = tool()
    repo = clone(tmp_path)
    record = s3.load(str(repo))
    since = record["verified"]["commit"][:12]
    record["unverified"] = [{"feature": "a new path in the app", "note": "added, not re-verified"}]
    s3.write_record(record, str(repo))
    s3.write_docs(record, str(repo))
    assert any("must say 'since" in line for line in s3.problems(str(repo)))
    record["unverified"][0]["note"] = f"added, not re-verified on the S3 model since {since}"
    s3.write_record(record, str(repo))
    s3.mark(str(repo))
    assert [u for u in s3.load(str(repo))["unverified"] if "path" not in u] == record["unverified"]
    assert s3.problems(str(repo)) == []
    assert f"- a new path in the app: added, not re-verified on the S3 model since {since}" in (
        repo / "README.md").read_text()
