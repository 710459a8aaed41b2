"""What the docs tell a user to type matches what the code does: the ESP-IDF
linux recipe keeps rvne's venv and ESP-IDF's environment apart and names
the files that really differ (docs/esp32s3.md); the training walk-through
names a frames file the example writes (docs/training.md); README's
statements about errors and the demo."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def section(path, heading):
    text = (ROOT / path).read_text()
    start = text.index(heading)
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else len(text)]


def test_linux_recipe_keeps_the_two_environments_apart():
    recipe = section("docs/esp32s3.md", "## Running the real app without the chip")
    commands = [ln.strip() for ln in recipe.splitlines() if ln.startswith("    ") and not ln.strip().startswith("#")]
    assert commands
    for cmd in commands:
        # rvne and make (its image step imports rvne) never run on ESP-IDF's Python...
        if re.search(r"(^|\s)rvne\s", cmd):
            assert ".venv/bin/rvne" in cmd, cmd
        if "make -C firmware" in cmd:
            assert "PYTHON=.venv/bin/python" in cmd, cmd
        # ...and idf.py only in a shell that sourced export.sh, never after activating .venv.
        if "idf.py" in cmd:
            assert "export.sh" in " ".join(commands[:commands.index(cmd) + 1]), cmd
    assert "activate" not in " ".join(commands)
    assert "is the only part that differs" not in recipe


def test_linux_recipe_names_the_files_that_branch():
    recipe = section("docs/esp32s3.md", "## Running the real app without the chip")
    main = ROOT / "firmware" / "ports" / "esp32s3" / "main"
    named = set(re.findall(r"`((?:main/)?[A-Za-z_]+\.(?:c|txt))`", recipe.split("Needs ESP-IDF")[0]))
    assert named == {"app_main.c", "temporal_task.c", "main/CMakeLists.txt"}, named
    for name in named:
        text = (main / Path(name).name).read_text()
        assert "CONFIG_IDF_TARGET_LINUX" in text or 'IDF_TARGET STREQUAL "linux"' in text, name
    # No other file of the app branches on the linux target unnamed.
    for path in main.iterdir():
        if path.suffix in (".c", ".h", ".txt") and path.name not in {Path(n).name for n in named}:
            assert "CONFIG_IDF_TARGET_LINUX" not in path.read_text(), path.name


def test_training_doc_frames_file_is_one_the_example_writes():
    doc = (ROOT / "docs" / "training.md").read_text()
    example = (ROOT / "examples" / "train_temporal_head.py").read_text()
    frames = set(re.findall(r"--frames (\S+\.npy)", doc))
    assert frames
    for f in frames:
        assert f'"{Path(f).name}"' in example, f


def test_readme_states_the_error_lines_as_the_cli_prints_them():
    readme = (ROOT / "README.md").read_text()
    assert "Errors are\none line on stderr." not in readme and "Errors are one line on stderr." not in readme
    assert "(the\ncommand's usage, then one line)" in readme or "the command's usage, then one line" in readme
    assert "pip: this package into the" not in readme          # the demo installs rvne without extras
