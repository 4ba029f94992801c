/* lnkit internal: BLAS calls whose rounding does not depend on the thread count.
 *
 * OpenBLAS (0.3.21) splits a call over its threads by the thread count T,
 * and the split changes the rounding: ddot adds T partial sums (n > 10000);
 * daxpy's tails fall elsewhere;
 * dgemv computes rows near a split point with its tail kernel; DGEMM on the
 * AVX-512 kernel rounds the elements of a thread's edge differently.  So a
 * Lanczos run on 1 thread and on 2 differed in the last bits (7e-16
 * relative), against the rule "one seed gives the same numbers on every
 * thread count" (seen in tests/bitwise's outputs on both kernels).
 *
 * Here every such call runs OpenBLAS on one thread, and the parallelism is
 * lnkit's own, over parts fixed by the call's shape alone:
 *   lnk_dot   one single-thread ddot (memory bound; a second thread gained
 *             little).
 *   lnk_gemv  one single-thread dgemv, likewise.
 *   lnk_axpy  one single-thread daxpy: element-wise, yet its threaded form
 *             is not bitwise (each thread's tail goes through another
 *             kernel path; on the Haswell kernel 3 threads rounded
 *             differently from 1 and 2).
 *   lnk_gemm  C's rows in LNK_GEMM_PARTS blocks of whole 64-row panels
 *             (fewer for small M), each one single-thread DGEMM, the blocks
 *             run on lnkit's pool (core/par.h) on T threads; below
 *             OpenBLAS's own threading threshold (M N K <= 65536 x 4) one
 *             direct call, which OpenBLAS runs on one thread anyway.
 * Which thread computes a block does not change its bits, so results are the
 * same on every thread count.  Cost: each block packs the shared operand
 * (op(B)) itself, (parts - 1) extra packings a call; see `make bench`.
 *
 * lnk_blas1_begin()/lnk_blas1_end() bracket other work that must see
 * OpenBLAS on one thread (a lnk_par_for job whose parts call BLAS, a LAPACK
 * call on long vectors): begin returns the thread count to restore.  The
 * switch is a store in this OpenBLAS (built NO_AFFINITY).  Called from the
 * caller's thread only, outside any lnk_par_for job. */
#ifndef LNK_CORE_BLAS_FIXED_H
#define LNK_CORE_BLAS_FIXED_H

#include <cblas.h>
#include <stddef.h>

#define LNK_GEMM_PARTS 2

int lnk_blas1_begin(void);
void lnk_blas1_end(int threads);

double lnk_dot(size_t n, const double *x, const double *y);

/* y += a x */
void lnk_axpy(size_t n, double a, const double *x, double *y);

/* cblas_dgemv(CblasRowMajor, ...) on one BLAS thread */
void lnk_gemv(CBLAS_TRANSPOSE ta, int M, int N, double alpha, const double *A, int lda,
              const double *x, int incx, double beta, double *y, int incy);

/* cblas_dgemm(CblasRowMajor, ...) in fixed row blocks of C */
void lnk_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, double alpha,
              const double *A, int lda, const double *B, int ldb, double beta, double *C, int ldc);

#endif
