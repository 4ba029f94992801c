/* Lanczos tridiagonalisation of a symmetric operator: FULL (two-pass
 * classical Gram-Schmidt against the stored basis) and LIGHT (three-term
 * recurrence only): the workspace, the iteration and its state.  The
 * breakdown restart and partial reorthogonalisation are in lanczos_reorth.c,
 * Ritz values, vectors and the ghost test in lanczos_ritz.c.  See
 * include/lnkit/curvature.h. */
#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "curvature/internal.h"
#include "curvature/lanczos_internal.h"
#include "core/blas_fixed.h"
#include "lnkit/curvature.h"
#include "lnkit/error.h"
#include "lnkit/sys.h"

int lnk_operator_check(const lnk_operator *op, const char *what)
{
    if (!what)
        what = "operator";
    if (!op)
        return lnk_error(LNK_EINVAL, "%s: NULL operator", what);
    if (!op->apply)
        return lnk_error(LNK_EINVAL, "%s: apply is NULL", what);
    if (op->n == 0)
        return lnk_error(LNK_EINVAL, "%s: size n = 0; expected n >= 1", what);
    if (op->n > INT_MAX)
        return lnk_error(LNK_EINVAL, "%s: size n = %zu exceeds %d (the CBLAS index range)", what,
                         op->n, INT_MAX);
    return LNK_OK;
}

static int check_size(size_t n, int max_steps, int mode)
{
    if (n == 0 || n > INT_MAX)
        return lnk_error(LNK_EINVAL, "lanczos: n = %zu; expected 1 <= n <= %d", n, INT_MAX);
    if (max_steps < 1)
        return lnk_error(LNK_EINVAL, "lanczos: max_steps = %d; expected >= 1", max_steps);
    if (mode != LNK_LANCZOS_FULL && mode != LNK_LANCZOS_LIGHT)
        return lnk_error(LNK_EINVAL, "lanczos: mode = %d; expected LNK_LANCZOS_FULL (0) or "
                         "LNK_LANCZOS_LIGHT (1)", mode);
    return LNK_OK;
}

size_t lnk_lanczos_bytes(size_t n, int max_steps, int mode)
{
    size_t m = max_steps > 0 ? (size_t)max_steps : 0;
    size_t b = sizeof(lnk_lanczos) + (2 * m + 4 * (m + 2)) * sizeof(double);
    if (mode == LNK_LANCZOS_FULL)
        b += (m + 1) * n * sizeof(double) + 2 * (m + 1) * (sizeof(double) + sizeof(int));
    else
        b += 4 * n * sizeof(double);
    return b;
}

lnk_lanczos *lnk_lanczos_alloc(size_t n, int max_steps, int mode)
{
    return lnk_lanczos_alloc_basis(n, max_steps, mode, NULL);
}

lnk_lanczos *lnk_lanczos_alloc_basis(size_t n, int max_steps, int mode, double *basis)
{
    if (check_size(n, max_steps, mode) != LNK_OK)
        return NULL;
    if (basis && mode != LNK_LANCZOS_FULL) {
        lnk_error(LNK_EINVAL, "lanczos: a basis was given for light mode (it keeps none)");
        return NULL;
    }
    size_t m = (size_t)max_steps;
    lnk_lanczos *w = calloc(1, sizeof *w);
    if (!w)
        goto nomem;
    w->n = n;
    w->max_steps = max_steps;
    w->mode = mode;
    w->on_breakdown = mode == LNK_LANCZOS_FULL ? LNK_BREAKDOWN_RESTART : LNK_BREAKDOWN_STOP;
    w->breakdown_rtol = (double)(n > 100 ? n : 100) * DBL_EPSILON;
    w->alpha = calloc(m, sizeof(double));
    w->beta = calloc(m, sizeof(double));
    w->h = calloc(4 * (m + 2), sizeof(double));
    if (!w->alpha || !w->beta || !w->h)
        goto nomem;
    if (mode == LNK_LANCZOS_FULL) {
        if (m + 1 > SIZE_MAX / sizeof(double) / n)
            goto nomem;
        w->V = basis ? basis : malloc((m + 1) * n * sizeof(double));
        w->own_V = !basis;
        w->om = calloc(m + 1, sizeof(double));
        w->om_prev = calloc(m + 1, sizeof(double));
        w->ivl = calloc(2 * (m + 1), sizeof(int));
        if (!w->V || !w->om || !w->om_prev || !w->ivl)
            goto nomem;
    } else {
        w->v0 = malloc(n * sizeof(double));
        w->vprev = malloc(n * sizeof(double));
        w->vcur = malloc(n * sizeof(double));
        w->w = malloc(n * sizeof(double));
        if (!w->v0 || !w->vprev || !w->vcur || !w->w)
            goto nomem;
    }
    return w;
nomem:
    lnk_lanczos_free(w);
    lnk_error(LNK_ENOMEM, "lanczos: cannot allocate %zu bytes (n = %zu, max_steps = %d, %s mode)",
              lnk_lanczos_bytes(n, max_steps, mode), n, max_steps,
              mode == LNK_LANCZOS_FULL ? "full" : "light");
    return NULL;
}

void lnk_lanczos_free(lnk_lanczos *w)
{
    if (!w)
        return;
    free(w->alpha);
    free(w->beta);
    free(w->h);
    if (w->own_V)
        free(w->V);
    free(w->om);
    free(w->om_prev);
    free(w->ivl);
    free(w->v0);
    free(w->vprev);
    free(w->vcur);
    free(w->w);
    free(w);
}

int lnk_lanczos_distribute(lnk_lanczos *w, const lnk_group *g)
{
    if (!w)
        return lnk_error(LNK_EINVAL, "lanczos_distribute: NULL workspace");
    if (g && (!g->sum || g->size < 1 || g->rank < 0 || g->rank >= g->size ||
              g->offset + w->n > g->n_global))
        return lnk_error(LNK_EINVAL, "lanczos_distribute: bad group (rank %d of %d, slice "
                         "[%zu, %zu) of %zu, sum %s)", g->rank, g->size, g->offset,
                         g->offset + w->n, g->n_global, g->sum ? "set" : "NULL");
    w->group = g;
    size_t n = g ? g->n_global : w->n;
    w->breakdown_rtol = (double)(n > 100 ? n : 100) * DBL_EPSILON;
    return LNK_OK;
}

int lnk_lanczos_start(lnk_lanczos *w, const double *v0, uint64_t seed)
{
    if (!w)
        return lnk_error(LNK_EINVAL, "lanczos_start: NULL workspace");
    if (w->on_breakdown != LNK_BREAKDOWN_RESTART && w->on_breakdown != LNK_BREAKDOWN_STOP)
        return lnk_error(LNK_EINVAL, "lanczos_start: on_breakdown = %d; expected "
                         "LNK_BREAKDOWN_RESTART (0) or LNK_BREAKDOWN_STOP (1)", w->on_breakdown);
    if (w->reorth != LNK_REORTH_PARTIAL && w->reorth != LNK_REORTH_ALWAYS)
        return lnk_error(LNK_EINVAL, "lanczos_start: reorth = %d; expected LNK_REORTH_PARTIAL "
                         "(0) or LNK_REORTH_ALWAYS (1)", w->reorth);
    if (w->prefault != LNK_PREFAULT_AHEAD && w->prefault != LNK_PREFAULT_STEP &&
        w->prefault != LNK_PREFAULT_NONE)
        return lnk_error(LNK_EINVAL, "lanczos_start: prefault = %d; expected "
                         "LNK_PREFAULT_AHEAD (0), LNK_PREFAULT_STEP (1) or LNK_PREFAULT_NONE (2)",
                         w->prefault);
    if (!(w->breakdown_rtol >= 0) || !isfinite(w->breakdown_rtol))
        return lnk_error(LNK_EINVAL, "lanczos_start: breakdown_rtol = %g; expected a finite "
                         "value >= 0", w->breakdown_rtol);
    size_t n = w->n;
    double *x = w->mode == LNK_LANCZOS_FULL ? w->V : w->v0;
    if (v0) {
        for (size_t i = 0; i < n; i++)
            if (!isfinite(v0[i]))
                return lnk_error(LNK_ENONFINITE, "lanczos_start: start vector v0[%zu] = %g; "
                                 "expected finite values", i, v0[i]);
        memcpy(x, v0, n * sizeof(double));
    } else {
        gsl_rng *r = lnk_cv_rng(seed, 0);
        if (!r)
            return lnk_error(LNK_ENOMEM, "lanczos_start: cannot allocate a random stream");
        lnk_cv_random(w->group, r, 0, x, n);
        gsl_rng_free(r);
    }
    double nrm = lnk_cv_nrm2(w->group, n, x);
    if (!(nrm > 0) || !isfinite(nrm))
        return lnk_error(LNK_EINVAL, "lanczos_start: start vector v0 has norm %g; expected a "
                         "finite nonzero vector", nrm);
    cblas_dscal((int)n, 1.0 / nrm, x, 1);
    if (w->mode == LNK_LANCZOS_LIGHT)
        memcpy(w->vcur, x, n * sizeof(double));
    w->seed = seed;
    w->started = 1;
    w->steps = 0;
    w->done = w->invariant = 0;
    w->n_restarts = 0;
    w->n_applies = 0;
    w->n_reorth = 0;
    w->reorth_rows = 0;
    w->force = w->n_ivl = 0;
    w->tnorm = 0;
    w->t_apply = w->t_orth = w->last_apply = w->last_orth = 0;
    w->t_touch = w->last_touch = 0;
    return LNK_OK;
}

/* ------------------------------------------------ first touch of a new row */

/* The first write to a basis row faults its pages in: on a VM about 0.04 to
 * 0.09 s for the 54 MB of a row at config (b), 7 to 15% of a product.  Row
 * j+2 is faulted in while step j's product runs, by a helper thread that
 * takes the row in chunks; after the product the caller takes the chunks
 * left.  The helper never writes data the product reads: only the pages
 * wholly inside the row, which nothing reads before step j+1 writes it
 * (rows beyond steps hold nothing: see lnk_lanczos_set_state). */
#define PREFAULT_CHUNK ((size_t)2 << 20)

typedef struct {
    char *lo;               /* first whole page of the row */
    size_t len;             /* bytes of whole pages */
    atomic_size_t next;     /* next chunk to take */
    size_t nchunks;
} prefault_job;

/* Fault in [p, p + len) (whole pages) for writing: MADV_POPULATE_WRITE
 * (Linux 5.14) maps them without a trap per page and writes nothing; else
 * one zero written a page. */
static void prefault_pages(char *p, size_t len, size_t page)
{
#ifdef MADV_POPULATE_WRITE
    if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
        return;
#endif
    for (size_t i = 0; i < len; i += page)
        ((volatile char *)p)[i] = 0;
}

static void prefault_work(prefault_job *job)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (;;) {
        size_t c = atomic_fetch_add(&job->next, 1);
        if (c >= job->nchunks)
            return;
        size_t off = c * PREFAULT_CHUNK;
        size_t len = job->len - off < PREFAULT_CHUNK ? job->len - off : PREFAULT_CHUNK;
        prefault_pages(job->lo + off, len, page);
    }
}

static void *prefault_main(void *arg)
{
    prefault_work(arg);
    return NULL;
}

/* The job for the whole pages of x[0..n); 0 if it has none. */
static int prefault_init(prefault_job *job, double *x, size_t n)
{
    long ps = sysconf(_SC_PAGESIZE);
    uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096, a = (uintptr_t)x;
    uintptr_t lo = (a + page - 1) / page * page, hi = (a + n * sizeof(double)) / page * page;
    if (hi <= lo)
        return 0;
    job->lo = (char *)lo;
    job->len = hi - lo;
    job->nchunks = (job->len + PREFAULT_CHUNK - 1) / PREFAULT_CHUNK;
    atomic_init(&job->next, 0);
    return 1;
}

/* lnk_lanczos_step's arguments and state: an error unless a step can be taken. */
static int step_check(const lnk_lanczos *w, const lnk_operator *op)
{
    if (!w)
        return lnk_error(LNK_EINVAL, "lanczos_step: NULL workspace");
    int rc = lnk_operator_check(op, "lanczos_step");
    if (rc != LNK_OK)
        return rc;
    if (op->n != w->n)
        return lnk_error(LNK_EINVAL, "lanczos_step: operator size n = %zu differs from the "
                         "workspace's n = %zu", op->n, w->n);
    if (op->group != w->group)
        return lnk_error(LNK_EINVAL, "lanczos_step: the operator's group differs from the "
                         "workspace's (call lnk_lanczos_distribute before start)");
    if (!w->started)
        return lnk_error(LNK_EINVAL, "lanczos_step: no run started (call lnk_lanczos_start)");
    if (w->done)
        return lnk_error(LNK_EINVAL, "lanczos_step: the run is done after %d steps (%s)",
                         w->steps, w->invariant ? "invariant subspace" : "stopped");
    if (w->steps >= w->max_steps)
        return lnk_error(LNK_EINVAL, "lanczos_step: max_steps = %d reached", w->max_steps);
    return LNK_OK;
}

/* Step j's product x = A v_j, with the new basis rows faulted in around it
 * (FULL).  *tb, *t0, *t1: the clock at the step's start (less the wait for
 * the helper), before and after the product. */
static int step_apply(lnk_lanczos *w, const lnk_operator *op, int j, const double *vj, double *x,
                      double *tb, double *t0, double *t1)
{
    int full = w->mode == LNK_LANCZOS_FULL;
    *tb = lnk_now();
    if (full && j + 1 > w->touched && w->prefault != LNK_PREFAULT_NONE) {
        /* Row j+1 not faulted in ahead (the first step, or no helper):
         * here, counted as vector work, rather than inside the operator's
         * parallel kernels, where the faults stall every thread. */
        prefault_job job;
        if (prefault_init(&job, x, w->n))
            prefault_work(&job);
        w->touched = j + 1;
    }
    /* Row j+2 while the product runs (see prefault_job). */
    prefault_job ahead;
    pthread_t helper;
    int helping = full && w->prefault == LNK_PREFAULT_AHEAD && j + 2 <= w->max_steps &&
                  j + 2 > w->touched &&
                  prefault_init(&ahead, w->V + (size_t)(j + 2) * w->n, w->n) &&
                  pthread_create(&helper, NULL, prefault_main, &ahead) == 0;
    *t0 = lnk_now();
    int rc = op->apply(op->ctx, vj, x);
    *t1 = lnk_now();
    w->n_applies++;
    w->last_apply = *t1 - *t0;
    w->t_apply += *t1 - *t0;
    if (helping) {
        prefault_work(&ahead); /* the chunks the helper has not taken */
        pthread_join(helper, NULL);
        w->touched = j + 2;
        double tj = lnk_now();
        *tb -= tj - *t1; /* counted as first-touch time below */
        *t1 = tj;
    }
    return rc;
}

/* The three-term recurrence on x = A v_j and its reorthogonalisation:
 * alpha_j into *a, ||x|| into *r; alpha, steps and tnorm updated. */
static void step_recurrence(lnk_lanczos *w, int j, const double *vj, const double *vp, double *x,
                            double *a_out, double *r_out)
{
    int ni = (int)w->n;
    int full = w->mode == LNK_LANCZOS_FULL;
    if (vp)
        lnk_axpy((size_t)ni, -w->beta[j - 1], vp, x);
    double a = lnk_cv_dot(w->group, w->n, vj, x);
    lnk_axpy((size_t)ni, -a, vj, x);
    double r;
    if (full && w->reorth == LNK_REORTH_ALWAYS) {
        r = lnk_cv_orthogonalize(w->group, w->V, j + 1, w->n, x, w->h);
        a += w->h[j]; /* the v_j part removed by the reorthogonalisation belongs to alpha */
        w->n_reorth++;
        w->reorth_rows += 4.0 * (j + 1);
    } else if (full) {
        r = lnk_lz_partial_reorth(w, j, x, &a, lnk_cv_nrm2(w->group, w->n, x));
    } else {
        r = lnk_cv_nrm2(w->group, w->n, x);
    }
    w->alpha[j] = a;
    w->steps = j + 1;
    double tn = fabs(a) + r + (j > 0 ? w->beta[j - 1] : 0);
    if (tn > w->tnorm)
        w->tnorm = tn;
    *a_out = a;
    *r_out = r;
}

/* A breakdown at step j (residual x of norm r): restart in the complement
 * (FULL, LNK_BREAKDOWN_RESTART) or stop as invariant. */
static int step_breakdown(lnk_lanczos *w, int j, double *x, double r)
{
    int full = w->mode == LNK_LANCZOS_FULL;
    int rc = LNK_OK;
    if (full && w->on_breakdown == LNK_BREAKDOWN_RESTART) {
        int ok = lnk_lz_restart_vector(w, j + 1, x);
        if (ok < 0) {
            rc = lnk_error(LNK_ENOMEM, "lanczos_step: cannot allocate a random stream");
            w->done = 1;
        } else if (ok) {
            w->beta[j] = 0; /* T becomes block diagonal */
            w->n_restarts++;
            if (w->reorth == LNK_REORTH_PARTIAL) {
                /* orthogonal to all of the basis now; and again at the next step */
                double eps1, delta, eta;
                lnk_lz_pro_levels(w, &eps1, &delta, &eta);
                for (int k = 0; k <= j; k++)
                    w->om[k] = eps1;
                w->ivl[0] = 0, w->ivl[1] = j + 1, w->n_ivl = 1;
                w->force = 1;
            }
        } else {
            w->beta[j] = r;
            w->done = w->invariant = 1;
        }
    } else {
        w->beta[j] = r;
        w->done = w->invariant = 1;
    }
    return rc;
}

/* Step j's end: beta_j = r and the next vector x / r, or the run stops
 * (non-finite values, n steps, a breakdown). */
static int step_finish(lnk_lanczos *w, int j, double *x, double a, double r)
{
    int full = w->mode == LNK_LANCZOS_FULL;
    if (!isfinite(a) || !isfinite(r)) {
        w->beta[j] = r;
        w->done = 1;
        return lnk_error(LNK_ENONFINITE, "lanczos_step %d: alpha = %g, beta = %g: the operator "
                         "returned non-finite values", j, a, r);
    } else if ((size_t)w->steps >= (w->group ? w->group->n_global : w->n)) {
        /* n orthogonal directions: the whole space is invariant (FULL; in
         * LIGHT mode the vectors may have lost orthogonality by now). */
        w->beta[j] = r;
        w->done = 1;
        w->invariant = full;
    } else if (r <= w->breakdown_rtol * w->tnorm) {
        return step_breakdown(w, j, x, r);
    } else {
        w->beta[j] = r;
        cblas_dscal((int)w->n, 1.0 / r, x, 1);
        if (!full) { /* slide the window: prev <- cur <- next */
            double *t = w->vprev;
            w->vprev = w->vcur;
            w->vcur = w->w;
            w->w = t;
        }
    }
    return LNK_OK;
}

int lnk_lanczos_step(lnk_lanczos *w, const lnk_operator *op)
{
    int rc = step_check(w, op);
    if (rc != LNK_OK)
        return rc;
    int j = w->steps;
    int full = w->mode == LNK_LANCZOS_FULL;
    const double *vj = full ? w->V + (size_t)j * w->n : w->vcur;
    const double *vp = j == 0 ? NULL : full ? w->V + (size_t)(j - 1) * w->n : w->vprev;
    double *x = full ? w->V + (size_t)(j + 1) * w->n : w->w;

    double tb, t0, t1;
    rc = step_apply(w, op, j, vj, x, &tb, &t0, &t1);
    if (rc != LNK_OK)
        return rc;
    double a, r;
    step_recurrence(w, j, vj, vp, x, &a, &r);
    rc = step_finish(w, j, x, a, r);
    double t2 = lnk_now();
    w->last_touch = t0 - tb;
    w->t_touch += w->last_touch;
    w->last_orth = t2 - t1 + w->last_touch;
    w->t_orth += w->last_orth;
    return rc;
}

int lnk_lanczos_run(lnk_lanczos *w, const lnk_operator *op, int steps)
{
    if (!w)
        return lnk_error(LNK_EINVAL, "lanczos_run: NULL workspace");
    for (int i = 0; i < steps && !w->done && w->steps < w->max_steps; i++) {
        int rc = lnk_lanczos_step(w, op);
        if (rc != LNK_OK)
            return rc;
    }
    return LNK_OK;
}

void lnk_lanczos_get_state(const lnk_lanczos *w, lnk_lanczos_state *s)
{
    memset(s, 0, sizeof *s);
    s->mode = w->mode;
    s->max_steps = w->max_steps;
    s->steps = w->steps;
    s->done = w->done;
    s->invariant = w->invariant;
    s->n_restarts = w->n_restarts;
    s->n_reorth = w->n_reorth;
    s->force = w->force;
    s->n_ivl = w->n_ivl;
    s->n_applies = w->n_applies;
    s->seed = w->seed;
    s->tnorm = w->tnorm;
    s->reorth_rows = w->reorth_rows;
    s->alpha = w->alpha;
    s->beta = w->beta;
    s->om = w->om;
    s->om_prev = w->om_prev;
    s->ivl = w->ivl;
    if (w->mode == LNK_LANCZOS_LIGHT) {
        s->v0 = w->v0;
        s->vprev = w->vprev;
        s->vcur = w->vcur;
    }
}

int lnk_lanczos_set_state(lnk_lanczos *w, const lnk_lanczos_state *s)
{
    if (!w || !s)
        return lnk_error(LNK_EINVAL, "lanczos_set_state: NULL argument");
    if (s->mode != w->mode || s->max_steps != w->max_steps)
        return lnk_error(LNK_EINVAL, "lanczos_set_state: a state of %s mode and %d steps for a "
                         "workspace of %s mode and %d steps",
                         s->mode == LNK_LANCZOS_FULL ? "full" : "light", s->max_steps,
                         w->mode == LNK_LANCZOS_FULL ? "full" : "light", w->max_steps);
    int full = w->mode == LNK_LANCZOS_FULL;
    if (s->steps < 0 || s->steps > w->max_steps || s->n_ivl < 0 || s->n_ivl > w->max_steps + 1 ||
        !s->alpha || !s->beta || (full && (!s->om || !s->om_prev || !s->ivl)) ||
        (!full && (!s->v0 || !s->vprev || !s->vcur)))
        return lnk_error(LNK_EINVAL, "lanczos_set_state: inconsistent state (%d steps, %d "
                         "reorthogonalisation runs, arrays %s)", s->steps, s->n_ivl,
                         s->alpha && s->beta ? "set" : "missing");
    size_t m = (size_t)w->max_steps, n = w->n;
    memcpy(w->alpha, s->alpha, m * sizeof(double));
    memcpy(w->beta, s->beta, m * sizeof(double));
    if (full) {
        memcpy(w->om, s->om, (m + 1) * sizeof(double));
        memcpy(w->om_prev, s->om_prev, (m + 1) * sizeof(double));
        memcpy(w->ivl, s->ivl, 2 * (m + 1) * sizeof(int));
    } else {
        memcpy(w->v0, s->v0, n * sizeof(double));
        memcpy(w->vprev, s->vprev, n * sizeof(double));
        memcpy(w->vcur, s->vcur, n * sizeof(double));
    }
    w->steps = s->steps;
    w->done = s->done;
    w->invariant = s->invariant;
    w->n_restarts = s->n_restarts;
    w->n_reorth = s->n_reorth;
    w->force = s->force;
    w->n_ivl = s->n_ivl;
    w->n_applies = s->n_applies;
    w->seed = s->seed;
    w->tnorm = s->tnorm;
    w->reorth_rows = s->reorth_rows;
    w->t_apply = w->t_orth = w->last_apply = w->last_orth = 0;
    w->t_touch = w->last_touch = 0;
    w->touched = full ? s->steps : 0;
    w->started = 1;
    return LNK_OK;
}
