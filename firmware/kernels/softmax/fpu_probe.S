/* float rvne_lx6_madd_s(float acc, float a, float b): one madd.s, acc + a*b,
 * for ktest_exp.c to see whether this core rounds it once (fused) or twice. */
    .section .note.GNU-stack, "", @progbits
    .section .text.rvne_lx6_madd_s, "ax"
    .balign 4
    .global rvne_lx6_madd_s
    .type   rvne_lx6_madd_s, @function
rvne_lx6_madd_s:
    entry   a1, 32
    wfr     f0, a2
    wfr     f1, a3
    wfr     f2, a4
    madd.s  f0, f1, f2
    rfr     a2, f0
    retw
    .size   rvne_lx6_madd_s, . - rvne_lx6_madd_s
