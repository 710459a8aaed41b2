"""The firmware's architecture (docs/targets.md, "Layout of firmware/";
tools/firmware_arch.py): no include or call circle between the files of
the core, the kernels, the shared Xtensa code or a port, no port reaching
into another port's folder and the shared code (firmware/xtensa) into
none, and a circle or a reach put back into a copy of the tree is found."""

import importlib
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tool():
    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))
    return importlib.import_module("firmware_arch")


def test_no_circle_and_no_port_reaching_into_another():
    arch = tool()
    for room, folder in arch.rooms(str(ROOT)).items():
        assert arch.circles(arch.graph(folder)) == [], room
    assert arch.reach_pairs(str(ROOT)) == {}
    assert arch.problems(str(ROOT)) == []
    # What the issue moved: the ESP-IDF app and the S3 bench take the kernels from firmware/kernels.
    assert not list((ROOT / "firmware/ports/lx6").glob("dsp/*"))
    # The emulated boards' board code and runtime are shared code, in no port's folder.
    assert not (ROOT / "firmware/ports/xtensa-board").exists() and not (ROOT / "firmware/ports/lx106/rt").exists()
    # So are the windowed cores' start-up, C library and semihosting the lx6 port and the S3 harness build.
    assert not [p for p in ("start.S", "libc", "semihost") if (ROOT / "firmware/ports/lx6" / p).exists()]
    assert "xtensa" in arch.rooms(str(ROOT))


def test_the_model_and_the_update_sit_below_the_protocol():
    deps = tool().graph(str(ROOT / "firmware" / "core"))
    assert "model" in deps["proto"] and "model" in deps["update"] and "update" in deps["proto"]
    assert "proto" not in deps["update"] and "proto" not in deps["model"]


def copy(tmp_path):
    dst = tmp_path / "repo"
    shutil.copytree(ROOT / "firmware", dst / "firmware", ignore=shutil.ignore_patterns("build", "__pycache__"))
    return dst


def test_a_circle_or_a_reach_put_back_is_found(tmp_path):
    arch = tool()
    repo = copy(tmp_path)
    assert arch.problems(str(repo)) == arch.problems(str(ROOT))
    fw = repo / "firmware"
    # The update loading through the protocol again (the circle of before).
    update = fw / "core/src/rvne_update.c"
    update.write_text(update.read_text().replace('#include "rvne/model.h"', '#include "rvne/proto.h"'))
    # The app's cut hooks logging through the app again.
    cut = fw / "ports/esp32s3/main/flash_cut.c"
    cut.write_text(cut.read_text().replace("log_line(msg);", "temporal_task_log(msg);"))
    # The posix port building a file of the lx6 port's, through a variable.
    with open(fw / "ports/posix/port.mk", "a") as f:
        f.write("POSIX_EXTRA := $(LX6_DIR)/libc/string.c\n")
    # The shared board code taking a header from the lx106 port's folder.
    with open(fw / "xtensa/board/board.mk", "a") as f:
        f.write("XTB_HDR += $(FW)/ports/lx106/board_core.h\n")
    found = "\n".join(arch.problems(str(repo)))
    assert "circle in firmware/core: model <-> proto <-> update" in found or \
        "circle in firmware/core: proto <-> update" in found, found
    assert "circle in firmware/ports/esp32s3: flash_cut <-> temporal_task" in found, found
    assert "firmware/ports/posix reaches into firmware/ports/lx6/" in found, found
    assert "firmware/xtensa reaches into firmware/ports/lx106/" in found, found
    assert arch.main(["--root", str(repo)]) == 1


def test_a_call_through_a_callback_counts_and_a_static_name_does_not(tmp_path):
    arch = tool()
    repo = copy(tmp_path)
    room = repo / "firmware/ports/posix"
    # A static helper of the same name as another file's function is no dependency ...
    (room / "a.c").write_text("static int helper(void) { return 1; }\nint a_run(void) { return helper(); }\n")
    (room / "b.c").write_text("int helper(void) { return 2; }\n")
    assert arch.circles(arch.graph(str(room))) == []
    # ... a function handed on as a callback is.
    (room / "b.c").write_text("int a_run(void);\nint helper(int (*f)(void)) { return f ? 2 : 0; }\n"
                              "int b_go(void) { return helper(a_run); }\n")
    (room / "a.c").write_text("int b_go(void);\nint a_run(void) { return b_go(); }\n")
    assert arch.circles(arch.graph(str(room))) == [["a", "b"]]


def test_a_root_without_firmware_is_one_line_and_exit_2(tmp_path, capsys):
    assert tool().main(["--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no firmware/ports" in err
