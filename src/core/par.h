/* lnkit internal: the element-wise loops of the layers on the BLAS threads.
 *
 * lnk_par_for(n, grain, ...) splits the items [0, n) into contiguous parts,
 * one a thread, as many as lnk_blas_threads() and n / grain allow, and runs
 * part 0 on the caller and the others on a small pool of threads that sleep
 * between jobs (no spinning: the OpenBLAS threads keep both cores for the
 * GEMMs in between).  fn must treat each item on its own (a row, a (batch,
 * head) pair, an element), with no sums across items: then the results are
 * bitwise the same for every thread count, which the thread tests check.
 *
 * One job at a time: a call made while another runs (from another thread,
 * or from inside fn) runs serially on its caller.  Each part gets a scratch
 * array of scratch_n doubles: part 0 the caller's scratch0, the others the
 * pool's (kept between jobs); where the pool cannot allocate it, fewer
 * parts.  Cost: a wake-up of the pool (some microseconds) a call. */
#ifndef LNK_CORE_PAR_H
#define LNK_CORE_PAR_H

#include <stddef.h>

typedef void (*lnk_par_fn)(void *ctx, size_t lo, size_t hi, double *scratch);

void lnk_par_for(size_t n, size_t grain, size_t scratch_n, double *scratch0, lnk_par_fn fn,
                 void *ctx);

/* The same on `threads` threads (lnk_par_for uses lnk_blas_threads()): for
 * jobs that set OpenBLAS to one thread while they run (core/blas_fixed.h). */
void lnk_par_for_threads(int threads, size_t n, size_t grain, size_t scratch_n, double *scratch0,
                         lnk_par_fn fn, void *ctx);

/* Items of a row-wise loop over rows of `len` elements such that a part has
 * at least LNK_PAR_GRAIN elements (below that a wake-up costs more than it
 * saves). */
#define LNK_PAR_GRAIN 8192
static inline size_t lnk_par_grain(size_t len)
{
    return len >= LNK_PAR_GRAIN ? 1 : (LNK_PAR_GRAIN + len - 1) / (len ? len : 1);
}

#endif
