/* Trace estimation: Hutchinson with Rademacher probes and Hutch++ (Meyer,
 * Musco, Musco, Woodruff 2021).  See include/lnkit/curvature.h. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "curvature/internal.h"
#include "lnkit/curvature.h"
#include "lnkit/error.h"
#include "lnkit/sys.h"

void lnk_trace_opts_default(lnk_trace_opts *o)
{
    memset(o, 0, sizeof *o);
    o->method = LNK_TRACE_HUTCHINSON;
    o->probes = 100;
}

const char *lnk_trace_method_name(int method)
{
    switch (method) {
    case LNK_TRACE_HUTCHINSON: return "hutchinson";
    case LNK_TRACE_HUTCHPP: return "hutchpp";
    default: return "unknown";
    }
}

/* Mean and standard error (sample sd / sqrt(k)) of x[0..k), k >= 2.
 * Two-pass for accuracy. */
static void mean_se(const double *x, int k, double *mean, double *se)
{
    double s = 0;
    for (int i = 0; i < k; i++)
        s += x[i];
    double mu = s / k, ss = 0;
    for (int i = 0; i < k; i++)
        ss += (x[i] - mu) * (x[i] - mu);
    *mean = mu;
    *se = sqrt(ss / (k - 1) / k);
}

typedef struct {
    const lnk_operator *op;
    const lnk_trace_opts *o;
    int done;
    double t0;
} ctx_t;

/* y = A x, with the progress report; sets *stop if the callback asks. */
static int apply(ctx_t *c, const double *x, double *y, int *stop)
{
    int rc = c->op->apply(c->op->ctx, x, y);
    c->done++;
    if (rc == LNK_OK && c->o->progress &&
        c->o->progress(c->o->progress_ctx, c->done, c->o->probes, lnk_now() - c->t0))
        *stop = 1;
    return rc;
}

static int cancelled(void)
{
    return lnk_error(LNK_EINVAL, "trace: cancelled by the progress callback");
}

static int hutchinson(ctx_t *c, lnk_trace_result *res)
{
    size_t n = c->op->n;
    int N = c->o->probes, stop = 0, rc = LNK_OK;
    double *z = malloc(n * sizeof(double)), *Az = malloc(n * sizeof(double));
    double *q = malloc((size_t)N * sizeof(double));
    gsl_rng *r = lnk_cv_rng(c->o->seed, 0);
    if (!z || !Az || !q || !r) {
        rc = lnk_error(LNK_ENOMEM, "trace: cannot allocate 2 vectors of size %zu", n);
        goto out;
    }
    for (int p = 0; p < N; p++) {
        lnk_cv_random(c->op->group, r, 1, z, n);
        if ((rc = apply(c, z, Az, &stop)) != LNK_OK)
            goto out;
        q[p] = lnk_cv_dot(c->op->group, n, z, Az);
        if (stop && p + 1 < N) {
            rc = cancelled();
            goto out;
        }
    }
    mean_se(q, N, &res->trace, &res->std_error);
    res->samples = N;
out:
    free(z), free(Az), free(q);
    if (r)
        gsl_rng_free(r);
    return rc;
}

static int hutchpp(ctx_t *c, lnk_trace_result *res)
{
    size_t n = c->op->n;
    int N = c->o->probes, stop = 0, rc = LNK_OK, ni = (int)n;
    int s = N / 3;
    size_t ng = c->op->group ? c->op->group->n_global : n;
    if ((size_t)s > ng)
        s = (int)ng;
    int g = N - 2 * s;
    double *Q = malloc((size_t)s * n * sizeof(double));
    double *z = malloc(n * sizeof(double)), *Az = malloc(n * sizeof(double));
    double *tau = malloc((size_t)s * sizeof(double)), *h = malloc(2 * (size_t)s * sizeof(double));
    double *q = malloc((size_t)g * sizeof(double));
    gsl_rng *rS = lnk_cv_rng(c->o->seed, 1), *rG = lnk_cv_rng(c->o->seed, 2);
    if (!Q || !z || !Az || !tau || !h || !q || !rS || !rG) {
        rc = lnk_error(LNK_ENOMEM, "trace: cannot allocate the Hutch++ sketch (%d x %zu)", s, n);
        goto out;
    }
    /* Q = orth(A S): column i of the column-major n x s matrix is at Q + i n. */
    const lnk_group *grp = c->op->group;
    for (int i = 0; i < s; i++) {
        lnk_cv_random(grp, rS, 1, z, n);
        if ((rc = apply(c, z, Q + (size_t)i * n, &stop)) != LNK_OK)
            goto out;
        if (stop) {
            rc = cancelled();
            goto out;
        }
    }
    lapack_int info = 0;
    if (!grp) {
        info = LAPACKE_dgeqrf(LAPACK_COL_MAJOR, ni, s, Q, ni, tau);
        if (info == 0)
            info = LAPACKE_dorgqr(LAPACK_COL_MAJOR, ni, s, s, Q, ni, tau);
    } else {
        /* distributed rows: the same span by Gram-Schmidt twice, column by
         * column (Q may differ from Householder's in signs; the projector and
         * tr(Q^T A Q) do not) */
        double *hh = malloc(2 * (size_t)s * sizeof(double));
        for (int i = 0; i < s && !info; i++) {
            double *qi = Q + (size_t)i * n;
            double nrm = hh ? lnk_cv_orthogonalize(grp, Q, i, n, qi, hh) : NAN;
            if (!(nrm > 0) || !isfinite(nrm))
                info = i + 1;
            else
                cblas_dscal(ni, 1.0 / nrm, qi, 1);
        }
        free(hh);
    }
    if (info != 0) {
        rc = lnk_error(LNK_ENONFINITE, "trace: QR of the %zu x %d Hutch++ sketch failed (LAPACK "
                       "info %d; non-finite operator values?)", n, s, (int)info);
        goto out;
    }
    /* tr(Q^T A Q), exactly. */
    double t1 = 0;
    for (int i = 0; i < s; i++) {
        const double *qi = Q + (size_t)i * n;
        if ((rc = apply(c, qi, Az, &stop)) != LNK_OK)
            goto out;
        t1 += lnk_cv_dot(grp, n, qi, Az);
        if (stop) {
            rc = cancelled();
            goto out;
        }
    }
    /* Hutchinson on P A P, P = I - Q Q^T: samples (P g)^T A (P g). */
    for (int p = 0; p < g; p++) {
        lnk_cv_random(grp, rG, 1, z, n);
        lnk_cv_orthogonalize(grp, Q, s, n, z, h); /* the rows of Q^T are Q's columns */
        if ((rc = apply(c, z, Az, &stop)) != LNK_OK)
            goto out;
        q[p] = lnk_cv_dot(grp, n, z, Az);
        if (stop && p + 1 < g) {
            rc = cancelled();
            goto out;
        }
    }
    double t2, se;
    mean_se(q, g, &t2, &se);
    res->trace = t1 + t2;
    res->std_error = se;
    res->samples = g;
    res->sketch = s;
    res->deflated = t1;
out:
    free(Q), free(z), free(Az), free(tau), free(h), free(q);
    if (rS)
        gsl_rng_free(rS);
    if (rG)
        gsl_rng_free(rG);
    return rc;
}

int lnk_trace(const lnk_operator *op, const lnk_trace_opts *o, lnk_trace_result *res)
{
    if (!res)
        return lnk_error(LNK_EINVAL, "trace: result is NULL");
    memset(res, 0, sizeof *res);
    int rc = lnk_operator_check(op, "trace");
    if (rc != LNK_OK)
        return rc;
    if (!o)
        return lnk_error(LNK_EINVAL, "trace: opts is NULL (use lnk_trace_opts_default)");
    if (o->method == LNK_TRACE_HUTCHINSON) {
        if (o->probes < 2)
            return lnk_error(LNK_EINVAL, "trace: probes = %d; Hutchinson needs probes >= 2 "
                             "(for a standard error)", o->probes);
    } else if (o->method == LNK_TRACE_HUTCHPP) {
        if (o->probes < 4)
            return lnk_error(LNK_EINVAL, "trace: probes = %d; Hutch++ needs probes >= 4 (a "
                             "sketch of floor(probes/3) >= 1 and >= 2 residual probes)",
                             o->probes);
    } else {
        return lnk_error(LNK_EINVAL, "trace: method = %d; expected LNK_TRACE_HUTCHINSON (0) or "
                         "LNK_TRACE_HUTCHPP (1)", o->method);
    }
    ctx_t c = {op, o, 0, lnk_now()};
    rc = o->method == LNK_TRACE_HUTCHINSON ? hutchinson(&c, res) : hutchpp(&c, res);
    if (rc != LNK_OK) {
        memset(res, 0, sizeof *res);
        return rc;
    }
    if (!isfinite(res->trace) || !isfinite(res->std_error)) {
        memset(res, 0, sizeof *res);
        return lnk_error(LNK_ENONFINITE, "trace: the estimate is not finite: the operator "
                         "returned non-finite values");
    }
    res->probes = c.done;
    res->elapsed = lnk_now() - c.t0;
    return LNK_OK;
}
