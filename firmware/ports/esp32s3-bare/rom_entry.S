/* Where the ESP32-S3's mask ROM enters the image it loaded from flash
 * offset 0 (the second-stage bootloader's slot): it calls the image's entry
 * point as a windowed-ABI function, so the first instruction is `entry`;
 * then the esp32-class port's own reset code (xtensa/windowed/start.S: VECBASE,
 * register window, FPU, stack, .bss), which never returns to the ROM.
 * Assembled by llvm-mc and by GNU as alike. */
    .section .note.GNU-stack, "", @progbits
    .section .text.s3_entry, "ax"
    .balign 4
    .global _s3_entry
_s3_entry:
    entry   a1, 32
    j       _reset
