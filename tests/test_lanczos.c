/* Lanczos on plain matrices with known spectra (tests/testutil_curv.c):
 * full and light modes, ghosts, first touch of the basis rows, n smaller
 * than the step count and breakdowns.  Reference eigenvalues come from the
 * construction, never from the code under test; seeds are fixed in advance
 * (listed where used) and every seed of a set must pass. */
#include "testutil.h"
#include "testutil_curv.h"

#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curvature/internal.h"
#include "lnkit/curvature.h"

/* The distinct values of lam (sorted ascending into out); returns the count. */
static int distinct_sorted(const double *lam, int n, double *out)
{
    memcpy(out, lam, (size_t)n * sizeof(double));
    qsort(out, (size_t)n, sizeof(double), tc_cmp_double);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || out[i] != out[k - 1])
            out[k++] = out[i];
    return k;
}

static int count_near(const double *theta, int j, double x, double tol, const int *flag)
{
    int c = 0;
    for (int i = 0; i < j; i++)
        if ((!flag || flag[i] == LNK_RITZ_GOOD) && fabs(theta[i] - x) <= tol)
            c++;
    return c;
}

/* Distinct extremes of tc_spectrum1: what the light mode reports. */
static const double TOP1[] = {10, 9, 8.5, 7.002};
static const double BOT1[] = {-5, -4.5, -4};

/* Test 1: diagonal operator, full reorthogonalisation: extremal eigenvalues
 * to 1e-10 relative, the repeated ones found as values, and no ghost copies:
 * exactly one Ritz value near each simple outlier after many steps. */
static void test_lanczos_full_diag(void **state)
{
    (void)state;
    int n = 1500;
    double *lam = tc_spectrum1(n);
    tc_diag_op g = {n, lam};
    lnk_operator op = tc_diag_operator(&g);

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
    tc_check_extremes("top", r.value, 4, lam, n, 1, 1e-10);
    tc_check_extremes("bottom", r.value + 4, 3, lam, n, 0, 1e-10);
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
    double *lam = tc_spectrum1(n);
    tc_diag_op g = {n, lam};
    lnk_operator op = tc_diag_operator(&g);
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
    double *lam = tc_spectrum1(n);
    tc_diag_op g = {n, lam};
    lnk_operator op = tc_diag_operator(&g);

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
        if (tc_relerr(rl.value[i], want) > 1e-10)
            fail_msg("light pair %d: %.17g vs %.17g", i, rl.value[i], want);
        assert_true(rl.converged[i]);
        assert_true(rl.residual[i] <= 1e-12 * rl.scale);
    }
    /* full mode with room for the copies it may find */
    o.mode = LNK_LANCZOS_FULL;
    o.k_top = 6;
    o.k_bottom = 5;
    assert_int_equal(lnk_eigs(&op, &o, &rf), LNK_OK);
    tc_check_extremes("full top", rf.value, 6, lam, n, 1, 1e-10);
    tc_check_extremes("full bottom", rf.value + 6, 5, lam, n, 0, 1e-10);
    double worst = 0;
    for (int i = 0; i < 7; i++) {
        int f = -1;
        for (int k = 0; k < rf.k; k++)
            if (f < 0 || fabs(rf.value[k] - rl.value[i]) < fabs(rf.value[f] - rl.value[i]))
                f = k;
        worst = fmax(worst, tc_relerr(rl.value[i], rf.value[f]));
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

/* Test 5: n smaller than m, and repeated eigenvalues exposed by breakdowns
 * (here and in the two tests below). */
static void test_small_n(void **state)
{
    (void)state;
    /* n = 7 with a double eigenvalue: the Krylov space of a random vector is
     * 6-dimensional; full mode restarts once and finds all 7. */
    double lam[7] = {2, -3, 0.5, 7, -1, 2, 0};
    double sorted[7];
    memcpy(sorted, lam, sizeof lam);
    qsort(sorted, 7, sizeof(double), tc_cmp_double);
    tc_diag_op g = {7, lam};
    lnk_operator op = tc_diag_operator(&g);
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
    tc_diag_op g1 = {1, &one};
    lnk_operator op1 = tc_diag_operator(&g1);
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
}

/* 1, 2, 3, 1, 2, 3, ...: three distinct values, each n/3 times. */
static double *three_values(int n)
{
    double *d = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++)
        d[i] = 1 + i % 3;
    return d;
}

/* Three distinct values, each 100 times: breakdown after 3 steps.  Full
 * mode with restarts runs all n = 300 steps (99 restarts), keeps the
 * basis orthonormal and recovers the multiplicities. */
static void test_breakdown_restart(void **state)
{
    (void)state;
    int n = 300;
    double *d3 = three_values(n);
    tc_diag_op g3 = {n, d3};
    lnk_operator op3 = tc_diag_operator(&g3);
    double *theta = malloc((size_t)n * sizeof(double));
    lnk_lanczos *w = lnk_lanczos_alloc((size_t)n, n, LNK_LANCZOS_FULL);
    assert_int_equal(lnk_lanczos_start(w, NULL, 9), LNK_OK);
    assert_int_equal(lnk_lanczos_run(w, &op3, n), LNK_OK);
    assert_int_equal(w->steps, n);
    assert_true(w->done && w->invariant);
    assert_int_equal(w->n_restarts, 99);
    assert_true(w->beta[2] == 0);
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
    free(theta), free(d3);
}

/* The same with STOP (what SLQ does) from a known vector: 3 steps, nodes
 * 1, 2, 3 with weights = the start vector's mass on each eigenspace. */
static void test_breakdown_stop(void **state)
{
    (void)state;
    int n = 300;
    double *d3 = three_values(n);
    tc_diag_op g3 = {n, d3};
    lnk_operator op3 = tc_diag_operator(&g3);
    double *theta = malloc((size_t)n * sizeof(double));
    lnk_lanczos *w = lnk_lanczos_alloc((size_t)n, 80, LNK_LANCZOS_FULL);
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
    lnk_slq_opts so;
    lnk_slq_opts_default(&so);
    lnk_slq_result sr;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lanczos_full_diag),
        cmocka_unit_test(test_lanczos_prefault),
        cmocka_unit_test(test_lanczos_light_vs_full),
        cmocka_unit_test(test_small_n),
        cmocka_unit_test(test_breakdown_restart),
        cmocka_unit_test(test_breakdown_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
