/* What the emulated core's MAC16 unit does, for ktest_mac16.c: each probe
 * runs a short sequence and stores the accumulator (acclo, acchi) or an m
 * register after every step into out[], so the C side can hold it against
 * the ISA's definition. Sequences that must not depend on QEMU's translated
 * blocks start after TB_BREAK (below); the stale_* probes are the block
 * shapes the kernels must avoid, run on purpose. */
    .section .note.GNU-stack, "", @progbits

/* An unconditional jump ends QEMU's translated block: everything after it
 * starts a fresh one, with every register re-read from the CPU state. */
    .macro  TB_BREAK
    j       1f
    .balign 4
1:
    .endm

/* out[i], out[i+1] = acclo, acchi, through a15. */
    .macro  ACC_OUT i
    rsr     a15, acclo
    s32i    a15, a4, (\i) * 4
    rsr     a15, acchi
    s32i    a15, a4, (\i) * 4 + 4
    .endm

    .macro  PROBE name
    .section .text.\name, "ax"
    .balign 4
    .global \name
    .type   \name, @function
\name:
    entry   a1, 32
    .endm

/* void rvne_mac16_aa(uint32_t a, uint32_t b, uint32_t *out): the AR x AR
 * forms, each half pairing, set / add / subtract, and the unsigned one. */
    PROBE   rvne_mac16_aa
    mul.aa.ll   a2, a3
    ACC_OUT 0
    mul.aa.hl   a2, a3
    ACC_OUT 2
    mul.aa.lh   a2, a3
    ACC_OUT 4
    mul.aa.hh   a2, a3
    ACC_OUT 6
    mula.aa.ll  a2, a3
    ACC_OUT 8
    muls.aa.hh  a2, a3
    ACC_OUT 10
    muls.aa.lh  a2, a3
    ACC_OUT 12
    umul.aa.ll  a2, a3
    ACC_OUT 14
    umul.aa.hh  a2, a3
    ACC_OUT 16
    umul.aa.hl  a2, a3
    ACC_OUT 18
    umul.aa.lh  a2, a3
    ACC_OUT 20
    retw

/* void rvne_mac16_md(uint32_t a, uint32_t b, uint32_t *out): m0 = a,
 * m1 = b, m2 = b, m3 = a, then the forms with m registers (.ad, .da, .dd),
 * and the m registers read back. */
    PROBE   rvne_mac16_md
    wsr     a2, m0
    wsr     a3, m1
    wsr     a3, m2
    wsr     a2, m3
    TB_BREAK
    mul.ad.hl   a2, m2          /* a.h * b.l */
    ACC_OUT 0
    mul.da.lh   m0, a3          /* a.l * b.h */
    ACC_OUT 2
    mul.dd.hh   m1, m3          /* b.h * a.h */
    ACC_OUT 4
    mula.dd.ll  m0, m2          /* + a.l * b.l */
    ACC_OUT 6
    muls.ad.lh  a3, m3          /* - b.l * a.h */
    ACC_OUT 8
    mula.da.hl  m1, a2          /* + b.h * a.l */
    ACC_OUT 10
    muls.dd.lh  m1, m2          /* - b.l * b.h */
    ACC_OUT 12
    rsr     a15, m0
    s32i    a15, a4, 56
    rsr     a15, m1
    s32i    a15, a4, 60
    rsr     a15, m2
    s32i    a15, a4, 64
    rsr     a15, m3
    s32i    a15, a4, 68
    retw

/* void rvne_mac16_acc40(uint32_t a, uint32_t b, uint32_t *out): the
 * accumulator's 40 bits: carries out of acclo, the wrap at 2^40, and what
 * writing acchi keeps (a = 0x7fff7fff, b = 0x7fff7fff expected). */
    PROBE   rvne_mac16_acc40
    movi    a5, -1
    movi    a6, 0
    wsr     a5, acclo           /* ACC = 0x00ffffffff */
    wsr     a6, acchi
    mula.aa.ll  a2, a3          /* + 0x3fff0001: carry into acchi */
    ACC_OUT 0
    movi    a5, 0x7f
    wsr     a5, acchi           /* ACC = 0x7f_xxxxxxxx, the largest positive */
    movi    a5, -1
    wsr     a5, acclo
    mula.aa.hh  a2, a3          /* wraps past 2^39 to negative */
    ACC_OUT 2
    movi    a5, 0x1ff
    wsr     a5, acchi
    ACC_OUT 4                   /* acchi keeps 8 bits, sign-extended */
    muls.aa.ll  a2, a3
    ACC_OUT 6
    retw

/* void rvne_mac16_ld(uint32_t *p, uint32_t *out): ldinc / lddec and the
 * loads fused with a multiply, their addresses (pre-increment or
 * decrement by 4) and the values they bring. p[0..7] are the caller's
 * words; p is p[2]'s address on entry. */
    PROBE   rvne_mac16_ld
    mov     a4, a3              /* out, where ACC_OUT stores */
    mov     a5, a2
    ldinc   m0, a5              /* m0 = p[3], a5 = &p[3] */
    lddec   m1, a5              /* m1 = p[2], a5 = &p[2] */
    lddec   m2, a5              /* m2 = p[1], a5 = &p[1] */
    ldinc   m3, a5              /* m3 = p[2], a5 = &p[2] */
    TB_BREAK
    rsr     a15, m0
    s32i    a15, a4, 0
    rsr     a15, m1
    s32i    a15, a4, 4
    rsr     a15, m2
    s32i    a15, a4, 8
    rsr     a15, m3
    s32i    a15, a4, 12
    sub     a15, a5, a2
    s32i    a15, a4, 16         /* 0 */
    TB_BREAK
    mul.dd.ll   m0, m2          /* p[3].l * p[1].l */
    mula.dd.hh.ldinc m1, a5, m0, m2   /* + p[3].h * p[1].h, m1 = p[3], a5 = &p[3] */
    ACC_OUT 5
    mula.da.lh.lddec m0, a5, m0, a2   /* + p[3].l * a2.h, m0 = p[2], a5 = &p[2] */
    ACC_OUT 7
    mula.dd.hl.lddec m2, a5, m1, m3   /* + m1.h * m3.l, m2 = p[1] */
    ACC_OUT 9
    mula.da.ll.ldinc m3, a5, m1, a2   /* + m1.l * a2.l, m3 = p[2] */
    ACC_OUT 11
    TB_BREAK
    rsr     a15, m0
    s32i    a15, a4, 52
    rsr     a15, m1
    s32i    a15, a4, 56
    rsr     a15, m2
    s32i    a15, a4, 60
    rsr     a15, m3
    s32i    a15, a4, 64
    sub     a15, a5, a2
    s32i    a15, a4, 68         /* 0 */
    retw

/* void rvne_mac16_stale(uint32_t *p, uint32_t *out): the QEMU 7.2 defect.
 * p[0] = X1, p[1] = X2, p[2] = 1 | 1 << 16. Each case stores the acclo of
 * a multiply by m2 = p[2] (so acclo is the low half of the m register
 * multiplied). The multiplies read an m register through one TCG global,
 * the loads write it through another (target/xtensa/translate.c: cpu_MR[]
 * vs cpu_SR[MR + i]), so within one translated block a multiply that has
 * already read the register keeps the old value. */
    PROBE   rvne_mac16_stale
    mov     a4, a3
    l32i    a5, a2, 0
    l32i    a6, a2, 8
    wsr     a6, m2
    wsr     a5, m3
    TB_BREAK
    /* a: read m0, ldinc m0 <- X2, read m0 again: same block */
    wsr     a5, m0
    TB_BREAK
    mul.dd.ll   m0, m2
    ACC_OUT 0                   /* X1 */
    mov     a7, a2
    ldinc   m0, a7              /* m0 <- X2 */
    mul.dd.ll   m0, m2
    ACC_OUT 2                   /* X2 on silicon; X1 on QEMU 7.2 */
    rsr     a15, m0
    s32i    a15, a4, 16         /* out[4]: the register itself holds X2 */
    TB_BREAK
    mul.dd.ll   m0, m2
    ACC_OUT 5                   /* X2: a new block reads it afresh */
    /* b: the load half of mula.dd.*.ldinc into the register it reads */
    wsr     a5, m0
    TB_BREAK
    mov     a7, a2
    mula.dd.hh.ldinc m0, a7, m0, m2   /* reads X1, m0 <- X2 */
    mul.dd.ll   m0, m2
    ACC_OUT 7                   /* X2 */
    /* b2: the same after an earlier multiply read m0 */
    wsr     a5, m0
    TB_BREAK
    mov     a7, a2
    mul.dd.ll   m0, m2
    mula.dd.hh.ldinc m0, a7, m0, m2
    mul.dd.ll   m0, m2
    rsr     a15, acclo
    s32i    a15, a4, 76         /* out[19]: X2 on silicon; X1 on QEMU 7.2 */
    /* c: a register loaded, then read for the first time in the block,
     * straight after the load, then after another load */
    wsr     a5, m1
    TB_BREAK
    mov     a7, a2
    ldinc   m1, a7              /* m1 <- X2, never read in this block */
    mul.dd.lh   m1, m2
    ACC_OUT 9                   /* X2 */
    wsr     a5, m1
    TB_BREAK
    mov     a7, a2
    ldinc   m1, a7
    ldinc   m3, a7              /* an unrelated load in between */
    mul.dd.ll   m1, m2
    ACC_OUT 11                  /* X2 */
    /* d: wsr after a read, like a load */
    wsr     a5, m0
    TB_BREAK
    mul.dd.ll   m0, m2
    l32i    a6, a2, 4
    wsr     a6, m0
    mul.dd.ll   m0, m2
    ACC_OUT 13                  /* X2 on silicon */
    /* e: lddec */
    wsr     a5, m1
    TB_BREAK
    mul.dd.ll   m1, m2
    addi    a7, a2, 8
    lddec   m1, a7              /* m1 <- p[1] = X2 */
    mul.dd.ll   m1, m2
    ACC_OUT 15                  /* X2 on silicon */
    /* f: the other operand: m2 read, reloaded, read */
    wsr     a5, m0
    TB_BREAK
    mul.dd.ll   m0, m2          /* X1.l * 1 */
    addi    a7, a2, -4
    ldinc   m2, a7              /* m2 <- X1 */
    mul.dd.ll   m0, m2          /* X1.l * X1.l on silicon */
    ACC_OUT 17
    retw
