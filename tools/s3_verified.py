#!/usr/bin/env python3
"""What was last verified on the ESP32-S3's core model, and what changed since.

The ESP-IDF app, the S3 assembly kernels and the S3 instruction counts are
verified only where Espressif's tools are (tools/test_s3.sh: Espressif's
QEMU -machine esp32s3, ESP-IDF, the S3's GCC). This repository's CI has
none of them, so nothing it cannot re-verify may change silently:
firmware/s3-verified.json holds a SHA-256 of each such source as verified
and the commit it was verified at; a source that differs must be listed
under "unverified", which README.md and docs/targets.md show beside the
features and figures it affects (tests/test_s3_verified.py holds all this).
A feature the app gains through the portable core (not covered: it is
tested here on the LX6 and LX106 cores) is listed there by hand, as
{"feature": ..., "note": "... since <commit>"}, until the next record.

    python tools/s3_verified.py check      what differs from the record (exit 1 if not all accounted for)
    python tools/s3_verified.py mark       list every differing source as "changed, not re-verified on the
                                           S3 model since <commit>", and rewrite README's and
                                           docs/targets.md's blocks
    python tools/s3_verified.py record     (tools/test_s3.sh --record alone: after the S3 stages passed
                                           on this commit) take the tree as verified
"""

import argparse
import datetime
import fnmatch
import hashlib
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = "firmware/s3-verified.json"
# What only the S3 stages verify: the ESP-IDF app and what it is built
# from beside the core, the S3 bare-metal harness and bench, the S3
# kernels. The portable core and the LX6 kernels are tested here in full.
# (The PlatformIO project files are not: tools/test_s3.sh builds with
# ESP-IDF's own build, which reads neither.)
COVERED = ("firmware/ports/esp32s3/*", "firmware/ports/esp32s3-bare/*", "firmware/kernels/*/*_aes3.S",
           "firmware/kernels/aes3.h", "sdkconfig.defaults", "partitions.csv")
# The S3 counts rvne plan quotes: a part of a file, named path#key.key.
COUNTS = ("host/rvne/icount.json", ("counts", "esp32s3"))
COUNTS_NAME = COUNTS[0] + "#" + ".".join(COUNTS[1])
DOCS = ("README.md", "docs/targets.md")
BEGIN, END = "<!-- s3-unverified: tools/s3_verified.py mark writes this block -->", "<!-- /s3-unverified -->"


def git(*args, root=ROOT):
    return subprocess.run(["git", *args], cwd=root, capture_output=True, check=True).stdout


def covered_files(root=ROOT, commit=None):
    """The covered paths tracked by git (at `commit`, else in the index)."""
    names = git("ls-tree", "-r", "--name-only", commit, root=root) if commit else git("ls-files", root=root)
    return sorted(p for p in names.decode().splitlines() if any(fnmatch.fnmatch(p, g) for g in COVERED))


def read(path, root=ROOT, commit=None):
    if commit:
        return git("show", f"{commit}:{path}", root=root)
    with open(os.path.join(root, path), "rb") as f:
        return f.read()


def counts_bytes(text):
    part = json.loads(text)
    for key in COUNTS[1]:
        part = part[key]
    return json.dumps(part, sort_keys=True).encode()


def digests(root=ROOT, commit=None):
    """{path: sha256} of every covered source and of the S3 counts."""
    out = {}
    for p in covered_files(root, commit):
        try:
            out[p] = hashlib.sha256(read(p, root, commit)).hexdigest()
        except FileNotFoundError:          # in the index, deleted from the tree
            continue
    out[COUNTS_NAME] = hashlib.sha256(counts_bytes(read(COUNTS[0], root, commit))).hexdigest()
    return out


def load(root=ROOT):
    with open(os.path.join(root, RECORD)) as f:
        return json.load(f)


def differing(record, root=ROOT):
    """Sources that differ from the record: changed, added or removed."""
    now, then = digests(root), record["sources"]
    return sorted(p for p in set(now) | set(then) if now.get(p) != then.get(p))


def render(record):
    """The block README.md and docs/targets.md show."""
    v = record["verified"]
    head = (f"Last verified on Espressif's QEMU (`-machine esp32s3`): commit {v['commit'][:12]} ({v['date']}), "
            f"{v['by']}. This repository's CI cannot rerun it.")
    rows = record.get("unverified", [])
    if not rows:
        return f"{BEGIN}\n{head} Nothing under its record has changed since.\n{END}"
    lines = [head, "", "Changed, **not re-verified on the S3 model** since that commit:", ""]
    lines += [f"- `{u['path']}`: {u['note']}" if "path" in u else f"- {u['feature']}: {u['note']}" for u in rows]
    return BEGIN + "\n" + "\n".join(lines) + "\n" + END


def problems(root=ROOT):
    """Every way the tree and the record disagree, one line each."""
    record = load(root)
    since = record["verified"]["commit"][:12]
    out = []
    listed = {u["path"]: u for u in record.get("unverified", []) if "path" in u}
    diff = set(differing(record, root))
    for p in sorted(diff - set(listed)):
        out.append(f"{p} changed since it was verified on the S3 model ({since}) and is not listed as unverified: "
                   f"rerun tools/test_s3.sh --record where ESP-IDF's tools are, or run "
                   f"`python tools/s3_verified.py mark` and commit what it writes")
    for p in sorted(set(listed) - diff):
        out.append(f"{p} is listed as unverified but matches the record: run `python tools/s3_verified.py mark`")
    for u in record.get("unverified", []):
        if f"since {since}" not in u["note"]:
            out.append(f"{u.get('path') or u.get('feature')}: its note must say 'since {since}': {u['note']!r}")
    block = render(record)
    for doc in DOCS:
        with open(os.path.join(root, doc), encoding="utf-8") as f:
            if block not in f.read():
                out.append(f"{doc} does not show the S3 verification block as {RECORD} has it: "
                           f"run `python tools/s3_verified.py mark`")
    return out


def write_record(record, root=ROOT):
    path = os.path.join(root, RECORD)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(record, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def write_docs(record, root=ROOT):
    block = render(record)
    for doc in DOCS:
        path = os.path.join(root, doc)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if BEGIN not in text or END not in text:
            raise SystemExit(f"s3_verified: {doc} has no '{BEGIN}' ... '{END}' block to write")
        a, b = text.index(BEGIN), text.index(END) + len(END)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text[:a] + block + text[b:])
        os.replace(path + ".tmp", path)


def mark(root=ROOT):
    record = load(root)
    since = record["verified"]["commit"][:12]
    old = {u["path"]: u for u in record.get("unverified", []) if "path" in u}
    # A feature the app gained through sources the record does not cover
    # (the portable core) is listed by hand and kept until a record.
    features = [u for u in record.get("unverified", []) if "path" not in u]
    now = digests(root)
    rows = []
    for p in differing(record, root):
        what = "removed" if p not in now else "added" if p not in record["sources"] else "changed"
        note = f"{what}, not re-verified on the S3 model since {since}"
        keep = old.get(p, {}).get("note", "")
        # A note may say more (why, what it affects); its first words stay the rule's.
        rows.append({"path": p, "note": keep if keep.startswith(note) else note})
    record["unverified"] = features + rows
    write_record(record, root)
    write_docs(record, root)
    return rows


def record_tree(how, root=ROOT, commit=None, date=None, by=None):
    commit = commit or git("rev-parse", "HEAD", root=root).decode().strip()
    record = {
        "schema": 1,
        "verified": {
            "commit": git("rev-parse", commit, root=root).decode().strip(),
            "date": date or datetime.date.today().isoformat(),
            "by": by or "tools/test_s3.sh (the app's device suite, the S3 kernels and unit tests, "
                        "the esp_idf tests, the main job)",
            "recorded_by": how,
        },
        "sources": digests(root, commit),
        "unverified": [],
    }
    write_record(record, root)
    write_docs(record, root)
    return record


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check")
    sub.add_parser("mark")
    rec = sub.add_parser("record")
    rec.add_argument("--how", required=True)
    rec.add_argument("--commit", help="take the sources as they were at this commit (default: the tree)")
    rec.add_argument("--date")
    rec.add_argument("--by")
    args = ap.parse_args(argv)
    if args.cmd == "check":
        found = problems()
        for line in found:
            print(f"s3_verified: {line}", file=sys.stderr)
        return 1 if found else 0
    if args.cmd == "mark":
        rows = mark()
        print(f"s3_verified: {len(rows)} source(s) listed as not re-verified on the S3 model")
        return 0
    record_tree(args.how, commit=args.commit, date=args.date, by=args.by)
    print(f"s3_verified: {RECORD} rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
