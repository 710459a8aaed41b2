"""Writers of valid (and deliberately broken) files of each foreign format,
built from their seed documents or real writers' layouts, for the tests and
tools/bench_formats.py."""

import pathlib

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"


def doc_rule_codes(doc_name, prefix):
    """The named errors a format page's tables list, in order of first
    mention: the doc is the contract the reader's check order must follow."""
    text = (DOCS / doc_name).read_text()
    table = " ".join(line for line in text.splitlines() if line.startswith("|"))
    listed = [w.strip("`|*,.;:() ") for w in table.split()]
    return list(dict.fromkeys(c for c in listed if c.startswith(prefix)))


def assert_refused(report, code, what=None):
    """The report's first failure is exactly `code`, with a one-line detail."""
    err = report.error
    assert err is not None and err.code == code, (what or code, err)
    assert err.detail and "\n" not in err.detail, err.detail
