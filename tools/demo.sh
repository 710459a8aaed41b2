#!/usr/bin/env bash
# README's main job, end to end on the most target-like device that runs here:
# make a model, pack it into a blob, inspect and verify it, write it into a
# flash image with `rvne flash --image`, boot it and check N sequences against
# the numpy reference over serial. The device is the ESP-IDF app on
# Espressif's QEMU booted by the ESP32-S3's ROM (target qemu-esp32s3) where
# its tools are found (RVNE_QEMU_ESP, IDF_PATH, xtensa-esp32s3-elf-gcc: README,
# Install); elsewhere, as on this repository's CI (Debian and PyPI only), the
# emulated esp32-class board (QEMU lx60 / de233_fpu running code built for the
# ESP32's LX6). Its first lines say which and why.
#   bash tools/demo.sh [BLOB]      (default: the upstream example model)
set -euo pipefail
# A blob path given relative to where the user stands, made absolute before
# the cd below.
BLOB_ARG=${1:+$(realpath -m -- "$1")}
cd "$(dirname "$0")/.."
# The target first, before anything is installed: the tool check is the
# package's own, and needs nothing but Python.
missing=$(PYTHONPATH=host "${PYTHON:-python3}" -c 'from rvne.targets import esp32s3_qemu as t; m = t.missing(); print(t.describe_missing(m) if m else "")')
if [ -z "$missing" ]; then
    TARGET=qemu-esp32s3
    echo "== target qemu-esp32s3: ESP-IDF's tools are here, so the ESP-IDF app booted by the ESP32-S3's ROM on Espressif's QEMU"
    # Only what the main job needs beside ESP-IDF's own tools.
    bash tools/bootstrap.sh --s3
else
    TARGET=qemu
    echo "== target qemu: the emulated esp32-class board (LX6 core with its FPU on Debian's QEMU), the most target-like device here, since $missing"
    # Only what the main job needs (the test command installs the rest).
    bash tools/bootstrap.sh --main
fi
source tools/venv.sh
rvne_activate
PY=$PYTHON
OUT=build/demo
mkdir -p "$OUT"

if [ -n "$BLOB_ARG" ]; then
    BLOB=$BLOB_ARG
else
    BLOB=$OUT/model.rvne
    echo "== rvne init $BLOB   (upstream example: FP32, dims 16/4/1/32/2/4)"
    $PY -m rvne init "$BLOB"
fi
echo "== rvne inspect $BLOB"
$PY -m rvne inspect "$BLOB"
echo "== rvne verify $BLOB"
$PY -m rvne verify "$BLOB"

echo "== reference: rvne infer on 8 random frames"
$PY - "$BLOB" "$OUT/frames.npy" <<'PYEOF'
import sys, numpy as np
from rvne.io import blob
d = blob.parse(open(sys.argv[1], "rb").read()).header.input_dim
np.save(sys.argv[2], np.random.default_rng(0).standard_normal((8, d)).astype(np.float32))
PYEOF
$PY -m rvne infer "$BLOB" "$OUT/frames.npy" --out "$OUT/logits.npy"
$PY -c "import numpy as np; print(np.load('$OUT/logits.npy'))"

if [ "$TARGET" = qemu-esp32s3 ]; then
    WHAT="the ESP32-S3's ROM boots $OUT/flash.img on Espressif's QEMU, checks over UART0"
    echo "== rvne image $OUT/flash.img --target $TARGET   (the ESP-IDF app built for the ESP32-S3, its 8 MiB image; built on first use)"
else
    WHAT="boots $OUT/flash.img, checks over the emulated UART"
    echo "== rvne image $OUT/flash.img --target $TARGET   (the emulated board's firmware and flash image, built on first use)"
fi
$PY -m rvne image "$OUT/flash.img" --target "$TARGET"
echo "== rvne flash $BLOB --image $OUT/flash.img"
$PY -m rvne flash "$BLOB" --image "$OUT/flash.img"
echo "== rvne check $BLOB --target $TARGET ($WHAT)"
$PY -m rvne check "$BLOB" --target "$TARGET" --image "$OUT/flash.img" --vectors "${VECTORS:-4}"

# The same model quantised to int8 on the same board: its check is exact
# (every logit and traced step equal to the integer reference, docs/model.md).
# A blob given as an argument may already be int8: then there is nothing to quantise.
if [ "$($PY -c "from rvne.io import blob; print(blob.read_file('$BLOB').header.dtype)")" != int8 ]; then
    echo "== rvne quantize $BLOB $OUT/model_int8.rvne   (int8, calibrated on generated frames)"
    $PY -m rvne quantize "$BLOB" "$OUT/model_int8.rvne"
    echo "== rvne flash $OUT/model_int8.rvne --image $OUT/flash.img"
    $PY -m rvne flash "$OUT/model_int8.rvne" --image "$OUT/flash.img"
    echo "== rvne check $OUT/model_int8.rvne --target $TARGET --float-model $BLOB   (exact verdict; float only as accuracy)"
    $PY -m rvne check "$OUT/model_int8.rvne" --target "$TARGET" --image "$OUT/flash.img" --vectors "${VECTORS:-4}" \
        --float-model "$BLOB"
fi
