/* Block statistics of a curvature operator: Frobenius norm (Hutchinson on
 * ||A z||^2), extreme eigenvalues, SLQ, Jensen-Shannon distance between
 * densities.  See include/lnkit/blockstats.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "curvature/internal.h"
#include "lnkit/blockstats.h"
#include "lnkit/error.h"
#include "lnkit/io.h"

int lnk_frobenius(const lnk_operator *op, int probes, uint64_t seed, lnk_frob_result *res)
{
    memset(res, 0, sizeof *res);
    int rc = lnk_operator_check(op, "frobenius: operator");
    if (rc)
        return rc;
    if (probes < 2)
        return lnk_error(LNK_EINVAL, "frobenius: probes = %d: need at least 2 (for a standard "
                         "error)", probes);
    double t0 = lnk_now();
    size_t n = op->n;
    double *z = malloc(n * sizeof(double)), *Az = malloc(n * sizeof(double));
    double *s = malloc((size_t)probes * sizeof(double));
    gsl_rng *r = lnk_cv_rng(seed, LNK_FROB_STREAM);
    if (!z || !Az || !s || !r) {
        rc = lnk_error(LNK_ENOMEM, "frobenius: cannot allocate 2 vectors of size %zu", n);
        goto out;
    }
    for (int p = 0; p < probes; p++) {
        lnk_cv_random(op->group, r, 1, z, n);
        if ((rc = op->apply(op->ctx, z, Az)) != LNK_OK)
            goto out;
        double nrm = lnk_cv_nrm2(op->group, n, Az);
        if (!isfinite(nrm)) {
            rc = lnk_error(LNK_ENONFINITE, "frobenius: ||A z|| of probe %d is not finite", p);
            goto out;
        }
        s[p] = nrm * nrm;
    }
    /* two-pass mean and standard error */
    double sum = 0, ss = 0;
    for (int p = 0; p < probes; p++)
        sum += s[p];
    double mu = sum / probes;
    for (int p = 0; p < probes; p++)
        ss += (s[p] - mu) * (s[p] - mu);
    res->frob2 = mu;
    res->frob2_se = sqrt(ss / (probes - 1) / probes);
    res->frob = sqrt(mu);
    res->frob_se = mu > 0 ? res->frob2_se / (2 * res->frob) : 0;
    res->probes = probes;
    res->elapsed = lnk_now() - t0;
out:
    free(z);
    free(Az);
    free(s);
    if (r)
        gsl_rng_free(r);
    return rc;
}

/* x ln(x / m) with 0 ln 0 = 0 (m >= x / 2 > 0 whenever x > 0). */
static double xlogx(double x, double m) { return x > 0 ? x * log(x / m) : 0; }

int lnk_js_distance(const double *t, const double *p, const double *q, size_t npts, double *dist)
{
    if (npts < 2)
        return lnk_error(LNK_EINVAL, "js distance: a grid of %zu points: need at least 2", npts);
    for (size_t i = 0; i < npts; i++) {
        if (!isfinite(t[i]) || (i && !(t[i] > t[i - 1])))
            return lnk_error(LNK_EINVAL, "js distance: grid point %zu (%g) is not finite or not "
                             "increasing", i, t[i]);
        if (!isfinite(p[i]) || !isfinite(q[i]) || p[i] < 0 || q[i] < 0)
            return lnk_error(LNK_EINVAL, "js distance: density value %zu (%g, %g) is not finite "
                             "and >= 0", i, p[i], q[i]);
    }
    double zp = lnk_trapezoid(t, p, npts), zq = lnk_trapezoid(t, q, npts);
    if (!(zp > 0) || !(zq > 0))
        return lnk_error(LNK_EINVAL, "js distance: a density integrates to %g (need > 0)",
                         zp > 0 ? zq : zp);
    double jsd = 0;
    for (size_t i = 0; i + 1 < npts; i++) {
        double f[2];
        for (int k = 0; k < 2; k++) {
            double a = p[i + k] / zp, b = q[i + k] / zq, m = 0.5 * (a + b);
            f[k] = 0.5 * (xlogx(a, m) + xlogx(b, m));
        }
        jsd += 0.5 * (t[i + 1] - t[i]) * (f[0] + f[1]);
    }
    /* rounding may step just outside [0, ln 2] */
    jsd = jsd < 0 ? 0 : jsd > M_LN2 ? M_LN2 : jsd;
    *dist = sqrt(jsd);
    return LNK_OK;
}

void lnk_blockstat_opts_default(lnk_blockstat_opts *o)
{
    memset(o, 0, sizeof *o);
    o->probes = 30;
    o->eig_steps = 100;
    o->eig_tol = 1e-6;
    o->slq_runs = 4;
    o->slq_steps = 40;
}

void lnk_blockstat_free(lnk_blockstat *r)
{
    lnk_slq_result_free(&r->slq);
    memset(r, 0, sizeof *r);
}

int lnk_blockstat_compute(const lnk_operator *op, const lnk_blockstat_opts *o, lnk_blockstat *r)
{
    memset(r, 0, sizeof *r);
    int rc = lnk_operator_check(op, "block statistics: operator");
    if (rc)
        return rc;
    r->n = op->group ? op->group->n_global : op->n;
    if ((rc = lnk_frobenius(op, o->probes, o->seed, &r->frob)) != LNK_OK)
        return rc;
    lnk_eigs_opts eo;
    lnk_eigs_opts_default(&eo);
    eo.k_top = 1;
    eo.k_bottom = 1;
    eo.max_steps = o->eig_steps;
    eo.tol = o->eig_tol;
    eo.seed = o->seed;
    lnk_eigs_result er;
    if ((rc = lnk_eigs(op, &eo, &er)) != LNK_OK)
        return rc;
    /* top is pair 0; bottom pair n_top, or (one eigenvalue found, n = 1) the same */
    int b = er.n_bottom ? er.n_top : 0;
    r->top = er.value[0];
    r->top_residual = er.residual[0];
    r->top_converged = er.converged[0];
    r->bottom = er.value[b];
    r->bottom_residual = er.residual[b];
    r->bottom_converged = er.converged[b];
    r->eig_steps = er.steps;
    r->n_applies = r->frob.probes + er.n_applies;
    lnk_eigs_result_free(&er);
    lnk_slq_opts so;
    lnk_slq_opts_default(&so);
    so.runs = o->slq_runs;
    so.steps = o->slq_steps;
    so.seed = o->seed;
    if ((rc = lnk_slq(op, &so, &r->slq)) != LNK_OK)
        return rc;
    r->n_applies += r->slq.n_applies;
    return LNK_OK;
}

static double max_abs(const lnk_blockstat *b) { return fmax(fabs(b->top), fabs(b->bottom)); }

void lnk_blockstat_settle(lnk_blockstat *const *b, int nb, double tol)
{
    double S = 0;
    for (int i = 0; i < nb; i++)
        S = fmax(S, max_abs(b[i]));
    for (int i = 0; i < nb; i++) {
        if (max_abs(b[i]) > LNK_BLOCKSTAT_ZERO_REL * S)
            continue;
        b[i]->top_converged |= b[i]->top_residual <= tol * S;
        b[i]->bottom_converged |= b[i]->bottom_residual <= tol * S;
    }
}

int lnk_blockstat_unconverged(const lnk_blockstat *const *b, int nb, double *worst, int *steps)
{
    int bad = 0;
    *worst = 0;
    *steps = 0;
    for (int i = 0; i < nb; i++) {
        double scale = max_abs(b[i]);
        *steps = b[i]->eig_steps > *steps ? b[i]->eig_steps : *steps;
        const double res[2] = {b[i]->top_residual, b[i]->bottom_residual};
        const int conv[2] = {b[i]->top_converged, b[i]->bottom_converged};
        for (int e = 0; e < 2; e++)
            if (!conv[e]) {
                bad++;
                *worst = fmax(*worst, scale > 0 ? res[e] / scale : res[e]);
            }
    }
    return bad;
}

void lnk_blockstat_why(const lnk_blockstat *const *b, int nb, int psd, int eig_steps,
                       const lnk_blockstat_names *nm, char *buf, size_t size)
{
    int bottom_psd = 0, limit = 0, zero = 0, rounding = 0;
    double S = 0, zmax = 0;
    for (int i = 0; i < nb; i++)
        S = fmax(S, max_abs(b[i]));
    for (int i = 0; i < nb; i++) {
        double scale = max_abs(b[i]);
        const double res[2] = {b[i]->top_residual, b[i]->bottom_residual};
        const int conv[2] = {b[i]->top_converged, b[i]->bottom_converged};
        for (int e = 0; e < 2; e++) {
            if (conv[e])
                continue;
            if (e == 1 && psd)
                bottom_psd = 1;
            else if (b[i]->eig_steps >= eig_steps)
                limit = 1;
            else if (!(res[e] <= 1e-3 * scale))
                zero = 1, zmax = fmax(zmax, scale);
            else
                rounding = 1;
        }
    }
    size_t n = 0;
    if (size)
        buf[0] = 0;
#define ADD(...) (n += (size_t)snprintf(buf + n, n < size ? size - n : 0, __VA_ARGS__))
    if (bottom_psd)
        ADD("G_bb is positive semidefinite: its bottom eigenvalues cluster at 0 relative to "
            "max|l|, which Lanczos resolves slowly; each bottom value v is >= 0 up to rounding "
            "and bounds the block's smallest eigenvalue to [0, v]");
    if (limit)
        ADD("%sthe step limit was reached (a larger %s may converge them)", n ? "; " : "",
            nm->steps);
    if (zero && zmax >= S)
        ADD("%sLanczos ended before the step limit with residuals as large as the values "
            "(max|l| %.3g): a block zero to rounding (an attention key bias, say), and no "
            "larger block in this run to judge it against; add one (%s) or read its values "
            "as 0", n ? "; " : "", zmax, nm->more);
    else if (zero)
        ADD("%sLanczos ended before the step limit with residuals as large as the values "
            "(max|l| up to %.3g, not below %g of the largest block's %.3g): rounding",
            n ? "; " : "", zmax, LNK_BLOCKSTAT_ZERO_REL, S);
    if (rounding)
        ADD("%sLanczos ended before the step limit (the block's Krylov space exhausted): the "
            "residuals are rounding in double precision, above the tolerance (a larger %s "
            "makes them converge)", n ? "; " : "", nm->tol);
#undef ADD
}

int lnk_slq_grid_common(const lnk_slq_result *const *r, int k, double sigma, double pad,
                        double per_sigma, size_t max_pts, double **t, size_t *npts)
{
    *t = NULL;
    *npts = 0;
    if (k < 1)
        return lnk_error(LNK_EINVAL, "common grid: no densities");
    if (!(sigma > 0) || !isfinite(sigma) || !(per_sigma > 0) || !(pad >= 0))
        return lnk_error(LNK_EINVAL, "common grid: sigma %g, pad %g, points per sigma %g: need "
                         "sigma > 0, pad >= 0, points per sigma > 0", sigma, pad, per_sigma);
    double lo = r[0]->node_min, hi = r[0]->node_max;
    for (int i = 1; i < k; i++) {
        lo = fmin(lo, r[i]->node_min);
        hi = fmax(hi, r[i]->node_max);
    }
    if (!isfinite(lo) || !isfinite(hi))
        return lnk_error(LNK_ENONFINITE, "common grid: nodes in [%g, %g]", lo, hi);
    lo -= pad * sigma;
    hi += pad * sigma;
    double cells = lnk_cv_grid_cells((hi - lo) / (sigma / per_sigma));
    if (!(cells + 1 <= (double)max_pts))
        return lnk_error(LNK_EINVAL, "common grid: [%g, %g] with sigma %g needs %.0f points "
                         "(at most %zu): choose a larger sigma", lo, hi, sigma, cells + 1,
                         max_pts);
    size_t m = (size_t)cells + 1;
    if (m < 2)
        m = 2;
    double *g = malloc(sizeof(double) * m);
    if (!g)
        return lnk_error(LNK_ENOMEM, "common grid: out of memory for %zu points", m);
    for (size_t i = 0; i < m; i++)
        g[i] = lo + (hi - lo) * (double)i / (double)(m - 1);
    *t = g;
    *npts = m;
    return LNK_OK;
}
