/* Start-up of the firmware on the esp32-class core (windowed register ABI,
 * single-precision FPU): exception and window vectors, reset (PS, VECBASE,
 * register window, FPU, stack, .data copy, .bss zero, main) and the common
 * fault entry. Assembled by llvm-mc (-mcpu=esp32) after the C preprocessor.
 * The vector offsets from VECBASE are de233_fpu's (docs/targets.md). */

#include "fault_kinds.h"

/* PS: INTLEVEL 15 (every interrupt masked: the firmware polls), UM (user
 * vector mode), WOE (window overflow exceptions on), EXCM clear. */
#define PS_RUN 0x4002F
/* Where the MMU shows RAM again for code that runs from RAM (sections.ld). */
#define RAMCODE_VADDR 0xc0000000

    .section .note.GNU-stack, "", @progbits

    .section .vectors, "ax"
    .global _app_entry
_app_entry:                     /* the boot stub jumps to offset 0 */
    j       _reset

/* VECBASE points here. The window handlers move a calling frame's a0-a3
 * (and for call8/call12 frames the rest) to and from its stack save areas,
 * as the windowed ABI lays them out: base save area 16 bytes below the
 * callee's stack pointer, extra save area below the caller's caller's. */
    .org    0x400
    .global _vecbase
_vecbase:
_WindowOverflow4:               /* VECBASE + 0x000 */
    s32e    a0, a5, -16
    s32e    a1, a5, -12
    s32e    a2, a5, -8
    s32e    a3, a5, -4
    rfwo
    .org    0x440
_WindowUnderflow4:              /* + 0x040 */
    l32e    a0, a5, -16
    l32e    a1, a5, -12
    l32e    a2, a5, -8
    l32e    a3, a5, -4
    rfwu
    .org    0x480
_WindowOverflow8:               /* + 0x080 */
    s32e    a0, a9, -16
    l32e    a0, a1, -12
    s32e    a1, a9, -12
    s32e    a2, a9, -8
    s32e    a3, a9, -4
    s32e    a4, a0, -32
    s32e    a5, a0, -28
    s32e    a6, a0, -24
    s32e    a7, a0, -20
    rfwo
    .org    0x4C0
_WindowUnderflow8:              /* + 0x0C0 */
    l32e    a1, a9, -12
    l32e    a0, a9, -16
    l32e    a7, a1, -12
    l32e    a2, a9, -8
    l32e    a4, a7, -32
    l32e    a3, a9, -4
    l32e    a5, a7, -28
    l32e    a6, a7, -24
    l32e    a7, a7, -20
    rfwu
    .org    0x500
_WindowOverflow12:              /* + 0x100 */
    s32e    a0, a13, -16
    l32e    a0, a1, -12
    s32e    a1, a13, -12
    s32e    a2, a13, -8
    s32e    a3, a13, -4
    s32e    a4, a0, -48
    s32e    a5, a0, -44
    s32e    a6, a0, -40
    s32e    a7, a0, -36
    s32e    a8, a0, -32
    s32e    a9, a0, -28
    s32e    a10, a0, -24
    s32e    a11, a0, -20
    rfwo
    .org    0x540
_WindowUnderflow12:             /* + 0x140 */
    l32e    a1, a13, -12
    l32e    a0, a13, -16
    l32e    a11, a1, -12
    l32e    a2, a13, -8
    l32e    a4, a11, -48
    l32e    a8, a11, -32
    l32e    a3, a13, -4
    l32e    a5, a11, -44
    l32e    a6, a11, -40
    l32e    a7, a11, -36
    l32e    a9, a11, -28
    l32e    a10, a11, -24
    l32e    a11, a11, -20
    rfwu
    .org    0x700               /* + 0x300: kernel exception */
    movi    a2, FAULT_KERNEL
    j       _fault_entry
    .org    0x740               /* + 0x340: user exception (PS.UM is set) */
    wsr     a2, excsave1
    j       _user_vector
    .org    0x7C0               /* + 0x3C0: double exception */
    movi    a2, FAULT_DOUBLE
    j       _fault_entry
    .org    0x800

    .weak   _ramcode_start, _ramcode_end, _ramcode_load
    .section .text.start, "ax"
    .literal_position
    .literal .Lps_run, PS_RUN
    .literal .Lvecbase, _vecbase
    .literal .Lstack_top, _stack_top
    .literal .Lfault_stack_top, _fault_stack_top
    .literal .Ldata_start, _data_start
    .literal .Ldata_end, _data_end
    .literal .Ldata_load, _data_load
    .literal .Lbss_start, _bss_start
    .literal .Lbss_end, _bss_end
    .literal .Lramcode_start, _ramcode_start
    .literal .Lramcode_end, _ramcode_end
    .literal .Lramcode_load, _ramcode_load
    .literal .Lramcode_vpn, RAMCODE_VADDR + 6
    .literal .Lmain, main
    .literal .Lport_fault, port_fault
    .balign 4
    .global _reset
_reset:
    movi    a0, 0
    wsr     a0, intenable
    l32r    a2, .Lps_run
    wsr     a2, ps
    rsync
    l32r    a2, .Lvecbase
    wsr     a2, vecbase
    /* One live frame, window at 0: the caller chain starts here. */
    movi    a2, 1
    wsr     a2, windowstart
    movi    a2, 0
    wsr     a2, windowbase
    rsync
    movi    a2, 1               /* coprocessor 0: the FPU */
    wsr     a2, cpenable
    rsync
    l32r    a1, .Lstack_top

    /* Code that runs from RAM (sections.ld says why), when the link has
     * any: RAM shows at 0xc0000000 too (the MMU's 512 MiB way-6 entry for
     * that address points at physical 0, RWX, bypass, as the reset
     * identity entries are), and the code is copied there. A program
     * linked without sections.ld leaves the weak symbols 0: nothing. */
    l32r    a2, .Lramcode_start
    l32r    a3, .Lramcode_end
    beq     a2, a3, 6f
    l32r    a2, .Lramcode_vpn
    movi    a3, 3
    .byte   0x30, 0xe2, 0x50    /* wdtlb a3, a2: llvm-mc -mcpu=esp32 has no MMU */
    .byte   0x30, 0x62, 0x50    /* witlb a3, a2 */
    isync
    dsync
    l32r    a2, .Lramcode_start
    l32r    a3, .Lramcode_end
    l32r    a4, .Lramcode_load
5:  bgeu    a2, a3, 6f
    l32i    a5, a4, 0
    s32i    a5, a2, 0
    addi    a2, a2, 4
    addi    a4, a4, 4
    j       5b
6:
    isync

    l32r    a2, .Ldata_start
    l32r    a3, .Ldata_end
    l32r    a4, .Ldata_load
1:  bgeu    a2, a3, 2f
    l32i    a5, a4, 0
    s32i    a5, a2, 0
    addi    a2, a2, 4
    addi    a4, a4, 4
    j       1b
2:
    l32r    a2, .Lbss_start
    l32r    a3, .Lbss_end
    movi    a5, 0
3:  bgeu    a2, a3, 4f
    s32i    a5, a2, 0
    addi    a2, a2, 4
    j       3b
4:
    /* call4: main's entry takes its stack from our a1. */
    l32r    a8, .Lmain
    callx4  a8
    /* main never returns; if it does, say so instead of running off. */
    movi    a2, FAULT_RETURN
    j       _fault_entry

#include "user_vector.inc"

/* a2 = kind. The faulting frame and stack may be the cause: forget every
 * other live frame (they are never returned to) and call port_fault on a
 * stack of its own, with window exceptions usable again. */
    .global _fault_entry
_fault_entry:
    rsr     a7, exccause
    rsr     a8, epc1
    rsr     a9, excvaddr
    rsr     a10, depc
    mov     a6, a2
    rsr     a2, windowbase
    ssl     a2
    movi    a3, 1
    sll     a3, a3
    wsr     a3, windowstart
    l32r    a2, .Lps_run
    wsr     a2, ps
    rsync
    l32r    a1, .Lfault_stack_top
    l32r    a2, .Lport_fault
    callx4  a2                  /* port_fault(a6..a10) */
5:  j       5b                  /* port_fault does not return */

/* uint32_t port_calib_loop(uint32_t n): CCOUNT ticks spent on exactly 2*n
 * instructions (addi + bnez per turn), the calibration of docs/targets.md.
 * n must be >= 1. */
    .section .text.port_calib_loop, "ax"
    .balign 4
    .global port_calib_loop
port_calib_loop:
    entry   a1, 32
    rsr     a3, ccount
6:  addi    a2, a2, -1
    bnez    a2, 6b
    rsr     a4, ccount
    sub     a2, a4, a3
    retw

/* void port_wait_irq(uint32_t mask): sleep (QEMU idles the host CPU) until
 * one of the interrupts in mask is pending, then return with every
 * interrupt masked again. A level-triggered source already pending wakes it
 * at once, so there is no lost wake-up between a check and the sleep. */
    .section .text.port_wait_irq, "ax"
    .balign 4
    .global port_wait_irq
port_wait_irq:
    entry   a1, 32
    wsr     a2, intenable
    rsync
    waiti   0
    rsil    a2, 15
    retw
