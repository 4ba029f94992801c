/* Helpers of the curvature tests (test_lanczos, test_eigs, test_slq,
 * test_curvature): operators on plain matrices with known spectra, built as
 * diag(lambda) or Q diag(lambda) Q^T with Q a random orthogonal matrix (QR
 * of a Gaussian matrix, LAPACKE dgeqrf/dorgqr), and checks of extremal
 * values against them. */
#include "testutil.h"
#include "testutil_curv.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int dense_apply(void *ctx, const double *x, double *y)
{
    tc_dense_op *d = ctx;
    d->calls++;
    if (d->fail_at > 0 && d->calls == d->fail_at)
        return lnk_error(LNK_ENONFINITE, "dense test operator: failing on purpose");
    cblas_dgemv(CblasRowMajor, CblasNoTrans, d->n, d->n, 1.0, d->A, d->n, x, 1, 0.0, y, 1);
    return LNK_OK;
}

lnk_operator tc_dense_operator(tc_dense_op *d)
{
    lnk_operator op = {(size_t)d->n, d, dense_apply, NULL};
    return op;
}

int tc_diag_apply(void *ctx, const double *x, double *y)
{
    const tc_diag_op *g = ctx;
    for (int i = 0; i < g->n; i++)
        y[i] = g->d[i] * x[i];
    return LNK_OK;
}

lnk_operator tc_diag_operator(tc_diag_op *g)
{
    lnk_operator op = {(size_t)g->n, g, tc_diag_apply, NULL};
    return op;
}

/* Random orthogonal n x n (row-major == column-major up to transpose, which
 * is orthogonal too). */
double *tc_rand_orth(int n, uint64_t seed)
{
    double *Q = malloc((size_t)n * n * sizeof(double));
    double *tau = malloc((size_t)n * sizeof(double));
    assert_non_null(Q);
    assert_non_null(tau);
    tu_randn(Q, (size_t)n * n, seed);
    assert_int_equal(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, n, n, Q, n, tau), 0);
    assert_int_equal(LAPACKE_dorgqr(LAPACK_COL_MAJOR, n, n, n, Q, n, tau), 0);
    free(tau);
    return Q;
}

/* A = Q diag(lam) Q^T (exactly symmetrised); Q returned in *Qout if wanted
 * (row-major: column k of Q, Q[i*n+k], is the eigenvector of lam[k]). */
double *tc_spectral_matrix(int n, const double *lam, uint64_t seed, double **Qout)
{
    double *Q = tc_rand_orth(n, seed);
    double *B = malloc((size_t)n * n * sizeof(double));
    double *A = malloc((size_t)n * n * sizeof(double));
    assert_non_null(B);
    assert_non_null(A);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++)
            B[(size_t)i * n + k] = Q[(size_t)i * n + k] * lam[k];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0, B, n, Q, n, 0.0, A, n);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < i; k++) {
            double s = 0.5 * (A[(size_t)i * n + k] + A[(size_t)k * n + i]);
            A[(size_t)i * n + k] = A[(size_t)k * n + i] = s;
        }
    free(B);
    if (Qout)
        *Qout = Q;
    else
        free(Q);
    return A;
}

int tc_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tc_relerr(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-300); }

/* Reported extremal values val[0..k) (top: descending; bottom: ascending)
 * against the spectrum lam: each within rtol of the true value of its rank
 * in the list of eigenvalues with multiplicity, except that a multiple
 * eigenvalue may be reported fewer times than its multiplicity (a single-
 * vector Krylov method need not find every copy).  So the reported list,
 * walked in order, steps through the sorted spectrum and may skip only extra
 * copies of a value it has just reported. */
void tc_check_extremes(const char *what, const double *val, int k, const double *lam, int n,
                           int top, double rtol)
{
    double *ls = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++)
        ls[i] = top ? -lam[i] : lam[i];
    qsort(ls, (size_t)n, sizeof(double), tc_cmp_double); /* ascending in "rank" order */
    int p = 0;
    for (int i = 0; i < k; i++) {
        double x = top ? -val[i] : val[i], prev = i ? (top ? -val[i - 1] : val[i - 1]) : NAN;
        /* skip extra copies of the previous value */
        while (i > 0 && p < n && fabs(x - ls[p]) > rtol * fabs(ls[p]) &&
               fabs(ls[p] - prev) <= rtol * fabs(ls[p]))
            p++;
        if (p >= n || fabs(x - ls[p]) > rtol * fabs(ls[p]))
            fail_msg("%s %d: %.17g, expected %.17g", what, i, val[i],
                     p < n ? (top ? -ls[p] : ls[p]) : NAN);
        p++;
    }
    free(ls);
}

/* n-10 bulk values in [-2, 3] plus outliers: 10, 9 (twice), 8.5, a cluster
 * 7, 7.001, 7.002 at the top; -5, -4.5 (three times), -4 at the bottom.
 * Distinct top 4: 10, 9, 8.5, 7.002; distinct bottom 3: -5, -4.5, -4. */
double *tc_spectrum1(int n)
{
    double *lam = malloc((size_t)n * sizeof(double));
    assert_non_null(lam);
    static const double out[] = {10, 9, 9, 8.5, 7, 7.001, 7.002, -5, -4.5, -4.5, -4.5, -4};
    int no = (int)(sizeof out / sizeof out[0]);
    for (int i = 0; i < n - no; i++)
        lam[i] = -2.0 + 5.0 * i / (n - no - 1);
    memcpy(lam + n - no, out, sizeof out);
    /* interleave so the diagonal is not sorted */
    for (int i = 0; i < n; i += 7) {
        int k = (i * 31 + 5) % n;
        double t = lam[i];
        lam[i] = lam[k];
        lam[k] = t;
    }
    return lam;
}
