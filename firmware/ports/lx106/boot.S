/* Boot stub at flash offset 0, where the lx106 core's reset vector points
 * (0x50000000). It plays the part of the ESP32-S3's second-stage bootloader:
 * it hands over to the application in the factory app partition at flash
 * 0x10000, mapped execute-in-place at 0x50010000. */
    .section .text.boot, "ax"
    .global _boot
_boot:
    j       1f
    .align  4
.Lapp:
    .word   0x50010000
1:
    /* l32r only reaches backwards: the literal sits just above. */
    l32r    a0, .Lapp
    jx      a0
