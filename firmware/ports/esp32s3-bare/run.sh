#!/usr/bin/env bash
# Boots one flash image made by s3.mk on Espressif's QEMU (-machine esp32s3,
# $RVNE_QEMU_ESP) through the chip's mask ROM, with semihosting, and exits
# with the program's status: usage `run.sh IMAGE [TIMEOUT_S]`.
#
# With -no-reboot a reset also ends QEMU with 0 (the ROM resets when it
# refuses an image), so 0 counts only with the test's own report, the
# "N checks, 0 failed" line of CHECK_DONE (firmware/tests/check.h). The
# ROM's console (UART0) is shown when a run fails.
set -u
img=${1:?usage: run.sh IMAGE [TIMEOUT_S]}
limit=${2:-300}
qemu=${RVNE_QEMU_ESP:-}
if [ -z "$qemu" ] || [ ! -x "$qemu" ]; then
    echo "run.sh: set RVNE_QEMU_ESP to Espressif's qemu-system-xtensa (README: Install)" >&2
    exit 2
fi
out=$(mktemp) uart=$(mktemp)
trap 'rm -f "$out" "$uart"' EXIT
timeout "$limit" "$qemu" -nographic -machine esp32s3 -no-reboot -semihosting -monitor none \
    -serial "file:$uart" -drive "file=$img,if=mtd,format=raw,snapshot=on" \
    -global driver=timer.esp32s3.timg,property=wdt_disable,value=true >"$out" 2>&1
rc=$?
grep -v '^Adding SPI flash device$' "$out"
if [ $rc -eq 0 ] && ! grep -Eq ': [0-9]+ checks, 0 failed$' "$out"; then
    echo "run.sh: $img: QEMU ended with 0 but the program never reported (did the ROM boot it?)" >&2
    rc=1
fi
if [ $rc -ne 0 ]; then
    [ $rc -eq 124 ] && echo "run.sh: $img: no exit within ${limit} s" >&2
    echo "run.sh: the ROM's console (UART0):" >&2
    sed 's/^/  | /' "$uart" >&2
fi
exit $rc
