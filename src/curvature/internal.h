/* lnkit curvature internals: random streams (random.c keeps GSL's randist
 * apart from cblas.h, whose declarations clash with gsl_cblas.h). */
#ifndef LNK_CURVATURE_INTERNAL_H
#define LNK_CURVATURE_INTERNAL_H

#include <gsl/gsl_rng.h>
#include <stddef.h>
#include <stdint.h>

/* An mt19937 stream for (seed, stream): seeded with a splitmix64 hash of both
 * (mt19937 uses 32 bits of it; never 0, which GSL maps to its default seed).
 * NULL if allocation fails. */
gsl_rng *lnk_cv_rng(uint64_t seed, uint64_t stream);
/* x[i] ~ N(0, 1) (gsl_ran_gaussian). */
void lnk_cv_gaussian(gsl_rng *r, double *x, size_t n);
/* x[i] = +-1 with probability 1/2 each, 32 signs per draw. */
void lnk_cv_rademacher(gsl_rng *r, double *x, size_t n);

/* Vector kernels on local slices that reduce over a group (NULL: one
 * process, plain CBLAS).  A failed reduction gives NaN, which the routines
 * report as non-finite. */
struct lnk_group;
double lnk_cv_dot(const struct lnk_group *g, size_t n, const double *x, const double *y);
double lnk_cv_nrm2(const struct lnk_group *g, size_t n, const double *x);
/* Two-pass classical Gram-Schmidt (lnk_orthogonalize) with reduced dots. */
double lnk_cv_orthogonalize(const struct lnk_group *g, const double *V, int k, size_t n, double *x,
                            double *h);
/* Iterated classical Gram-Schmidt of x against the basis rows in the runs
 * [runs[2i], runs[2i+1]) of V (row r at V + r n), i < nruns: c = V_I x reads
 * the rows once; then, on column blocks small enough to stay in cache,
 * x -= V_I^T c and the next pass's V_I x and ||x||^2 together.  Another pass
 * only while ||x|| fell below 1/sqrt(2) of its value before the pass (the
 * DGKS test), at most 3.  nrm: ||x|| on entry.  h (indexed by row) gets the
 * summed coefficients of the runs' rows; work: room for 2 (rows + 1) doubles.
 * *rows_read (may be NULL) += basis rows read.  Returns ||x|| (NaN if a
 * reduction failed). */
double lnk_cv_reorth(const struct lnk_group *g, const double *V, size_t n, const int *runs,
                     int nruns, double *x, double nrm, double *h, double *work,
                     double *rows_read);

/* Fill x (the local slice) with the slice of the one-process random vector:
 * kind 0 Gaussian, 1 Rademacher; draws all n_global values. */
void lnk_cv_random(const struct lnk_group *g, gsl_rng *r, int kind, double *x, size_t n);
/* Unit length (group norm), largest-magnitude entry (first such over the
 * whole vector) positive. */
void lnk_cv_normalise_sign(const struct lnk_group *g, double *y, size_t n);

/* An error unless every member of the group holds the same bits in
 * x[0..n) (the tridiagonal T: members must take the same decisions). */
int lnk_cv_check_same(const struct lnk_group *g, const double *x, size_t n, const char *what);

/* The number of grid cells for a span of x spacings: ceil(x), except that
 * an x within 1e-9 (relative) of an integer counts as that integer.  With
 * sigma a fraction of the node range (the default of the commands), x is an
 * integer in exact arithmetic (per_sigma / fraction + 2 pad per_sigma), and a
 * plain ceil would add a cell or not by rounding -- by the order in which
 * the ranks summed a product -- so that a run on 2 ranks drew the densities
 * on another grid than one process.  The spacing may exceed the requested
 * one by 1e-9 of itself. */
double lnk_cv_grid_cells(double x);

/* Streams used by the routines (documented in curvature.h). */
#define LNK_STREAM_RESTART 1u   /* Lanczos restart r uses stream 1 + r */

#endif
