/* Boot stub at flash offset 0, where the core's reset vector points (the
 * lx60 board maps the flash there). It plays the part of the ESP32-S3's
 * second-stage bootloader: it hands over to the application in the factory
 * app partition at flash 0x10000, executed in place at APP_ENTRY (the port
 * passes -DAPP_ENTRY=<flash mapping + 0x10000>). Both cores' assemblers take
 * this: .balign and .long mean the same to GNU as and llvm-mc. */
    .section .text.boot, "ax"
    .global _boot
_boot:
    j       1f
    .balign 4
.Lapp:
    .long   APP_ENTRY
1:
    /* l32r only reaches backwards: the literal sits just above. */
    l32r    a0, .Lapp
    jx      a0
