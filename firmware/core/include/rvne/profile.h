/* Phase markers: where a push spends its instructions, for
 * tools/bench_icount.py. Compiled out (no code, no cost) unless a profiling
 * build defines RVNE_PROFILE and links a port's rvne_profile_enter(), which
 * the core then calls at each change of phase
 * (firmware/ports/lx6/bench/phases.c reads the cycle counter there). */
#ifndef RVNE_PROFILE_H
#define RVNE_PROFILE_H

enum {
    RVNE_PHASE_REST,            /* everything not below: residual adds, copies, calls */
    RVNE_PHASE_PROJ,            /* x.Wq, x.Wk, x.Wv, o.Wo */
    RVNE_PHASE_SCORES,          /* q.k over the window */
    RVNE_PHASE_SOFTMAX,         /* max, exponentials, their sum */
    RVNE_PHASE_WSUM,            /* the weighted sum of values */
    RVNE_PHASE_CLASSIFIER,      /* x.Wc */
    RVNE_PHASE_COUNT
};

#if defined(RVNE_PROFILE)
void rvne_profile_enter(int phase);
#define RVNE_PHASE(name) rvne_profile_enter(RVNE_PHASE_##name)
#else
#define RVNE_PHASE(name) ((void)0)
#endif

#endif
