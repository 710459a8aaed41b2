"""One typed JSON shape across every command's --json (docs/cli.md, JSON):
numbers are JSON numbers (a CRC is an integer, never "DC807956" or
"0x..."), dims are a list of integers, INFO's fields are typed the same in
`device info --json` and in `check --json`'s "info"; and the same fact has
the same name and value in every command that reports it."""

import json

import numpy as np
import pytest

from fake_device import FakeDevice, ReferenceModel
from rvne import cli
from rvne.io import upstream_init

SMALL = (8, 2, 1, 4, 1, 3)
NUMBER_TEXT = ("0123456789abcdefABCDEFxX,+-")


def numberlike_strings(value, where="$"):
    """Every string in a JSON value that spells a number or a list of
    numbers (what a typed shape gives as a number or a list)."""
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            found += numberlike_strings(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += numberlike_strings(v, f"{where}[{i}]")
    elif isinstance(value, str):
        parts = value.split(",")
        if value and all(p and (p.isdigit() or (p[:2].lower() == "0x" and len(p) > 2
                                                and all(c in "0123456789abcdefABCDEF" for c in p[2:])))
                         for p in parts):
            found.append(f"{where}={value!r}")
        elif value and len(value) == 8 and all(c in "0123456789ABCDEF" for c in value) \
                and any(c.isdigit() for c in value):
            found.append(f"{where}={value!r}")      # a CRC in hex without 0x
    return found


def run_json(capsys, argv, code=0):
    assert cli.main([*argv, "--json"]) == code, capsys.readouterr()
    out = capsys.readouterr().out
    return json.loads(out)


@pytest.fixture
def blob_file(tmp_path):
    path = tmp_path / "m.rvne"
    path.write_bytes(upstream_init.init_blob(SMALL))
    return path


def test_check_and_verify_report_the_blob_alike(blob_file, capsys):
    data = blob_file.read_bytes()
    crc = int.from_bytes(data[-4:], "little")
    verify = run_json(capsys, ["verify", str(blob_file)])
    with FakeDevice(ReferenceModel(data, window=5), window=5) as fake:
        checked = run_json(capsys, ["check", str(blob_file), "-p", fake.url, "--vectors", "1"])
        info = run_json(capsys, ["device", "info", "-p", fake.url])
    assert verify["crc"] == checked["blob_crc"] == info["crc"] == crc
    assert verify["dims"] == checked["blob_dims"] == info["dims"] == list(SMALL)
    assert checked["info"] == info
    assert checked["info"]["window"] == checked["window"] == 5
    assert isinstance(checked["info"]["arena"], int) and isinstance(checked["info"]["line_max"], int)
    assert checked["passed"] is True


def test_no_command_gives_a_number_as_text(blob_file, tmp_path, capsys):
    data = blob_file.read_bytes()
    frames = tmp_path / "f.npy"
    np.save(frames, np.zeros((3, SMALL[0]), np.float32))
    outs = {
        "init": run_json(capsys, ["init", str(tmp_path / "n.rvne"), "--dims", ",".join(map(str, SMALL))]),
        "verify": run_json(capsys, ["verify", str(blob_file)]),
        "inspect": run_json(capsys, ["inspect", str(blob_file)]),
        "plan": run_json(capsys, ["plan", str(blob_file)]),
        "export": run_json(capsys, ["export", str(blob_file), str(tmp_path / "w.npz")]),
        "infer": run_json(capsys, ["infer", str(blob_file), str(frames), "--out", str(tmp_path / "l.npy")]),
    }
    with FakeDevice(ReferenceModel(data, window=5), window=5) as fake:
        outs["check"] = run_json(capsys, ["check", str(blob_file), "-p", fake.url, "--vectors", "1"])
        outs["device info"] = run_json(capsys, ["device", "info", "-p", fake.url])
        outs["device stats"] = run_json(capsys, ["device", "stats", "-p", fake.url])
        outs["device window"] = run_json(capsys, ["device", "window", "4", "-p", fake.url])
    bad = {name: numberlike_strings(doc) for name, doc in outs.items()}
    assert not any(bad.values()), bad
    assert outs["inspect"]["crc"]["stored"] == outs["verify"]["crc"]
    assert outs["plan"]["dims"] == list(SMALL)


def test_inspect_text_still_shows_hex(blob_file, capsys):
    assert cli.main(["inspect", str(blob_file)]) == 0
    out = capsys.readouterr().out
    crc = int.from_bytes(blob_file.read_bytes()[-4:], "little")
    assert "magic        0x52564E45" in out and f"stored 0x{crc:08X}" in out


def test_check_json_with_a_failed_save_is_one_object_and_exit_1(blob_file, tmp_path, capsys):
    data = blob_file.read_bytes()
    missing = tmp_path / "no-such-dir" / "run.npz"
    with FakeDevice(ReferenceModel(data, window=5), window=5) as fake:
        rc = cli.main(["check", str(blob_file), "-p", fake.url, "--vectors", "1", "--json", "--save", str(missing)])
    out, err = capsys.readouterr()
    doc = json.loads(out)                    # exactly one JSON document
    assert rc == 1 and doc["error"]["code"].startswith("E_") and "no-such-dir" in doc["error"]["message"]
    assert doc["check"]["passed"] is True and doc["check"]["blob_dims"] == list(SMALL)
    assert err.count("rvne: error:") == 1


def test_check_says_what_save_and_plot_wrote(blob_file, tmp_path, capsys):
    data = blob_file.read_bytes()
    saved = tmp_path / "run.npz"
    with FakeDevice(ReferenceModel(data, window=5), window=5) as fake:
        doc = run_json(capsys, ["check", str(blob_file), "-p", fake.url, "--vectors", "1", "--save", str(saved)])
        assert doc["written"] == [str(saved)] and saved.is_file()
        assert cli.main(["check", str(blob_file), "-p", fake.url, "--vectors", "1", "--save", str(saved)]) == 0
    assert f"rvne: wrote {saved}" in capsys.readouterr().err
