/* Helpers of the curvature tests (testutil_curv.c). */
#ifndef LNK_TESTUTIL_CURV_H
#define LNK_TESTUTIL_CURV_H

#include <stdint.h>
#include <string.h>

#include "lnkit/curvature.h"
#include "lnkit/error.h"

#define assert_msg_has(s)                                                                   \
    do {                                                                                    \
        if (!strstr(lnk_errmsg(), (s)))                                                     \
            fail_msg("message \"%s\" lacks \"%s\"", lnk_errmsg(), (s));                     \
    } while (0)

/* A dense symmetric matrix as an operator; counts its calls and can fail. */
typedef struct {
    int n;
    const double *A; /* row-major symmetric */
    long calls;
    int fail_at;     /* > 0: the fail_at-th call returns LNK_ENONFINITE */
} tc_dense_op;
lnk_operator tc_dense_operator(tc_dense_op *d);

/* diag(d) as an operator. */
typedef struct {
    int n;
    const double *d;
} tc_diag_op;
int tc_diag_apply(void *ctx, const double *x, double *y);
lnk_operator tc_diag_operator(tc_diag_op *g);

/* Random orthogonal n x n (row-major == column-major up to transpose, which
 * is orthogonal too). */
double *tc_rand_orth(int n, uint64_t seed);
/* A = Q diag(lam) Q^T (exactly symmetrised); Q returned in *Qout if wanted
 * (row-major: column k of Q, Q[i*n+k], is the eigenvector of lam[k]). */
double *tc_spectral_matrix(int n, const double *lam, uint64_t seed, double **Qout);
/* qsort comparison of doubles, ascending. */
int tc_cmp_double(const void *a, const void *b);
/* |a - b| / |b| (b at least 1e-300). */
double tc_relerr(double a, double b);
/* Reported extremal values val[0..k) (top: descending; bottom: ascending)
 * against the spectrum lam, each within rtol of the true value of its rank;
 * a multiple eigenvalue may be reported fewer times than its multiplicity. */
void tc_check_extremes(const char *what, const double *val, int k, const double *lam, int n,
                       int top, double rtol);
/* n-10 bulk values in [-2, 3] plus outliers: 10, 9 (twice), 8.5, a cluster
 * 7, 7.001, 7.002 at the top; -5, -4.5 (three times), -4 at the bottom. */
double *tc_spectrum1(int n);

#endif
