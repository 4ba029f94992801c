/* BLAS calls in an order fixed by their shapes (see src/core/blas_fixed.h). */
#include "core/blas_fixed.h"
#include "core/par.h"
#include "lnkit/sys.h"

/* OpenBLAS's threshold: a DGEMM with M N K at most this runs on one thread
 * (interface/gemm.c: SMP_THRESHOLD_MIN x GEMM_MULTITHREAD_THRESHOLD). */
#define GEMM_ONE_THREAD (65536.0 * 4.0)
#define PANEL 64

int lnk_blas1_begin(void)
{
    int t = lnk_blas_threads();
    if (t > 1)
        lnk_set_blas_threads(1);
    return t;
}

void lnk_blas1_end(int threads)
{
    if (threads > 1)
        lnk_set_blas_threads(threads);
}

double lnk_dot(size_t n, const double *x, const double *y)
{
    if (n <= 10000) /* ddot's own threshold: one thread */
        return cblas_ddot((int)n, x, 1, y, 1);
    int t = lnk_blas1_begin();
    double d = cblas_ddot((int)n, x, 1, y, 1);
    lnk_blas1_end(t);
    return d;
}

void lnk_axpy(size_t n, double a, const double *x, double *y)
{
    if (n <= 10000) { /* daxpy's own threshold: one thread */
        cblas_daxpy((int)n, a, x, 1, y, 1);
        return;
    }
    int t = lnk_blas1_begin();
    cblas_daxpy((int)n, a, x, 1, y, 1);
    lnk_blas1_end(t);
}

void lnk_gemv(CBLAS_TRANSPOSE ta, int M, int N, double alpha, const double *A, int lda,
              const double *x, int incx, double beta, double *y, int incy)
{
    int t = lnk_blas1_begin();
    cblas_dgemv(CblasRowMajor, ta, M, N, alpha, A, lda, x, incx, beta, y, incy);
    lnk_blas1_end(t);
}

typedef struct {
    CBLAS_TRANSPOSE ta, tb;
    int M, N, K, lda, ldb, ldc, rows; /* rows a block */
    double alpha, beta;
    const double *A, *B;
    double *C;
} gemm_job;

static void gemm_blocks(void *ctx, size_t lo, size_t hi, double *scratch)
{
    (void)scratch;
    const gemm_job *g = ctx;
    for (size_t p = lo; p < hi; p++) {
        int r0 = (int)p * g->rows, m = g->M - r0 < g->rows ? g->M - r0 : g->rows;
        const double *A = g->ta == CblasNoTrans ? g->A + (size_t)r0 * g->lda : g->A + r0;
        cblas_dgemm(CblasRowMajor, g->ta, g->tb, m, g->N, g->K, g->alpha, A, g->lda, g->B, g->ldb,
                    g->beta, g->C + (size_t)r0 * g->ldc, g->ldc);
    }
}

void lnk_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, double alpha,
              const double *A, int lda, const double *B, int ldb, double beta, double *C, int ldc)
{
    if ((double)M * N * K <= GEMM_ONE_THREAD) {
        cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    int panels = (M + PANEL - 1) / PANEL;
    int per = (panels + LNK_GEMM_PARTS - 1) / LNK_GEMM_PARTS;
    gemm_job g = {ta, tb, M, N, K, lda, ldb, ldc, per * PANEL, alpha, beta, A, B, C};
    int parts = (M + g.rows - 1) / g.rows;
    int t = lnk_blas1_begin();
    lnk_par_for_threads(t, (size_t)parts, 1, 0, NULL, gemm_blocks, &g);
    lnk_blas1_end(t);
}
