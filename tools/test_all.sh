#!/usr/bin/env bash
# README's test command: installs what it needs, builds every host-buildable
# firmware target, runs the C unit tests (ASan+UBSan), the libFuzzer harnesses
# (20 s each) and the pytest suites. Arguments go to the pytest run, and then
# the device suites and the main job are left out.
#
# Most of it is CPU-bound emulation, so the stages are laid out to keep
# every core busy: make runs -j(cores); pytest runs on every core
# (pytest-xdist); in a full run the device suites on the emulated boards and
# the main job run as one background chain beside the firmware tests and
# pytest, their output kept in build/test_all/devices.log and printed whole
# when they are done. The fuzzers run first with the cores to themselves:
# their 20 s are wall time, and sharing a core would fuzz less. Each stage's
# wall and CPU seconds (user+sys of its processes) are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
mkdir -p build/test_all
TIMES=()
cpu_of() {      # FILE: CPU seconds (user+sys) of the children in `times` output FILE
    [ -s "$1" ] || { echo 0; return; }
    awk 'NR == 2 { split($1, u, "m"); split($2, s, "m"); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$1"
}
record() {      # NAME WALL_SINCE CPU_SECONDS
    TIMES+=("$(printf '%6d s %6d s  %s' $((SECONDS - $2)) "$3" "$1")")
}
timed() {       # NAME CMD...: run CMD, record its wall and CPU seconds under NAME; returns CMD's status
    local name=$1 t=$SECONDS r=0
    shift
    # In a subshell whose `times` is CMD's own, whatever else ends meanwhile.
    ( r=0; "$@" || r=$?; times > build/test_all/times; exit $r ) || r=$?
    record "$name" "$t" "$(cpu_of build/test_all/times)"
    return $r
}

timed "bootstrap" bash tools/bootstrap.sh
source tools/venv.sh
rvne_activate
PY=$PYTHON
JOBS=$(nproc)
FULL=0
[ $# -eq 0 ] && FULL=1
# The stages that need Espressif's tools (QEMU -machine esp32s3, ESP-IDF,
# the S3's GCC: README, Install) run from tools/test_s3.sh where the tools
# are found. Where they are not (this repository's CI: Debian and PyPI
# only) each is listed as not run, with the reason: never passed, never
# failed. What they last verified: firmware/s3-verified.json.
export RVNE_TEST_ALL=1
S3_MISSING=$("$PY" -c 'from rvne.targets import esp32s3_qemu as t; m = t.missing(); print(t.describe_missing(m) if m else "")')
S3_NOT_RUN=()
if [ -n "$S3_MISSING" ]; then
    S3_NOT_RUN=("the device suite on qemu-esp32s3 (tools/test_s3.sh app)"
                "the S3 kernels and the core's unit tests on the S3's core (tools/test_s3.sh kernels)"
                "the host tests marked esp_idf (tools/test_s3.sh pytest; pytest deselects them)"
                "README's main job on qemu-esp32s3 (tools/demo.sh runs it on the qemu board)")
fi
not_run() {
    local s
    for s in "${S3_NOT_RUN[@]}"; do
        echo "not run: $s: $S3_MISSING"
    done
}
not_run

echo "== firmware: build and C unit tests"
timed "make all" make -C firmware -j"$JOBS" all
echo "== libFuzzer harnesses, $JOBS at a time"
timed "make fuzz" make -C firmware -j"$JOBS" -O fuzz

# The device suite on both emulated Xtensa boards and on the ESP-IDF app,
# then README's main job: one chain in the background (its own process
# group, stopped with everything it started if this script ends first).
DEVLOG=build/test_all/devices.log
dev_pid=
stop_devices() {
    if [ -n "$dev_pid" ]; then
        kill -TERM -- "-$dev_pid" 2>/dev/null || true
        wait "$dev_pid" 2>/dev/null || true
        dev_pid=
    fi
}
devices() {
    local rc=0 t
    # The ESP-IDF app on Espressif's QEMU, where its tools are found.
    if [ -z "$S3_MISSING" ]; then
        t=$SECONDS
        bash tools/test_s3.sh app || rc=1
        echo "== time: $((SECONDS - t)) s  tools/test_s3.sh app"
    fi
    # The esp32-class core (qemu) and the LX106 with soft-float (qemu-lx106).
    for target in qemu qemu-lx106; do
        t=$SECONDS
        echo "== pytest tests/hil --target $target"
        pytest_rc tests/hil --target "$target" || rc=1
        echo "== time: $((SECONDS - t)) s  pytest tests/hil --target $target"
    done
    # README's main job, end to end (tools/demo.sh): on the ESP-IDF app
    # booted by the ESP32-S3's ROM on Espressif's QEMU where ESP-IDF's tools
    # are found (as in CI), else on the qemu board.
    t=$SECONDS
    echo "== README's main job: bash tools/demo.sh"
    bash tools/demo.sh || rc=1
    echo "== time: $((SECONDS - t)) s  tools/demo.sh"
    times > "$DEVLOG.times"
    return $rc
}
if [ $FULL -eq 1 ]; then
    rm -f "$DEVLOG.times"
    trap stop_devices EXIT
    trap 'stop_devices; exit 130' INT
    trap 'stop_devices; exit 143' TERM
    echo "== device suites (qemu-esp32s3 where its tools are, qemu, qemu-lx106) and README's main job: started in the background, output in $DEVLOG"
    dev_t=$SECONDS
    set -m
    devices </dev/null >"$DEVLOG" 2>&1 &
    dev_pid=$!
    set +m
fi

timed "make test" make -C firmware -j"$JOBS" -O test
echo "== the core's C unit tests on the emulated esp32-class core (QEMU de233_fpu, semihosting)"
timed "make lx6-test" make -C firmware -j"$JOBS" -O lx6-test
# The same tests, and the kernels built by the S3's own GCC, on the ESP32-S3's
# core (Espressif's QEMU, booted by the chip's ROM), where its tools are found.
if [ -z "$S3_MISSING" ]; then
    timed "make s3-test" bash tools/test_s3.sh kernels
fi

# The whole suite on every core (-n auto); tests that share a build take
# rvne's build lock. The caller's arguments run as given (add -n auto for
# cores): under xdist a path that does not exist is "no tests" (exit 5),
# not pytest's "not found" (exit 4).
echo "== pytest"
rc=0
if [ $FULL -eq 1 ]; then
    timed "pytest -n auto" pytest_rc -n auto --durations=25 || rc=$?
else
    timed "pytest $*" pytest_rc "$@" || rc=$?
fi

if [ $FULL -eq 1 ]; then
    echo "== waiting for the device suites and the main job ($DEVLOG)"
    drc=0
    wait "$dev_pid" || drc=$?
    dev_pid=
    record "device suites and main job (background)" "$dev_t" "$(cpu_of "$DEVLOG.times")"
    cat "$DEVLOG"
    [ $drc -eq 0 ] || { echo "test_all: a device suite or the main job failed: its output is above ($DEVLOG)"; rc=1; }
fi

echo "== test_all: seconds per stage, wall and CPU (user+sys of its processes)"
printf '%s\n' "${TIMES[@]}"
if [ $FULL -eq 1 ]; then
    echo "   of which, in the background (wall):"
    sed -n 's/^== time: */        /p' "$DEVLOG"
fi
not_run
wall=$((SECONDS - START))
times > build/test_all/times
cpu=$(cpu_of build/test_all/times)
printf '%6d s %6d s  total: %s of %d cores busy on average\n' "$wall" "$cpu" \
    "$(awk -v c="$cpu" -v w="$wall" 'BEGIN { printf "%.2f", w ? c / w : 0 }')" "$JOBS"
exit $rc
