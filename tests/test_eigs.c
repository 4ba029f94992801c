/* Extremal eigenpairs (lnk_eigs) on plain matrices with known spectra
 * (tests/testutil_curv.c): dense rotated spectra, LAPACKE_dsyevr on a GOE
 * matrix, partial against full reorthogonalisation.  Reference values come
 * from the construction or from LAPACKE_dsyevr, never from the code under
 * test; seeds are fixed in advance. */
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
    double *A = tc_spectral_matrix(n, lam, 21, &Q);
    tc_dense_op d = {n, A, 0, 0};
    lnk_operator op = tc_dense_operator(&d);

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
    tc_check_extremes("top", r.value, 5, lam, n, 1, 1e-10);
    tc_check_extremes("bottom", r.value + 5, 5, lam, n, 0, 1e-10);
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
    tc_dense_op d = {n, A, 0, 0};
    lnk_operator op = tc_dense_operator(&d);
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
            worst = fmax(worst, tc_relerr(r.value[i], ev[n - 1 - i]));
            worst = fmax(worst, tc_relerr(r.value[5 + i], ev[i]));
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
    double *lam = tc_spectrum1(n);
    tc_diag_op g = {n, lam};
    lnk_operator op = tc_diag_operator(&g);
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
    g = (tc_diag_op){n, lam};
    op = tc_diag_operator(&g);
    compare_reorth("diag n=2000, clustered + degenerate, top-8/bottom-5", &op, 8, 5, 1e-12, 600,
                   3);
    /* the same spectrum rotated: a dense operator */
    n = 600;
    double *lam2 = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n - no; i++)
        lam2[i] = -1.0 + 2.0 * i / (n - no - 1);
    memcpy(lam2 + n - no, out, sizeof out);
    double *Q, *A = tc_spectral_matrix(n, lam2, 8, &Q);
    tc_dense_op d = {n, A, 0, 0};
    op = tc_dense_operator(&d);
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
    d = (tc_dense_op){n, A, 0, 0};
    op = tc_dense_operator(&d);
    compare_reorth("GOE n=400, top-5/bottom-5", &op, 5, 5, 1e-10, 400, 1);
    free(A), free(B), free(lam2);
    /* SLQ on the clustered spectrum: the same nodes and weights */
    n = 2000;
    g = (tc_diag_op){n, lam};
    op = tc_diag_operator(&g);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eigs_dense_known),
        cmocka_unit_test(test_eigs_vs_dsyevr),
        cmocka_unit_test(test_partial_vs_always),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
