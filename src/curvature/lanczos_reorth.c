/* Lanczos, FULL mode: the restart after a breakdown and partial
 * reorthogonalisation (Simon's omega recurrence, PROPACK's thresholds); see
 * include/lnkit/curvature.h and lanczos.c. */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "curvature/internal.h"
#include "curvature/lanczos_internal.h"
#include "core/blas_fixed.h"
#include "lnkit/curvature.h"

/* A fresh direction after a breakdown: a Gaussian vector orthogonalised
 * twice against the j stored vectors.  Returns 1 if it has something left. */
int lnk_lz_restart_vector(lnk_lanczos *w, int j, double *x)
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
void lnk_lz_pro_levels(const lnk_lanczos *w, double *eps1, double *delta, double *eta)
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
double lnk_lz_partial_reorth(lnk_lanczos *w, int j, double *x, double *a, double r)
{
    const lnk_group *g = w->group;
    size_t n = w->n;
    int ni = (int)n;
    double eps1, delta, eta;
    lnk_lz_pro_levels(w, &eps1, &delta, &eta);
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
