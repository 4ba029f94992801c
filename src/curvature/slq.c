/* Spectral density by stochastic Lanczos quadrature (MODEL.md §7), the density on
 * a grid, kernel-width conventions and CSV output.  See
 * include/lnkit/curvature.h. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curvature/internal.h"
#include "lnkit/curvature.h"
#include "lnkit/error.h"
#include "lnkit/sys.h"

void lnk_slq_opts_default(lnk_slq_opts *o)
{
    memset(o, 0, sizeof *o);
    o->runs = 10;
    o->steps = 80;
    o->start = LNK_SLQ_RADEMACHER;
    o->mode = LNK_LANCZOS_FULL;
}

void lnk_slq_result_free(lnk_slq_result *r)
{
    if (!r)
        return;
    free(r->offset);
    free(r->node);
    free(r->weight);
    free(r->steps);
    free(r->invariant);
    memset(r, 0, sizeof *r);
}

static int check_opts(const lnk_operator *op, const lnk_slq_opts *o)
{
    int rc = lnk_operator_check(op, "slq");
    if (rc != LNK_OK)
        return rc;
    if (!o)
        return lnk_error(LNK_EINVAL, "slq: opts is NULL (use lnk_slq_opts_default)");
    if (o->runs < 1)
        return lnk_error(LNK_EINVAL, "slq: runs = %d; expected >= 1", o->runs);
    if (o->steps < 1)
        return lnk_error(LNK_EINVAL, "slq: steps = %d; expected >= 1", o->steps);
    if (o->start != LNK_SLQ_RADEMACHER && o->start != LNK_SLQ_GAUSSIAN)
        return lnk_error(LNK_EINVAL, "slq: start = %d; expected LNK_SLQ_RADEMACHER (0) or "
                         "LNK_SLQ_GAUSSIAN (1)", o->start);
    if (o->mode != LNK_LANCZOS_FULL && o->mode != LNK_LANCZOS_LIGHT)
        return lnk_error(LNK_EINVAL, "slq: mode = %d; expected LNK_LANCZOS_FULL (0) or "
                         "LNK_LANCZOS_LIGHT (1)", o->mode);
    if (o->reorth != LNK_REORTH_PARTIAL && o->reorth != LNK_REORTH_ALWAYS)
        return lnk_error(LNK_EINVAL, "slq: reorth = %d; expected LNK_REORTH_PARTIAL (0) or "
                         "LNK_REORTH_ALWAYS (1)", o->reorth);
    return LNK_OK;
}

/* The state to resume from, checked against runs of m steps. */
static int check_resume(const lnk_slq_state *rs, const lnk_slq_opts *o, int m)
{
    int total = o->runs * m;
    if (rs && (rs->run < 0 || rs->run > o->runs || (rs->run == o->runs && rs->lanczos.steps) ||
               rs->steps_done < 0 || rs->steps_done > total || !rs->offset ||
               rs->offset[0] != 0 || rs->offset[rs->run] > rs->run * m ||
               (rs->run && (!rs->node || !rs->weight || !rs->steps || !rs->invariant))))
        return lnk_error(LNK_EINVAL, "slq: the state to resume from does not fit the options "
                         "(%d of %d runs done)", rs->run, o->runs);
    return LNK_OK;
}

/* The finished runs of the resumed state into res. */
static void take_finished(lnk_slq_result *res, const lnk_slq_state *rs)
{
    int v0 = rs->run;
    res->n_applies = rs->n_applies;
    memcpy(res->offset, rs->offset, (size_t)(v0 + 1) * sizeof(int));
    if (v0 > 0) {
        memcpy(res->node, rs->node, (size_t)rs->offset[v0] * sizeof(double));
        memcpy(res->weight, rs->weight, (size_t)rs->offset[v0] * sizeof(double));
        memcpy(res->steps, rs->steps, (size_t)v0 * sizeof(int));
        memcpy(res->invariant, rs->invariant, (size_t)v0 * sizeof(int));
    }
    for (int v = 0; v < v0; v++) {
        res->node_min = fmin(res->node_min, res->node[res->offset[v]]);
        res->node_max = fmax(res->node_max, res->node[res->offset[v + 1] - 1]);
    }
}

/* Run v's start: the resumed Lanczos state (resume), or random vector v of
 * the seed (z: room for it). */
static int start_run(lnk_lanczos *lz, const lnk_operator *op, const lnk_slq_opts *o,
                     const lnk_slq_state *resume, int v, double *z)
{
    if (resume)
        return lnk_lanczos_set_state(lz, &resume->lanczos);
    gsl_rng *r = lnk_cv_rng(o->seed, (uint64_t)v);
    if (!r)
        return lnk_error(LNK_ENOMEM, "slq: cannot allocate a random stream");
    lnk_cv_random(op->group, r, o->start == LNK_SLQ_RADEMACHER, z, op->n);
    gsl_rng_free(r);
    return lnk_lanczos_start(lz, z, o->seed); /* normalises z */
}

/* Run v's Lanczos steps (up to m; *done counts all runs' steps), each
 * followed by a checkpoint and the progress callback. */
static int run_steps(lnk_lanczos *lz, const lnk_operator *op, const lnk_slq_opts *o,
                     lnk_slq_result *res, int v, int m, int *done, double t0)
{
    int rc, total = o->runs * m;
    while (!lz->done && lz->steps < m) {
        if ((rc = lnk_lanczos_step(lz, op)) != LNK_OK)
            return rc;
        ++*done;
        if (o->checkpoint) {
            lnk_slq_state st = {v, *done, res->n_applies, res->offset, res->steps,
                                res->invariant, res->node, res->weight, {0}, lnk_now() - t0};
            lnk_lanczos_get_state(lz, &st.lanczos);
            if ((rc = o->checkpoint(o->checkpoint_ctx, &st, 0)) != LNK_OK)
                return rc;
        }
        if (o->progress && o->progress(o->progress_ctx, *done, total, lnk_now() - t0))
            return lnk_error(LNK_EINVAL, "slq: cancelled by the progress callback in run %d "
                             "at step %d", v, lz->steps);
    }
    return LNK_OK;
}

/* Run v's quadrature (T's eigenvalues, squared first components) into res. */
static int store_run(lnk_lanczos *lz, const lnk_operator *op, lnk_slq_result *res, int v,
                     double *theta, double *S)
{
    int j = lz->steps, rc;
    if ((rc = lnk_cv_check_same(op->group, lz->alpha, (size_t)j, "slq")) != LNK_OK ||
        (rc = lnk_cv_check_same(op->group, lz->beta, (size_t)j, "slq")) != LNK_OK ||
        (rc = lnk_lanczos_ritz(lz, theta, S)) != LNK_OK)
        return rc;
    int off = res->offset[v];
    for (int i = 0; i < j; i++) {
        res->node[off + i] = theta[i];
        res->weight[off + i] = S[i] * S[i]; /* row 0: first components */
    }
    res->offset[v + 1] = off + j;
    res->steps[v] = j;
    res->invariant[v] = lz->invariant;
    res->node_min = fmin(res->node_min, theta[0]);
    res->node_max = fmax(res->node_max, theta[j - 1]);
    res->n_applies += lz->n_applies;
    return LNK_OK;
}

int lnk_slq(const lnk_operator *op, const lnk_slq_opts *o, lnk_slq_result *res)
{
    if (!res)
        return lnk_error(LNK_EINVAL, "slq: result is NULL");
    memset(res, 0, sizeof *res);
    int rc = check_opts(op, o);
    if (rc != LNK_OK)
        return rc;
    const lnk_slq_state *rs = o->resume;
    double t0 = lnk_now() - (rs ? rs->elapsed : 0);
    size_t n = op->n, ng = op->group ? op->group->n_global : n;
    int m = (size_t)o->steps < ng ? o->steps : (int)ng;
    int total = o->runs * m;
    if ((rc = check_resume(rs, o, m)) != LNK_OK)
        return rc;

    lnk_lanczos *lz = lnk_lanczos_alloc_basis(n, m, o->mode, o->basis);
    if (!lz)
        return LNK_ENOMEM;
    lz->reorth = o->reorth;
    lz->on_breakdown = LNK_BREAKDOWN_STOP;
    if ((rc = lnk_lanczos_distribute(lz, op->group)) != LNK_OK) {
        lnk_lanczos_free(lz);
        return rc;
    }
    double *z = malloc(n * sizeof(double));
    double *theta = malloc((size_t)m * sizeof(double)), *S = malloc((size_t)m * m * sizeof(double));
    res->runs = o->runs;
    res->offset = calloc((size_t)o->runs + 1, sizeof(int));
    res->node = malloc((size_t)total * sizeof(double));
    res->weight = malloc((size_t)total * sizeof(double));
    res->steps = calloc((size_t)o->runs, sizeof(int));
    res->invariant = calloc((size_t)o->runs, sizeof(int));
    if (!z || !theta || !S || !res->offset || !res->node || !res->weight || !res->steps ||
        !res->invariant) {
        rc = lnk_error(LNK_ENOMEM, "slq: cannot allocate %d runs x %d nodes", o->runs, m);
        goto out;
    }
    res->node_min = INFINITY;
    res->node_max = -INFINITY;
    int done = 0, v0 = 0;
    if (rs) { /* the finished runs' results, and where the run under way is */
        v0 = rs->run;
        done = rs->steps_done;
        take_finished(res, rs);
    }
    for (int v = v0; v < o->runs; v++) {
        const lnk_slq_state *resume = rs && v == v0 && rs->lanczos.steps > 0 ? rs : NULL;
        if ((rc = start_run(lz, op, o, resume, v, z)) != LNK_OK ||
            (rc = run_steps(lz, op, o, res, v, m, &done, t0)) != LNK_OK ||
            (rc = store_run(lz, op, res, v, theta, S)) != LNK_OK)
            goto out;
        done += m - lz->steps; /* a run that ended early leaves its steps undone */
        if (o->checkpoint && v + 1 < o->runs) {
            /* the next run overwrites the basis the last state refers to */
            lnk_slq_state st = {v + 1, done, res->n_applies, res->offset, res->steps,
                                res->invariant, res->node, res->weight, {0}, lnk_now() - t0};
            if ((rc = o->checkpoint(o->checkpoint_ctx, &st, 1)) != LNK_OK)
                goto out;
        }
    }
    res->elapsed = lnk_now() - t0;
out:
    if (rc != LNK_OK)
        lnk_slq_result_free(res);
    lnk_lanczos_free(lz);
    free(z), free(theta), free(S);
    return rc;
}

double lnk_slq_cdf(const lnk_slq_result *r, double t)
{
    double F = 0;
    for (int v = 0; v < r->runs; v++)
        for (int i = r->offset[v]; i < r->offset[v + 1]; i++)
            if (r->node[i] <= t)
                F += r->weight[i];
    return F / r->runs;
}

static int check_sigma(const char *fn, double sigma)
{
    if (!(sigma > 0) || !isfinite(sigma))
        return lnk_error(LNK_EINVAL, "%s: sigma = %g; expected a finite kernel width > 0", fn, sigma);
    return LNK_OK;
}

static int check_result(const char *fn, const lnk_slq_result *r)
{
    if (!r || r->runs < 1 || !r->offset || !r->node || !r->weight)
        return lnk_error(LNK_EINVAL, "%s: empty or NULL SLQ result", fn);
    return LNK_OK;
}

int lnk_slq_grid(const lnk_slq_result *r, double sigma, double pad, size_t npts, double *t)
{
    int rc = check_result("slq_grid", r);
    if (rc == LNK_OK)
        rc = check_sigma("slq_grid", sigma);
    if (rc != LNK_OK)
        return rc;
    if (!(pad >= 0) || !isfinite(pad))
        return lnk_error(LNK_EINVAL, "slq_grid: pad = %g; expected a finite value >= 0", pad);
    if (npts < 2 || !t)
        return lnk_error(LNK_EINVAL, "slq_grid: npts = %zu; expected >= 2 points", npts);
    double a = r->node_min - pad * sigma, b = r->node_max + pad * sigma;
    for (size_t p = 0; p < npts; p++)
        t[p] = a + (b - a) * (double)p / (double)(npts - 1);
    t[npts - 1] = b;
    return LNK_OK;
}

double lnk_cv_grid_cells(double x)
{
    double r = nearbyint(x);
    return fabs(x - r) <= 1e-9 * fabs(x) ? r : ceil(x);
}

size_t lnk_slq_grid_size(const lnk_slq_result *r, double sigma, double pad, double per_sigma)
{
    if (!r || !(sigma > 0) || !(per_sigma > 0) || !(pad >= 0))
        return 0;
    double span = r->node_max - r->node_min + 2 * pad * sigma;
    double cells = lnk_cv_grid_cells(span / (sigma / per_sigma));
    if (!(cells >= 1))
        cells = 1;
    return (size_t)cells + 1;
}

int lnk_slq_density(const lnk_slq_result *r, double sigma, const double *t, size_t npts,
                    double *phi)
{
    int rc = check_result("slq_density", r);
    if (rc == LNK_OK)
        rc = check_sigma("slq_density", sigma);
    if (rc != LNK_OK)
        return rc;
    if ((npts && (!t || !phi)))
        return lnk_error(LNK_EINVAL, "slq_density: NULL grid or output");
    double c = 1.0 / (r->runs * sigma * sqrt(2 * M_PI)), cut = 40 * sigma;
    int tot = r->offset[r->runs];
    for (size_t p = 0; p < npts; p++) {
        double s = 0;
        for (int i = 0; i < tot; i++) {
            double d = t[p] - r->node[i];
            if (fabs(d) < cut)
                s += r->weight[i] * exp(-0.5 * (d / sigma) * (d / sigma));
        }
        phi[p] = c * s;
    }
    return LNK_OK;
}

int lnk_slq_pool_grid(const lnk_slq_result *const *r, int n, double sigma, double pad,
                      double per_sigma, double *lo, double *hi, double **t, size_t *npts)
{
    *t = NULL;
    *npts = 0;
    if (n < 1 || !r)
        return lnk_error(LNK_EINVAL, "slq_pool_grid: %d results; expected at least one", n);
    double a = INFINITY, b = -INFINITY;
    for (int i = 0; i < n; i++) {
        int rc = check_result("slq_pool_grid", r[i]);
        if (rc != LNK_OK)
            return rc;
        a = fmin(a, r[i]->node_min);
        b = fmax(b, r[i]->node_max);
    }
    if (lo)
        *lo = a;
    if (hi)
        *hi = b;
    if (!(sigma > 0))
        return LNK_OK;
    if (!(pad >= 0) || !isfinite(pad) || !(per_sigma > 0))
        return lnk_error(LNK_EINVAL, "slq_pool_grid: pad = %g, per_sigma = %g; expected pad >= 0 "
                         "and per_sigma > 0", pad, per_sigma);
    double start = a - pad * sigma, w = b - a + 2 * pad * sigma;
    size_t np = (size_t)lnk_cv_grid_cells(w / (sigma / per_sigma)) + 1;
    double *g = malloc(sizeof(double) * np);
    if (!g)
        return lnk_error(LNK_ENOMEM, "slq_pool_grid: out of memory for %zu points", np);
    for (size_t p = 0; p < np; p++)
        g[p] = start + w * (double)p / (double)(np - 1);
    *t = g;
    *npts = np;
    return LNK_OK;
}

int lnk_slq_pool_density(const lnk_slq_result *const *r, int n, double sigma, const double *t,
                         size_t npts, double *phi)
{
    if (n < 1 || !r)
        return lnk_error(LNK_EINVAL, "slq_pool_density: %d results; expected at least one", n);
    double *one = malloc(sizeof(double) * (npts ? npts : 1));
    if (!one)
        return lnk_error(LNK_ENOMEM, "slq_pool_density: out of memory");
    for (size_t p = 0; p < npts; p++)
        phi[p] = 0;
    int rc = LNK_OK;
    for (int i = 0; i < n && rc == LNK_OK; i++) {
        rc = lnk_slq_density(r[i], sigma, t, npts, one);
        for (size_t p = 0; p < npts && rc == LNK_OK; p++)
            phi[p] += one[p] / n;
    }
    free(one);
    return rc;
}

double lnk_trapezoid(const double *t, const double *f, size_t npts)
{
    double s = 0;
    for (size_t p = 0; p + 1 < npts; p++)
        s += (t[p + 1] - t[p]) * (f[p] + f[p + 1]);
    return 0.5 * s;
}

static int check_range(const char *fn, double lmin, double lmax)
{
    if (!isfinite(lmin) || !isfinite(lmax))
        return lnk_error(LNK_EINVAL, "%s: lambda_min = %g, lambda_max = %g; expected finite values",
                         fn, lmin, lmax);
    if (lmax < lmin)
        return lnk_error(LNK_EINVAL, "%s: lambda_max = %g < lambda_min = %g", fn, lmax, lmin);
    return LNK_OK;
}

/* sigma = s from the width argument what ("fraction f = 0.01") over
 * [lmin, lmax]: an error unless s > 0 and finite, saying why (a zero range,
 * an underflow, an overflow), with no function name: a Python caller reads
 * the same message. */
static int result_sigma(const char *what, double s, double lmin, double lmax, double *sigma)
{
    if (!(s > 0) || !isfinite(s))
        return lnk_error(LNK_EINVAL, "%s of the spectral range [%g, %g] gives sigma = %g; expected "
                         "a finite sigma > 0%s", what, lmin, lmax, s,
                         lmax == lmin ? " (the range is 0)"
                         : s == 0 ? " (the product underflows)" : "");
    *sigma = s;
    return LNK_OK;
}

int lnk_sigma_from_variance(double v, double lmin, double lmax, double *sigma)
{
    const char *fn = "sigma_from_variance";
    if (!sigma)
        return lnk_error(LNK_EINVAL, "%s: sigma is NULL", fn);
    if (!(v > 0) || !isfinite(v))
        return lnk_error(LNK_EINVAL, "%s: variance fraction v = %g; expected a finite value > 0",
                         fn, v);
    int rc = check_range(fn, lmin, lmax);
    if (rc != LNK_OK)
        return rc;
    char what[64];
    snprintf(what, sizeof what, "variance fraction v = %g", v);
    return result_sigma(what, sqrt(v * fmax(1.0, lmax - lmin)), lmin, lmax, sigma);
}

int lnk_sigma_from_kappa(double kappa, int m, double margin, double lmin, double lmax,
                         double *sigma)
{
    const char *fn = "sigma_from_kappa";
    if (!sigma)
        return lnk_error(LNK_EINVAL, "%s: sigma is NULL", fn);
    if (!(kappa > 1) || !isfinite(kappa))
        return lnk_error(LNK_EINVAL, "%s: kappa = %g; expected a finite value > 1", fn, kappa);
    if (m < 2)
        return lnk_error(LNK_EINVAL, "%s: m = %d Lanczos steps; expected >= 2", fn, m);
    if (!(margin >= 0) || !isfinite(margin))
        return lnk_error(LNK_EINVAL, "%s: margin = %g; expected a finite value >= 0", fn, margin);
    int rc = check_range(fn, lmin, lmax);
    if (rc != LNK_OK)
        return rc;
    double s = (1 + 2 * margin) * (lmax - lmin) / ((m - 1) * sqrt(8 * log(kappa)));
    char what[96];
    snprintf(what, sizeof what, "kappa = %g with m = %d Lanczos steps", kappa, m);
    return result_sigma(what, s, lmin, lmax, sigma);
}

int lnk_sigma_from_fraction(double f, double lmin, double lmax, double *sigma)
{
    const char *fn = "sigma_from_fraction";
    if (!sigma)
        return lnk_error(LNK_EINVAL, "%s: sigma is NULL", fn);
    if (!(f > 0) || !isfinite(f))
        return lnk_error(LNK_EINVAL, "%s: fraction f = %g; expected a finite value > 0", fn, f);
    int rc = check_range(fn, lmin, lmax);
    if (rc != LNK_OK)
        return rc;
    char what[64];
    snprintf(what, sizeof what, "fraction f = %g", f);
    return result_sigma(what, f * (lmax - lmin), lmin, lmax, sigma);
}
