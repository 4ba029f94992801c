/* lnkit: statistics of the diagonal blocks of a curvature operator (the
 * Hessian, its Gauss-Newton part or its functional part restricted to a set
 * of tensors; include/lnkit/hessian.h): the Frobenius norm by Hutchinson,
 * the extreme eigenvalues, the spectral density by SLQ, and the
 * Jensen-Shannon distance between two densities on a common grid.  Like the
 * rest of the curvature floor these see only an lnk_operator (one process or
 * distributed over a group; see curvature.h), so they are tested on plain
 * matrices and on dense blocks of small models (tests/test_blockstats.c).
 */
#ifndef LNKIT_BLOCKSTATS_H
#define LNKIT_BLOCKSTATS_H

#include <stddef.h>
#include <stdint.h>
#include "lnkit/curvature.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================ Frobenius norm
 * Hutchinson on ||A z||^2: N Rademacher probes z_p (entries +-1, stream
 * LNK_FROB_STREAM of seed; distributed: the one-process vector, sliced),
 * s_p = ||A z_p||^2 = z_p^T A^T A z_p, whose mean over z is tr(A^T A) =
 * ||A||_F^2 (E z z^T = I): unbiased, variance 2 sum_{i != j} (A^2)_ij^2 / N.
 *   frob2 = mean_p s_p,  frob2_se = sample sd (N-1 denominator) / sqrt(N);
 *   frob = sqrt(frob2),  frob_se = frob2_se / (2 frob) (the delta method;
 *   sqrt of an unbiased estimate is biased low by about frob2_se^2 / (8
 *   frob^3), negligible once frob2_se << frob2).
 * N >= 2.  Cost N applies, 2 n doubles. */
#define LNK_FROB_STREAM 0x46524f42u /* "FROB" */
typedef struct {
    double frob2, frob2_se;   /* ||A||_F^2 and its standard error */
    double frob, frob_se;     /* ||A||_F and its standard error */
    int probes;
    double elapsed;           /* seconds */
} lnk_frob_result;

int lnk_frobenius(const lnk_operator *op, int probes, uint64_t seed, lnk_frob_result *res);

/* ========================================= Jensen-Shannon distance
 * Between two densities p, q sampled on one increasing grid t[0..npts)
 * (npts >= 2; values finite and >= 0, each with a positive trapezoid
 * integral): both are first normalised to integrate to 1 by the trapezoid
 * rule, then, with m = (p + q) / 2 and 0 ln 0 = 0,
 *     JSD = (1/2) int p ln(p/m) dt + (1/2) int q ln(q/m) dt
 * by the trapezoid rule, and the distance is sqrt(JSD).  Natural logarithm:
 * the distance lies in [0, sqrt(ln 2)] = [0, 0.83255...]: 0 for identical
 * densities, sqrt(ln 2) for disjoint supports (exactly, on the grid); this
 * is scipy.spatial.distance.jensenshannon's default (base e).  Divide by
 * sqrt(ln 2) for the base-2 distance in [0, 1].  Cost O(npts). */
int lnk_js_distance(const double *t, const double *p, const double *q, size_t npts,
                    double *dist);

/* ====================================================== one block
 * The statistics of one (block) operator A:
 *   - ||A||_F by lnk_frobenius (probes, seed);
 *   - its largest and smallest eigenvalue by lnk_eigs (k_top = k_bottom = 1,
 *     FULL mode, partial reorthogonalisation, start vector from seed, at
 *     most eig_steps steps, tol as lnk_eigs), with their explicit residuals
 *     ||A y - l y||; for n = 1 both are the one eigenvalue;
 *   - the SLQ quadrature (lnk_slq: slq_runs Rademacher runs of slq_steps
 *     FULL steps, seed), from which densities on any grid follow
 *     (lnk_slq_density).
 * Cost probes + eig_steps + 2 + slq_runs slq_steps applies at most. */
typedef struct {
    int probes;               /* default 30 */
    int eig_steps;            /* default 100 */
    double eig_tol;           /* default 1e-6 */
    int slq_runs, slq_steps;  /* default 4, 40 */
    uint64_t seed;            /* default 0 */
} lnk_blockstat_opts;
void lnk_blockstat_opts_default(lnk_blockstat_opts *o);

typedef struct {
    size_t n;                 /* the operator's (global) size */
    lnk_frob_result frob;
    double top, top_residual, bottom, bottom_residual;
    int top_converged, bottom_converged; /* residual <= eig_tol max|l| */
    int eig_steps;            /* Lanczos steps taken for the extremes */
    lnk_slq_result slq;
    long n_applies;
} lnk_blockstat;

int lnk_blockstat_compute(const lnk_operator *op, const lnk_blockstat_opts *o, lnk_blockstat *r);
void lnk_blockstat_free(lnk_blockstat *r);

/* ============================================ blocks judged together
 * A block that is zero to rounding (an attention key bias, which softmax
 * ignores: its H, G and F are 0) has extremes of the size of rounding, whose
 * residuals no tolerance relative to themselves can pass.  With S the
 * largest max|l| over the blocks b[0..nb), lnk_blockstat_settle counts the
 * extremes of a block whose max|l| <= LNK_BLOCKSTAT_ZERO_REL S as converged
 * when their residuals are <= tol S: they are 0 to what the products
 * resolve.  Call it once every block is computed (lnkit blocks and Python's
 * lnkit.blocks do).  lnk_blockstat_unconverged then counts the extremes that
 * did not converge; *worst gets the largest residual among them relative to
 * its block's max|l| (the residual itself if that is 0), *steps the most
 * Lanczos steps any block took.  Cost O(nb). */
#define LNK_BLOCKSTAT_ZERO_REL 1e-10
void lnk_blockstat_settle(lnk_blockstat *const *b, int nb, double tol);
int lnk_blockstat_unconverged(const lnk_blockstat *const *b, int nb, double *worst, int *steps);

/* Why the extremes of b[0..nb) that did not converge may not have, in words
 * for a warning (in buf of size bytes; "" when every extreme converged):
 *   - psd (the operator is positive semidefinite, as the Gauss-Newton part
 *     G): a bottom end is a cluster at 0 that Lanczos resolves slowly;
 *   - a block that used all eig_steps: the step limit;
 *   - one that ended before them (its Krylov space exhausted: values exact up
 *     to rounding) with residuals above 1e-3 of its max|l|: a block zero to
 *     rounding that no larger block settled (lnk_blockstat_settle), or else
 *     rounding; with smaller residuals: rounding above the tolerance.
 * nm names the caller's settings in the advice: the step limit, the
 * tolerance, and how to add a block (a program's "--max-steps", "--tol",
 * "--group or more tensors"; Python's "max_steps", ...).  Cost O(nb). */
typedef struct {
    const char *steps, *tol, *more;
} lnk_blockstat_names;
void lnk_blockstat_why(const lnk_blockstat *const *b, int nb, int psd, int eig_steps,
                       const lnk_blockstat_names *nm, char *buf, size_t size);

/* A common grid for the SLQ results r[0..k): equally spaced points from the
 * smallest node - pad sigma to the largest + pad sigma with a spacing of at
 * most sigma / per_sigma (as lnk_slq_grid_size).  *t is malloc'd (npts
 * points).  Errors: k < 1, sigma <= 0, per_sigma <= 0, pad < 0, or more
 * than max_pts points (the message names the count). */
int lnk_slq_grid_common(const lnk_slq_result *const *r, int k, double sigma, double pad,
                        double per_sigma, size_t max_pts, double **t, size_t *npts);

#ifdef __cplusplus
}
#endif
#endif
