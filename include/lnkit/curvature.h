/* lnkit: curvature of a symmetric operator: Lanczos, extremal eigenpairs,
 * trace estimation, spectral density by stochastic Lanczos quadrature.
 *
 * The routines see only an operator y = A x on n-vectors (lnk_operator), so
 * they are tested on plain matrices and reused for the model's Hessian, a
 * block of it, or a data-set sum (see include/lnkit/hessian.h).
 *
 * Conventions.  Everything is double precision.  Functions that can fail
 * return LNK_OK or a status with a one-line lnk_error message naming the bad
 * argument; an error returned by the operator's apply is passed through
 * unchanged (its message kept).  Vectors of a basis or a set of Ritz vectors
 * are stored one after another (row-major k x n: vector i at X + i*n).
 * Random vectors come from GSL mt19937 streams derived from (seed, stream) by
 * a splitmix64 hash (mt19937 takes a 32-bit seed), so a result depends only on
 * its seed, never on the thread count or on what ran before.  n must be at
 * most INT_MAX (the CBLAS index type).
 *
 * Cost is counted in operator applications ("applies", one H v each for the
 * Hessian) plus the vector work stated per routine.
 */
#ifndef LNKIT_CURVATURE_H
#define LNKIT_CURVATURE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Distributed vectors.  With a group, each of `size` processes holds the
 * slice [offset, offset + n) of every vector of length n_global (op->n = n is
 * the local length), apply maps slices to slices (it communicates inside),
 * and every dot product and norm is a local one followed by sum(), which must
 * add count doubles element-wise over the group and give every member the
 * same bits (lnk_comm_sum does, in rank order).  Random vectors are those of
 * the one-process run, sliced: all n_global values are drawn and the slice
 * kept, so a distributed run follows the same Krylov space as a single one
 * and agrees with it up to rounding (tests: 1e-12).  All members compute the
 * same tridiagonal T bitwise, so they take the same decisions (lnk_eigs and
 * lnk_slq check it: an error if a member's T differs).  Memory per member for
 * a basis falls as 1/size.  Progress callbacks must return the same value on
 * every member.  LIGHT mode reproduces across runs with the same group
 * size, but not across sizes: without reorthogonalisation rounding grows
 * (SLQ nodes of 2 ranks vs 1 differed by 0.6 in a test), FULL agrees to 1e-14. */
typedef struct lnk_group {
    int rank, size;
    size_t n_global, offset;
    int (*sum)(void *ctx, double *x, int count);
    void *ctx;
} lnk_group;

/* A symmetric linear operator.  apply writes y = A x (x and y do not alias)
 * and returns LNK_OK or an error status (with lnk_error's message).  group:
 * NULL for a one-process operator, else see "Distributed vectors" above. */
typedef struct {
    size_t n;
    void *ctx;
    int (*apply)(void *ctx, const double *x, double *y);
    const lnk_group *group;
} lnk_operator;

/* Check that op is usable (non-NULL, apply set, 1 <= n <= INT_MAX).  what
 * names the operator in the message ("operator" if NULL). */
int lnk_operator_check(const lnk_operator *op, const char *what);

/* A progress report: done of total units (Lanczos steps, probes), seconds
 * since the routine started.  Return 0 to go on, nonzero to stop early: the
 * routine then returns LNK_EINVAL with a "cancelled" message and no result. */
typedef int lnk_progress_fn(void *ctx, int done, int total, double elapsed);

/* ================================================================ Lanczos
 *
 * Lanczos on A from a unit start vector v_0 builds an orthonormal basis
 * v_0..v_{j-1} of the Krylov space and the tridiagonal T_j = V^T A V with
 * diagonal alpha[0..j) and off-diagonal beta[0..j-1):
 *     A v_i = beta[i-1] v_{i-1} + alpha[i] v_i + beta[i] v_{i+1}.
 * One step (Paige's ordering): w = A v_i - beta[i-1] v_{i-1};
 * alpha[i] = v_i.w; w -= alpha[i] v_i; then
 *
 * LNK_LANCZOS_FULL: the basis v_0..v_j is stored, and kept orthogonal enough
 *   that T has no ghost copies: its Ritz values are those of A restricted to
 *   an orthonormal basis of the Krylov space to O(eps ||A||), and a Ritz pair
 *   (theta, y = V s) has residual ||A y - theta y|| = beta[j-1] |s_{j-1}| up
 *   to O(sqrt(eps) ||A||).  Memory (m+1) n doubles (the basis).  How (the
 *   workspace's reorth setting):
 *   LNK_REORTH_PARTIAL (default): partial reorthogonalisation (Simon 1984;
 *     as in Larsen's PROPACK).  Simon's omega recurrence, from alpha and beta
 *     alone (O(j) flops a step), bounds the loss of orthogonality
 *     omega_{j+1,k} ~ v_{j+1}.v_k; only when max_k |omega| exceeds
 *     delta = sqrt(eps / m) is w reorthogonalised, against the runs of basis
 *     vectors around the large omegas (those with |omega| > eta =
 *     eps^(3/4) / sqrt(m)), and once more at the next step; the basis stays
 *     semi-orthogonal (|v_i.v_k| <= delta), which keeps T's eigenvalues as
 *     accurate as full reorthogonalisation's (Simon: to O(eps ||A||)).  A
 *     reorthogonalisation is classical Gram-Schmidt with the DGKS test for a
 *     second pass (again only if ||w|| fell below 1/sqrt(2) of what it was);
 *     the coefficient pass reads the chosen rows once, and the update and the
 *     next pass's coefficients are done together on column blocks that stay
 *     in cache, so a reorthogonalisation reads them 2 or 3 times.  Extended
 *     local reorthogonalisation (against v_{j-1}, v_j) when beta drops below
 *     beta[j-1] / sqrt(2).  Cost: most steps 6n flops and no basis access;
 *     reorthogonalisations come in pairs every few steps once Ritz values
 *     converge (counted in n_reorth, basis rows read in reorth_rows).
 *   LNK_REORTH_ALWAYS: full reorthogonalisation at every step, two passes of
 *     classical Gram-Schmidt of w against all stored v_0..v_i
 *     (lnk_orthogonalize; the v_i coefficients are added to alpha[i]):
 *     orthogonality to O(eps) ("twice is enough"); 4 (i+1) n flops a step,
 *     memory bound (the basis is read 4 times).  The reference the tests
 *     compare PARTIAL with.
 *   Then beta[i] = ||w||, v_{i+1} = w / beta[i].
 *
 * LNK_LANCZOS_LIGHT: no reorthogonalisation (the three-term recurrence
 *   only); memory 4 n doubles whatever m, 6n flops per step.  Orthogonality is
 *   lost as Ritz values converge (Paige), and converged eigenvalues reappear
 *   as extra copies ("ghosts") in T.  Eigenvalues are still accurate: every
 *   converged Ritz value is a true eigenvalue to O(eps ||A||) (Paige 1980),
 *   and ghosts are removed by the Cullum-Willoughby test (lnk_lanczos_ghosts).
 *   Ritz vectors need a second pass that regenerates the basis (j-1 more
 *   applies).  For SLQ the ghosts need no removal: a multiple copy splits the
 *   weight of its eigenvalue among the copies, and the Gauss quadrature of
 *   finite-precision Lanczos stays close to that of exact Lanczos (Greenbaum
 *   1989; Knizhnerman 1996); tests/test_slq.c compares both modes.
 *
 * Breakdown.  beta[i] <= breakdown_rtol * tnorm (default rtol max(n,100) eps,
 * tnorm = max_i |alpha[i]| + beta[i-1] + beta[i], a running estimate of
 * ||T||) means the Krylov space is invariant to working accuracy.  Then
 *   LNK_BREAKDOWN_STOP: done = invariant = 1; T_j's Ritz values are exact
 *     eigenvalues (to O(beta)) and its quadrature exact for v_0 (what SLQ uses);
 *   LNK_BREAKDOWN_RESTART (FULL only; default there): beta[i] is set to 0, a
 *     new Gaussian vector (stream 1 + restart count of the seed) is
 *     orthogonalised twice against the basis and the run goes on in the
 *     complement; T becomes block diagonal.  This is how a multiple
 *     eigenvalue is found more than once.  If the new vector has nothing left
 *     after orthogonalisation (norm < 1e-8 of its start, i.e. the basis spans
 *     R^n) the run stops as invariant.
 * LIGHT mode always stops at a breakdown (it has no basis to restart
 * against).  In both modes a run stops after n steps: there are no more than
 * n orthogonal directions, so n < m is fine.  In FULL mode that is an
 * invariant stop and T_n holds A's spectrum (each eigenvalue once per Krylov
 * block); in LIGHT mode it is only a step limit (done = 1, invariant = 0):
 * orthogonality may be lost by then, so some eigenvalues may still be
 * missing.  Use FULL mode whenever (m+1) n doubles fit.
 */
enum { LNK_LANCZOS_FULL = 0, LNK_LANCZOS_LIGHT = 1 };
enum { LNK_REORTH_PARTIAL = 0, LNK_REORTH_ALWAYS = 1 };
enum { LNK_BREAKDOWN_RESTART = 0, LNK_BREAKDOWN_STOP = 1 };
/* FULL: when a new basis row's pages are faulted in (the first write to fresh
 * memory; on a VM about 0.1 CPU-second for the 54 MB of a row at config (b)).
 * AHEAD: row j+2 by a helper thread while step j's product runs (it takes a
 * core from the product where the product has them all); STEP: row j+1 on
 * the caller before step j's product; NONE: by the product's own first write.
 * Where and when only: the results are the same bits. */
enum { LNK_PREFAULT_AHEAD = 0, LNK_PREFAULT_STEP = 1, LNK_PREFAULT_NONE = 2 };

typedef struct {
    /* set by lnk_lanczos_alloc, read-only */
    size_t n;
    int max_steps;          /* m: room for m steps */
    int mode;               /* LNK_LANCZOS_FULL or LNK_LANCZOS_LIGHT */
    /* settings: may be changed after alloc, before lnk_lanczos_start */
    int on_breakdown;       /* LNK_BREAKDOWN_RESTART (FULL default) or _STOP */
    int reorth;             /* FULL: LNK_REORTH_PARTIAL (default) or LNK_REORTH_ALWAYS */
    double breakdown_rtol;  /* default max(n, 100) * DBL_EPSILON */
    const lnk_group *group; /* NULL (default) or the group of a distributed operator:
                               n is then the local slice (lnk_lanczos_distribute) */
    int prefault;           /* FULL: LNK_PREFAULT_AHEAD (default), _STEP or _NONE */
    /* results, read-only */
    int steps;              /* j: steps done; T_j is j x j */
    double *alpha;          /* [m] diagonal of T */
    double *beta;           /* [m] beta[i] couples v_i and v_{i+1}; beta[j-1] is the
                               norm of the last residual; 0 where a restart began */
    double *V;              /* FULL: (m+1) x n, row i = v_i, rows 0..j valid (row j is
                               the next vector unless done); LIGHT: NULL */
    int done;               /* no further step possible (invariant or restart failed) */
    int invariant;          /* stopped at an invariant subspace */
    int n_restarts;         /* breakdowns handled by a restart */
    long n_applies;         /* operator applications in this run (with LIGHT second passes) */
    double tnorm;           /* running estimate of ||T|| (see Breakdown) */
    int n_reorth;           /* FULL: steps whose w was reorthogonalised against the basis */
    double reorth_rows;     /* FULL: basis rows read by reorthogonalisations (n doubles each) */
    double t_apply, t_orth; /* seconds spent in apply / in the vector work, this run */
    double last_apply, last_orth; /* the same for the last step */
    double t_touch, last_touch; /* FULL: of t_orth, last_orth: faulting in new basis rows
                               (costly on a VM) outside the product, i.e. what a helper thread
                               did not finish while the product ran, this run / last step */
    /* private */
    uint64_t seed;
    int started;
    double *v0, *vprev, *vcur, *w; /* LIGHT: start vector and the three-term window */
    double *h;              /* [2(m+1)] Gram-Schmidt coefficients */
    double *om, *om_prev;   /* [m+1] PARTIAL: omega_{j,k}, omega_{j-1,k} estimates */
    int *ivl, n_ivl;        /* PARTIAL: row runs [lo, hi) of the last reorthogonalisation */
    int force;              /* PARTIAL: reorthogonalise again at the next step */
    int touched;            /* FULL: basis rows 0..touched faulted in (written or populated) */
    int own_V;              /* FULL: V was allocated here (not given to alloc_basis) */
} lnk_lanczos;

/* Workspace for up to max_steps steps on n-vectors (1 <= max_steps; steps
 * beyond n are never taken).  Returns NULL on error (message in lnk_errmsg). */
lnk_lanczos *lnk_lanczos_alloc(size_t n, int max_steps, int mode);
void lnk_lanczos_free(lnk_lanczos *w);
/* The same with the FULL basis in the caller's memory: basis (room for
 * (max_steps + 1) n doubles, e.g. a file mapped by src/io/checkpoint.c) is
 * used as V and not freed; NULL: allocated as by lnk_lanczos_alloc. */
lnk_lanczos *lnk_lanczos_alloc_basis(size_t n, int max_steps, int mode, double *basis);
/* Bytes lnk_lanczos_alloc(n, max_steps, mode) allocates (for planning). */
size_t lnk_lanczos_bytes(size_t n, int max_steps, int mode);

/* Make w work on slices of the group's vectors (w->n must be the local
 * length); sets the breakdown default from n_global.  Before start. */
int lnk_lanczos_distribute(lnk_lanczos *w, const lnk_group *g);

/* Begin a run: v0 (n values, copied and normalised; must be finite and
 * nonzero) or, if v0 is NULL, a Gaussian vector from stream 0 of seed.  The
 * seed also drives restarts.  Resets steps and counters. */
int lnk_lanczos_start(lnk_lanczos *w, const double *v0, uint64_t seed);
/* One step (see above).  An error if the run is done or at max_steps. */
int lnk_lanczos_step(lnk_lanczos *w, const lnk_operator *op);
/* Steps until `steps` more are done, the run is done, or max_steps. */
int lnk_lanczos_run(lnk_lanczos *w, const lnk_operator *op, int steps);

/* The state of a run, to save it and continue later with the same bits
 * (see "Checkpoints" below).  get: pointers into w (valid until its next
 * step); set: copied into w, which must have been allocated with the same n,
 * max_steps and mode (and distributed alike); the run then goes on as if it
 * had never stopped.  A FULL run's basis rows 0..steps are not part of it:
 * they must already be in w->V (a basis given to lnk_lanczos_alloc_basis,
 * e.g. a mapped file).  alpha, beta: [max_steps]; om, om_prev: [max_steps +
 * 1] and ivl: [2 (max_steps + 1)] (FULL; the partial reorthogonalisation's
 * omega estimates and row runs); v0, vprev, vcur: [n] (LIGHT). */
typedef struct {
    int mode, max_steps, steps, done, invariant, n_restarts, n_reorth, force, n_ivl;
    long n_applies;
    uint64_t seed;
    double tnorm, reorth_rows;
    const double *alpha, *beta, *om, *om_prev;
    const int *ivl;
    const double *v0, *vprev, *vcur;
} lnk_lanczos_state;
void lnk_lanczos_get_state(const lnk_lanczos *w, lnk_lanczos_state *s);
int lnk_lanczos_set_state(lnk_lanczos *w, const lnk_lanczos_state *s);

/* Eigen-decomposition of T_j (j = w->steps >= 1) by LAPACKE_dstevr (MRRR,
 * a symmetric tridiagonal solver).  theta[0..j) ascending; S (NULL: values
 * only) is j x j with S[r*j + i] = component r of the unit eigenvector of
 * theta[i].  SLQ weights are S[i]^2 (row 0); residual bounds are
 * beta[j-1] |S[(j-1)*j + i]|. */
int lnk_lanczos_ritz(const lnk_lanczos *w, double *theta, double *S);

/* Ritz vectors y_i = V S[:, idx[i]] for i < k into Y (k x n), each
 * normalised to unit length with its largest-magnitude entry positive.  FULL:
 * from the stored basis (2 j n flops each).  LIGHT: a second pass regenerates
 * v_0..v_{j-1} with the stored alpha, beta and op (j-1 applies, 3n extra
 * doubles); the run can be continued afterwards. */
int lnk_lanczos_ritz_vectors(lnk_lanczos *w, const lnk_operator *op, const double *S,
                             const int *idx, int k, double *Y);

/* Cullum-Willoughby identification of the Ritz values theta (ascending, from
 * lnk_lanczos_ritz; S optional) of a LIGHT run:
 *  - values within tol of each other form a group (numerically multiple):
 *    one member is LNK_RITZ_GOOD (with S: the one with the smallest residual
 *    bound), the others LNK_RITZ_COPY (ghost copies of a converged value);
 *  - a simple value within tol of an eigenvalue of T-hat (T_j without its
 *    first row and column) is LNK_RITZ_SPURIOUS: it is not a Ritz value of
 *    v_0's Krylov space, its first eigenvector component being ~0
 *    (|theta - mu| <= beta[0] |s_0| / sqrt(1 - s_0^2) for some mu of T-hat);
 *  - the rest are LNK_RITZ_GOOD.
 * tol = 500 (j + 1000) eps max_i(|alpha_i|, beta_i), our choice, of the order
 * used by Cullum and Willoughby.  For a FULL run every value is GOOD (it
 * has no ghosts; a restarted FULL run's T is block diagonal and the test
 * would not apply).  A genuinely multiple eigenvalue is merged with its
 * ghosts: LIGHT mode reports each distinct eigenvalue once.  On the tests'
 * problems the filtered extremal values agree with a FULL run's to 1e-15
 * relative (8e-16 on a diagonal n = 1500 spectrum with outliers, clusters and
 * repeated values; 7e-15 from dsyevr's on a GOE matrix of n = 400), and
 * exactly one good value is left at each converged simple eigenvalue (where
 * the raw T_250 had 10 copies). */
enum { LNK_RITZ_GOOD = 0, LNK_RITZ_SPURIOUS = 1, LNK_RITZ_COPY = 2 };
int lnk_lanczos_ghosts(const lnk_lanczos *w, const double *theta, const double *S, int *flag);

/* Two passes of classical Gram-Schmidt of x against the k orthonormal rows of
 * V (k x n): x -= V^T (V x), twice (2 dgemv each, 4 k n flops).  h (room for
 * 2k doubles) gets the summed coefficients in h[0..k).  Returns ||x||
 * afterwards. */
double lnk_orthogonalize(const double *V, int k, size_t n, double *x, double *h);

/* ============================================================ checkpoints
 *
 * A long run (days at full size) saves its state and continues from it with
 * bitwise the result of an uninterrupted run.  The routines stay numerics:
 * lnk_eigs, lnk_trace and lnk_slq hand their state to opts.checkpoint after
 * every operator application, and start from opts.resume, a state handed out
 * before (by an earlier process, read back from a file: src/io/checkpoint.c
 * does the saving for lnkit's --checkpoint).  The callback decides whether to
 * save; it returns LNK_OK, or an error status (with lnk_error's message) that
 * the routine returns.  must = 1 asks it to save now: the routine is about to
 * overwrite basis rows that an earlier state refers to (lnk_slq between runs).
 * A state's pointers are valid during the call only.  A resumed run must have
 * the same operator (the same bits, the same group size), options and basis
 * memory as the run that handed the state out: the caller checks that, the
 * routine trusts it.  No random-number state is saved: a stream is replayed to
 * its position on resume (O(n_global) draws a vector, no applies).  elapsed:
 * seconds of the run so far, over all its processes (results and progress
 * count from it). */

/* lnk_eigs: the Lanczos run, and then the explicit residuals done so far
 * (n_resid > 0 once the run has stopped; resid in result order).  A LIGHT
 * run resumed after its Lanczos steps does its second pass (steps - 1
 * applies) again. */
typedef struct {
    lnk_lanczos_state lanczos;
    int n_resid;
    const double *resid;
    double elapsed;
} lnk_eigs_state;
typedef int lnk_eigs_checkpoint_fn(void *ctx, const lnk_eigs_state *st, int must);

/* lnk_trace: applies done; phase 0 for Hutchinson; Hutch++: phase 0 the
 * sketch columns A s_i, 1 the exact part q_i^T A q_i (partial: their sum so
 * far), 2 the deflated probes; index: vectors done in the phase; samples: the
 * quadratic forms of the probes so far; rows (n values each, this process's
 * slice): phase 0 the index columns A s_i done, phases 1 and 2 the sketch's
 * orthonormal basis Q (n_rows = s). */
typedef struct {
    int applies, phase, index, n_samples, n_rows;
    double partial;
    const double *samples, *rows;
    double elapsed;
} lnk_trace_state;
typedef int lnk_trace_checkpoint_fn(void *ctx, const lnk_trace_state *st, int must);

/* lnk_slq: `run` runs finished, with their results (offset [run + 1], node and
 * weight [offset[run]], steps and invariant [run], their applies n_applies);
 * lanczos: run `run` so far (steps 0: not begun); steps_done: the progress
 * count (steps over all runs). */
typedef struct {
    int run, steps_done;
    long n_applies;
    const int *offset, *steps, *invariant;
    const double *node, *weight;
    lnk_lanczos_state lanczos;
    double elapsed;
} lnk_slq_state;
typedef int lnk_slq_checkpoint_fn(void *ctx, const lnk_slq_state *st, int must);

/* ====================================================== extremal eigenpairs
 *
 * lnk_eigs: the k_top largest and k_bottom smallest (most negative) eigenvalues
 * of op with residual norms and, on request, unit eigenvectors, by Lanczos
 * from one start vector.  After every step the Ritz values of T_j are
 * computed (dstevr, O(j^2)); in LIGHT mode ghosts are removed first
 * (lnk_lanczos_ghosts).  Scale = max |theta| over the kept Ritz values (a lower
 * bound on ||A|| that converges to it).  The run stops
 *   LNK_EIGS_TOL        when every wanted pair's bound beta[j-1] |s_{j-1,i}|
 *                       is <= tol * scale (LIGHT: tol * scale / 4, because
 *                       without an orthonormal basis the residual of the
 *                       normalised Ritz vector is about bound / ||V s||, seen
 *                       up to 3.6x the bound on random matrices);
 *   LNK_EIGS_MAXSTEPS   at max_steps;
 *   LNK_EIGS_INVARIANT  when Lanczos is done at an invariant subspace (a
 *                       breakdown with no restart possible, or n FULL steps):
 *                       the Ritz values are then exact (LIGHT mode's n-step
 *                       end counts as LNK_EIGS_MAXSTEPS);
 *   LNK_EIGS_CANCELLED  when the progress callback returns nonzero.
 * Then the wanted Ritz vectors are formed and every residual is computed
 * explicitly, residual = ||A y - theta y|| with ||y|| = 1 (k more applies; in
 * LIGHT mode also the second pass, j-1 applies), and converged[i] =
 * (residual <= tol * scale).  The eigenvalue error is at most the residual,
 * and at most residual^2 / gap when the eigenvalue is separated by gap from
 * the rest of the spectrum.
 *
 * Limitations of a single-vector Krylov method: in exact arithmetic an
 * eigenvalue is found once per Krylov block, so a multiple eigenvalue is
 * certain to be reported with its multiplicity only when breakdowns and
 * restarts (FULL mode) expose its other copies.  In FULL mode rounding errors
 * also seed the other eigenvectors of a multiple eigenvalue once its first
 * copy has converged, so further copies often appear after more steps (the
 * tests see it) but not surely: top-k may list a multiple eigenvalue fewer
 * times than dsyevr.  LIGHT mode lists each distinct value once.  An
 * eigenvector orthogonal to the start vector is not seen (probability 0 for
 * a random start).
 *
 * Errors (LNK_EINVAL, naming the argument): NULL or empty op, k_top or
 * k_bottom < 0 or > n, k_top + k_bottom == 0, max_steps < min(k_top +
 * k_bottom, n), tol < 0 or not finite, an unknown mode.
 */
enum { LNK_EIGS_TOL = 0, LNK_EIGS_MAXSTEPS = 1, LNK_EIGS_INVARIANT = 2, LNK_EIGS_CANCELLED = 3 };

/* A progress report after each Lanczos step. */
typedef struct {
    int step, max_steps;
    int n_top, n_bottom;      /* valid entries below */
    const double *top;        /* current top Ritz values, descending */
    const double *bottom;     /* current bottom Ritz values, ascending */
    int n_converged;          /* wanted pairs whose bound already passes */
    double elapsed;           /* seconds since lnk_eigs began */
} lnk_eigs_progress;
typedef int lnk_eigs_progress_fn(void *ctx, const lnk_eigs_progress *p);

typedef struct {
    int k_top, k_bottom;      /* default 5, 0 */
    int max_steps;            /* default 200 (runs stop after n steps anyway) */
    double tol;               /* default 1e-6 (relative to max|theta|) */
    int mode;                 /* default LNK_LANCZOS_FULL */
    int reorth;               /* FULL: LNK_REORTH_PARTIAL (default) or _ALWAYS */
    int vectors;              /* 1: return the eigenvectors (default 0) */
    uint64_t seed;            /* start vector stream (default 0) */
    const double *v0;         /* start vector, or NULL (default): Gaussian from seed */
    lnk_eigs_progress_fn *progress; /* NULL: none */
    void *progress_ctx;
    double *basis;            /* FULL: memory for the basis, (min(max_steps, n) + 1) x n
                                 doubles (a mapped file), or NULL (default): allocated */
    lnk_eigs_checkpoint_fn *checkpoint; /* NULL: none (see "Checkpoints") */
    void *checkpoint_ctx;
    const lnk_eigs_state *resume; /* NULL (default) or the state to continue from */
} lnk_eigs_opts;
void lnk_eigs_opts_default(lnk_eigs_opts *o);

/* Pairs 0..n_top-1 are the top ones, largest first (index i = rank i);
 * pairs n_top..k-1 the bottom ones, smallest first.  The two lists never
 * share a Ritz value: when fewer than k_top + k_bottom were found (n <
 * k_top + k_bottom, an invariant subspace smaller than asked for, or LIGHT
 * mode with ghosts at max_steps), top takes up to k_top of them and bottom
 * the rest. */
typedef struct {
    int k, n_top, n_bottom;
    double *value;            /* [k] Ritz values */
    double *residual;         /* [k] ||A y - theta y||, computed with op */
    double *bound;            /* [k] beta[j-1] |s_{j-1,i}| at the end */
    int *converged;           /* [k] residual <= tol * scale */
    double *vectors;          /* k x n unit eigenvectors if opts.vectors, else NULL */
    double scale;             /* max |theta| */
    int steps;                /* Lanczos steps done */
    int stop;                 /* LNK_EIGS_TOL, _MAXSTEPS, _INVARIANT, _CANCELLED */
    int n_restarts;
    long n_applies;           /* all operator applications */
    int n_reorth;             /* FULL: steps that reorthogonalised against the basis */
    double reorth_rows;       /* FULL: basis rows (n doubles each) read doing so */
    double elapsed;           /* seconds */
} lnk_eigs_result;

int lnk_eigs(const lnk_operator *op, const lnk_eigs_opts *opts, lnk_eigs_result *res);
void lnk_eigs_result_free(lnk_eigs_result *r);
/* "tol", "max_steps", "invariant", "cancelled". */
const char *lnk_eigs_stop_name(int stop);

/* ================================================================== trace
 *
 * LNK_TRACE_HUTCHINSON: N Rademacher probes z_p (entries +-1, stream 0 of
 *   seed): estimate t = mean_p z_p^T A z_p (unbiased; variance
 *   2 sum_{i != j} A_ij^2 / N), standard error = sample sd (N-1 denominator) /
 *   sqrt(N).  N >= 2.  Cost N applies, 2 n doubles.
 * LNK_TRACE_HUTCHPP (Meyer, Musco, Musco, Woodruff 2021, "Hutch++"): budget
 *   N applies split in thirds: s = floor(N/3) (at most n) Rademacher columns S
 *   (stream 1), Q = orth(A S) (Householder QR, LAPACKE dgeqrf/dorgqr);
 *   t = tr(Q^T A Q) + mean_p g_p^T P A P g_p over g = N - 2s Rademacher probes
 *   g_p (stream 2), P = I - Q Q^T.  The first term is computed exactly (s
 *   applies), the second is Hutchinson on the deflated matrix P A P.  Our
 *   reading of its standard error: conditional on the sketch Q the first term
 *   has no variance, so std_error = sample sd of the g deflated samples /
 *   sqrt(g), Hutchinson's standard error of the residual part; it does not
 *   include the (unbiased, typically small) variation of tr(Q^T A Q) over
 *   sketches.  N >= 4 (s >= 1, g >= 2).  Memory (s + 2) n doubles.
 * The "within 4 standard errors" property is tested over a fixed seed set.
 */
enum { LNK_TRACE_HUTCHINSON = 0, LNK_TRACE_HUTCHPP = 1 };

typedef struct {
    int method;               /* default LNK_TRACE_HUTCHINSON */
    int probes;               /* N, the budget of applies; default 100 */
    uint64_t seed;            /* default 0 */
    lnk_progress_fn *progress; /* NULL: none; called after each apply */
    void *progress_ctx;
    lnk_trace_checkpoint_fn *checkpoint; /* NULL: none (see "Checkpoints") */
    void *checkpoint_ctx;
    const lnk_trace_state *resume; /* NULL (default) or the state to continue from */
} lnk_trace_opts;
void lnk_trace_opts_default(lnk_trace_opts *o);

typedef struct {
    double trace;             /* estimate */
    double std_error;         /* standard error (see above) */
    int probes;               /* applies used (N) */
    int samples;              /* random quadratic forms averaged (N, or g for Hutch++) */
    int sketch;               /* Hutch++: s; 0 for Hutchinson */
    double deflated;          /* Hutch++: tr(Q^T A Q); 0 for Hutchinson */
    double elapsed;           /* seconds */
} lnk_trace_result;

int lnk_trace(const lnk_operator *op, const lnk_trace_opts *opts, lnk_trace_result *res);
/* "hutchinson", "hutchpp". */
const char *lnk_trace_method_name(int method);

/* ======================================================= spectral density
 *
 * Stochastic Lanczos quadrature (MODEL.md §7).  For each run v < n_v a start
 * vector z_v (Rademacher or Gaussian entries, stream v of seed, so run v does
 * not depend on n_v) normalised to unit length; m Lanczos steps with
 * LNK_BREAKDOWN_STOP (an invariant subspace ends the run early: its
 * quadrature is then exact); nodes lambda_{v,i} = Ritz values of T, weights
 * tau_{v,i} = (first component of the i-th unit eigenvector of T)^2, which sum
 * to 1 per run.  The quadrature sum_i tau_i f(lambda_i) equals z^T f(A) z for
 * every polynomial f of degree <= 2j-1 (FULL mode; to rounding) and its CDF
 * sum_{lambda_i <= t} tau_i brackets z's spectral CDF at the nodes
 * (Chebyshev-Markov-Stieltjes), so it differs from it by at most the largest
 * weight near t.  E[z^T f(A) z] = tr f(A) / n, so the average over runs
 * estimates the spectral measure (1/n) sum_k delta(t - lambda_k).
 * Density: phi(t) = (1/n_v) sum_v sum_i tau_{v,i} N(t; lambda_{v,i}, sigma^2).
 * Cost n_v m applies; memory that of one Lanczos workspace (FULL (m+1) n,
 * LIGHT 4 n doubles) plus n.
 */
enum { LNK_SLQ_RADEMACHER = 0, LNK_SLQ_GAUSSIAN = 1 };

typedef struct {
    int runs;                 /* n_v, default 10 */
    int steps;                /* m, default 80 */
    int start;                /* LNK_SLQ_RADEMACHER (default) or LNK_SLQ_GAUSSIAN */
    int mode;                 /* LNK_LANCZOS_FULL (default) or LNK_LANCZOS_LIGHT */
    int reorth;               /* FULL: LNK_REORTH_PARTIAL (default) or _ALWAYS */
    uint64_t seed;            /* default 0 */
    lnk_progress_fn *progress; /* NULL: none; done/total count steps over all runs */
    void *progress_ctx;
    double *basis;            /* FULL: memory for one run's basis, (min(steps, n) + 1) x n
                                 doubles (a mapped file), or NULL (default): allocated */
    lnk_slq_checkpoint_fn *checkpoint; /* NULL: none (see "Checkpoints") */
    void *checkpoint_ctx;
    const lnk_slq_state *resume; /* NULL (default) or the state to continue from */
} lnk_slq_opts;
void lnk_slq_opts_default(lnk_slq_opts *o);

typedef struct {
    int runs;
    int *offset;              /* [runs+1]: run v's nodes are node[offset[v] .. offset[v+1]) */
    double *node;             /* Ritz values, ascending within a run */
    double *weight;           /* tau, summing to 1 within a run */
    int *steps;               /* [runs] Lanczos steps of each run (= its node count) */
    int *invariant;           /* [runs] 1 if the run ended at an invariant subspace */
    double node_min, node_max; /* over all runs */
    long n_applies;
    double elapsed;
} lnk_slq_result;

/* Errors: bad op, runs < 1, steps < 1, unknown start or mode. */
int lnk_slq(const lnk_operator *op, const lnk_slq_opts *opts, lnk_slq_result *res);
void lnk_slq_result_free(lnk_slq_result *r);

/* The quadrature CDF at t: (1/n_v) sum_v sum_{lambda_{v,i} <= t} tau_{v,i}. */
double lnk_slq_cdf(const lnk_slq_result *r, double t);

/* Grid of npts >= 2 equally spaced points from node_min - pad sigma to
 * node_max + pad sigma (pad >= 0; LNK_SLQ_PAD is a good default: the Gaussian
 * mass beyond 6 sigma is 1e-9).  Errors: sigma <= 0, pad < 0, npts < 2. */
#define LNK_SLQ_PAD 6.0
int lnk_slq_grid(const lnk_slq_result *r, double sigma, double pad, size_t npts, double *t);
/* The number of points that lnk_slq_grid needs for a spacing of at most
 * sigma / per_sigma: ceil((range + 2 pad sigma) / (sigma / per_sigma)) + 1
 * (0 if sigma <= 0 or per_sigma <= 0); a quotient within 1e-9 of an integer
 * counts as that integer, so that a sigma given as a fraction of the range
 * gives the same grid whatever the rounding (one process or several ranks).  With per_sigma >= 2 and pad >= 6
 * the trapezoid rule integrates phi to 1 within 1e-8 (the Gaussian is
 * smooth: the trapezoid error on a uniform grid decays like
 * exp(-2 pi^2 (sigma/h)^2)). */
size_t lnk_slq_grid_size(const lnk_slq_result *r, double sigma, double pad, double per_sigma);
/* phi(t[p]) for p < npts.  Kernel terms beyond 40 sigma are skipped (they are
 * < 1e-300).  Cost npts * (total nodes) exponentials.  Error: sigma <= 0. */
int lnk_slq_density(const lnk_slq_result *r, double sigma, const double *t, size_t npts,
                    double *phi);
/* Pooled densities of several SLQ results (seeds, models): one kernel width
 * and one grid for all, so that they can be compared and averaged.
 * lnk_slq_pool_grid: the union [lo, hi] of the results' node ranges, padded
 * by pad sigma on each side, with a spacing of at most sigma / per_sigma:
 * npts = ceil((hi - lo + 2 pad sigma) / (sigma / per_sigma)) + 1 points (the
 * quotient rounded as in lnk_slq_grid_size)
 * t[p] = a + w p / (npts - 1) in a malloc'd *t (caller frees); *lo, *hi (may be
 * NULL) get the range.  With sigma <= 0 only the range is computed (*t NULL,
 * *npts 0), for choosing sigma from it (lnk_sigma_from_kappa).
 * lnk_slq_pool_density: phi[p] = sum_i density_i(t[p]) / n, accumulated in
 * the order of r (the pooled density of n equally weighted results). */
int lnk_slq_pool_grid(const lnk_slq_result *const *r, int n, double sigma, double pad,
                      double per_sigma, double *lo, double *hi, double **t, size_t *npts);
int lnk_slq_pool_density(const lnk_slq_result *const *r, int n, double sigma, const double *t,
                         size_t npts, double *phi);
/* Trapezoid rule sum_p (t[p+1] - t[p]) (f[p] + f[p+1]) / 2 (0 if npts < 2). */
double lnk_trapezoid(const double *t, const double *f, size_t npts);

/* Kernel width conventions.  lnk_slq_density takes the standard deviation
 * sigma of the Gaussian kernel.  What other tools' parameters mean:
 *
 * lnk_sigma_from_variance: PyHessian (density_generate) and
 *   google/spectral-density (eigv_to_density) take `sigma_squared` v (default
 *   1e-5) and use the kernel VARIANCE v * max(1, lambda_max - lambda_min),
 *   where their lambda_max / lambda_min are the run-averaged largest /
 *   smallest nodes widened by 0.01 on each side.  This function returns
 *   sigma = sqrt(v * max(1, lambda_max - lambda_min)) for the range the caller
 *   passes (pass theirs to reproduce their width exactly).
 *
 * lnk_sigma_from_kappa: Papyan 2020 (JMLR 21, "Traces of class/cross-class
 *   structure pervade deep learning spectra", Alg. 2 LanczosApproxSpec, App.
 *   D.2; as in curvlinops' papyan2020traces): the spectrum [lambda_min,
 *   lambda_max] is widened by margin (default 0.05) of its width on each side
 *   and mapped to [-1, 1], where the kernel has sigma' = 2 / ((m-1) sqrt(8 ln
 *   kappa)), kappa > 1 (default 3), m = Lanczos steps.  Back in eigenvalue
 *   units this function returns
 *     sigma = (1 + 2 margin)(lambda_max - lambda_min) / ((m-1) sqrt(8 ln kappa)).
 *   (kappa is not a fraction of the range: the kernel falls to 1/kappa of
 *   its peak at half the mean spacing 2/(m-1) of m nodes on [-1, 1].)
 *
 * lnk_sigma_from_fraction: sigma = f (lambda_max - lambda_min), the plain
 *   "fraction of the spectral range" convention.
 *
 * Errors (LNK_EINVAL naming the argument): v <= 0, f <= 0, kappa <= 1,
 * m < 2, margin < 0, lambda_max < lambda_min, non-finite input, or a
 * resulting sigma that is not > 0 (a zero range with the kappa or fraction
 * conventions). */
int lnk_sigma_from_variance(double v, double lambda_min, double lambda_max, double *sigma);
int lnk_sigma_from_kappa(double kappa, int m, double margin, double lambda_min,
                         double lambda_max, double *sigma);
int lnk_sigma_from_fraction(double f, double lambda_min, double lambda_max, double *sigma);

/* The CSV writers of these results are I/O: lnkit/curvature_io.h. */

#ifdef __cplusplus
}
#endif
#endif
