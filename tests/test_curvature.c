/* Curvature library on plain matrices with known spectra: Lanczos (full and
 * light modes), extremal eigenpairs, trace estimators, SLQ density, kernel
 * width conventions, bad input.
 *
 * Known spectra are built as diag(lambda) or Q diag(lambda) Q^T with Q a
 * random orthogonal matrix (QR of a Gaussian matrix, LAPACKE dgeqrf/dorgqr);
 * reference eigenvalues come from the construction or from LAPACKE_dsyevr,
 * never from the code under test.  Seeds are fixed in advance (listed where
 * used); every seed of a set must pass. */
#include "testutil.h"

#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curvature/internal.h"
#include "lnkit/curvature.h"

#define assert_msg_has(s)                                                                   \
    do {                                                                                    \
        if (!strstr(lnk_errmsg(), (s)))                                                     \
            fail_msg("message \"%s\" lacks \"%s\"", lnk_errmsg(), (s));                     \
    } while (0)

/* ------------------------------------------------------------ operators */

typedef struct {
    int n;
    const double *A; /* row-major symmetric */
    long calls;
    int fail_at;     /* > 0: the fail_at-th call returns LNK_ENONFINITE */
} dense_op;

static int dense_apply(void *ctx, const double *x, double *y)
{
    dense_op *d = ctx;
    d->calls++;
    if (d->fail_at > 0 && d->calls == d->fail_at)
        return lnk_error(LNK_ENONFINITE, "dense test operator: failing on purpose");
    cblas_dgemv(CblasRowMajor, CblasNoTrans, d->n, d->n, 1.0, d->A, d->n, x, 1, 0.0, y, 1);
    return LNK_OK;
}

static lnk_operator dense_operator(dense_op *d)
{
    lnk_operator op = {(size_t)d->n, d, dense_apply, NULL};
    return op;
}

typedef struct {
    int n;
    const double *d;
} diag_op;

static int diag_apply(void *ctx, const double *x, double *y)
{
    const diag_op *g = ctx;
    for (int i = 0; i < g->n; i++)
        y[i] = g->d[i] * x[i];
    return LNK_OK;
}

static lnk_operator diag_operator(diag_op *g)
{
    lnk_operator op = {(size_t)g->n, g, diag_apply, NULL};
    return op;
}

/* Random orthogonal n x n (row-major == column-major up to transpose, which
 * is orthogonal too). */
static double *rand_orth(int n, uint64_t seed)
{
    double *Q = malloc((size_t)n * n * sizeof(double));
    double *tau = malloc((size_t)n * sizeof(double));
    assert_non_null(Q);
    assert_non_null(tau);
    tu_randn(Q, (size_t)n * n, seed);
    assert_int_equal(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, n, n, Q, n, tau), 0);
    assert_int_equal(LAPACKE_dorgqr(LAPACK_COL_MAJOR, n, n, n, Q, n, tau), 0);
    free(tau);
    return Q;
}

/* A = Q diag(lam) Q^T (exactly symmetrised); Q returned in *Qout if wanted
 * (row-major: column k of Q, Q[i*n+k], is the eigenvector of lam[k]). */
static double *spectral_matrix(int n, const double *lam, uint64_t seed, double **Qout)
{
    double *Q = rand_orth(n, seed);
    double *B = malloc((size_t)n * n * sizeof(double));
    double *A = malloc((size_t)n * n * sizeof(double));
    assert_non_null(B);
    assert_non_null(A);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++)
            B[(size_t)i * n + k] = Q[(size_t)i * n + k] * lam[k];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0, B, n, Q, n, 0.0, A, n);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < i; k++) {
            double s = 0.5 * (A[(size_t)i * n + k] + A[(size_t)k * n + i]);
            A[(size_t)i * n + k] = A[(size_t)k * n + i] = s;
        }
    free(B);
    if (Qout)
        *Qout = Q;
    else
        free(Q);
    return A;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The distinct values of lam (sorted ascending into out); returns the count. */
static int distinct_sorted(const double *lam, int n, double *out)
{
    memcpy(out, lam, (size_t)n * sizeof(double));
    qsort(out, (size_t)n, sizeof(double), cmp_double);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || out[i] != out[k - 1])
            out[k++] = out[i];
    return k;
}

static double relerr(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-300); }

static int count_near(const double *theta, int j, double x, double tol, const int *flag)
{
    int c = 0;
    for (int i = 0; i < j; i++)
        if ((!flag || flag[i] == LNK_RITZ_GOOD) && fabs(theta[i] - x) <= tol)
            c++;
    return c;
}

/* Reported extremal values val[0..k) (top: descending; bottom: ascending)
 * against the spectrum lam: each within rtol of the true value of its rank
 * in the list of eigenvalues with multiplicity, except that a multiple
 * eigenvalue may be reported fewer times than its multiplicity (a single-
 * vector Krylov method need not find every copy).  So the reported list,
 * walked in order, steps through the sorted spectrum and may skip only extra
 * copies of a value it has just reported. */
static void check_extremes(const char *what, const double *val, int k, const double *lam, int n,
                           int top, double rtol)
{
    double *ls = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++)
        ls[i] = top ? -lam[i] : lam[i];
    qsort(ls, (size_t)n, sizeof(double), cmp_double); /* ascending in "rank" order */
    int p = 0;
    for (int i = 0; i < k; i++) {
        double x = top ? -val[i] : val[i], prev = i ? (top ? -val[i - 1] : val[i - 1]) : NAN;
        /* skip extra copies of the previous value */
        while (i > 0 && p < n && fabs(x - ls[p]) > rtol * fabs(ls[p]) &&
               fabs(ls[p] - prev) <= rtol * fabs(ls[p]))
            p++;
        if (p >= n || fabs(x - ls[p]) > rtol * fabs(ls[p]))
            fail_msg("%s %d: %.17g, expected %.17g", what, i, val[i],
                     p < n ? (top ? -ls[p] : ls[p]) : NAN);
        p++;
    }
    free(ls);
}

/* -------------------------------------------------- spectrum of test 1 */

/* n-10 bulk values in [-2, 3] plus outliers: 10, 9 (twice), 8.5, a cluster
 * 7, 7.001, 7.002 at the top; -5, -4.5 (three times), -4 at the bottom.
 * Distinct top 4: 10, 9, 8.5, 7.002; distinct bottom 3: -5, -4.5, -4. */
static double *spectrum1(int n)
{
    double *lam = malloc((size_t)n * sizeof(double));
    assert_non_null(lam);
    static const double out[] = {10, 9, 9, 8.5, 7, 7.001, 7.002, -5, -4.5, -4.5, -4.5, -4};
    int no = (int)(sizeof out / sizeof out[0]);
    for (int i = 0; i < n - no; i++)
        lam[i] = -2.0 + 5.0 * i / (n - no - 1);
    memcpy(lam + n - no, out, sizeof out);
    /* interleave so the diagonal is not sorted */
    for (int i = 0; i < n; i += 7) {
        int k = (i * 31 + 5) % n;
        double t = lam[i];
        lam[i] = lam[k];
        lam[k] = t;
    }
    return lam;
}

/* Distinct extremes of spectrum1: what the light mode reports. */
static const double TOP1[] = {10, 9, 8.5, 7.002};
static const double BOT1[] = {-5, -4.5, -4};

/* Test 1: diagonal operator, full reorthogonalisation: extremal eigenvalues
 * to 1e-10 relative, the repeated ones found as values, and no ghost copies:
 * exactly one Ritz value near each simple outlier after many steps. */
static void test_lanczos_full_diag(void **state)
{
    (void)state;
    int n = 1500;
    double *lam = spectrum1(n);
    diag_op g = {n, lam};
    lnk_operator op = diag_operator(&g);

    lnk_eigs_opts o;
    lnk_eigs_opts_default(&o);
    o.k_top = 4;
    o.k_bottom = 3;
    o.tol = 1e-12;
    o.max_steps = 400;
    o.seed = 11;
    lnk_eigs_result r;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_OK);
    assert_int_equal(r.n_top, 4);
    assert_int_equal(r.n_bottom, 3);
    assert_int_equal(r.stop, LNK_EIGS_TOL);
    check_extremes("top", r.value, 4, lam, n, 1, 1e-10);
    check_extremes("bottom", r.value + 4, 3, lam, n, 0, 1e-10);
    for (int i = 0; i < r.k; i++) {
        assert_true(r.converged[i]);
        assert_true(r.residual[i] <= 1e-12 * r.scale);
    }
    print_message("      full, diag n=%d: top-4 %.15g %.15g %.15g %.15g, bottom-3 %.15g %.15g "
                  "%.15g in %d steps (%ld applies)\n", n, r.value[0], r.value[1], r.value[2],
                  r.value[3], r.value[4], r.value[5], r.value[6], r.steps, r.n_applies);
    lnk_eigs_result_free(&r);

    /* No ghosts: 250 steps, long after the outliers converged; both ways of
     * keeping the basis orthogonal. */
    int m = 250;
    for (int ro = LNK_REORTH_PARTIAL; ro <= LNK_REORTH_ALWAYS; ro++) {
    lnk_lanczos *w = lnk_lanczos_alloc((size_t)n, m, LNK_LANCZOS_FULL);
    assert_non_null(w);
    w->reorth = ro;
    assert_int_equal(lnk_lanczos_start(w, NULL, 3), LNK_OK);
    assert_int_equal(lnk_lanczos_run(w, &op, m), LNK_OK);
    assert_int_equal(w->steps, m);
    double *theta = malloc((size_t)m * sizeof(double));
    assert_int_equal(lnk_lanczos_ritz(w, theta, NULL), LNK_OK);
    static const double simple[] = {10, 8.5, -5, -4};
    for (int i = 0; i < 4; i++) {
        int c = count_near(theta, m, simple[i], 1e-8, NULL);
        if (c != 1)
            fail_msg("full mode: %d Ritz values near %g (expected 1)", c, simple[i]);
    }
    /* The basis stays orthonormal (ALWAYS: to 1e-13) or semi-orthogonal
     * (PARTIAL: |v_i.v_k| <= sqrt(eps / m), Simon's level), max |V V^T - I|. */
    double *G = malloc((size_t)m * m * sizeof(double));
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, m, n, 1.0, w->V, n, w->V, n, 0.0, G, m);
    double worst = 0;
    for (int i = 0; i < m; i++)
        for (int k = 0; k < m; k++)
            worst = fmax(worst, fabs(G[(size_t)i * m + k] - (i == k)));
    print_message("      full (%s), 250 steps: max |V V^T - I| = %.2e, %d reorthogonalisations, "
                  "%.0f basis rows read\n", ro ? "always" : "partial", worst, w->n_reorth,
                  w->reorth_rows);
    assert_true(worst < (ro ? 1e-13 : sqrt(DBL_EPSILON / m)));
    if (ro == LNK_REORTH_PARTIAL) /* and much cheaper: 4 j rows a step for ALWAYS */
        assert_true(w->reorth_rows < 0.25 * 4.0 * m * (m + 1) / 2);
    free(G);
    free(theta);
    lnk_lanczos_free(w);
    }
    free(lam);
}

/* When new basis rows are faulted in (helper thread ahead, before the
 * product, or by the product's writes) changes no bit of T or the basis;
 * an unknown setting is refused at start.  Rows of 20000 doubles span whole
 * pages, so every mode really faults some in. */
static void test_lanczos_prefault(void **state)
{
    (void)state;
    int n = 20000, m = 40;
    double *lam = spectrum1(n);
    diag_op g = {n, lam};
    lnk_operator op = diag_operator(&g);
    lnk_lanczos *ref = NULL;
    for (int pf = LNK_PREFAULT_AHEAD; pf <= LNK_PREFAULT_NONE; pf++) {
        lnk_lanczos *w = lnk_lanczos_alloc((size_t)n, m, LNK_LANCZOS_FULL);
        assert_non_null(w);
        w->prefault = pf;
        assert_int_equal(lnk_lanczos_start(w, NULL, 5), LNK_OK);
        assert_int_equal(lnk_lanczos_run(w, &op, m), LNK_OK);
        assert_int_equal(w->steps, m);
        if (!ref) {
            ref = w;
            continue;
        }
        assert_memory_equal(w->alpha, ref->alpha, (size_t)m * sizeof(double));
        assert_memory_equal(w->beta, ref->beta, (size_t)m * sizeof(double));
        assert_memory_equal(w->V, ref->V, (size_t)(m + 1) * n * sizeof(double));
        assert_int_equal(w->n_reorth, ref->n_reorth);
        lnk_lanczos_free(w);
    }
    ref->prefault = 3;
    assert_int_equal(lnk_lanczos_start(ref, NULL, 5), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "prefault = 3"));
    lnk_lanczos_free(ref);
    free(lam);
}

/* Test 2: the light mode (no reorthogonalisation) on the same problem: its
 * raw T has ghost copies of the converged outliers; after the
 * Cullum-Willoughby test exactly one copy is left, and the extremal values
 * agree with full mode to 1e-10 relative. */
static void test_lanczos_light_vs_full(void **state)
{
    (void)state;
    int n = 1500, m = 250;
    double *lam = spectrum1(n);
    diag_op g = {n, lam};
    lnk_operator op = diag_operator(&g);

    lnk_lanczos *w = lnk_lanczos_alloc((size_t)n, m, LNK_LANCZOS_LIGHT);
    assert_non_null(w);
    assert_null(w->V);
    assert_int_equal(lnk_lanczos_start(w, NULL, 3), LNK_OK);
    assert_int_equal(lnk_lanczos_run(w, &op, m), LNK_OK);
    assert_int_equal(w->steps, m);
    double *theta = malloc((size_t)m * sizeof(double)), *S = malloc((size_t)m * m * sizeof(double));
    int *flag = malloc((size_t)m * sizeof(int));
    assert_int_equal(lnk_lanczos_ritz(w, theta, S), LNK_OK);
    assert_int_equal(lnk_lanczos_ghosts(w, theta, S, flag), LNK_OK);
    int raw10 = count_near(theta, m, 10, 1e-8, NULL);
    print_message("      light, 250 steps: %d raw Ritz values at 10 (ghosts), %d after the "
                  "Cullum-Willoughby test\n", raw10, count_near(theta, m, 10, 1e-8, flag));
    assert_true(raw10 >= 2); /* the phenomenon the test below must handle */
    static const double simple[] = {10, 8.5, -5, -4};
    for (int i = 0; i < 4; i++) {
        int c = count_near(theta, m, simple[i], 1e-8, flag);
        if (c != 1)
            fail_msg("light mode: %d good Ritz values near %g (expected 1)", c, simple[i]);
    }
    /* No good value is far from the spectrum's extremes' neighbourhood:
     * every good value above the bulk (> 3.001) is one of the outliers. */
    static const double outl[] = {10, 9, 8.5, 7, 7.001, 7.002};
    for (int i = 0; i < m; i++) {
        if (flag[i] != LNK_RITZ_GOOD || theta[i] <= 3.5)
            continue;
        double best = INFINITY;
        for (int k = 0; k < 6; k++)
            best = fmin(best, fabs(theta[i] - outl[k]));
        if (best > 1e-3)
            fail_msg("light mode: good Ritz value %.10g is no eigenvalue", theta[i]);
    }
    free(theta), free(S), free(flag);
    lnk_lanczos_free(w);

    /* eigs in both modes. */
    lnk_eigs_opts o;
    lnk_eigs_opts_default(&o);
    o.k_top = 4;
    o.k_bottom = 3;
    o.tol = 1e-12;
    o.max_steps = 600;
    o.seed = 11;
    o.vectors = 1;
    lnk_eigs_result rf, rl;
    o.mode = LNK_LANCZOS_LIGHT;
    assert_int_equal(lnk_eigs(&op, &o, &rl), LNK_OK);
    assert_int_equal(rl.k, 7);
    assert_int_equal(rl.stop, LNK_EIGS_TOL);
    /* light mode: each distinct value once (copies are merged with ghosts) */
    for (int i = 0; i < 7; i++) {
        double want = i < 4 ? TOP1[i] : BOT1[i - 4];
        if (relerr(rl.value[i], want) > 1e-10)
            fail_msg("light pair %d: %.17g vs %.17g", i, rl.value[i], want);
        assert_true(rl.converged[i]);
        assert_true(rl.residual[i] <= 1e-12 * rl.scale);
    }
    /* full mode with room for the copies it may find */
    o.mode = LNK_LANCZOS_FULL;
    o.k_top = 6;
    o.k_bottom = 5;
    assert_int_equal(lnk_eigs(&op, &o, &rf), LNK_OK);
    check_extremes("full top", rf.value, 6, lam, n, 1, 1e-10);
    check_extremes("full bottom", rf.value + 6, 5, lam, n, 0, 1e-10);
    double worst = 0;
    for (int i = 0; i < 7; i++) {
        int f = -1;
        for (int k = 0; k < rf.k; k++)
            if (f < 0 || fabs(rf.value[k] - rl.value[i]) < fabs(rf.value[f] - rl.value[i]))
                f = k;
        worst = fmax(worst, relerr(rl.value[i], rf.value[f]));
        /* the light mode's second pass gives the same eigenvectors (for the
         * simple eigenvalues; a multiple one has any vector of its eigenspace) */
        double c = fabs(cblas_ddot(n, rl.vectors + (size_t)i * n, 1, rf.vectors + (size_t)f * n, 1));
        if (rl.value[i] != 9 && fabs(rl.value[i] + 4.5) > 1e-6 && fabs(rl.value[i] - 9) > 1e-6 &&
            fabs(c - 1) > 1e-8)
            fail_msg("pair %d (%g): |<y_light, y_full>| = %.12f", i, rl.value[i], c);
    }
    print_message("      light (4+3 pairs, tol 1e-12) vs full (6+5 pairs): values agree to %.1e "
                  "relative; light %d steps, %ld applies (with the second pass); full %d steps, "
                  "%ld applies\n", worst, rl.steps, rl.n_applies, rf.steps, rf.n_applies);
    assert_true(worst <= 1e-10);
    lnk_eigs_result_free(&rf);
    lnk_eigs_result_free(&rl);
    free(lam);
}

/* Test 3: a dense matrix with a known spectrum (rotated by a random Q):
 * extremal values to 1e-10 relative, eigenvectors, and residuals that are
 * the true ||A y - theta y|| (recomputed here). */
static void test_eigs_dense_known(void **state)
{
    (void)state;
    int n = 600;
    double *lam = malloc((size_t)n * sizeof(double));
    static const double out[] = {6, 5, 5, 4.5, 4.49, 4.48, -3, -2.5, -2.5, -2.4, -2.3, -2.2};
    int no = (int)(sizeof out / sizeof out[0]);
    for (int i = 0; i < n - no; i++)
        lam[i] = -1.0 + 2.0 * i / (n - no - 1);
    memcpy(lam + n - no, out, sizeof out);
    double *Q;
    double *A = spectral_matrix(n, lam, 21, &Q);
    dense_op d = {n, A, 0, 0};
    lnk_operator op = dense_operator(&d);

    lnk_eigs_opts o;
    lnk_eigs_opts_default(&o);
    o.k_top = 5;
    o.k_bottom = 5;
    o.tol = 1e-12;
    o.max_steps = 600;
    o.seed = 5;
    o.vectors = 1;
    lnk_eigs_result r;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_OK);
    assert_int_equal(r.k, 10);
    check_extremes("top", r.value, 5, lam, n, 1, 1e-10);
    check_extremes("bottom", r.value + 5, 5, lam, n, 0, 1e-10);
    double *Ay = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < 10; i++) {
        double want = r.value[i];
        const double *y = r.vectors + (size_t)i * n;
        assert_true(fabs(cblas_dnrm2(n, y, 1) - 1) < 1e-13);
        cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0, A, n, y, 1, 0.0, Ay, 1);
        cblas_daxpy(n, -r.value[i], y, 1, Ay, 1);
        double res = cblas_dnrm2(n, Ay, 1);
        if (fabs(res - r.residual[i]) > 1e-14 * r.scale)
            fail_msg("pair %d: reported residual %.3e, true %.3e", i, r.residual[i], res);
        assert_true(res <= 1e-12 * r.scale);
        /* simple eigenvalues: y = +-q_k */
        for (int k = 0; k < n; k++)
            if (fabs(lam[k] - want) < 1e-8 && lam[k] != 5 && lam[k] != -2.5) {
                double c = 0;
                for (int t = 0; t < n; t++)
                    c += y[t] * Q[(size_t)t * n + k];
                if (fabs(fabs(c) - 1) > 1e-10)
                    fail_msg("pair %d: |<y, q>| = %.15f", i, fabs(c));
            }
    }
    print_message("      dense n=%d: top-5/bottom-5 in %d steps, max residual %.1e\n", n, r.steps,
                  r.residual[0]);
    lnk_eigs_result_free(&r);
    free(Ay), free(A), free(Q), free(lam);
}

/* Test 4: eigs against LAPACKE_dsyevr on a random symmetric (GOE) matrix:
 * top-5 and bottom-5 to 1e-8 relative, in both modes. */
static void test_eigs_vs_dsyevr(void **state)
{
    (void)state;
    int n = 400;
    double *A = malloc((size_t)n * n * sizeof(double)), *B = malloc((size_t)n * n * sizeof(double));
    tu_randn(B, (size_t)n * n, 77);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++)
            A[(size_t)i * n + k] = (B[(size_t)i * n + k] + B[(size_t)k * n + i]) / sqrt(2.0 * n);
    memcpy(B, A, (size_t)n * n * sizeof(double));
    double *ev = malloc((size_t)n * sizeof(double));
    lapack_int mf;
    lapack_int *isuppz = malloc(2 * (size_t)n * sizeof(lapack_int));
    assert_int_equal(LAPACKE_dsyevr(LAPACK_ROW_MAJOR, 'N', 'A', 'U', n, B, n, 0, 0, 0, 0, 0.0, &mf,
                                    ev, NULL, n, isuppz), 0);
    dense_op d = {n, A, 0, 0};
    lnk_operator op = dense_operator(&d);
    for (int mode = 0; mode < 2; mode++) {
        lnk_eigs_opts o;
        lnk_eigs_opts_default(&o);
        o.k_top = 5;
        o.k_bottom = 5;
        o.max_steps = n;
        o.mode = mode;
        o.seed = 1;
        o.tol = 1e-10; /* the accuracy asserted below (the default is 1e-6) */
        lnk_eigs_result r;
        assert_int_equal(lnk_eigs(&op, &o, &r), LNK_OK);
        assert_int_equal(r.k, 10);
        double worst = 0;
        for (int i = 0; i < 5; i++) {
            worst = fmax(worst, relerr(r.value[i], ev[n - 1 - i]));
            worst = fmax(worst, relerr(r.value[5 + i], ev[i]));
        }
        print_message("      %s: GOE n=%d top/bottom-5 vs dsyevr: %.1e relative, %d steps, "
                      "stop %s\n", mode ? "light" : "full", n, worst, r.steps,
                      lnk_eigs_stop_name(r.stop));
        assert_true(worst <= 1e-8);
        lnk_eigs_result_free(&r);
    }
    free(A), free(B), free(ev), free(isuppz);
}

/* Partial against full reorthogonalisation: eigs with LNK_REORTH_PARTIAL and
 * LNK_REORTH_ALWAYS from the same start vector list the same pairs, with
 * eigenvalues and residuals equal to 1e-10 of ||A|| (the scale), on spread,
 * clustered and degenerate spectra, while reading far fewer basis rows. */
static void compare_reorth(const char *what, const lnk_operator *op, int kt, int kb, double tol,
                           int max_steps, uint64_t seed)
{
    lnk_eigs_result r[2];
    for (int ro = 0; ro < 2; ro++) {
        lnk_eigs_opts o;
        lnk_eigs_opts_default(&o);
        o.k_top = kt, o.k_bottom = kb, o.tol = tol, o.max_steps = max_steps, o.seed = seed;
        o.reorth = ro;
        assert_int_equal(lnk_eigs(op, &o, &r[ro]), LNK_OK);
    }
    lnk_eigs_result *p = &r[LNK_REORTH_PARTIAL], *f = &r[LNK_REORTH_ALWAYS];
    assert_int_equal(p->n_top, f->n_top);
    assert_int_equal(p->n_bottom, f->n_bottom);
    assert_int_equal(p->stop, LNK_EIGS_TOL);
    assert_int_equal(f->stop, LNK_EIGS_TOL);
    double dv = 0, dr = 0, scale = f->scale;
    for (int i = 0; i < f->k; i++) {
        dv = fmax(dv, fabs(p->value[i] - f->value[i]));
        dr = fmax(dr, fabs(p->residual[i] - f->residual[i]));
        assert_true(p->converged[i] && f->converged[i]);
        assert_true(p->residual[i] <= tol * p->scale && f->residual[i] <= tol * scale);
    }
    print_message("      %s: partial vs always: values %.1e, residuals %.1e of ||A||; steps %d vs "
                  "%d; reorthogonalisations %d vs %d, basis rows read %.0f vs %.0f\n", what,
                  dv / scale, dr / scale, p->steps, f->steps, p->n_reorth, f->n_reorth,
                  p->reorth_rows, f->reorth_rows);
    assert_true(dv <= 1e-10 * scale);
    assert_true(dr <= 1e-10 * scale);
    assert_true(fabs(p->scale - scale) <= 1e-10 * scale);
    assert_true(p->reorth_rows < 0.5 * f->reorth_rows);
    lnk_eigs_result_free(&r[0]);
    lnk_eigs_result_free(&r[1]);
}

static void test_partial_vs_always(void **state)
{
    (void)state;
    /* spectrum 1: repeated 9 (x2) and -4.5 (x3), a cluster 7, 7.001, 7.002 */
    int n = 1500;
    double *lam = spectrum1(n);
    diag_op g = {n, lam};
    lnk_operator op = diag_operator(&g);
    compare_reorth("diag n=1500, spectrum 1, top-6/bottom-5", &op, 6, 5, 1e-12, 400, 11);
    free(lam);
    /* clustered and degenerate: 5 four times, a cluster 1e-9 wide below it,
     * 4.5 twice; -3 three times and a cluster at the bottom */
    n = 2000;
    lam = malloc((size_t)n * sizeof(double));
    static const double out[] = {5, 5, 5, 5, 4.999999999, 4.999999998, 4.5, 4.5,
                                 -3, -3, -3, -2.9999999, -2.9999998};
    int no = (int)(sizeof out / sizeof out[0]);
    for (int i = 0; i < n - no; i++)
        lam[i] = -1.0 + 2.0 * ((i * 7919) % (n - no)) / (n - no - 1);
    memcpy(lam + n - no, out, sizeof out);
    g = (diag_op){n, lam};
    op = diag_operator(&g);
    compare_reorth("diag n=2000, clustered + degenerate, top-8/bottom-5", &op, 8, 5, 1e-12, 600,
                   3);
    /* the same spectrum rotated: a dense operator */
    n = 600;
    double *lam2 = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n - no; i++)
        lam2[i] = -1.0 + 2.0 * i / (n - no - 1);
    memcpy(lam2 + n - no, out, sizeof out);
    double *Q, *A = spectral_matrix(n, lam2, 8, &Q);
    dense_op d = {n, A, 0, 0};
    op = dense_operator(&d);
    compare_reorth("dense n=600, clustered + degenerate, top-8/bottom-5", &op, 8, 5, 1e-12, 600,
                   4);
    free(A), free(Q);
    /* GOE n = 400 */
    n = 400;
    double *B = malloc((size_t)n * n * sizeof(double));
    A = malloc((size_t)n * n * sizeof(double));
    tu_randn(B, (size_t)n * n, 77);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++)
            A[(size_t)i * n + k] = (B[(size_t)i * n + k] + B[(size_t)k * n + i]) / sqrt(2.0 * n);
    d = (dense_op){n, A, 0, 0};
    op = dense_operator(&d);
    compare_reorth("GOE n=400, top-5/bottom-5", &op, 5, 5, 1e-10, 400, 1);
    free(A), free(B), free(lam2);
    /* SLQ on the clustered spectrum: the same nodes and weights */
    n = 2000;
    g = (diag_op){n, lam};
    op = diag_operator(&g);
    lnk_slq_result sr[2];
    for (int ro = 0; ro < 2; ro++) {
        lnk_slq_opts so;
        lnk_slq_opts_default(&so);
        so.runs = 4, so.steps = 80, so.seed = 6, so.reorth = ro;
        assert_int_equal(lnk_slq(&op, &so, &sr[ro]), LNK_OK);
    }
    int tot = sr[0].offset[sr[0].runs];
    assert_int_equal(sr[1].offset[sr[1].runs], tot);
    double dn = 0, dw = 0, dphi = 0, pmax = 0;
    for (int i = 0; i < tot; i++) {
        dn = fmax(dn, fabs(sr[0].node[i] - sr[1].node[i]) / 5.0);
        dw = fmax(dw, fabs(sr[0].weight[i] - sr[1].weight[i]));
    }
    /* single weights of nodes within 1e-9 of each other are ill-conditioned
     * (the Ritz vectors of a near-double value rotate); the quadrature is not:
     * the density on a grid */
    double t[400], phi[2][400];
    assert_int_equal(lnk_slq_grid(&sr[1], 0.01, LNK_SLQ_PAD, 400, t), LNK_OK);
    for (int ro = 0; ro < 2; ro++)
        assert_int_equal(lnk_slq_density(&sr[ro], 0.01, t, 400, phi[ro]), LNK_OK);
    for (int i = 0; i < 400; i++) {
        dphi = fmax(dphi, fabs(phi[0][i] - phi[1][i]));
        pmax = fmax(pmax, phi[1][i]);
    }
    print_message("      SLQ 4 x 80 steps, n=2000 clustered: partial vs always: nodes %.1e of "
                  "||A||, weights %.1e, density %.1e of its maximum\n", dn, dw, dphi / pmax);
    assert_true(dn <= 1e-10 && dphi <= 1e-10 * pmax);
    lnk_slq_result_free(&sr[0]);
    lnk_slq_result_free(&sr[1]);
    free(lam);
}

/* Test 5: n smaller than m, and repeated eigenvalues exposed by breakdowns. */
static void test_small_n_and_breakdown(void **state)
{
    (void)state;
    /* n = 7 with a double eigenvalue: the Krylov space of a random vector is
     * 6-dimensional; full mode restarts once and finds all 7. */
    double lam[7] = {2, -3, 0.5, 7, -1, 2, 0};
    double sorted[7];
    memcpy(sorted, lam, sizeof lam);
    qsort(sorted, 7, sizeof(double), cmp_double);
    diag_op g = {7, lam};
    lnk_operator op = diag_operator(&g);
    lnk_eigs_opts o;
    lnk_eigs_opts_default(&o);
    o.k_top = 7;
    o.max_steps = 80;
    lnk_eigs_result r;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_OK);
    assert_int_equal(r.n_top, 7);
    assert_int_equal(r.stop, LNK_EIGS_INVARIANT);
    assert_int_equal(r.steps, 7);
    assert_int_equal(r.n_restarts, 1);
    for (int i = 0; i < 7; i++)
        assert_true(fabs(r.value[i] - sorted[6 - i]) < 1e-13);
    lnk_eigs_result_free(&r);
    /* light mode cannot restart: it stops at the 6-dimensional invariant
     * subspace and reports the 6 distinct values */
    o.mode = LNK_LANCZOS_LIGHT;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_OK);
    assert_int_equal(r.stop, LNK_EIGS_INVARIANT);
    assert_int_equal(r.steps, 6);
    assert_int_equal(r.n_top, 6);
    double dist[7];
    assert_int_equal(distinct_sorted(lam, 7, dist), 6);
    for (int i = 0; i < 6; i++)
        assert_true(fabs(r.value[i] - dist[5 - i]) < 1e-12);
    lnk_eigs_result_free(&r);

    /* n = 1 */
    double one = -2.5;
    diag_op g1 = {1, &one};
    lnk_operator op1 = diag_operator(&g1);
    o.mode = LNK_LANCZOS_FULL;
    o.k_top = 1;
    o.k_bottom = 1;
    assert_int_equal(lnk_eigs(&op1, &o, &r), LNK_OK);
    /* the one eigenvalue is listed once: the two ends never share a value */
    assert_int_equal(r.k, 1);
    assert_int_equal(r.n_top, 1);
    assert_int_equal(r.n_bottom, 0);
    assert_true(r.value[0] == -2.5 && r.residual[0] == 0);
    lnk_eigs_result_free(&r);
    lnk_slq_opts so;
    lnk_slq_opts_default(&so);
    lnk_slq_result sr;
    assert_int_equal(lnk_slq(&op1, &so, &sr), LNK_OK);
    assert_int_equal(sr.offset[sr.runs], sr.runs);
    assert_true(sr.node[0] == -2.5 && fabs(sr.weight[0] - 1) < 1e-15);
    lnk_slq_result_free(&sr);

    /* Three distinct values, each 100 times: breakdown after 3 steps.  Full
     * mode with restarts runs all n = 300 steps (99 restarts), keeps the
     * basis orthonormal and recovers the multiplicities. */
    int n = 300;
    double *d3 = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++)
        d3[i] = 1 + i % 3;
    diag_op g3 = {n, d3};
    lnk_operator op3 = diag_operator(&g3);
    lnk_lanczos *w = lnk_lanczos_alloc((size_t)n, n, LNK_LANCZOS_FULL);
    assert_int_equal(lnk_lanczos_start(w, NULL, 9), LNK_OK);
    assert_int_equal(lnk_lanczos_run(w, &op3, n), LNK_OK);
    assert_int_equal(w->steps, n);
    assert_true(w->done && w->invariant);
    assert_int_equal(w->n_restarts, 99);
    assert_true(w->beta[2] == 0);
    double *theta = malloc((size_t)n * sizeof(double));
    assert_int_equal(lnk_lanczos_ritz(w, theta, NULL), LNK_OK);
    for (int i = 0; i < n; i++)
        if (fabs(theta[i] - (1 + i / 100)) > 1e-12)
            fail_msg("restarted run: theta[%d] = %.17g", i, theta[i]);
    double *G = malloc((size_t)n * n * sizeof(double));
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0, w->V, n, w->V, n, 0.0, G, n);
    double worst = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++)
            worst = fmax(worst, fabs(G[(size_t)i * n + k] - (i == k)));
    assert_true(worst < 1e-13);
    free(G);
    lnk_lanczos_free(w);

    /* The same with STOP (what SLQ does) from a known vector: 3 steps, nodes
     * 1, 2, 3 with weights = the start vector's mass on each eigenspace. */
    w = lnk_lanczos_alloc((size_t)n, 80, LNK_LANCZOS_FULL);
    w->on_breakdown = LNK_BREAKDOWN_STOP;
    double *v = malloc((size_t)n * sizeof(double));
    tu_randn(v, (size_t)n, 4);
    double mass[3] = {0, 0, 0}, tot = 0;
    for (int i = 0; i < n; i++) {
        mass[i % 3] += v[i] * v[i];
        tot += v[i] * v[i];
    }
    assert_int_equal(lnk_lanczos_start(w, v, 0), LNK_OK);
    assert_int_equal(lnk_lanczos_run(w, &op3, 80), LNK_OK);
    assert_int_equal(w->steps, 3);
    assert_true(w->invariant);
    double S[9];
    assert_int_equal(lnk_lanczos_ritz(w, theta, S), LNK_OK);
    for (int i = 0; i < 3; i++) {
        assert_true(fabs(theta[i] - (i + 1)) < 1e-12);
        assert_true(fabs(S[i] * S[i] - mass[i] / tot) < 1e-12);
    }
    lnk_lanczos_free(w);
    /* lnk_slq: every run ends invariant after 3 steps. */
    assert_int_equal(lnk_slq(&op3, &so, &sr), LNK_OK);
    for (int v2 = 0; v2 < sr.runs; v2++) {
        assert_int_equal(sr.steps[v2], 3);
        assert_true(sr.invariant[v2]);
        double ws = 0;
        for (int i = sr.offset[v2]; i < sr.offset[v2 + 1]; i++) {
            ws += sr.weight[i];
            assert_true(fabs(sr.node[i] - (1 + i - sr.offset[v2])) < 1e-12);
        }
        assert_true(fabs(ws - 1) < 1e-13);
    }
    lnk_slq_result_free(&sr);
    free(v), free(theta), free(d3);
}

/* Test 6: the Lanczos quadrature of a known start vector.  For
 * mu = sum_k v_k^2 delta(lambda_k) (diagonal A, unit v): the moments
 * sum_i tau_i theta_i^p equal v^T A^p v for p <= 2m-1 (checked for p <= 6),
 * and the Chebyshev-Markov-Stieltjes inequalities hold at every node:
 * sum_{i<k} tau_i <= mu(-inf, theta_k) and mu(-inf, theta_k] <= sum_{i<=k} tau_i
 * (Gauss quadrature of mu; here in finite precision, m < n). */
static void test_slq_quadrature_exact(void **state)
{
    (void)state;
    int n = 1000, m = 80;
    double *lam = spectrum1(n);
    diag_op g = {n, lam};
    lnk_operator op = diag_operator(&g);
    double *v = malloc((size_t)n * sizeof(double));
    tu_randn(v, (size_t)n, 8);
    double nv = cblas_dnrm2(n, v, 1);
    cblas_dscal(n, 1 / nv, v, 1);
    double *theta = malloc((size_t)m * sizeof(double)), *S = malloc((size_t)m * m * sizeof(double));
    for (int mode = 0; mode < 2; mode++) {
        lnk_lanczos *w = lnk_lanczos_alloc((size_t)n, m, mode);
        w->on_breakdown = LNK_BREAKDOWN_STOP;
        assert_int_equal(lnk_lanczos_start(w, v, 0), LNK_OK);
        assert_int_equal(lnk_lanczos_run(w, &op, m), LNK_OK);
        assert_int_equal(w->steps, m);
        assert_int_equal(lnk_lanczos_ritz(w, theta, S), LNK_OK);
        double worst = 0;
        for (int p = 0; p <= 6; p++) {
            long double q = 0, e = 0;
            for (int i = 0; i < m; i++)
                q += (long double)S[i] * S[i] * powl(theta[i], p);
            for (int k = 0; k < n; k++)
                e += (long double)v[k] * v[k] * powl(lam[k], p);
            worst = fmax(worst, (double)(fabsl(q - e) / powl(10.0L, p)));
        }
        print_message("      %s: quadrature moments p<=6 match v^T A^p v to %.1e (of ||A||^p)\n",
                      mode ? "light" : "full", worst);
        assert_true(worst < (mode ? 1e-9 : 1e-12));
        if (mode == 0) {
            /* Converged nodes sit on eigenvalues up to rounding, and full mode
             * may add a second node of ~0 weight at a multiple eigenvalue:
             * compare within a window of 1e-9 so that rounding cannot decide
             * which side of a node an eigenvalue falls on. */
            double below = 0, viol = 0, win = 1e-9;
            for (int k = 0; k < m; k++) {
                double lt = 0, le = 0;
                for (int t = 0; t < n; t++) {
                    lt += lam[t] < theta[k] + win ? v[t] * v[t] : 0;
                    le += lam[t] <= theta[k] - win ? v[t] * v[t] : 0;
                }
                viol = fmax(viol, below - lt);            /* sum_{i<k} tau_i <= mu(<theta_k) */
                below += S[k] * S[k];
                viol = fmax(viol, le - below);            /* mu(<=theta_k) <= sum_{i<=k} */
            }
            print_message("      Chebyshev-Markov-Stieltjes: worst violation %.1e\n", viol);
            assert_true(viol < 1e-10);
        }
        lnk_lanczos_free(w);
    }
    free(theta), free(S), free(v), free(lam);
}

/* sup_t |F_slq(t) - F_true(t)|, both right-continuous step functions: the sup
 * is reached at a jump of either, from the right or the left. */
static double cdf_distance(const lnk_slq_result *r, const double *lam_sorted, int n)
{
    int tot = r->offset[r->runs];
    double worst = 0;
    for (int pass = 0; pass < 2; pass++) {
        int cnt = pass == 0 ? n : tot;
        for (int i = 0; i < cnt; i++) {
            double x = pass == 0 ? lam_sorted[i] : r->node[i];
            double xs[2] = {x, nextafter(x, -INFINITY)};
            for (int s = 0; s < 2; s++) {
                double Fs = lnk_slq_cdf(r, xs[s]);
                int c = 0;
                while (c < n && lam_sorted[c] <= xs[s])
                    c++;
                worst = fmax(worst, fabs(Fs - (double)c / n));
            }
        }
    }
    return worst;
}

/* Test 7: SLQ density of a known spectrum (n = 1000, rotated, with two bulk
 * pieces, negative and repeated outliers).  Bound on the CDF distance: per
 * run, the quadrature CDF brackets v's spectral CDF at every node (test 6),
 * so they differ by at most the largest weight near t, ~ pi/(2m) = 0.02 for
 * a spread-out spectrum; v's spectral CDF differs from the true one by a
 * zero-mean error of sd <= sqrt(2 F(1-F)/n) <= 0.022 per run (Gaussian start;
 * less for Rademacher), 0.007 over 10 runs, ~0.02 at the sup.  Together
 * ~0.04; we require < 0.1. */
static void test_slq_density_known(void **state)
{
    (void)state;
    int n = 1000;
    double *lam = malloc((size_t)n * sizeof(double));
    static const double out[] = {12, 9, 9, 8, -6, -5, -5, -5};
    int no = 8, nb = (n - no) / 2;
    for (int i = 0; i < nb; i++)
        lam[i] = -1 + 1.0 * i / (nb - 1);              /* [-1, 0] */
    for (int i = nb; i < n - no; i++)
        lam[i] = 2 + 2.0 * (i - nb) / (n - no - nb - 1); /* [2, 4] */
    memcpy(lam + n - no, out, sizeof out);
    double *A = spectral_matrix(n, lam, 31, NULL);
    dense_op d = {n, A, 0, 0};
    lnk_operator op = dense_operator(&d);
    double *ls = malloc((size_t)n * sizeof(double));
    memcpy(ls, lam, (size_t)n * sizeof(double));
    qsort(ls, (size_t)n, sizeof(double), cmp_double);

    static const char *names[] = {"full/rademacher", "full/gaussian", "light/rademacher"};
    for (int c = 0; c < 3; c++) {
        lnk_slq_opts o;
        lnk_slq_opts_default(&o);
        o.seed = 2;
        o.start = c == 1 ? LNK_SLQ_GAUSSIAN : LNK_SLQ_RADEMACHER;
        o.mode = c == 2 ? LNK_LANCZOS_LIGHT : LNK_LANCZOS_FULL;
        lnk_slq_result r;
        assert_int_equal(lnk_slq(&op, &o, &r), LNK_OK);
        assert_int_equal(r.runs, 10);
        assert_int_equal(r.offset[10], 800);
        assert_int_equal(r.n_applies, 800);
        for (int v = 0; v < 10; v++) {
            double ws = 0;
            for (int i = r.offset[v]; i < r.offset[v + 1]; i++)
                ws += r.weight[i];
            assert_true(fabs(ws - 1) < 1e-12);
        }
        double dist = cdf_distance(&r, ls, n);
        /* the density: sigma 1% of the range, and a narrow 1e-4 one */
        double sig[2] = {0.01 * (r.node_max - r.node_min), 1e-4 * (r.node_max - r.node_min)};
        double integ[2];
        for (int s = 0; s < 2; s++) {
            size_t np = lnk_slq_grid_size(&r, sig[s], LNK_SLQ_PAD, 4);
            double *t = malloc(np * sizeof(double)), *phi = malloc(np * sizeof(double));
            assert_int_equal(lnk_slq_grid(&r, sig[s], LNK_SLQ_PAD, np, t), LNK_OK);
            assert_true(t[0] <= r.node_min - 6 * sig[s] + 1e-12);
            assert_true(t[np - 1] >= r.node_max + 6 * sig[s] - 1e-12);
            assert_int_equal(lnk_slq_density(&r, sig[s], t, np, phi), LNK_OK);
            integ[s] = lnk_trapezoid(t, phi, np);
            if (s == 0) {
                /* one point against the formula */
                size_t p = np / 3;
                double e = 0;
                for (int i = 0; i < r.offset[10]; i++)
                    e += r.weight[i] * exp(-0.5 * pow((t[p] - r.node[i]) / sig[0], 2)) /
                         (sig[0] * sqrt(2 * M_PI));
                assert_true(fabs(phi[p] - e / 10) <= 1e-12 * fmax(e / 10, 1e-300));
            }
            free(t), free(phi);
        }
        print_message("      %s: sup|F_slq - F| = %.4f, integral of phi = 1 %+.1e (sigma 1%%), "
                      "1 %+.1e (sigma 0.01%%)\n", names[c], dist, integ[0] - 1, integ[1] - 1);
        assert_true(dist < 0.1);
        assert_true(fabs(integ[0] - 1) < 1e-6);
        assert_true(fabs(integ[1] - 1) < 1e-6);
        lnk_slq_result_free(&r);
    }
    free(A), free(ls), free(lam);
}

/* ------------------------------------------------------------------ trace */

/* Test 8: Hutchinson and Hutch++ within 4 standard errors of the exact
 * trace for each of the seeds 1..20 (fixed in advance; all must pass), on a
 * dense indefinite matrix; Hutch++ far more accurate on a low-rank-plus-
 * small matrix; Hutchinson exact on a diagonal matrix (Rademacher). */
static void test_trace(void **state)
{
    (void)state;
    int n = 300;
    double *lam = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++)
        lam[i] = sin(1.0 + i) * 3 + (i % 7 == 0 ? 5 : 0);
    double tr = 0;
    for (int i = 0; i < n; i++)
        tr += lam[i];
    double *A = spectral_matrix(n, lam, 41, NULL);
    dense_op d = {n, A, 0, 0};
    lnk_operator op = dense_operator(&d);
    double worst_z[2] = {0, 0};
    for (int method = 0; method < 2; method++)
        for (uint64_t seed = 1; seed <= 20; seed++) {
            lnk_trace_opts o;
            lnk_trace_opts_default(&o);
            o.method = method;
            o.probes = 60;
            o.seed = seed;
            lnk_trace_result r;
            d.calls = 0;
            assert_int_equal(lnk_trace(&op, &o, &r), LNK_OK);
            assert_int_equal(r.probes, 60);
            assert_int_equal(d.calls, 60);
            assert_int_equal(r.samples, method ? 20 : 60);
            assert_true(r.std_error > 0);
            double z = fabs(r.trace - tr) / r.std_error;
            worst_z[method] = fmax(worst_z[method], z);
            if (z > 4)
                fail_msg("%s seed %d: %.6g vs %.6g is %.2f standard errors", lnk_trace_method_name(method),
                         (int)seed, r.trace, tr, z);
        }
    print_message("      trace n=%d, 60 probes, seeds 1..20: worst |error|/se = %.2f "
                  "(hutchinson), %.2f (hutchpp)\n", n, worst_z[0], worst_z[1]);
    free(A);

    /* low rank (10 eigenvalues 50..100) plus small (0.01 scale) */
    for (int i = 0; i < n; i++)
        lam[i] = i < 10 ? 50 + 5 * i : 0.01 * sin(3.0 * i);
    tr = 0;
    for (int i = 0; i < n; i++)
        tr += lam[i];
    A = spectral_matrix(n, lam, 43, NULL);
    d.A = A;
    double err[2] = {0, 0}, se[2] = {0, 0};
    for (int method = 0; method < 2; method++)
        for (uint64_t seed = 1; seed <= 20; seed++) {
            lnk_trace_opts o;
            lnk_trace_opts_default(&o);
            o.method = method;
            o.probes = 60;
            o.seed = seed;
            lnk_trace_result r;
            assert_int_equal(lnk_trace(&op, &o, &r), LNK_OK);
            err[method] += fabs(r.trace - tr) / 20;
            se[method] += r.std_error / 20;
            assert_true(fabs(r.trace - tr) <= 4 * r.std_error);
        }
    print_message("      low rank + small: mean |error| %.2e (hutchinson) vs %.2e (hutchpp); "
                  "mean se %.2e vs %.2e\n", err[0], err[1], se[0], se[1]);
    assert_true(err[1] < err[0] / 100);
    assert_true(se[1] < se[0] / 100);
    free(A);

    /* Rademacher z: z^T D z = tr D exactly. */
    diag_op g = {n, lam};
    lnk_operator opd = diag_operator(&g);
    lnk_trace_opts o;
    lnk_trace_opts_default(&o);
    o.probes = 5;
    lnk_trace_result r;
    assert_int_equal(lnk_trace(&opd, &o, &r), LNK_OK);
    assert_true(fabs(r.trace - tr) < 1e-12 * fabs(tr) && r.std_error < 1e-12 * fabs(tr));
    /* Hutch++ with a sketch as large as n: exact. */
    diag_op g5 = {5, lam};
    lnk_operator op5 = diag_operator(&g5);
    o.method = LNK_TRACE_HUTCHPP;
    o.probes = 30;
    assert_int_equal(lnk_trace(&op5, &o, &r), LNK_OK);
    assert_int_equal(r.sketch, 5);
    double tr5 = lam[0] + lam[1] + lam[2] + lam[3] + lam[4];
    assert_true(fabs(r.trace - tr5) < 1e-12 * fabs(tr5));
    free(lam);
}

/* ---------------------------------------------------- kernel conventions */

static void test_sigma_conventions(void **state)
{
    (void)state;
    double s;
    /* PyHessian / google: variance v * max(1, range) */
    assert_int_equal(lnk_sigma_from_variance(1e-5, -1, 99, &s), LNK_OK);
    assert_true(fabs(s - sqrt(1e-3)) < 1e-15);
    assert_int_equal(lnk_sigma_from_variance(1e-5, 0.2, 0.7, &s), LNK_OK);
    assert_true(fabs(s - sqrt(1e-5)) < 1e-15);
    /* Papyan: (1 + 2 margin) range / ((m - 1) sqrt(8 ln kappa)) */
    assert_int_equal(lnk_sigma_from_kappa(3, 80, 0.05, 0, 10, &s), LNK_OK);
    assert_true(fabs(s - 11.0 / (79 * sqrt(8 * log(3.0)))) < 1e-15);
    assert_int_equal(lnk_sigma_from_fraction(0.01, -2, 8, &s), LNK_OK);
    assert_true(fabs(s - 0.1) < 1e-15);

    assert_int_equal(lnk_sigma_from_variance(0, 0, 1, &s), LNK_EINVAL);
    assert_msg_has("v = 0");
    assert_int_equal(lnk_sigma_from_kappa(1, 80, 0.05, 0, 1, &s), LNK_EINVAL);
    assert_msg_has("kappa = 1");
    assert_int_equal(lnk_sigma_from_kappa(3, 1, 0.05, 0, 1, &s), LNK_EINVAL);
    assert_msg_has("m = 1");
    assert_int_equal(lnk_sigma_from_kappa(3, 80, 0.05, 2, 2, &s), LNK_EINVAL);
    assert_msg_has("sigma");
    assert_int_equal(lnk_sigma_from_fraction(0.1, 3, 1, &s), LNK_EINVAL);
    assert_msg_has("lambda_max");
}

/* -------------------------------------------------- bad input, callbacks */

static int cancel_at_5(void *ctx, const lnk_eigs_progress *p)
{
    int *calls = ctx;
    (*calls)++;
    assert_true(p->n_top >= 1 && p->top[0] >= p->top[p->n_top - 1]);
    assert_true(p->elapsed >= 0);
    return p->step >= 5;
}

/* ctx: {calls, last done, total, stop_at} */
static int count_progress(void *ctx, int done, int total, double elapsed)
{
    int *c = ctx;
    c[0]++;
    assert_true(done > c[1] && done <= total && elapsed >= 0);
    c[1] = done;
    c[2] = total;
    return c[3] > 0 && done >= c[3];
}

static void test_bad_input(void **state)
{
    (void)state;
    double lam[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    diag_op g = {10, lam};
    lnk_operator op = diag_operator(&g);
    lnk_eigs_opts o;
    lnk_eigs_result r;
    lnk_eigs_opts_default(&o);
    o.k_top = 11;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_EINVAL);
    assert_msg_has("k_top = 11");
    assert_msg_has("n = 10");
    o.k_top = -1;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_EINVAL);
    assert_msg_has("k_top = -1");
    o.k_top = 0;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_EINVAL);
    assert_msg_has("nothing requested");
    o.k_top = 3;
    o.k_bottom = 3;
    o.max_steps = 5;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_EINVAL);
    assert_msg_has("max_steps = 5");
    o.max_steps = 100;
    o.tol = -1;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_EINVAL);
    assert_msg_has("tol = -1");
    o.tol = 1e-10;
    assert_int_equal(lnk_eigs(NULL, &o, &r), LNK_EINVAL);
    assert_msg_has("NULL operator");
    lnk_operator bad = {0, NULL, diag_apply, NULL};
    assert_int_equal(lnk_eigs(&bad, &o, &r), LNK_EINVAL);
    assert_msg_has("n = 0");
    double zero[10] = {0};
    o.v0 = zero;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_EINVAL);
    assert_msg_has("norm 0");
    o.v0 = NULL;

    lnk_slq_opts so;
    lnk_slq_result sr;
    lnk_slq_opts_default(&so);
    so.runs = 0;
    assert_int_equal(lnk_slq(&op, &so, &sr), LNK_EINVAL);
    assert_msg_has("runs = 0");
    so.runs = 2;
    so.steps = 0;
    assert_int_equal(lnk_slq(&op, &so, &sr), LNK_EINVAL);
    assert_msg_has("steps = 0");
    so.steps = 80;
    assert_int_equal(lnk_slq(NULL, &so, &sr), LNK_EINVAL);
    assert_int_equal(lnk_slq(&op, &so, &sr), LNK_OK);
    double t[4], phi[4];
    assert_int_equal(lnk_slq_density(&sr, 0.0, t, 4, phi), LNK_EINVAL);
    assert_msg_has("sigma = 0");
    assert_int_equal(lnk_slq_density(&sr, -1.0, t, 4, phi), LNK_EINVAL);
    assert_msg_has("sigma = -1");
    assert_int_equal(lnk_slq_grid(&sr, 0.0, 6, 4, t), LNK_EINVAL);
    assert_msg_has("sigma = 0");
    assert_int_equal(lnk_slq_grid(&sr, 0.1, 6, 1, t), LNK_EINVAL);
    assert_msg_has("npts = 1");
    /* n = 10 < m = 80: each run stops at the invariant whole space */
    for (int v = 0; v < 2; v++)
        assert_true(sr.steps[v] <= 10 && sr.invariant[v]);
    lnk_slq_result_free(&sr);

    lnk_trace_opts to;
    lnk_trace_result tr;
    lnk_trace_opts_default(&to);
    to.probes = 1;
    assert_int_equal(lnk_trace(&op, &to, &tr), LNK_EINVAL);
    assert_msg_has("probes = 1");
    to.method = LNK_TRACE_HUTCHPP;
    to.probes = 3;
    assert_int_equal(lnk_trace(&op, &to, &tr), LNK_EINVAL);
    assert_msg_has("probes = 3");
    to.method = 7;
    assert_int_equal(lnk_trace(&op, &to, &tr), LNK_EINVAL);
    assert_msg_has("method = 7");

    assert_null(lnk_lanczos_alloc(10, 0, LNK_LANCZOS_FULL));
    assert_msg_has("max_steps = 0");
    assert_null(lnk_lanczos_alloc(10, 5, 9));
    assert_msg_has("mode = 9");
    lnk_lanczos *w = lnk_lanczos_alloc(10, 5, LNK_LANCZOS_FULL);
    assert_int_equal(lnk_lanczos_step(w, &op), LNK_EINVAL);
    assert_msg_has("no run started");
    lnk_lanczos_free(w);
}

static void test_callbacks_and_errors(void **state)
{
    (void)state;
    int n = 200;
    double *lam = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++)
        lam[i] = cos(0.37 * i);
    double *A = spectral_matrix(n, lam, 51, NULL);
    dense_op d = {n, A, 0, 0};
    lnk_operator op = dense_operator(&d);
    lnk_eigs_opts o;
    lnk_eigs_result r;
    lnk_eigs_opts_default(&o);
    o.k_top = 2;
    o.k_bottom = 2;
    o.tol = 1e-10; /* 8 steps must not reach it (the default is 1e-6) */
    /* progress and cancel */
    int calls = 0;
    o.progress = cancel_at_5;
    o.progress_ctx = &calls;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_OK);
    assert_int_equal(r.stop, LNK_EIGS_CANCELLED);
    assert_int_equal(r.steps, 5);
    assert_int_equal(calls, 5);
    assert_int_equal(r.k, 4);
    lnk_eigs_result_free(&r);
    /* step limit: not converged, and said so */
    o.progress = NULL;
    o.max_steps = 8;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_OK);
    assert_int_equal(r.stop, LNK_EIGS_MAXSTEPS);
    assert_int_equal(r.steps, 8);
    int nconv = 0;
    for (int i = 0; i < r.k; i++)
        nconv += r.converged[i];
    assert_true(nconv < r.k);
    assert_string_equal(lnk_eigs_stop_name(r.stop), "max_steps");
    lnk_eigs_result_free(&r);
    /* the operator's error is passed through with its message */
    o.max_steps = 100;
    d.calls = 0;
    d.fail_at = 3;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_ENONFINITE);
    assert_msg_has("failing on purpose");
    assert_null(r.value);
    d.calls = 0;
    lnk_trace_opts to;
    lnk_trace_result tr;
    lnk_trace_opts_default(&to);
    assert_int_equal(lnk_trace(&op, &to, &tr), LNK_ENONFINITE);
    d.calls = 0;
    lnk_slq_opts so;
    lnk_slq_result sr;
    lnk_slq_opts_default(&so);
    assert_int_equal(lnk_slq(&op, &so, &sr), LNK_ENONFINITE);
    assert_null(sr.node);
    d.fail_at = 0;
    /* same seed, same result; another seed, another start */
    lnk_slq_result a, b, c;
    so.runs = 2;
    so.steps = 20;
    assert_int_equal(lnk_slq(&op, &so, &a), LNK_OK);
    assert_int_equal(lnk_slq(&op, &so, &b), LNK_OK);
    so.seed = 1;
    assert_int_equal(lnk_slq(&op, &so, &c), LNK_OK);
    assert_memory_equal(a.node, b.node, 40 * sizeof(double));
    assert_true(memcmp(a.node, c.node, 40 * sizeof(double)) != 0);
    /* run v does not depend on the number of runs */
    lnk_slq_result one;
    so.seed = 0;
    so.runs = 1;
    assert_int_equal(lnk_slq(&op, &so, &one), LNK_OK);
    assert_memory_equal(one.node, a.node, 20 * sizeof(double));
    /* progress of SLQ and trace; cancelling */
    int pc[4] = {0, 0, 0, 0};
    so.progress = count_progress;
    so.progress_ctx = pc;
    so.runs = 3;
    lnk_slq_result e;
    assert_int_equal(lnk_slq(&op, &so, &e), LNK_OK);
    lnk_slq_result_free(&e);
    assert_int_equal(pc[0], 60);
    assert_int_equal(pc[1], 60);
    assert_int_equal(pc[2], 60);
    to.progress = count_progress;
    to.progress_ctx = pc;
    to.probes = 12;
    for (int method = 0; method < 2; method++) {
        memset(pc, 0, sizeof pc);
        to.method = method;
        assert_int_equal(lnk_trace(&op, &to, &tr), LNK_OK);
        assert_int_equal(pc[0], 12);
        assert_int_equal(pc[2], 12);
        memset(pc, 0, sizeof pc);
        pc[3] = 3;
        assert_int_equal(lnk_trace(&op, &to, &tr), LNK_EINVAL);
        assert_msg_has("cancelled");
        assert_int_equal(pc[0], 3);
    }
    memset(pc, 0, sizeof pc);
    pc[3] = 7;
    assert_int_equal(lnk_slq(&op, &so, &e), LNK_EINVAL);
    assert_msg_has("cancelled");
    assert_null(e.node);
    /* CSV of the nodes */
    const char *path = tu_path("nodes.csv");
    assert_int_equal(lnk_slq_write_nodes(&a, path), LNK_OK);
    size_t len;
    char *txt = tu_read_file(path, &len);
    assert_true(strncmp(txt, "run,index,node,weight\n", 22) == 0);
    int rows = 0;
    for (size_t i = 0; i < len; i++)
        rows += txt[i] == '\n';
    assert_int_equal(rows, 41);
    free(txt);
    double tt[3] = {-1, 0, 0.5}, ff[3] = {0, 0.25, 1e-300};
    path = tu_path("density.csv");
    assert_int_equal(lnk_density_write(path, tt, ff, 3), LNK_OK);
    txt = tu_read_file(path, &len);
    assert_string_equal(txt, "t,density\n-1,0\n0,0.25\n0.5,1e-300\n");
    free(txt);
    lnk_slq_result_free(&a), lnk_slq_result_free(&b), lnk_slq_result_free(&c);
    lnk_slq_result_free(&one);
    free(A), free(lam);
}

/* ------------------------------------------- distributed vectors (groups)
 *
 * A group of P members simulated by P threads in one process: each thread
 * holds a slice of every vector, its sum() adds the members' values in
 * member order through a shared buffer (barriers on both sides), and its
 * operator allgathers x and applies its rows of A.  This exercises the
 * distributed code paths of Lanczos, eigs, trace and SLQ without MPI (the
 * MPI runs are tests/mpi/run.sh). */
#include <pthread.h>

#define GMAXC 1024 /* longest sum: the Gram-Schmidt coefficients (<= m + 1) */
typedef struct {
    int P, n;
    const double *A;
    pthread_barrier_t bar;
    double *buf, *xfull;
    size_t cnt[4], off[4];
    int which; /* 0 eigs, 1 Hutchinson, 2 Hutch++, 3 SLQ */
} gshared;

typedef struct {
    gshared *sh;
    int rank;
    lnk_group g;
    int rc;
    lnk_eigs_result er;
    lnk_trace_result tr;
    lnk_slq_result sr;
    char msg[256];
} gmember;

static int gsum_thr(void *ctx, double *x, int count)
{
    gmember *m = ctx;
    gshared *s = m->sh;
    if (count > GMAXC)
        return lnk_error(LNK_EINVAL, "test group: sum of %d > %d values", count, GMAXC);
    memcpy(s->buf + (size_t)m->rank * GMAXC, x, sizeof(double) * (size_t)count);
    pthread_barrier_wait(&s->bar);
    for (int i = 0; i < count; i++) {
        double v = s->buf[i];
        for (int r = 1; r < s->P; r++)
            v += s->buf[(size_t)r * GMAXC + i];
        x[i] = v;
    }
    pthread_barrier_wait(&s->bar);
    return LNK_OK;
}

static int gapply_thr(void *ctx, const double *x, double *y)
{
    gmember *m = ctx;
    gshared *s = m->sh;
    size_t o = s->off[m->rank], c = s->cnt[m->rank];
    memcpy(s->xfull + o, x, sizeof(double) * c);
    pthread_barrier_wait(&s->bar);
    cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)c, s->n, 1.0, s->A + o * (size_t)s->n, s->n,
                s->xfull, 1, 0.0, y, 1);
    pthread_barrier_wait(&s->bar);
    return LNK_OK;
}

static void *gmember_run(void *arg)
{
    gmember *m = arg;
    gshared *s = m->sh;
    m->g = (lnk_group){m->rank, s->P, (size_t)s->n, s->off[m->rank], gsum_thr, m};
    lnk_operator op = {s->cnt[m->rank], m, gapply_thr, &m->g};
    if (s->which == 0) {
        lnk_eigs_opts o;
        lnk_eigs_opts_default(&o);
        o.k_top = 3, o.k_bottom = 2, o.seed = 5, o.vectors = 1;
        m->rc = lnk_eigs(&op, &o, &m->er);
    } else if (s->which <= 2) {
        lnk_trace_opts o;
        lnk_trace_opts_default(&o);
        o.method = s->which == 1 ? LNK_TRACE_HUTCHINSON : LNK_TRACE_HUTCHPP;
        o.probes = 30, o.seed = 9;
        m->rc = lnk_trace(&op, &o, &m->tr);
    } else {
        lnk_slq_opts o;
        lnk_slq_opts_default(&o);
        o.runs = 3, o.steps = 25, o.seed = 2;
        m->rc = lnk_slq(&op, &o, &m->sr);
    }
    snprintf(m->msg, sizeof m->msg, "%s", lnk_errmsg());
    return NULL;
}

static void test_group_simulated(void **state)
{
    (void)state;
    int n = 150;
    double *A = malloc((size_t)n * n * sizeof(double)), *B = malloc((size_t)n * n * sizeof(double));
    tu_randn(B, (size_t)n * n, 31);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++)
            A[(size_t)i * n + k] = (B[(size_t)i * n + k] + B[(size_t)k * n + i]) / sqrt(2.0 * n);
    dense_op d = {n, A, 0, 0};
    lnk_operator op1 = dense_operator(&d);
    /* one-process references */
    lnk_eigs_opts eo;
    lnk_eigs_opts_default(&eo);
    eo.k_top = 3, eo.k_bottom = 2, eo.seed = 5, eo.vectors = 1;
    lnk_eigs_result er, ef;
    assert_int_equal(lnk_eigs(&op1, &eo, &er), LNK_OK);
    eo.reorth = LNK_REORTH_ALWAYS; /* the distributed partial runs against it too */
    assert_int_equal(lnk_eigs(&op1, &eo, &ef), LNK_OK);
    lnk_trace_result tr[2];
    for (int t = 0; t < 2; t++) {
        lnk_trace_opts o;
        lnk_trace_opts_default(&o);
        o.method = t == 0 ? LNK_TRACE_HUTCHINSON : LNK_TRACE_HUTCHPP;
        o.probes = 30, o.seed = 9;
        assert_int_equal(lnk_trace(&op1, &o, &tr[t]), LNK_OK);
    }
    lnk_slq_opts so;
    lnk_slq_opts_default(&so);
    so.runs = 3, so.steps = 25, so.seed = 2;
    lnk_slq_result sr;
    assert_int_equal(lnk_slq(&op1, &so, &sr), LNK_OK);

    for (int P = 2; P <= 3; P++) {
        for (int which = 0; which < 4; which++) {
            gshared s = {P, n, A, {{0}}, NULL, NULL, {0}, {0}, which};
            s.buf = calloc((size_t)P * GMAXC, sizeof(double));
            s.xfull = calloc((size_t)n, sizeof(double));
            size_t o = 0;
            for (int r = 0; r < P; r++) {
                s.cnt[r] = (size_t)n / P + ((size_t)r < (size_t)n % P);
                s.off[r] = o;
                o += s.cnt[r];
            }
            pthread_barrier_init(&s.bar, NULL, (unsigned)P);
            gmember mem[3];
            pthread_t th[3];
            for (int r = 0; r < P; r++) {
                memset(&mem[r], 0, sizeof mem[r]);
                mem[r].sh = &s, mem[r].rank = r;
                assert_int_equal(pthread_create(&th[r], NULL, gmember_run, &mem[r]), 0);
            }
            for (int r = 0; r < P; r++)
                pthread_join(th[r], NULL);
            pthread_barrier_destroy(&s.bar);
            for (int r = 0; r < P; r++) {
                if (mem[r].rc != LNK_OK)
                    fail_msg("P = %d, routine %d, member %d: %s", P, which, r, mem[r].msg);
                if (which == 0) {
                    assert_int_equal(mem[r].er.k, er.k);
                    assert_int_equal(mem[r].er.steps, er.steps);
                    for (int i = 0; i < er.k; i++) {
                        assert_true(relerr(mem[r].er.value[i], er.value[i]) < 1e-12);
                        /* this member's slice of each eigenvector (same sign rule) */
                        for (size_t t = 0; t < s.cnt[r]; t++)
                            assert_true(fabs(mem[r].er.vectors[(size_t)i * s.cnt[r] + t] -
                                             er.vectors[(size_t)i * n + s.off[r] + t]) < 1e-9);
                        /* every member holds the same values, bitwise */
                        assert_true(mem[r].er.value[i] == mem[0].er.value[i]);
                        /* and full reorthogonalisation's, to 1e-10 of ||A|| */
                        assert_true(fabs(mem[r].er.value[i] - ef.value[i]) < 1e-10 * ef.scale);
                        assert_true(fabs(mem[r].er.residual[i] - ef.residual[i]) <
                                    1e-10 * ef.scale);
                    }
                } else if (which <= 2) {
                    assert_true(relerr(mem[r].tr.trace, tr[which - 1].trace) < 1e-12);
                    assert_true(relerr(mem[r].tr.std_error, tr[which - 1].std_error) < 1e-10);
                    assert_true(mem[r].tr.trace == mem[0].tr.trace);
                } else {
                    int total = sr.offset[sr.runs];
                    assert_int_equal(mem[r].sr.offset[mem[r].sr.runs], total);
                    for (int i = 0; i < total; i++) {
                        assert_true(fabs(mem[r].sr.node[i] - sr.node[i]) < 1e-12 * 4);
                        assert_true(fabs(mem[r].sr.weight[i] - sr.weight[i]) < 1e-12);
                        assert_true(mem[r].sr.node[i] == mem[0].sr.node[i]);
                    }
                }
            }
            for (int r = 0; r < P; r++)
                if (which == 0)
                    lnk_eigs_result_free(&mem[r].er);
                else if (which == 3)
                    lnk_slq_result_free(&mem[r].sr);
            free(s.buf);
            free(s.xfull);
        }
    }
    print_message("      group: partial reorthogonalisation %d steps, %d reorthogonalisations\n",
                  er.steps, er.n_reorth);
    assert_true(er.n_reorth > 0);
    lnk_eigs_result_free(&er);
    lnk_eigs_result_free(&ef);
    lnk_slq_result_free(&sr);
    free(A);
    free(B);
}

/* The agreement check on T fails when a member's values differ: a "group"
 * whose sum is the identity (member 1 of 2 never sees member 0's hash). */
static int sum_identity(void *ctx, double *x, int count)
{
    (void)ctx, (void)x, (void)count;
    return LNK_OK;
}

static void test_group_disagreement(void **state)
{
    (void)state;
    double t[3] = {1, 2, 3};
    lnk_group g = {1, 2, 6, 3, sum_identity, NULL};
    assert_int_equal(lnk_cv_check_same(&g, t, 3, "eigs"), LNK_EINVAL);
    assert_msg_has("rank 1's tridiagonal differs");
    lnk_group g0 = {0, 1, 3, 0, sum_identity, NULL};
    assert_int_equal(lnk_cv_check_same(&g0, t, 3, "eigs"), LNK_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lanczos_full_diag),
        cmocka_unit_test(test_lanczos_prefault),
        cmocka_unit_test(test_lanczos_light_vs_full),
        cmocka_unit_test(test_eigs_dense_known),
        cmocka_unit_test(test_eigs_vs_dsyevr),
        cmocka_unit_test(test_partial_vs_always),
        cmocka_unit_test(test_small_n_and_breakdown),
        cmocka_unit_test(test_slq_quadrature_exact),
        cmocka_unit_test(test_slq_density_known),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_sigma_conventions),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_callbacks_and_errors),
        cmocka_unit_test(test_group_simulated),
        cmocka_unit_test(test_group_disagreement),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
