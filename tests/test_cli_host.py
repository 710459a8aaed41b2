"""The host CLI's loose ends (issue: an installed rvne that works as users
expect): report wording, help texts, option parity between commands."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rvne import check
from rvne.io import upstream_init

ROOT = Path(__file__).resolve().parents[1]


def _report(**over):
    r = check.CheckReport(url="socket://x", blob_crc=0xDC807956, blob_dims=(16, 4, 1, 32, 2, 4), blob_dtype="fp32",
                          info={"port": "lx6"}, window=100, vectors=1, length=110, logits=440, frames=110,
                          seconds=1.0, device_push=3559.0, clock="cycles")
    for k, v in over.items():
        setattr(r, k, v)
    return r


def test_report_gives_one_measure_of_device_cost():
    # With an instruction count (an emulated core under -icount), its CCOUNT
    # ticks are not a chip's cycles: only the instructions are reported.
    text = check.render(_report(instructions_per_push=88977.0))
    assert "88,977 instructions/push" in text and "cycles/push" not in text
    # A board's own clock (no icount) is the measure.
    text = check.render(_report())
    assert "3559 cycles/push on the device" in text and "instructions/push" not in text


def _fake_checkout(tmp_path):
    """A checkout with the virtual device's sources and nothing built."""
    top = tmp_path / "checkout"
    for rel in ("host/rvne", "firmware/core", "firmware/kernels", "firmware/ports/posix"):
        shutil.copytree(ROOT / rel, top / rel, ignore=shutil.ignore_patterns("__pycache__"))
    for rel in ("firmware/Makefile", "partitions.csv"):
        shutil.copy2(ROOT / rel, top / rel)
    return top


def test_a_first_target_build_says_what_it_builds_and_where(tmp_path):
    top = _fake_checkout(tmp_path)
    (tmp_path / "m.rvne").write_bytes(upstream_init.init_blob((8, 2, 1, 4, 1, 3)))
    env = {**os.environ, "PYTHONPATH": str(top / "host")}
    run = subprocess.run([sys.executable, "-m", "rvne", "check", "m.rvne", "--target", "sim", "--vectors", "1"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    said = [ln for ln in run.stderr.splitlines() if ln.startswith("rvne: building")]
    assert said == [f"rvne: building the virtual device into {top / 'build' / 'posix'} (first use, or its "
                    "sources or compiler changed)"], run.stderr
    # Built now: the next run says nothing, and -q never does.
    again = subprocess.run([sys.executable, "-m", "rvne", "check", "m.rvne", "--target", "sim", "--vectors", "1"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "rvne: building" not in again.stderr


def _fake_install(tmp_path):
    """The package as a wheel lays it out (rvne/ with rvne/_firmware/
    partitions.csv), on a path with no checkout above it."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "host" / "rvne", site / "rvne", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "rvne" / "_firmware").mkdir()
    shutil.copy2(ROOT / "partitions.csv", site / "rvne" / "_firmware" / "partitions.csv")
    return {**os.environ, "PYTHONPATH": str(site)}


def test_an_installed_plan_and_init_find_the_shipped_partition_table(tmp_path):
    env = _fake_install(tmp_path)
    work = tmp_path / "empty"
    work.mkdir()

    def rvne(*argv):
        return subprocess.run([sys.executable, "-m", "rvne", *argv], cwd=work, env=env, capture_output=True,
                              text=True, timeout=120)

    assert rvne("init", "m.rvne").returncode == 0
    plan = rvne("plan", "m.rvne")
    assert plan.returncode == 0, plan.stderr
    assert "partitions.csv" in plan.stdout and plan.stdout.rstrip().endswith("OK")
    big = rvne("init", "big.rvne", "--dims", "256,8,2,64,3,16")
    assert big.returncode == 0 and "larger than partition 'rvne_a'" in big.stderr, big.stderr


def test_image_writes_the_board_image_that_flash_and_check_take(tmp_path, capsys):
    from rvne import cli
    from rvne.flash import image as flash_image
    from rvne.io import blob

    img, model = tmp_path / "board.img", tmp_path / "m.rvne"
    model.write_bytes(upstream_init.init_blob())
    assert cli.main(["image", str(img), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["image"] == str(img) and doc["bytes"] == flash_image.FLASH_SIZE == img.stat().st_size
    table = flash_image.read_table(img.read_bytes(), strict=True)
    models = [p for p in table if p.type == 1 and p.subtype == 0x40]
    assert models and doc["partitions"] == [{"label": p.name, "offset": p.offset, "size": p.size} for p in models]
    for p in models:
        assert img.read_bytes()[p.offset:p.end] == b"\xff" * p.size
    part = models[0]
    assert cli.main(["flash", str(model), "--image", str(img)]) == 0
    stored = img.read_bytes()[part.offset:part.end]
    assert blob.parse_loadable(stored, exact_length=False).crc_stored == upstream_init.EXAMPLE_CRC


def test_image_for_the_virtual_device_needs_no_firmware_and_takes_an_update(tmp_path, capsys):
    from rvne import cli
    from rvne.io import blob

    img, old, new = tmp_path / "sim.img", tmp_path / "old.rvne", tmp_path / "new.rvne"
    old.write_bytes(upstream_init.init_blob())
    new.write_bytes(upstream_init.init_blob(seed=5))
    assert cli.main(["image", str(img), "--target", "sim", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["target"] == "sim" and [p["label"] for p in doc["partitions"]] == ["rvne_a", "rvne_b"]
    assert img.read_bytes()[:0x8000] == b"\xff" * 0x8000          # no boot stub, no firmware
    assert cli.main(["flash", str(old), "--image", str(img)]) == 0
    capsys.readouterr()
    assert cli.main(["update", str(new), "--target", "sim", "--image", str(img), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["slot"] == "b" and doc["info"]["crc"] == doc["crc"] == blob.parse_loadable(new.read_bytes()).crc_stored


def test_flash_image_help_names_a_command_not_a_checkout_path():
    from rvne import cli

    parser = cli.build_parser()
    flash = parser._subparsers._group_actions[0].choices["flash"]
    text = flash.format_help()
    assert "build/lx6" not in text and "rvne image IMG" in " ".join(text.split())


def test_an_unknown_option_shows_the_commands_usage(capsys):
    from rvne import cli

    with pytest.raises(SystemExit) as exc:
        cli.main(["check", "m.rvne", "--bogus"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith("usage: rvne check ")
    assert err.splitlines()[-1] == "rvne check: error: unrecognized arguments: --bogus"
    with pytest.raises(SystemExit):
        cli.main(["device", "info", "--bogus"])
    assert capsys.readouterr().err.startswith("usage: rvne device info ")


def test_option_conflicts_are_usage_errors_of_the_command(tmp_path, capsys):
    from rvne import cli

    with pytest.raises(SystemExit) as exc:
        cli.main(["flash", "m.rvne", "--image", "x.img", "--partitions", "p.csv"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith("usage: rvne flash ")
    assert err.splitlines()[-1].startswith("rvne flash: error: --partitions goes with --port")


def _help(*cmd):
    from rvne import cli

    parser = cli.build_parser()
    for name in cmd:
        parser = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices[name]
    return " ".join(parser.format_help().split())


def test_help_says_true_things():
    for cmd in (["init"], ["pack"], ["plan"], ["inspect"], ["export"]):
        assert "where the port and baud came from" not in _help(*cmd), cmd
    for cmd in (["check"], ["flash"], ["device", "info"], ["device", "monitor"]):
        assert "where the port and baud came from" in _help(*cmd), cmd
    assert "FILE is a partition image" in _help("inspect") and "BLOB is a partition" not in _help("inspect")
    assert "FILE is a partition image" in _help("verify")
    monitor = _help("device", "monitor")
    assert "--retries" not in monitor and "--timeout" not in monitor and "--baud" in monitor


def test_q_leaves_packs_result_alone(tmp_path, capsys):
    from rvne import cli
    from rvne.model import contract

    model, weights, out = tmp_path / "m.rvne", tmp_path / "w.npz", tmp_path / "o.rvne"
    model.write_bytes(upstream_init.init_blob())
    assert cli.main(["export", str(model), str(weights)]) == 0
    names = contract.tensor_names(contract.Dims(16, 4, 1, 32, 2, 4))
    (tmp_path / "map.json").write_text(json.dumps({"tensors": {k: k for k in names}, "dims": "16,4,1,32,2,4",
                                                    "dtype": "fp16"}))
    capsys.readouterr()
    assert cli.main(["pack", str(weights), str(out), "--map", str(tmp_path / "map.json")]) == 0
    said = capsys.readouterr()
    assert "-> FP16 rounded" in said.out and said.out.splitlines()[-1].startswith(f"{out}: fp16")
    assert cli.main(["pack", str(weights), str(out), "--map", str(tmp_path / "map.json"), "-q"]) == 0
    said = capsys.readouterr()
    assert said.out.count("\n") == 1 and said.out.startswith(f"{out}: fp16") and said.err == ""


def test_a_port_in_use_is_busy_not_a_device_fault(capsys):
    from rvne import cli
    from rvne.link.device import Device
    from rvne.errors import DeviceError

    master, slave = os.openpty()
    path = os.ttyname(slave)
    try:
        with Device(path, timeout=0.5):
            with pytest.raises(DeviceError, match="port busy") as exc:
                Device(path, timeout=0.5)
            assert "\n" not in str(exc.value)
            assert cli.main(["device", "info", "-p", path, "--timeout", "0.5"]) == 1
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and f"{path}: port busy" in err
            assert cli.main(["device", "reset", "-p", path]) == 1
            assert "port busy" in capsys.readouterr().err
    finally:
        os.close(master)
        os.close(slave)


HOSTILE = b"evil\n\x1b[2J\x07name\xff.rvne"      # newline, ESC (clear screen), BEL, a byte that is not UTF-8


@pytest.mark.parametrize("argv", [["verify"], ["inspect"], ["check", "--target", "sim"], ["plan"]])
def test_a_hostile_file_name_stays_one_escaped_line(tmp_path, argv):
    path = os.fsencode(tmp_path) + b"/" + HOSTILE
    for extra in ([], ["--json"]):
        done = subprocess.run([sys.executable, "-m", "rvne", argv[0], path, *argv[1:], *extra],
                              capture_output=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT / "host")})
        assert done.returncode == 1, done.stderr
        err = done.stderr.decode("utf-8")             # valid UTF-8: no raw byte 0xff
        assert err.count("\n") == 1 and "\x1b" not in err and "\x07" not in err, err
        assert "evil\\n\\x1b[2J\\x07name\\xff.rvne" in err, err
        if extra:
            doc = json.loads(done.stdout.decode("utf-8"))
            doc["error"]["message"].encode("utf-8")     # no lone surrogates
            assert "evil\\n\\x1b[2J\\x07name\\xff.rvne" in doc["error"]["message"]


# -- exact parsing -------------------------------------------------------------------------------
def test_device_numbers_are_read_exactly():
    from rvne.link import protocol
    from rvne.link.device import Info

    good = {"fw": "0.1.0", "port": "posix", "status": "loaded", "reason": "OK", "dims": "8,2,1,4,1,3",
            "dtype": "fp32", "crc": "DC807956", "blob_len": "900", "window": "8", "arena": "4096",
            "line_max": "1024", "clock": "ns"}
    assert Info.from_reply(protocol.Reply(1, True, dict(good))).window == 8
    for key, bad in (("window", "+8"), ("window", "0_8"), ("window", " 8"), ("window", "\u0668"),
                     ("arena", "4_096"), ("crc", "+C807956"), ("crc", "0xDC8079"), ("dims", "8,2,1,4,1,+3")):
        with pytest.raises(protocol.MalformedReplyError):
            Info.from_reply(protocol.Reply(1, True, {**good, key: bad}))


def test_a_seq_0_ok_is_nobodys_answer():
    from rvne.link import protocol
    from rvne.link.device import Device
    from rvne.errors import DeviceError

    class Link:
        """Answers every request with `<0 OK ...`, as a broken or hostile peer might."""
        timeout = 0.05

        def __init__(self):
            self.out = bytearray()

        def write(self, data):
            self.out += protocol.build_reply(0, {"window": 8, "arena": 100})

        def flush(self):
            pass

        def read(self, n):
            data, self.out[:] = bytes(self.out[:n]), self.out[n:]
            return data

        def close(self):
            pass

    dev = Device("fake", timeout=0.2, retries=0, link=Link())
    with pytest.raises(DeviceError, match="no reply"):
        dev.window(8)


@pytest.mark.parametrize("argv", [["init", "x.rvne", "--dims", "0x10,4,1,32,2,4"],
                                  ["init", "x.rvne", "--dims", "\u0661\u0666,4,1,32,2,4"],
                                  ["init", "x.rvne", "--seed", "\u0667"],
                                  ["device", "info", "-p", "x", "--timeout", "1_0"],
                                  ["device", "info", "-p", "x", "--retries", "+1"],
                                  ["check", "m.rvne", "-p", "x", "--vectors", "\u0662"],
                                  ["check", "m.rvne", "-p", "x", "--atol", "1_0"]])
def test_options_take_ascii_numbers_only(argv, tmp_path, capsys, monkeypatch):
    from rvne import cli

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2 and not (tmp_path / "x.rvne").exists()


def test_partitions_csv_numbers_are_ascii_c_integers():
    from rvne.flash import partition
    from rvne.errors import PartitionError

    ok = "nvs, data, nvs, 0x9000, 0x6000,\nrvne, data, 0x40, 0x110000, 2M,\n"
    assert partition.parse_csv(ok).find("rvne").size == 2 << 20
    for bad in ("\u0663\u0666\u0668\u0666\u0664", "36_864", "+36864"):
        with pytest.raises(PartitionError, match="invalid offset"):
            partition.parse_csv(ok.replace("0x9000", bad, 1))


def test_plan_refuses_a_partition_past_the_end_of_flash(tmp_path):
    from rvne import plan

    (tmp_path / "m.rvne").write_bytes(upstream_init.init_blob())
    csv = tmp_path / "p.csv"
    csv.write_text("nvs, data, nvs, 0x9000, 0x6000,\nfactory, app, factory, 0x10000, 0x100000,\n"
                   "rvne, data, 0x40, 0x7F0000, 0x20000,\n")           # ends at 8 MiB + 64 KiB
    p = plan.make_plan(tmp_path / "m.rvne", partitions_csv=csv)
    assert not p.partition_in_flash and not p.fits_partition and not p.ok
    assert "past the 8 MiB flash" in plan.render_text(p)
    assert plan.make_plan(tmp_path / "m.rvne", partitions_csv=csv, flash_size=16 << 20).ok


def test_init_refuses_at_once_what_no_board_can_hold(tmp_path):
    # 65,535 layers: a 1.3 GB blob that took minutes and gigabytes to make before being refused by every board.
    out = tmp_path / "x.rvne"
    done = subprocess.run([sys.executable, "-m", "rvne", "init", str(out), "--dims", "16,4,1,32,65535,4"],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT / "host")})
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "no board can hold it" in done.stderr and "32 MiB" in done.stderr and "--force" in done.stderr
    assert not out.exists()


def test_force_writes_what_the_limit_refuses(tmp_path, capsys, monkeypatch):
    from rvne import cli, plan

    monkeypatch.setattr(plan, "BLOB_MAX", 40000)          # the example blob is 41,244 bytes
    out = tmp_path / "m.rvne"
    assert cli.main(["init", str(out)]) == 1 and not out.exists()
    assert "41,244-byte blob" in capsys.readouterr().err
    assert cli.main(["init", str(out), "--force"]) == 0 and out.stat().st_size == 41244
    assert cli.main(["export", str(out), str(tmp_path / "w.npz")]) == 0
    assert cli.main(["pack", str(tmp_path / "w.npz"), str(tmp_path / "p.rvne")]) == 1
    assert cli.main(["pack", str(tmp_path / "w.npz"), str(tmp_path / "p.rvne"), "--force"]) == 0


# -- the same inputs across commands -------------------------------------------------------------
def test_inspect_and_verify_take_what_export_writes_and_pack_reads(tmp_path, capsys):
    from rvne import cli

    model, npz = tmp_path / "m.rvne", tmp_path / "w.npz"
    model.write_bytes(upstream_init.init_blob())
    assert cli.main(["export", str(model), str(npz)]) == 0
    assert "rvne's names" in capsys.readouterr().out
    assert cli.main(["verify", str(npz)]) == 0
    assert capsys.readouterr().out.startswith(f"OK {npz}: rvne named weights")
    assert cli.main(["inspect", str(npz), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["valid"] and doc["fields"]["dims"] == [16, 4, 1, 32, 2, 4]
    assert {t["name"] for t in doc["tensors"]} >= {"wc", "layers.0.wq"}
    # An .npz pack cannot take without --map: inspect lists it, verify says why, both exit 1.
    import numpy as np

    other = tmp_path / "other.npz"
    np.savez(other, foo=np.zeros((2, 3), np.float32))
    assert cli.main(["inspect", str(other)]) == 1
    out, err = capsys.readouterr()
    assert "foo: float32 2x3" in out and err.count("\n") == 1 and "--map" in err
    assert cli.main(["verify", str(other)]) == 1
    assert "under other names" in capsys.readouterr().err


def test_infer_takes_the_sequences_check_takes(tmp_path, capsys):
    import numpy as np

    from rvne import cli
    from rvne.io import blob
    from rvne.model import reference

    model, frames, out = tmp_path / "m.rvne", tmp_path / "f.npy", tmp_path / "l.npy"
    model.write_bytes(upstream_init.init_blob())
    seqs = np.random.default_rng(1).standard_normal((3, 7, 16)).astype(np.float32)
    np.save(frames, seqs)
    assert cli.main(["infer", str(model), str(frames), "--out", str(out), "--window", "4"]) == 0
    got = np.load(out)
    parsed = blob.read_file(model, contract=True)
    assert got.shape == (3, 7, 4)
    for s in range(3):      # each sequence from a reset state, as check streams them
        assert np.array_equal(got[s], reference.forward_blob(parsed, seqs[s], 4))
    np.save(frames, seqs[1])
    assert cli.main(["infer", str(model), str(frames), "--out", str(out), "--window", "4"]) == 0
    assert np.array_equal(np.load(out), got[1])


def test_export_says_which_names_and_orientation(tmp_path, capsys):
    from rvne import cli

    model = tmp_path / "m.rvne"
    model.write_bytes(upstream_init.init_blob())
    assert cli.main(["export", str(model), str(tmp_path / "w.safetensors"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["layout"] == "state_dict"
    assert cli.main(["export", str(model), str(tmp_path / "w.npz"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["layout"] == "rvne"
    assert "out x in" in _help("export") and "in x out" in _help("export")
