/* Start-up of the firmware: exception vectors (VECBASE is moved here), reset
 * (PS, VECBASE, stack, .data copy, .bss zero, main) and the common fault
 * entry. Call0 ABI: the lx106 has no register windows. */

#include "fault_kinds.h"

/* Offsets from VECBASE fixed by the lx106 configuration (core-isa.h). Only
 * `j` in the vector slots: a literal pool here would move the vectors. */
    .section .vectors, "ax"
    .global _app_entry
_app_entry:                     /* the boot stub jumps to offset 0 */
    j       _reset
    .org    0x10                /* debug / level-2 interrupt */
    movi    a2, FAULT_DEBUG
    j       _fault_entry
    .org    0x20                /* NMI / level 3 */
    movi    a2, FAULT_NMI
    j       _fault_entry
    .org    0x30                /* kernel exception */
    movi    a2, FAULT_KERNEL
    j       _fault_entry
    .org    0x50                /* user exception: PS.UM is set at reset */
    wsr     a2, excsave1
    j       _user_vector
    .org    0x70                /* double exception */
    movi    a2, FAULT_DOUBLE
    j       _fault_entry
    .org    0x80

    .section .text.start, "ax"
    .literal_position
    .align  4
    .global _reset
_reset:
    /* User vector mode, exceptions unmasked, every interrupt masked: the
     * firmware polls, so any interrupt would be a fault. */
    movi    a2, 0x2F
    wsr     a2, ps
    rsync
    movi    a2, _app_entry
    wsr     a2, vecbase
    movi    a2, 0
    wsr     a2, intenable
    isync
    movi    sp, _stack_top
    movi    a0, 0

    movi    a2, _data_start
    movi    a3, _data_end
    movi    a4, _data_load
1:  bgeu    a2, a3, 2f
    l32i    a5, a4, 0
    s32i    a5, a2, 0
    addi    a2, a2, 4
    addi    a4, a4, 4
    j       1b
2:
    movi    a2, _bss_start
    movi    a3, _bss_end
    movi    a5, 0
3:  bgeu    a2, a3, 4f
    s32i    a5, a2, 0
    addi    a2, a2, 4
    j       3b
4:
    movi    a0, main
    callx0  a0
    /* main never returns; if it does, say so instead of running off. */
    movi    a2, FAULT_RETURN

#include "user_vector.inc"

    .global _fault_entry
_fault_entry:
    /* a2 = kind. The faulting stack may be the cause: use a separate one. */
    rsr     a3, exccause
    rsr     a4, epc1
    rsr     a5, excvaddr
    rsr     a6, depc
    movi    sp, _fault_stack_top
    movi    a0, port_fault
    callx0  a0
5:  j       5b                  /* port_fault does not return */

/* uint32_t port_calib_loop(uint32_t n): CCOUNT ticks spent on exactly 2*n
 * instructions (addi + bnez per turn), the calibration of docs/flash-layout.md.
 * n must be >= 1. */
    .section .text.port_calib_loop, "ax"
    .align  4
    .global port_calib_loop
port_calib_loop:
    rsr     a3, ccount
6:  addi    a2, a2, -1
    bnez    a2, 6b
    rsr     a4, ccount
    sub     a2, a4, a3
    ret

/* void port_wait_irq(uint32_t mask): sleep (QEMU idles the host CPU) until
 * one of the interrupts in mask is pending, then return with every
 * interrupt masked again. A level-triggered source already pending wakes it
 * at once, so there is no lost wake-up between a check and the sleep. */
    .section .text.port_wait_irq, "ax"
    .align  4
    .global port_wait_irq
port_wait_irq:
    wsr     a2, intenable
    rsync
    waiti   0
    rsil    a2, 15
    ret
