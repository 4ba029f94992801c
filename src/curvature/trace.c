/* Trace estimation: Hutchinson with Rademacher probes and Hutch++ (Meyer,
 * Musco, Musco, Woodruff 2021).  See include/lnkit/curvature.h. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "curvature/internal.h"
#include "core/blas_fixed.h"
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

/* Hand the state to the checkpoint callback (if any). */
static int save(ctx_t *c, int phase, int index, double partial, const double *q, int nq,
                const double *rows, int n_rows)
{
    if (!c->o->checkpoint)
        return LNK_OK;
    lnk_trace_state st = {c->done, phase, index, nq, n_rows, partial, q, rows, lnk_now() - c->t0};
    return c->o->checkpoint(c->o->checkpoint_ctx, &st, 0);
}

/* Draw k vectors of the stream to put it where a resumed run left it. */
static void replay(const lnk_group *g, gsl_rng *r, double *z, size_t n, int k)
{
    for (int i = 0; i < k; i++)
        lnk_cv_random(g, r, 1, z, n);
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
    const lnk_trace_state *rs = c->o->resume;
    int p0 = rs ? rs->index : 0;
    if (rs && p0 > 0) {
        memcpy(q, rs->samples, (size_t)p0 * sizeof(double));
        replay(c->op->group, r, z, n, p0);
    }
    for (int p = p0; p < N; p++) {
        lnk_cv_random(c->op->group, r, 1, z, n);
        if ((rc = apply(c, z, Az, &stop)) != LNK_OK)
            goto out;
        q[p] = lnk_cv_dot(c->op->group, n, z, Az);
        if ((rc = save(c, 0, p + 1, 0, q, p + 1, NULL, 0)) != LNK_OK)
            goto out;
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
    /* A resumed run: where it was (phase, index) and what it had. */
    const lnk_trace_state *rs = c->o->resume;
    int ph = rs ? rs->phase : 0, at = rs ? rs->index : 0;
    if (rs && rs->n_rows > 0)
        memcpy(Q, rs->rows, (size_t)rs->n_rows * n * sizeof(double));
    if (rs && rs->n_samples > 0)
        memcpy(q, rs->samples, (size_t)rs->n_samples * sizeof(double));
    /* Q = orth(A S): column i of the column-major n x s matrix is at Q + i n. */
    const lnk_group *grp = c->op->group;
    if (ph == 0)
        replay(grp, rS, z, n, at);
    for (int i = ph == 0 ? at : s; i < s; i++) {
        lnk_cv_random(grp, rS, 1, z, n);
        if ((rc = apply(c, z, Q + (size_t)i * n, &stop)) != LNK_OK)
            goto out;
        if ((rc = save(c, 0, i + 1, 0, NULL, 0, Q, i + 1)) != LNK_OK)
            goto out;
        if (stop) {
            rc = cancelled();
            goto out;
        }
    }
    lapack_int info = 0;
    if (ph > 0) {
        /* Q was saved after its QR */
    } else if (!grp) {
        int t = lnk_blas1_begin(); /* its BLAS calls round alike on every thread count */
        info = LAPACKE_dgeqrf(LAPACK_COL_MAJOR, ni, s, Q, ni, tau);
        if (info == 0)
            info = LAPACKE_dorgqr(LAPACK_COL_MAJOR, ni, s, s, Q, ni, tau);
        lnk_blas1_end(t);
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
    double t1 = ph > 0 ? rs->partial : 0;
    for (int i = ph == 1 ? at : ph == 2 ? s : 0; i < s; i++) {
        const double *qi = Q + (size_t)i * n;
        if ((rc = apply(c, qi, Az, &stop)) != LNK_OK)
            goto out;
        t1 += lnk_cv_dot(grp, n, qi, Az);
        if ((rc = save(c, 1, i + 1, t1, NULL, 0, Q, s)) != LNK_OK)
            goto out;
        if (stop) {
            rc = cancelled();
            goto out;
        }
    }
    /* Hutchinson on P A P, P = I - Q Q^T: samples (P g)^T A (P g). */
    int p0 = ph == 2 ? at : 0;
    replay(grp, rG, z, n, p0);
    for (int p = p0; p < g; p++) {
        lnk_cv_random(grp, rG, 1, z, n);
        lnk_cv_orthogonalize(grp, Q, s, n, z, h); /* the rows of Q^T are Q's columns */
        if ((rc = apply(c, z, Az, &stop)) != LNK_OK)
            goto out;
        q[p] = lnk_cv_dot(grp, n, z, Az);
        if ((rc = save(c, 2, p + 1, t1, q, p + 1, Q, s)) != LNK_OK)
            goto out;
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
    const lnk_trace_state *rs = o->resume;
    if (rs) {
        int s = o->method == LNK_TRACE_HUTCHPP ? o->probes / 3 : 0;
        size_t ng = op->group ? op->group->n_global : op->n;
        if ((size_t)s > ng)
            s = (int)ng;
        int lim = rs->phase == 0 && s ? s : rs->phase == 1 ? s : o->probes - 2 * s;
        if (rs->phase < 0 || rs->phase > (s ? 2 : 0) || rs->index < 0 || rs->index > lim ||
            rs->applies < 0 || rs->applies > o->probes ||
            rs->n_samples != (rs->phase == (s ? 2 : 0) ? rs->index : 0) ||
            (rs->n_samples && !rs->samples) ||
            rs->n_rows != (rs->phase == 0 ? (s ? rs->index : 0) : s) ||
            (rs->n_rows && !rs->rows))
            return lnk_error(LNK_EINVAL, "trace: the state to resume from does not fit the "
                             "options (phase %d, index %d, %d rows)", rs->phase, rs->index,
                             rs->n_rows);
        c.done = rs->applies;
        c.t0 -= rs->elapsed;
    }
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
