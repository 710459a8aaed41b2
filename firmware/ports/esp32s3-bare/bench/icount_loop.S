/* uint32_t s3_icount_loop(uint32_t n): the core's ICOUNT advance over a
 * loop of exactly 2n instructions (addi + bnez per turn; n >= 1) between two
 * reads, for push_icount.c's check that ICOUNT counts every instruction
 * once: two calls differ by exactly twice the difference of their n.
 * Assembled by llvm-mc and GNU as alike. */
    .section .note.GNU-stack, "", @progbits
    .section .text.s3_icount_loop, "ax"
    .balign 4
    .global s3_icount_loop
s3_icount_loop:
    entry   a1, 32
    rsr     a3, icount
1:  addi    a2, a2, -1
    bnez    a2, 1b
    rsr     a4, icount
    sub     a2, a4, a3
    retw
