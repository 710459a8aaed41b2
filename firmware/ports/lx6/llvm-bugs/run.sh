#!/usr/bin/env bash
# Shows, one line each, whether the llc-22 problems the esp32-class port
# works around (README.md here) are still present in the installed LLVM.
#   bash firmware/ports/lx6/llvm-bugs/run.sh        (exit 0; prints the state)
set -u
cd "$(dirname "$0")"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
LLC=(llc-22 -mtriple=xtensa -mcpu=esp32 -mattr=-mul32high -O2)
ir() { clang-22 --target=xtensa -O2 -ffreestanding -fomit-frame-pointer -c -emit-llvm "$1" -o "$T/$2.bc"; }

ir float_select.c fs
if "${LLC[@]}" "$T/fs.bc" -o "$T/fs.s" 2>"$T/fs.err"; then echo "float_select: fixed (compiles)"
else echo "float_select: PRESENT ($(grep -m1 -o 'Cannot select.*' "$T/fs.err" | cut -c1-60))"; fi

ir literal_pool.c lp
if "${LLC[@]}" -filetype=obj "$T/lp.bc" -o "$T/lp.o" 2>"$T/lp.err"; then echo "literal_pool: fixed (object emitted)"
else echo "literal_pool: PRESENT ($(grep -m1 -o 'fixup value.*' "$T/lp.err"))"; fi

ir va_start.c va
"${LLC[@]}" "$T/va.bc" -o "$T/va.s"
# The register area's address goes to va_list+4; it must be 8 bytes (two
# named arguments) below the slot where a4 is stored.
a4=$(grep -m1 -E 's32i[[:space:]]+a4, a1, [0-9]+' "$T/va.s" | grep -oE '[0-9]+$')
reg=$(grep -B2 -m1 -E 's32i[[:space:]]+a[0-9]+, a1, 4$' "$T/va.s" | grep -m1 -oE 'addi[[:space:]]+a[0-9]+, a1, [0-9]+' | grep -oE '[0-9]+$')
if [ -n "$a4" ] && [ -n "$reg" ] && [ "$reg" = "$a4" ]; then
    echo "va_start: PRESENT (register area at a4's slot, sp+$a4; expected sp+$((a4 - 8)))"
else echo "va_start: not seen as before (a4 at sp+${a4:-?}, area at sp+${reg:-?}): read $T/va.s"; fi

# Block placement: the prototype's INFO corruption. Compare the protocol
# code with and without the pass: both are what the device suite runs.
ir ../../../core/src/rvne_proto.c pr 2>/dev/null || clang-22 --target=xtensa -O2 -ffreestanding -nostdinc \
    -isystem "$(clang-22 -print-resource-dir)/include" -isystem ../../../xtensa/libc/include -I../../../core/include -I../../../kernels \
    -fomit-frame-pointer -c -emit-llvm ../../../core/src/rvne_proto.c -o "$T/pr.bc"
"${LLC[@]}" "$T/pr.bc" -o "$T/on.s" && "${LLC[@]}" --disable-block-placement "$T/pr.bc" -o "$T/off.s"
echo "block_placement: rvne_proto.c compiles both ways ($(grep -c . "$T/on.s") vs $(grep -c . "$T/off.s") lines);" \
     "not reproduced as a miscompile: the firmware is built with the pass on and passes the device suite"
