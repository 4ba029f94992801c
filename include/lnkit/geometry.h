/* lnkit: LayerNorm geometry of keys and queries (docs/MODEL.md section 7; Brody, Alon,
 * Yahav 2023, "On the Expressivity Role of LayerNorm in Transformers' Attention").
 *
 * LayerNorm without gain and bias is a projection followed by a scaling:
 *   P(x) = x - (<x,1>/d) 1                 (onto the hyperplane orthogonal to 1)
 *   S(x) = sqrt(d) x / ||x||               (onto the sphere of radius sqrt(d))
 *   LN(x) = S(P(x)) when eps = 0;  RMSNorm(x) = S(x) when eps = 0.
 * With eps > 0 the norms are those of MODEL.md §2: (x - mu)/sqrt(var + eps) and
 * x/sqrt(mean(x^2) + eps).  A per-head variant applies the norm to each of the
 * h slices of width d/h on its own (what qk_norm does after the projections).
 *
 * Selectability.  Key k_i of {k_1..k_n} is selectable when some query q makes it
 * the strict argmax of q.k_j; otherwise it lies in the convex hull of the other
 * keys.  lnk_geom_selectable decides this per key with a linear program (GLPK):
 *   dist_i = min { || sum_j lam_j k_j - k_i ||_1 : lam >= 0, sum_j lam_j = 1, j != i }
 * the l1 distance from k_i to the hull of the others, whose LP dual is the best
 * separating margin  max { min_j q.(k_i - k_j) : ||q||_inf <= 1 }.  Both the primal
 * (a hull point, upper bound) and the dual (a query, lower bound) are checked in
 * double precision after GLPK returns (its simplex runs with feasibility tolerances
 * of 1e-12 instead of 1e-7, and an iteration limit against cycling), and a case the
 * two bounds leave open is re-solved from another start (glp_exact cannot help: it
 * rounds the data to 1e-9 first); a case still open is "ambiguous" and decided by the
 * LP value (none of the study's 2.2 million LPs was).  The decision is
 *   selectable  <=>  dist_i > tol * s_i,
 *   s_i = max(max_j ||k_j - k_i||_1, max_j ||k_j||_1)
 * (the spread of the set seen from k_i, or the magnitude of the keys if larger: the
 * rounding error a computed key carries is relative to its magnitude).  The default
 * tol = 1e-12 (LNK_GEOM_SEL_TOL) sits above rounding noise (exactly degenerate sets
 * computed in double, e.g. a midpoint or centroid of other keys, keys centred into a
 * hyperplane or collinear keys, come out at 1e-16..1e-15; the certificates' own
 * rounding is below d * 1.1e-16, 6e-14 at d = 512) and below the thinnest margins of
 * random sets in the study (LayerNorm outputs of up to 60 keys on a circle, d = 3, come
 * down to 3e-10: a tolerance of 1e-9 would misclassify some of them).  Duplicate
 * keys have distance 0: every copy is unselectable.  A set of one key is
 * selectable.  Rank-deficient sets (keys in a hyperplane or on a line) need no
 * special case: the l1 residual absorbs whatever the equality constraints cannot
 * meet.  Cheap pre-tests decide most keys without an LP: q = k_i and
 * q = k_i - centroid each certify dist_i >= min_j q.(k_i - k_j) / ||q||_inf
 * (so the key with the largest norm, and every key of a set on a sphere, never
 * needs an LP), and q = C^{-1} (k_i - centroid) with C the keys' covariance (affine
 * invariant: it works as well on anisotropic sets).
 */
#ifndef LNKIT_GEOMETRY_H
#define LNKIT_GEOMETRY_H

#include <stdint.h>
#include "lnkit/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ norms */

typedef enum {
    LNK_GEOM_NONE = 0,      /* identity */
    LNK_GEOM_CENTER = 1,    /* P: subtract the mean of the entries */
    LNK_GEOM_SCALE = 2,     /* S: sqrt(d) x / ||x|| (x = 0 stays 0) */
    LNK_GEOM_LAYERNORM = 3, /* (x - mu) / sqrt(var + eps) */
    LNK_GEOM_RMSNORM = 4    /* x / sqrt(mean(x^2) + eps) */
} lnk_geom_norm;

/* "none", "center", "scale", "layernorm", "rmsnorm". */
const char *lnk_geom_norm_name(lnk_geom_norm k);
/* Parse one of those names; LNK_EINVAL naming the value otherwise. */
int lnk_geom_norm_parse(const char *s, lnk_geom_norm *k);

/* One vector of length d (y may alias x). */
void lnk_geom_center(const double *x, double *y, int d);
void lnk_geom_scale(const double *x, double *y, int d);
void lnk_geom_layernorm(const double *x, double *y, int d, double eps);
void lnk_geom_rmsnorm(const double *x, double *y, int d, double eps);

/* Y = N(X) for every row of X [n, d] (Y may alias X).  h = 1: over the whole row;
 * h > 1: over each slice of width d/h (per-head norm).  eps is used by layernorm
 * and rmsnorm only.  LNK_EINVAL if n < 0, d < 1, h < 1, d % h != 0, eps < 0. */
int lnk_geom_apply(lnk_geom_norm kind, const double *X, double *Y, int n, int d, int h,
                   double eps);

/* ------------------------------------------------------------- statistics */

/* <x,1> / (||x|| sqrt(d)); 0 for x = 0. */
double lnk_geom_cos_ones(const double *x, int d);
/* ||x|| / sqrt(d) (1 on the LayerNorm sphere with eps = 0). */
double lnk_geom_norm_ratio(const double *x, int d);
/* Mean of the entries, <x,1>/d. */
double lnk_geom_mean(const double *x, int d);
/* Angle between x and the line spanned by 1, in degrees, folded into [0, 90]:
 * acos(|cos to 1|); 90 for x = 0 (orthogonal to everything). */
double lnk_geom_angle_ones(const double *x, int d);
/* Per head slice j of width d/h: cos to 1 (of length d/h), norm ratio, mean.
 * Any of the output arrays (length h) may be NULL.  LNK_EINVAL if d % h != 0. */
int lnk_geom_head_stats(const double *x, int d, int h, double *cos, double *ratio,
                        double *mean);

/* --------------------------------------------------------- selectability */

#define LNK_GEOM_SEL_TOL 1e-12

typedef struct {
    int n_pretest;        /* keys decided without an LP (pre-test or duplicate) */
    int n_lp;             /* keys decided by a floating-point GLPK LP */
    int n_ambiguous;      /* of those, keys whose certified bounds still contain tol */
    int n_near;           /* selectable keys with rel. distance <= 1e3 tol (near the boundary) */
    double min_sel_dist;  /* smallest certified relative distance of a selectable key
                             decided by an LP (lower bound; INFINITY if none) */
} lnk_geom_sel_info;

/* sel[i] = 1 if key i (row i of K [n, d]) is selectable, 0 if not.  tol <= 0 means
 * LNK_GEOM_SEL_TOL.  info may be NULL; it is overwritten (not accumulated).
 * Errors: n < 1 or d < 1 (LNK_EINVAL), NaN/inf in K (LNK_ENONFINITE naming the row
 * and column), GLPK failure (LNK_EINVAL naming its return code), out of memory. */
int lnk_geom_selectable(const double *K, int n, int d, double tol, int *sel,
                        lnk_geom_sel_info *info);
/* lnk_geom_selectable reporting its progress (the library never prints):
 * fn(ctx, done, n) after each key decided, keys in order (a pre-tested key
 * costs far less than one decided by an LP).  fn NULL: none.  Same verdicts. */
typedef void lnk_geom_progress_fn(void *ctx, int done, int total);
int lnk_geom_selectable_progress(const double *K, int n, int d, double tol, int *sel,
                                 lnk_geom_sel_info *info, lnk_geom_progress_fn *fn, void *ctx);

/* The relative l1 distance dist_i / s_i of key i to the hull of the others, always
 * by LP (no pre-test): in [0, 1]; 0 when all keys equal.  For tests and
 * near-boundary reports.  The value is GLPK's, kept inside the certified interval of
 * its primal and dual solutions; *ambiguous (may be NULL) is set to 1 when that
 * interval still contains tol. */
int lnk_geom_hull_dist(const double *K, int n, int d, int i, double tol, double *dist,
                       int *ambiguous);

/* Number of unselectable keys of a set (convenience over lnk_geom_selectable). */
int lnk_geom_count_unselectable(const double *K, int n, int d, double tol, int *count,
                                lnk_geom_sel_info *info);

/* ------------------------------------------------------ random-key cells */

/* Key distributions of the random-key study. */
typedef enum {
    LNK_GEOM_KEYS_GAUSS = 0,  /* k_ic ~ N(0, 1) i.i.d. */
    LNK_GEOM_KEYS_OFFSET = 1  /* k_i = mu + s .* z_i: a common offset mu_c ~ N(1, 1) (mean 1
                                 along the all-ones direction plus a random part) and
                                 anisotropic scales s_c = exp(N(0, 1)), drawn once per set */
} lnk_geom_keydist;

/* "gauss", "offset". */
const char *lnk_geom_keydist_name(lnk_geom_keydist k);

/* n keys [n, d] from a GSL mt19937 stream seeded with seed: first the n d values z,
 * then (offset only) mu, then log s.  The same seed gives the same z for both
 * distributions, so the offset keys are an affine image of the Gaussian ones. */
int lnk_geom_random_keys(lnk_geom_keydist dist, int n, int d, uint64_t seed, double *K);

/* One cell of the selectability heat map. */
typedef struct {
    int runs;
    double frac_any;      /* fraction of runs with at least one unselectable key */
    double mean_frac;     /* mean over runs of the fraction of unselectable keys */
    long n_lp, n_ambiguous, n_near;
    double min_sel_dist;  /* as in lnk_geom_sel_info, over all runs */
} lnk_geom_cell;

/* runs sets of n random keys (run r uses seed lnk_geom_run_seed(seed, n, d, r), so
 * every norm and both distributions see the same z), each normalised by norm with
 * eps = 0 (S and LN = S(P) exactly), then lnk_geom_selectable with tol. */
int lnk_geom_heat_cell(lnk_geom_keydist dist, lnk_geom_norm norm, int n, int d, int runs,
                       uint64_t seed, double tol, lnk_geom_cell *out);
uint64_t lnk_geom_run_seed(uint64_t seed, int n, int d, int run);

/* ---------------------------------------------------- attention statistics */

/* Row entropy -sum p ln p in nats (0 ln 0 = 0). */
double lnk_geom_entropy(const double *p, int n);

typedef struct {
    int n_rows;         /* query rows used (non-pad) */
    double ent_mean;    /* mean row entropy over those rows */
    double ent_min;     /* smallest row entropy */
    double col_mass;    /* max_j (1/n_rows) sum_t A[t, j]: the "vertical stripe" */
    int col_argmax;     /* the j of col_mass */
} lnk_geom_map_stat;

/* Statistics of one attention map A [Tq, Tk] (rows are query positions).  qpad
 * (may be NULL) marks query rows to skip (1 = pad).  LNK_EINVAL if no row is left. */
int lnk_geom_map_stats(const double *A, int Tq, int Tk, const uint8_t *qpad,
                       lnk_geom_map_stat *st);

/* An attention unit of a model (stack, unit, layer, cross, causal; lnkit/model.h). */
typedef lnk_attn_unit lnk_geom_unit;

/* The attention units of the model of a workspace (encoder first, then decoder,
 * in order); returns their number, writes at most max of them to out (may be NULL). */
int lnk_geom_attn_units(const lnk_workspace *ws, lnk_geom_unit *out, int max);

/* Per attention unit and head, from the workspace of the last lnk_model_eval:
 * statistics over the batch. */
typedef struct {
    lnk_geom_unit u;
    int head;
    double ent_mean;     /* mean row entropy over every non-pad query row of the batch */
    double ent_min;      /* smallest such row entropy */
    double col_mass;     /* mean over sequences of max_j (1/T_b) sum_t A[t, j] */
    double col_mass_max; /* largest per-sequence column mass */
    double logit_max;    /* largest allowed logit q.k / sqrt(d_k), recomputed from the
                            (qk-normed) queries and keys */
} lnk_geom_attn_stat;

/* *out gets a malloc'd array (caller frees) of n_units x h entries, unit-major. */
int lnk_geom_model_attn(const lnk_workspace *ws, lnk_geom_attn_stat **out, int *n_out);

/* Activations of an attention unit after lnk_model_eval, on its key side. */
typedef enum {
    LNK_GEOM_NORM_IN = 0,   /* input of the norm whose output the attention reads
                               (Pre-LN: x; Post-LN: the previous sum x + F(x); for
                               the first Post-LN unit there is no norm: the embedding) */
    LNK_GEOM_NORM_OUT = 1,  /* what the attention reads (key side), [R, d] */
    LNK_GEOM_KEYS = 2,      /* K = X Wk + bk, [R, d] (head j: columns j d_k ..) */
    LNK_GEOM_KEYS_QK = 3,   /* K after the per-head qk_norm (== KEYS without it) */
    LNK_GEOM_QUERIES = 4,   /* Q = X Wq + bq, [Rq, d] */
    LNK_GEOM_QUERIES_QK = 5 /* Q after the qk_norm */
} lnk_geom_stage;

/* rows: the [B*T, d] row-major activation; B, T: sequences and positions per
 * sequence; pad (may be NULL): [B*T] 1 where the position is <pad>. */
int lnk_geom_unit_rows(const lnk_workspace *ws, const lnk_geom_unit *u, lnk_geom_stage st,
                       const double **rows, int *B, int *T, const uint8_t **pad);

#ifdef __cplusplus
}
#endif
#endif
