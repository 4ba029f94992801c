/* Lanczos tridiagonalisation of a symmetric operator: FULL (two-pass
 * classical Gram-Schmidt against the stored basis) and LIGHT (three-term
 * recurrence only, Cullum-Willoughby ghost test), Ritz values by LAPACK's
 * tridiagonal MRRR solver, Ritz vectors.  See include/lnkit/curvature.h. */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
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

/* A fresh direction after a breakdown: a Gaussian vector orthogonalised
 * twice against the j stored vectors.  Returns 1 if it has something left. */
static int restart_vector(lnk_lanczos *w, int j, double *x)
{
    gsl_rng *r = lnk_cv_rng(w->seed, LNK_STREAM_RESTART + (uint64_t)w->n_restarts);
    if (!r)
        return -1;
    lnk_cv_random(w->group, r, 0, x, w->n);
    gsl_rng_free(r);
    double nrm0 = lnk_cv_nrm2(w->group, w->n, x);
    double nrm = lnk_cv_orthogonalize(w->group, w->V, j, w->n, x, w->h);
    /* Twice more if much was removed (the new vector then lies close to the span). */
    if (nrm < 0.5 * nrm0)
        nrm = lnk_cv_orthogonalize(w->group, w->V, j, w->n, x, w->h);
    if (!(nrm > 1e-8 * nrm0))
        return 0;
    cblas_dscal((int)w->n, 1.0 / nrm, x, 1);
    return 1;
}

/* ------------------------------------------- partial reorthogonalisation */

/* Simon's thresholds for m steps on n_global: the rounding level eps1 of
 * one step, semi-orthogonality delta and the level eta whose neighbourhood
 * of a large omega is reorthogonalised too (PROPACK's defaults). */
static void pro_levels(const lnk_lanczos *w, double *eps1, double *delta, double *eta)
{
    size_t ng = w->group ? w->group->n_global : w->n;
    *eps1 = sqrt((double)ng) * DBL_EPSILON / 2;
    *delta = sqrt(DBL_EPSILON / w->max_steps);
    *eta = pow(DBL_EPSILON, 0.75) / sqrt(w->max_steps);
}

/* The omega recurrence at step j (alpha[0..j], beta[0..j-1] and b = beta_j
 * known): from om = omega_{j,.} and om_prev = omega_{j-1,.} the estimates
 * omega_{j+1,k} ~ v_{j+1}.v_k, k <= j, into om (om_prev takes omega_{j,.}):
 *   b omega_{j+1,k} = beta_k omega_{j,k+1} + (alpha_k - alpha_j) omega_{j,k}
 *                     + beta_{k-1} omega_{j,k-1} - beta_{j-1} omega_{j-1,k}
 *                     +- eps1 ||A||                      (k <= j-2),
 * omega_{j+1,j-1} = eps1 ||A|| / b, omega_{j+1,j} = eps1 (local orthogonality).
 * Returns max_k |omega_{j+1,k}|. */
static double update_omega(lnk_lanczos *w, int j, double b, double anorm, double eps1)
{
    double *cur = w->om, *prev = w->om_prev, T = eps1 * anorm, big = 0;
    const double *al = w->alpha, *be = w->beta;
    for (int k = 0; k <= j - 2; k++) {
        double s = be[k] * cur[k + 1] + (al[k] - al[j]) * cur[k] +
                   (k > 0 ? be[k - 1] * cur[k - 1] : 0) - be[j - 1] * prev[k];
        prev[k] = (s + (s < 0 ? -T : T)) / b; /* prev[k] is read last: in place */
        big = fmax(big, fabs(prev[k]));
    }
    if (j >= 1) {
        prev[j - 1] = T / b;
        big = fmax(big, prev[j - 1]);
    }
    prev[j] = eps1;
    w->om = prev;
    w->om_prev = cur;
    return big;
}

/* The runs of basis rows to reorthogonalise against: maximal runs of
 * |omega| >= eta that hold some |omega| > delta (PROPACK's compute_int). */
static void pick_runs(lnk_lanczos *w, int j, double delta, double eta)
{
    const double *om = w->om;
    w->n_ivl = 0;
    for (int k = 0; k <= j;) {
        if (fabs(om[k]) < eta) {
            k++;
            continue;
        }
        int lo = k, hit = 0;
        while (k <= j && fabs(om[k]) >= eta)
            hit |= fabs(om[k++]) > delta;
        if (hit) {
            w->ivl[2 * w->n_ivl] = lo;
            w->ivl[2 * w->n_ivl + 1] = k;
            w->n_ivl++;
        }
    }
}

/* Step j's w = x (norm r, alpha *a so far) after the three-term recurrence:
 * local and partial reorthogonalisation.  Returns ||x||. */
static double partial_reorth(lnk_lanczos *w, int j, double *x, double *a, double r)
{
    const lnk_group *g = w->group;
    size_t n = w->n;
    int ni = (int)n;
    double eps1, delta, eta;
    pro_levels(w, &eps1, &delta, &eta);
    const double *vj = w->V + (size_t)j * n, *vp = j ? w->V + (size_t)(j - 1) * n : NULL;
    /* extended local reorthogonalisation: beta fell, cancellation took local
     * orthogonality with it */
    if (j > 0 && r < M_SQRT1_2 * w->beta[j - 1]) {
        double t[2] = {lnk_dot(n, vp, x), lnk_dot(n, vj, x)};
        if (g && g->sum(g->ctx, t, 2) != 0)
            return NAN;
        lnk_axpy((size_t)ni, -t[0], vp, x);
        lnk_axpy((size_t)ni, -t[1], vj, x);
        w->beta[j - 1] += t[0];
        *a += t[1];
        r = lnk_cv_nrm2(g, n, x);
    }
    double anorm = fmax(w->tnorm, fabs(*a) + r + (j ? w->beta[j - 1] : 0));
    w->alpha[j] = *a; /* the recurrence needs alpha_j (the caller stores its final value) */
    double big = update_omega(w, j, r > 0 ? r : DBL_MIN, anorm, eps1);
    int tiny = r * delta < anorm * eps1; /* omega would jump past delta at once */
    if (!w->force && !tiny && !(big > delta))
        return r;
    if (tiny) { /* the recurrence cannot tell which: all of them, twice */
        w->ivl[0] = 0, w->ivl[1] = j + 1, w->n_ivl = 1;
        w->force = 1;
    } else if (w->force) {
        w->force = 0; /* the second of a pair: the same runs again */
    } else {
        pick_runs(w, j, delta, eta);
        w->force = 1;
    }
    double *h = w->h, *work = w->h + w->max_steps + 2;
    memset(h, 0, sizeof(double) * (size_t)(j + 1));
    r = lnk_cv_reorth(g, w->V, n, w->ivl, w->n_ivl, x, r, h, work, &w->reorth_rows);
    *a += h[j]; /* the v_j part removed belongs to alpha */
    for (int i = 0; i < w->n_ivl; i++)
        for (int k = w->ivl[2 * i]; k < w->ivl[2 * i + 1]; k++)
            w->om[k] = eps1;
    w->n_reorth++;
    return r;
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

int lnk_lanczos_step(lnk_lanczos *w, const lnk_operator *op)
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

    int j = w->steps, ni = (int)w->n;
    int full = w->mode == LNK_LANCZOS_FULL;
    const double *vj = full ? w->V + (size_t)j * w->n : w->vcur;
    const double *vp = j == 0 ? NULL : full ? w->V + (size_t)(j - 1) * w->n : w->vprev;
    double *x = full ? w->V + (size_t)(j + 1) * w->n : w->w;

    double tb = lnk_now();
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
    double t0 = lnk_now();
    rc = op->apply(op->ctx, vj, x);
    double t1 = lnk_now();
    w->n_applies++;
    w->last_apply = t1 - t0;
    w->t_apply += t1 - t0;
    if (helping) {
        prefault_work(&ahead); /* the chunks the helper has not taken */
        pthread_join(helper, NULL);
        w->touched = j + 2;
        double tj = lnk_now();
        tb -= tj - t1; /* counted as first-touch time below */
        t1 = tj;
    }
    if (rc != LNK_OK)
        return rc;

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
        r = partial_reorth(w, j, x, &a, lnk_cv_nrm2(w->group, w->n, x));
    } else {
        r = lnk_cv_nrm2(w->group, w->n, x);
    }
    w->alpha[j] = a;
    w->steps = j + 1;
    double tn = fabs(a) + r + (j > 0 ? w->beta[j - 1] : 0);
    if (tn > w->tnorm)
        w->tnorm = tn;

    rc = LNK_OK;
    if (!isfinite(a) || !isfinite(r)) {
        w->beta[j] = r;
        w->done = 1;
        rc = lnk_error(LNK_ENONFINITE, "lanczos_step %d: alpha = %g, beta = %g: the operator "
                       "returned non-finite values", j, a, r);
    } else if ((size_t)w->steps >= (w->group ? w->group->n_global : w->n)) {
        /* n orthogonal directions: the whole space is invariant (FULL; in
         * LIGHT mode the vectors may have lost orthogonality by now). */
        w->beta[j] = r;
        w->done = 1;
        w->invariant = full;
    } else if (r <= w->breakdown_rtol * w->tnorm) {
        if (full && w->on_breakdown == LNK_BREAKDOWN_RESTART) {
            int ok = restart_vector(w, j + 1, x);
            if (ok < 0) {
                rc = lnk_error(LNK_ENOMEM, "lanczos_step: cannot allocate a random stream");
                w->done = 1;
            } else if (ok) {
                w->beta[j] = 0; /* T becomes block diagonal */
                w->n_restarts++;
                if (w->reorth == LNK_REORTH_PARTIAL) {
                    /* orthogonal to all of the basis now; and again at the next step */
                    double eps1, delta, eta;
                    pro_levels(w, &eps1, &delta, &eta);
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
    } else {
        w->beta[j] = r;
        cblas_dscal(ni, 1.0 / r, x, 1);
        if (!full) { /* slide the window: prev <- cur <- next */
            double *t = w->vprev;
            w->vprev = w->vcur;
            w->vcur = w->w;
            w->w = t;
        }
    }
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
