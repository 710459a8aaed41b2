#!/usr/bin/env bash
# README's main job, end to end on the most target-like device that runs here:
# make a model, pack it into a blob, inspect and verify it, write it into the
# emulated ESP32-S3-layout flash image, boot the emulated esp32-class board
# (QEMU lx60 / de233_fpu running code built for the ESP32's LX6: windowed ABI,
# FPU) and check N sequences against the numpy reference over serial.
#   bash tools/demo.sh [BLOB]      (default: the upstream example model)
set -euo pipefail
# A blob path given relative to where the user stands, made absolute before
# the cd below.
BLOB_ARG=${1:+$(realpath -m -- "$1")}
cd "$(dirname "$0")/.."
# Only what the main job needs (the test command installs the rest).
bash tools/bootstrap.sh --main
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
from rvne import blob
d = blob.parse(open(sys.argv[1], "rb").read()).header.input_dim
np.save(sys.argv[2], np.random.default_rng(0).standard_normal((8, d)).astype(np.float32))
PYEOF
$PY -m rvne infer "$BLOB" "$OUT/frames.npy" --out "$OUT/logits.npy"
$PY -c "import numpy as np; print(np.load('$OUT/logits.npy'))"

echo "== rvne image $OUT/flash.img   (the emulated board's firmware and flash image, built on first use)"
$PY -m rvne image "$OUT/flash.img"
echo "== rvne flash $BLOB --image $OUT/flash.img"
$PY -m rvne flash "$BLOB" --image "$OUT/flash.img"
echo "== rvne check $BLOB --target qemu (boots $OUT/flash.img, checks over the emulated UART)"
$PY -m rvne check "$BLOB" --target qemu --image "$OUT/flash.img" --vectors "${VECTORS:-4}"
