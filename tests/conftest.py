"""Run order under pytest-xdist (tools/test_all.sh runs the suite on every
core): the modules whose tests take minutes on the emulated boards go
first, so that no worker is left running one of them alone at the end.
Each module keeps its own order; a serial run keeps pytest's."""

# Slowest first: each one's seconds on 2 cores (`pytest --durations=0`).
SLOW_FIRST = (
    "test_update_powerloss_qemu.py",    # 235 s, one test of 105 s
    "test_qemu_esp32s3.py",             # 180 s, one test of 96 s
    "test_defects.py",                  # 86 s
    "test_install.py",                  # 41 s
    "test_torch_head.py",               # 32 s
    "test_training_example.py",         # 28 s
    "test_update_boards.py",            # 26 s
    "test_update_esp32s3.py",           # 21 s
)


def pytest_collection_modifyitems(config, items):
    _deselect_esp_idf(config, items)
    if not hasattr(config, "workerinput"):      # not an xdist worker
        return
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FIRST)))


# Tests that need Espressif's tools (QEMU -machine esp32s3, ESP-IDF, the S3's
# GCC: README, Install) carry this mark. Where the tools are missing they are
# deselected, not skipped, and one line says so: this repository's CI has
# none of the three, so they are tools/test_s3.sh's to run (docs/targets.md,
# "What was verified where").
ESP_IDF = "esp_idf"


def pytest_configure(config):
    config.addinivalue_line("markers", f"{ESP_IDF}: needs Espressif's QEMU, ESP-IDF and xtensa-esp32s3-elf-gcc "
                                       "(deselected where they are missing; tools/test_s3.sh runs them)")


def _esp_idf_missing():
    from rvne.targets import esp32s3_qemu
    gone = esp32s3_qemu.missing()
    return esp32s3_qemu.describe_missing(gone) if gone else None


def _deselect_esp_idf(config, items):
    why = _esp_idf_missing()
    if why is None:
        return
    keep, gone = [], []
    for item in items:
        (gone if item.get_closest_marker(ESP_IDF) else keep).append(item)
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = keep


def pytest_terminal_summary(terminalreporter, config):
    why = _esp_idf_missing()
    if why is not None:
        terminalreporter.write_line(f"not run: the tests marked {ESP_IDF} (deselected): {why}")
