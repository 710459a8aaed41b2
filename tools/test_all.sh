#!/usr/bin/env bash
# README's test command: installs what it needs, builds every host-buildable
# firmware target, runs the C unit tests (ASan+UBSan) and the pytest suites.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/bootstrap.sh
PY=${PYTHON:-python3}

echo "== firmware: build and C unit tests"
make -C firmware -j"$(nproc)" all
make -C firmware test

echo "== pytest"
set +e
$PY -m pytest "$@"
rc=$?
set -e
if [ $rc -eq 5 ]; then
    echo "pytest: no tests were collected (exit 5), treated as success"
    rc=0
fi
exit $rc
