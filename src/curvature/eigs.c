/* Extremal eigenpairs by Lanczos: top-k / bottom-k Ritz pairs, the cheap
 * residual bound as stopping test, explicit residuals at the end.  See
 * include/lnkit/curvature.h. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/blas_fixed.h"
#include "curvature/internal.h"
#include "lnkit/curvature.h"
#include "lnkit/error.h"
#include "lnkit/sys.h"

void lnk_eigs_opts_default(lnk_eigs_opts *o)
{
    memset(o, 0, sizeof *o);
    o->k_top = 5;
    o->k_bottom = 0;
    o->max_steps = 200;
    o->tol = 1e-6;
    o->mode = LNK_LANCZOS_FULL;
}

const char *lnk_eigs_stop_name(int stop)
{
    switch (stop) {
    case LNK_EIGS_TOL: return "tol";
    case LNK_EIGS_MAXSTEPS: return "max_steps";
    case LNK_EIGS_INVARIANT: return "invariant";
    case LNK_EIGS_CANCELLED: return "cancelled";
    default: return "unknown";
    }
}

void lnk_eigs_result_free(lnk_eigs_result *r)
{
    if (!r)
        return;
    free(r->value);
    free(r->residual);
    free(r->bound);
    free(r->converged);
    free(r->vectors);
    memset(r, 0, sizeof *r);
}

static int check_opts(const lnk_operator *op, const lnk_eigs_opts *o)
{
    int rc = lnk_operator_check(op, "eigs");
    if (rc != LNK_OK)
        return rc;
    if (!o)
        return lnk_error(LNK_EINVAL, "eigs: opts is NULL (use lnk_eigs_opts_default)");
    size_t n = op->group ? op->group->n_global : op->n;
    if (o->k_top < 0 || (size_t)o->k_top > n)
        return lnk_error(LNK_EINVAL, "eigs: k_top = %d; expected 0 <= k_top <= n = %zu", o->k_top, n);
    if (o->k_bottom < 0 || (size_t)o->k_bottom > n)
        return lnk_error(LNK_EINVAL, "eigs: k_bottom = %d; expected 0 <= k_bottom <= n = %zu",
                         o->k_bottom, n);
    if (o->k_top + o->k_bottom == 0)
        return lnk_error(LNK_EINVAL, "eigs: k_top = k_bottom = 0; nothing requested");
    long need = o->k_top + o->k_bottom;
    if ((size_t)need > n)
        need = (long)n;
    if (o->max_steps < need)
        return lnk_error(LNK_EINVAL, "eigs: max_steps = %d is smaller than the number of wanted "
                         "eigenpairs k = %ld (k_top %d + k_bottom %d, at most n = %zu)",
                         o->max_steps, need, o->k_top, o->k_bottom, n);
    if (!(o->tol >= 0) || !isfinite(o->tol))
        return lnk_error(LNK_EINVAL, "eigs: tol = %g; expected a finite value >= 0", o->tol);
    if (o->mode != LNK_LANCZOS_FULL && o->mode != LNK_LANCZOS_LIGHT)
        return lnk_error(LNK_EINVAL, "eigs: mode = %d; expected LNK_LANCZOS_FULL (0) or "
                         "LNK_LANCZOS_LIGHT (1)", o->mode);
    if (o->reorth != LNK_REORTH_PARTIAL && o->reorth != LNK_REORTH_ALWAYS)
        return lnk_error(LNK_EINVAL, "eigs: reorth = %d; expected LNK_REORTH_PARTIAL (0) or "
                         "LNK_REORTH_ALWAYS (1)", o->reorth);
    return LNK_OK;
}

/* The wanted Ritz values among the kept ones (flag GOOD): indices into
 * theta, top descending, bottom ascending; the scale max |theta|. */
typedef struct {
    int n_top, n_bottom;
    int *itop, *ibot;
    double scale;
    int n_good;
} pick;

static void select_pairs(int j, const double *theta, const int *flag, int k_top, int k_bottom,
                         int *good, pick *p)
{
    int ng = 0;
    for (int i = 0; i < j; i++)
        if (flag[i] == LNK_RITZ_GOOD)
            good[ng++] = i;
    /* the two ends never share a Ritz value: bottom takes what top leaves */
    p->n_top = k_top < ng ? k_top : ng;
    p->n_bottom = k_bottom < ng - p->n_top ? k_bottom : ng - p->n_top;
    for (int i = 0; i < p->n_top; i++)
        p->itop[i] = good[ng - 1 - i];
    for (int i = 0; i < p->n_bottom; i++)
        p->ibot[i] = good[i];
    p->scale = ng ? fmax(fabs(theta[good[0]]), fabs(theta[good[ng - 1]])) : 0;
    p->n_good = ng;
}

static double bound_of(const lnk_lanczos *lz, const double *S, int c)
{
    int j = lz->steps;
    return lz->beta[j - 1] * fabs(S[(size_t)(j - 1) * j + c]);
}

/* One run of lnk_eigs: the operator and options, the Lanczos workspace, its
 * Ritz pairs and their picks, the state a checkpoint is given. */
typedef struct {
    const lnk_operator *op;
    const lnk_eigs_opts *o;
    const lnk_eigs_state *rs; /* the state resumed from, or NULL */
    lnk_lanczos *lz;
    lnk_eigs_state st;
    double t0;
    int m;                    /* steps at most */
    double *theta, *S;        /* T's eigenpairs */
    int *flag, *good;
    double *vtop, *vbot;      /* the picked values, for progress */
    pick p;
} eigs_run;

static void run_free(eigs_run *r)
{
    lnk_lanczos_free(r->lz);
    free(r->theta), free(r->S), free(r->flag), free(r->good), free(r->p.itop), free(r->p.ibot);
    free(r->vtop), free(r->vbot);
}

/* The Lanczos workspace started (or set to the resumed state) and the Ritz
 * workspace allocated. */
static int run_start(eigs_run *r)
{
    const lnk_eigs_opts *o = r->o;
    int m = r->m, kt = o->k_top, kb = o->k_bottom;
    r->lz = lnk_lanczos_alloc_basis(r->op->n, m, o->mode, o->basis);
    if (!r->lz)
        return LNK_ENOMEM;
    r->lz->reorth = o->reorth;
    r->theta = malloc((size_t)m * sizeof(double));
    r->S = malloc((size_t)m * m * sizeof(double));
    r->flag = malloc((size_t)m * sizeof(int)), r->good = malloc((size_t)m * sizeof(int));
    r->p.itop = malloc((size_t)(kt + 1) * sizeof(int));
    r->p.ibot = malloc((size_t)(kb + 1) * sizeof(int));
    r->vtop = malloc((size_t)(kt + 1) * sizeof(double));
    r->vbot = malloc((size_t)(kb + 1) * sizeof(double));
    if (!r->theta || !r->S || !r->flag || !r->good || !r->p.itop || !r->p.ibot || !r->vtop ||
        !r->vbot)
        return lnk_error(LNK_ENOMEM, "eigs: cannot allocate the %d x %d Ritz workspace", m, m);
    int rc = lnk_lanczos_distribute(r->lz, r->op->group);
    if (rc == LNK_OK)
        rc = r->rs ? lnk_lanczos_set_state(r->lz, &r->rs->lanczos)
                   : lnk_lanczos_start(r->lz, o->v0, o->seed);
    return rc;
}

/* T_j's Ritz pairs, ghosts removed, the wanted ones picked; *nconv of them
 * have converged (bound within tol); *cancel: the progress callback's say. */
static int run_ritz(eigs_run *r, int *nconv, int *cancel)
{
    const lnk_eigs_opts *o = r->o;
    lnk_lanczos *lz = r->lz;
    int j = lz->steps, rc;
    if ((rc = lnk_lanczos_ritz(lz, r->theta, r->S)) != LNK_OK ||
        (rc = lnk_lanczos_ghosts(lz, r->theta, r->S, r->flag)) != LNK_OK)
        return rc;
    pick *p = &r->p;
    select_pairs(j, r->theta, r->flag, o->k_top, o->k_bottom, r->good, p);
    /* Without reorthogonalisation the basis is not orthonormal and the
     * true residual of the normalised y = V s is about bound / ||V s||,
     * seen up to 3.6x the bound: hence a margin of 4 in LIGHT mode. */
    double crit = o->tol * p->scale * (o->mode == LNK_LANCZOS_LIGHT ? 0.25 : 1.0);
    *nconv = 0;
    for (int i = 0; i < p->n_top; i++) {
        r->vtop[i] = r->theta[p->itop[i]];
        *nconv += bound_of(lz, r->S, p->itop[i]) <= crit;
    }
    for (int i = 0; i < p->n_bottom; i++) {
        r->vbot[i] = r->theta[p->ibot[i]];
        *nconv += bound_of(lz, r->S, p->ibot[i]) <= crit;
    }
    *cancel = 0;
    if (o->progress) {
        lnk_eigs_progress pr = {j, r->m, p->n_top, p->n_bottom, r->vtop, r->vbot, *nconv,
                                lnk_now() - r->t0};
        *cancel = o->progress(o->progress_ctx, &pr);
    }
    return LNK_OK;
}

/* Lanczos steps until the wanted pairs converge, the space is invariant,
 * the caller cancels or max_steps is reached: *stop says which. */
static int run_iterate(eigs_run *r, int *stop)
{
    const lnk_eigs_opts *o = r->o;
    lnk_lanczos *lz = r->lz;
    size_t ng = r->op->group ? r->op->group->n_global : r->op->n;
    int kt = o->k_top, kb = o->k_bottom, rc;
    /* with n < k_top + k_bottom, bottom gets the n - k_top values left */
    int need = (size_t)(kt + kb) < ng ? kt + kb : (int)ng;
    *stop = LNK_EIGS_MAXSTEPS;
    for (int resumed = r->rs != NULL;; resumed = 0) {
        if (!resumed) { /* a resumed run first takes the decisions of its last step */
            if ((rc = lnk_lanczos_step(lz, r->op)) != LNK_OK)
                return rc;
            if (o->checkpoint) {
                lnk_lanczos_get_state(lz, &r->st.lanczos);
                r->st.elapsed = lnk_now() - r->t0;
                if ((rc = o->checkpoint(o->checkpoint_ctx, &r->st, 0)) != LNK_OK)
                    return rc;
            }
        }
        int j = lz->steps, nconv, cancel;
        if ((rc = run_ritz(r, &nconv, &cancel)) != LNK_OK)
            return rc;
        const pick *p = &r->p;
        if (lz->done) {
            *stop = lz->invariant ? LNK_EIGS_INVARIANT : LNK_EIGS_MAXSTEPS;
            break;
        }
        if (p->n_top == kt && p->n_bottom == kb && p->n_good >= need && nconv == kt + kb) {
            *stop = LNK_EIGS_TOL;
            break;
        }
        if (cancel) {
            *stop = LNK_EIGS_CANCELLED;
            break;
        }
        if (j >= r->m) {
            *stop = LNK_EIGS_MAXSTEPS;
            break;
        }
    }
    return LNK_OK;
}

/* Pair i's explicit residual ||A y - theta y|| into res->residual[i] (its
 * vector formed here unless all are in y), then a checkpoint; *extra counts
 * the products. */
static int run_residual(eigs_run *r, lnk_eigs_result *res, int all, const int *idx, int i,
                        double *yi, double *Ay, long *extra)
{
    const lnk_eigs_opts *o = r->o;
    size_t n = r->op->n;
    int rc;
    double th = r->theta[idx[i]];
    if (!all && (rc = lnk_lanczos_ritz_vectors(r->lz, r->op, r->S, &idx[i], 1, yi)) != LNK_OK)
        return rc;
    rc = r->op->apply(r->op->ctx, yi, Ay);
    ++*extra;
    if (rc != LNK_OK)
        return rc;
    lnk_axpy(n, -th, yi, Ay);
    res->residual[i] = lnk_cv_nrm2(r->op->group, n, Ay);
    if (o->checkpoint && isfinite(res->residual[i])) {
        lnk_lanczos_get_state(r->lz, &r->st.lanczos);
        r->st.n_resid = i + 1;
        r->st.resid = res->residual;
        r->st.elapsed = lnk_now() - r->t0;
        if ((rc = o->checkpoint(o->checkpoint_ctx, &r->st, 0)) != LNK_OK)
            return rc;
    }
    return LNK_OK;
}

/* The picked pairs into res: values, bounds, Ritz vectors (kept if asked)
 * and explicit residuals (those a resumed run had done taken from its
 * state); *extra counts the products. */
static int run_pairs(eigs_run *r, lnk_eigs_result *res, long *extra)
{
    const lnk_eigs_opts *o = r->o;
    const lnk_eigs_state *rs = r->rs;
    const pick *p = &r->p;
    size_t n = r->op->n;
    int k = p->n_top + p->n_bottom, rc;
    res->value = malloc((size_t)(k + 1) * sizeof(double));
    res->residual = malloc((size_t)(k + 1) * sizeof(double));
    res->bound = malloc((size_t)(k + 1) * sizeof(double));
    res->converged = malloc((size_t)(k + 1) * sizeof(int));
    int *idx = malloc((size_t)(k + 1) * sizeof(int));
    double *Ay = malloc(n * sizeof(double));
    /* LIGHT forms all vectors in one second pass; FULL one at a time unless kept. */
    int all = o->vectors || o->mode == LNK_LANCZOS_LIGHT;
    double *y = malloc((all ? (size_t)(k > 0 ? k : 1) : 1) * n * sizeof(double));
    if (!res->value || !res->residual || !res->bound || !res->converged || !idx || !Ay || !y) {
        rc = lnk_error(LNK_ENOMEM, "eigs: cannot allocate %d eigenvectors of size %zu",
                       all ? k : 1, n);
        goto out;
    }
    for (int i = 0; i < p->n_top; i++)
        idx[i] = p->itop[i];
    for (int i = 0; i < p->n_bottom; i++)
        idx[p->n_top + i] = p->ibot[i];
    if (all && k > 0 && (rc = lnk_lanczos_ritz_vectors(r->lz, r->op, r->S, idx, k, y)) != LNK_OK)
        goto out;
    int done = rs ? rs->n_resid : 0; /* residuals of a resumed run done before */
    for (int i = 0; i < k; i++) {
        res->value[i] = r->theta[idx[i]];
        res->bound[i] = bound_of(r->lz, r->S, idx[i]);
        if (i < done) {
            res->residual[i] = rs->resid[i];
            ++*extra;
        } else if ((rc = run_residual(r, res, all, idx, i, all ? y + (size_t)i * n : y, Ay,
                                      extra)) != LNK_OK) {
            goto out;
        }
        res->converged[i] = res->residual[i] <= o->tol * p->scale;
        if (!isfinite(res->residual[i])) {
            rc = lnk_error(LNK_ENONFINITE, "eigs: residual of pair %d is %g: the operator "
                           "returned non-finite values", i, res->residual[i]);
            goto out;
        }
    }
    if (o->vectors) {
        res->vectors = y;
        y = NULL;
    }
    rc = LNK_OK;
out:
    free(y), free(Ay), free(idx);
    return rc;
}

int lnk_eigs(const lnk_operator *op, const lnk_eigs_opts *o, lnk_eigs_result *res)
{
    if (!res)
        return lnk_error(LNK_EINVAL, "eigs: result is NULL");
    memset(res, 0, sizeof *res);
    int rc = check_opts(op, o);
    if (rc != LNK_OK)
        return rc;
    eigs_run r = {.op = op, .o = o, .st = {.n_resid = 0}};
    r.rs = o->resume && o->resume->lanczos.steps > 0 ? o->resume : NULL;
    r.t0 = lnk_now() - (r.rs ? r.rs->elapsed : 0);
    size_t ng = op->group ? op->group->n_global : op->n;
    r.m = (size_t)o->max_steps < ng ? o->max_steps : (int)ng;
    int stop;
    long extra = 0;
    if ((rc = run_start(&r)) != LNK_OK || (rc = run_iterate(&r, &stop)) != LNK_OK)
        goto out;
    lnk_lanczos *lz = r.lz;
    /* Distributed: every rank must have built the same T (same decisions). */
    if ((rc = lnk_cv_check_same(op->group, lz->alpha, (size_t)lz->steps, "eigs")) != LNK_OK ||
        (rc = lnk_cv_check_same(op->group, lz->beta, (size_t)lz->steps, "eigs")) != LNK_OK)
        goto out;
    /* Results: Ritz vectors and explicit residuals. */
    res->k = r.p.n_top + r.p.n_bottom;
    res->n_top = r.p.n_top;
    res->n_bottom = r.p.n_bottom;
    res->scale = r.p.scale;
    res->steps = lz->steps;
    res->stop = stop;
    res->n_restarts = lz->n_restarts;
    if ((rc = run_pairs(&r, res, &extra)) != LNK_OK)
        goto out;
    res->n_applies = lz->n_applies + extra;
    res->n_reorth = lz->n_reorth;
    res->reorth_rows = lz->reorth_rows;
    res->elapsed = lnk_now() - r.t0;
    rc = LNK_OK;
out:
    if (rc != LNK_OK)
        lnk_eigs_result_free(res);
    run_free(&r);
    return rc;
}
