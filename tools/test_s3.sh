#!/usr/bin/env bash
# The stages that need Espressif's tools (Espressif's QEMU with -machine
# esp32s3, ESP-IDF v5.1+, xtensa-esp32s3-elf-gcc: README, Install), stated
# once: tools/test_all.sh runs them from here where the tools are found, and
# so does the ESP-IDF users' CI (.github/workflows/esp-idf.yml). This
# repository's own CI has none of the three (Debian and PyPI only), so it
# lists these stages as not run.
#
#   bash tools/test_s3.sh [--record] [STAGE...]
#     app      build the ESP-IDF app for Espressif's QEMU, then the device
#              suite on it through pytest-embedded's idf and qemu services
#     kernels  the S3 kernels and the core's unit tests on the S3's core
#              (make -C firmware s3-test: ROM boot, semihosting)
#     pytest   the host tests marked esp_idf (tests/conftest.py)
#     demo     README's main job on qemu-esp32s3 (tools/demo.sh)
#   No STAGE: all four. --record, after every stage passed, rewrites
#   firmware/s3-verified.json (tools/s3_verified.py): the digests of the
#   sources those stages verified and the commit they were verified at.
#
# Exit 0 when every stage passed, 1 when one failed, 3 when the tools are
# missing (one line says which and how to get them).
set -euo pipefail
cd "$(dirname "$0")/.."
RECORD=0
STAGES=()
for a in "$@"; do
    case $a in
        --record) RECORD=1 ;;
        app|kernels|pytest|demo) STAGES+=("$a") ;;
        *) echo "test_s3: unknown argument '$a' (stages: app kernels pytest demo; --record)" >&2; exit 2 ;;
    esac
done
[ ${#STAGES[@]} -gt 0 ] || STAGES=(app kernels pytest demo)
if [ $RECORD -eq 1 ] && [ ${#STAGES[@]} -ne 4 ]; then
    echo "test_s3: --record needs every stage (run it without STAGE arguments)" >&2
    exit 2
fi
if [ $RECORD -eq 1 ] && [ -n "$(git status --porcelain -- firmware host/rvne/icount.json 2>/dev/null)" ]; then
    echo "test_s3: --record verifies a commit: commit or stash the changes under firmware/ first" >&2
    exit 2
fi

# Inside tools/test_all.sh the venv is set up already; alone, make it.
if [ -z "${RVNE_TEST_ALL:-}" ]; then
    bash tools/bootstrap.sh --s3
fi
source tools/venv.sh
rvne_activate
PY=$PYTHON
JOBS=$(nproc)

missing=$("$PY" -c 'from rvne.targets import esp32s3_qemu as t; m = t.missing(); print(t.describe_missing(m) if m else "")')
if [ -n "$missing" ]; then
    echo "test_s3: not run: $missing" >&2
    exit 3
fi

rc=0
for stage in "${STAGES[@]}"; do
    t=$SECONDS
    case $stage in
    app)
        # pytest-embedded reads the app's build directory: build it first
        # (rvne builds it once, under a lock, for everything that needs it).
        echo "== test_s3 app: build the ESP-IDF app for Espressif's QEMU (make -C firmware esp32s3-qemu, through rvne)"
        if "$PY" -c "from rvne.targets import esp32s3_qemu; print(esp32s3_qemu.ensure_built())"; then
            echo "== test_s3 app: pytest tests/hil --target qemu-esp32s3 (pytest-embedded idf,qemu)"
            pytest_rc tests/hil --target qemu-esp32s3 --embedded-services idf,qemu \
                --app-path firmware/ports/esp32s3 --build-dir "$PWD/build/esp32s3-qemu/idf" \
                --qemu-prog-path "${RVNE_QEMU_ESP:-qemu-system-xtensa}" --reruns 2 --only-rerun BootStall || rc=1
        else
            rc=1
        fi ;;
    kernels)
        echo "== test_s3 kernels: the kernels and the core's unit tests on the ESP32-S3's core (make -C firmware s3-test)"
        make -C firmware -j"$JOBS" -O s3-test || rc=1 ;;
    pytest)
        # Only the modules that hold such tests: the others may need what
        # bootstrap --s3 leaves out (torch).
        mapfile -t mods < <(grep -l "mark.esp_idf" tests/test_*.py)
        echo "== test_s3 pytest: the host tests that need Espressif's tools (-m esp_idf: ${mods[*]})"
        pytest_rc -m esp_idf -n auto "${mods[@]}" || rc=1 ;;
    demo)
        echo "== test_s3 demo: README's main job on qemu-esp32s3 (tools/demo.sh)"
        bash tools/demo.sh || rc=1 ;;
    esac
    echo "== time: $((SECONDS - t)) s  test_s3 $stage"
done

if [ $rc -ne 0 ]; then
    echo "test_s3: a stage failed (its output is above); firmware/s3-verified.json unchanged"
    exit 1
fi
if [ $RECORD -eq 1 ]; then
    "$PY" tools/s3_verified.py record --how "tools/test_s3.sh --record"
fi
echo "test_s3: every stage passed (${STAGES[*]})"
