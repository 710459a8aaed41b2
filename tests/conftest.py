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
    if not hasattr(config, "workerinput"):      # not an xdist worker
        return
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FIRST)))
