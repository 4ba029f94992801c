/* Spectral densities and traces on plain matrices with known spectra
 * (tests/testutil_curv.c): the Lanczos quadrature of a known start vector,
 * SLQ density against the true spectral CDF, Hutchinson and Hutch++ against
 * the exact trace, kernel width conventions.  Seeds are fixed in advance and
 * every seed of a set must pass. */
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
    double *lam = tc_spectrum1(n);
    tc_diag_op g = {n, lam};
    lnk_operator op = tc_diag_operator(&g);
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
    double *A = tc_spectral_matrix(n, lam, 31, NULL);
    tc_dense_op d = {n, A, 0, 0};
    lnk_operator op = tc_dense_operator(&d);
    double *ls = malloc((size_t)n * sizeof(double));
    memcpy(ls, lam, (size_t)n * sizeof(double));
    qsort(ls, (size_t)n, sizeof(double), tc_cmp_double);

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
    double *A = tc_spectral_matrix(n, lam, 41, NULL);
    tc_dense_op d = {n, A, 0, 0};
    lnk_operator op = tc_dense_operator(&d);
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
    A = tc_spectral_matrix(n, lam, 43, NULL);
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
    tc_diag_op g = {n, lam};
    lnk_operator opd = tc_diag_operator(&g);
    lnk_trace_opts o;
    lnk_trace_opts_default(&o);
    o.probes = 5;
    lnk_trace_result r;
    assert_int_equal(lnk_trace(&opd, &o, &r), LNK_OK);
    assert_true(fabs(r.trace - tr) < 1e-12 * fabs(tr) && r.std_error < 1e-12 * fabs(tr));
    /* Hutch++ with a sketch as large as n: exact. */
    tc_diag_op g5 = {5, lam};
    lnk_operator op5 = tc_diag_operator(&g5);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slq_quadrature_exact),
        cmocka_unit_test(test_slq_density_known),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_sigma_conventions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
