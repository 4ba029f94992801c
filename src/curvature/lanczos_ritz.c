/* Lanczos results: Ritz values by LAPACK's tridiagonal MRRR solver, Ritz
 * vectors (LIGHT mode regenerates the basis) and the Cullum-Willoughby ghost
 * test; see include/lnkit/curvature.h. */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "curvature/internal.h"
#include "core/blas_fixed.h"
#include "lnkit/curvature.h"
#include "lnkit/error.h"

/* Eigenvalues (and vectors) of the symmetric tridiagonal (d[0..j), e[0..j-1)). */
static int tridiag_eig(int j, const double *d0, const double *e0, double *theta, double *S)
{
    double *d = malloc((size_t)j * sizeof(double));
    double *e = calloc((size_t)j, sizeof(double)); /* dstemr touches e[j-1] */
    lapack_int *isuppz = malloc(2 * (size_t)j * sizeof(lapack_int));
    if (!d || !e || !isuppz) {
        free(d), free(e), free(isuppz);
        return lnk_error(LNK_ENOMEM, "lanczos_ritz: cannot allocate the %d x %d tridiagonal", j, j);
    }
    memcpy(d, d0, (size_t)j * sizeof(double));
    if (j > 1)
        memcpy(e, e0, (size_t)(j - 1) * sizeof(double));
    lapack_int mfound = 0;
    lapack_int info = LAPACKE_dstevr(LAPACK_ROW_MAJOR, S ? 'V' : 'N', 'A', j, d, e, 0.0, 0.0, 0, 0,
                                     0.0, &mfound, theta, S, j, isuppz);
    free(d), free(e), free(isuppz);
    if (info != 0 || mfound != j)
        return lnk_error(LNK_ENONFINITE, "lanczos_ritz: LAPACKE_dstevr failed on the %d x %d "
                         "tridiagonal (info %d, %d eigenvalues found)", j, j, (int)info,
                         (int)mfound);
    return LNK_OK;
}

int lnk_lanczos_ritz(const lnk_lanczos *w, double *theta, double *S)
{
    if (!w || !theta)
        return lnk_error(LNK_EINVAL, "lanczos_ritz: NULL %s", w ? "theta" : "workspace");
    if (w->steps < 1)
        return lnk_error(LNK_EINVAL, "lanczos_ritz: no Lanczos step done yet");
    return tridiag_eig(w->steps, w->alpha, w->beta, theta, S);
}


int lnk_lanczos_ritz_vectors(lnk_lanczos *w, const lnk_operator *op, const double *S,
                             const int *idx, int k, double *Y)
{
    if (!w || !S || !idx || !Y)
        return lnk_error(LNK_EINVAL, "lanczos_ritz_vectors: NULL argument");
    int j = w->steps, ni = (int)w->n;
    size_t n = w->n;
    if (j < 1)
        return lnk_error(LNK_EINVAL, "lanczos_ritz_vectors: no Lanczos step done yet");
    for (int i = 0; i < k; i++)
        if (idx[i] < 0 || idx[i] >= j)
            return lnk_error(LNK_EINVAL, "lanczos_ritz_vectors: idx[%d] = %d; expected 0 <= "
                             "idx < steps = %d", i, idx[i], j);
    if (w->mode == LNK_LANCZOS_FULL) {
        double *s = w->h; /* 2(m+1) >= j */
        for (int i = 0; i < k; i++) {
            for (int r = 0; r < j; r++)
                s[r] = S[(size_t)r * j + idx[i]];
            double *y = Y + (size_t)i * n;
            lnk_gemv(CblasTrans, j, ni, 1.0, w->V, ni, s, 1, 0.0, y, 1);
            lnk_cv_normalise_sign(w->group, y, n);
        }
        return LNK_OK;
    }
    /* LIGHT: regenerate v_0..v_{j-1} with the recurrence and the stored
     * coefficients, in the same order of operations as the first pass. */
    int rc = lnk_operator_check(op, "lanczos_ritz_vectors");
    if (rc != LNK_OK)
        return rc;
    if (op->n != n)
        return lnk_error(LNK_EINVAL, "lanczos_ritz_vectors: operator size n = %zu differs "
                         "from the workspace's n = %zu", op->n, n);
    double *prev = malloc(n * sizeof(double)), *cur = malloc(n * sizeof(double));
    double *next = malloc(n * sizeof(double));
    if (!prev || !cur || !next) {
        free(prev), free(cur), free(next);
        return lnk_error(LNK_ENOMEM, "lanczos_ritz_vectors: cannot allocate 3 vectors of %zu", n);
    }
    memcpy(cur, w->v0, n * sizeof(double));
    memset(Y, 0, (size_t)k * n * sizeof(double));
    for (int r = 0; r < j; r++) {
        for (int i = 0; i < k; i++)
            lnk_axpy((size_t)ni, S[(size_t)r * j + idx[i]], cur, Y + (size_t)i * n);
        if (r == j - 1)
            break;
        rc = op->apply(op->ctx, cur, next);
        w->n_applies++;
        if (rc != LNK_OK)
            break;
        if (r > 0)
            lnk_axpy((size_t)ni, -w->beta[r - 1], prev, next);
        lnk_axpy((size_t)ni, -w->alpha[r], cur, next);
        cblas_dscal(ni, 1.0 / w->beta[r], next, 1);
        double *t = prev;
        prev = cur;
        cur = next;
        next = t;
    }
    free(prev), free(cur), free(next);
    if (rc != LNK_OK)
        return rc;
    for (int i = 0; i < k; i++)
        lnk_cv_normalise_sign(w->group, Y + (size_t)i * n, n);
    return LNK_OK;
}

static int nearest_within(const double *mu, int nm, double x, double tol)
{
    int lo = 0, hi = nm; /* first mu >= x */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (mu[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < nm && mu[lo] - x <= tol)
        return 1;
    if (lo > 0 && x - mu[lo - 1] <= tol)
        return 1;
    return 0;
}

int lnk_lanczos_ghosts(const lnk_lanczos *w, const double *theta, const double *S, int *flag)
{
    if (!w || !theta || !flag)
        return lnk_error(LNK_EINVAL, "lanczos_ghosts: NULL argument");
    int j = w->steps;
    for (int i = 0; i < j; i++)
        flag[i] = LNK_RITZ_GOOD;
    if (w->mode == LNK_LANCZOS_FULL || j < 2)
        return LNK_OK;
    double tmax = 0;
    for (int i = 0; i < j; i++) {
        tmax = fmax(tmax, fabs(w->alpha[i]));
        tmax = fmax(tmax, w->beta[i]);
    }
    double tol = 500.0 * (j + 1000) * DBL_EPSILON * tmax;

    /* Groups of numerically equal values: keep one (smallest bound). */
    enum { SINGLE = -1 };
    for (int i = 0; i < j;) {
        int g = i;
        while (g + 1 < j && theta[g + 1] - theta[g] <= tol)
            g++;
        if (g == i) {
            flag[i] = SINGLE;
        } else {
            int best = i;
            for (int c = i; c <= g; c++) {
                flag[c] = LNK_RITZ_COPY;
                if (S && fabs(S[(size_t)(j - 1) * j + c]) < fabs(S[(size_t)(j - 1) * j + best]))
                    best = c;
            }
            flag[best] = LNK_RITZ_GOOD;
        }
        i = g + 1;
    }
    /* Simple values that are also eigenvalues of T-hat are spurious. */
    double *mu = malloc((size_t)(j - 1) * sizeof(double));
    if (!mu)
        return lnk_error(LNK_ENOMEM, "lanczos_ghosts: cannot allocate %d values", j - 1);
    int rc = tridiag_eig(j - 1, w->alpha + 1, w->beta + 1, mu, NULL);
    if (rc != LNK_OK) {
        free(mu);
        return rc;
    }
    for (int i = 0; i < j; i++)
        if (flag[i] == SINGLE)
            flag[i] = nearest_within(mu, j - 1, theta[i], tol) ? LNK_RITZ_SPURIOUS : LNK_RITZ_GOOD;
    free(mu);
    return LNK_OK;
}
