/* The Gauss-Newton part G = J^T H_out J and the functional part F = H - G
 * (lnk_model_ggn_apply, lnk_hessian_set_kind), on dense small models of
 * every task and option:
 *   - G equals J^T H_out J built densely here: J column by column from the
 *     forward tangents (lnk_model_output_jvp), H_out per scored row
 *     (diag p - p p^T) / N from the softmax (1e-10 relative);
 *   - G is symmetric (1e-12) and positive semidefinite (smallest eigenvalue
 *     >= -1e-12 max|lambda|, dsyev);
 *   - G + F = H over a data set of two uneven chunks, full and on a block
 *     (1e-12 relative), with F not negligible;
 *   - finite differences: J against central differences of the
 *     probabilities (dp = (diag p - p p^T) J v), and G v against central
 *     differences of the gradient of the Gauss-Newton-linearised loss,
 *     J^T (softmax(z + e J v) - softmax(z - e J v)) / (2 e N) (the label and
 *     smoothing terms are linear in z and cancel). */
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/hessian.h"
#include "testutil.h"

static const char *configs[][6] = {
    {"task=lm", "norm_pos=post", "norm=layernorm", "qk_norm=none", "tie_output=false",
     "label_smoothing=0"},
    {"task=lm", "norm_pos=pre", "norm=rmsnorm", "qk_norm=layernorm", "tie_output=true",
     "label_smoothing=0.1"},
    {"task=lm", "norm_pos=pre", "norm=none", "qk_norm=rmsnorm", "tie_output=false",
     "label_smoothing=0"},
    {"task=cls", "norm_pos=post", "norm=rmsnorm", "qk_norm=rmsnorm", "tie_output=false",
     "label_smoothing=0.2"},
    {"task=cls", "norm_pos=pre", "norm=layernorm", "qk_norm=none", "tie_output=true",
     "label_smoothing=0"},
    {"task=seq2seq", "norm_pos=post", "norm=layernorm", "qk_norm=layernorm", "tie_output=false",
     "label_smoothing=0.1"},
    {"task=seq2seq", "norm_pos=pre", "norm=layernorm", "qk_norm=none", "tie_output=true",
     "label_smoothing=0"},
};
#define N_CONFIGS (int)(sizeof configs / sizeof configs[0])

static lnk_model *model_of(int i, lnk_config *c)
{
    *c = tu_config(configs[i][0], configs[i][1], configs[i][2], configs[i][3], configs[i][4],
                   configs[i][5], "d=4", "h=2", "L=1", "d_ff=6", "V=7", NULL);
    lnk_model *m = lnk_model_alloc(c);
    assert_non_null(m);
    return m;
}

static double maxabs(const double *x, size_t n)
{
    double a = 0;
    for (size_t i = 0; i < n; i++)
        a = fmax(a, fabs(x[i]));
    return a;
}

/* Row-wise softmax of p * exp(dz) (= softmax(z + dz) for p = softmax(z));
 * rows whose p is all zero (unscored) stay zero. */
static void shifted_softmax(const double *p, const double *dz, double sgn, double *out, size_t R,
                            int C)
{
    for (size_t r = 0; r < R; r++) {
        double s = 0;
        for (int c = 0; c < C; c++) {
            double pc = p[r * C + c];
            out[r * C + c] = pc > 0 ? pc * exp(sgn * dz[r * C + c]) : 0;
            s += out[r * C + c];
        }
        for (int c = 0; c < C && s > 0; c++)
            out[r * C + c] /= s;
    }
}

/* G = J^T H_out J densely, from J ([RC x n], column j = J e_j) and p. */
static void dense_ggn(const double *J, const double *p, size_t R, int C, size_t n, double *G)
{
    size_t RC = R * (size_t)C, N = 0;
    for (size_t r = 0; r < R; r++)
        N += p[r * C] > 0 || p[r * C + 1] > 0;
    double *M = calloc(RC * n, sizeof(double)); /* M = H_out J, [RC x n] */
    for (size_t r = 0; r < R; r++)
        for (int a = 0; a < C; a++)
            for (int b = 0; b < C; b++) {
                double h = ((a == b) * p[r * C + a] - p[r * C + a] * p[r * C + b]) / (double)N;
                if (h == 0)
                    continue;
                for (size_t j = 0; j < n; j++)
                    M[(r * C + a) * n + j] += h * J[(r * C + b) * n + j];
            }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t q = 0; q < RC; q++)
                s += J[q * n + i] * M[q * n + j];
            G[i * n + j] = s;
        }
    free(M);
}

/* Finite differences along a random v: J v against central differences of
 * the probabilities (dp = (diag p - p p^T) J v), and G v against central
 * differences of the gradient of the Gauss-Newton-linearised loss. */
static void ggn_fd_check(const lnk_model *m, lnk_workspace *ws, const double *th,
                         const lnk_batch *b, const double *J, const double *p, size_t R, int C,
                         int ci)
{
    size_t n = lnk_model_n_params(m), RC = R * (size_t)C;
    double *jv = malloc(sizeof(double) * RC), *g2 = malloc(sizeof(double) * n);
    double *v = malloc(sizeof(double) * n), *tp = malloc(sizeof(double) * n);
    double *pp = malloc(sizeof(double) * RC), *pm = malloc(sizeof(double) * RC);
    tu_randn(v, n, 100 + ci);
    assert_int_equal(lnk_model_output_jvp(ws, v, jv, NULL, NULL, NULL), LNK_OK);
    assert_int_equal(lnk_model_ggn_apply(ws, v, NULL, g2), LNK_OK);
    /* the fourth-order stencil: a norm of an exactly zero vector (theorem's
     * Wq = 0 without biases, under qk_norm) has curvature 1/sqrt(eps) */
    double eps = 1e-6;
    double *pp2 = malloc(sizeof(double) * RC), *pm2 = malloc(sizeof(double) * RC);
    lnk_workspace *w2 = lnk_workspace_alloc(m, b->B, b->S, b->T, LNK_WS_HVP);
    for (int sgn = -2; sgn <= 2; sgn++) {
        if (!sgn)
            continue;
        for (size_t i = 0; i < n; i++)
            tp[i] = th[i] + sgn * eps * v[i];
        double *dst = sgn == 1 ? pp : sgn == -1 ? pm : sgn == 2 ? pp2 : pm2;
        assert_int_equal(lnk_model_hvp_prepare(w2, tp, b, NULL, NULL), LNK_OK);
        assert_int_equal(lnk_model_output_jvp(w2, NULL, NULL, dst, NULL, NULL), LNK_OK);
    }
    double *dp = malloc(sizeof(double) * RC), *fd = malloc(sizeof(double) * RC);
    for (size_t r = 0; r < R; r++) {
        double s = 0;
        for (int a = 0; a < C; a++)
            s += p[r * C + a] * jv[r * C + a];
        for (int a = 0; a < C; a++) {
            dp[r * C + a] = p[r * C + a] * (jv[r * C + a] - s);
            size_t q = r * C + a;
            fd[q] = (8 * (pp[q] - pm[q]) - (pp2[q] - pm2[q])) / (12 * eps);
        }
    }
    double ej = tu_relerr(fd, dp, RC, 1e-300);
    if (!(ej <= 1e-6))
        fail_msg("config %d: J v against central differences of p: %g", ci, ej);
    /* G v against the linearised loss's gradient differences */
    size_t N = 0;
    for (size_t r = 0; r < R; r++)
        N += p[r * C] > 0;
    double e2 = 1e-5;
    double *dz = calloc(RC, sizeof(double));
    for (size_t q = 0; q < RC; q++)
        dz[q] = e2 * jv[q];
    shifted_softmax(p, dz, 1, pp, R, C); /* fourth-order stencil: large logits (DeepNorm's */
    shifted_softmax(p, dz, -1, pm, R, C); /* alpha without norms) curve the softmax fast */
    shifted_softmax(p, dz, 2, pp2, R, C);
    shifted_softmax(p, dz, -2, pm2, R, C);
    double *gfd = calloc(n, sizeof(double));
    for (size_t q = 0; q < RC; q++) {
        double u = (8 * (pp[q] - pm[q]) - (pp2[q] - pm2[q])) / (12 * e2 * (double)N);
        for (size_t j = 0; j < n && u != 0; j++)
            gfd[j] += J[q * n + j] * u;
    }
    double eg = tu_relerr(g2, gfd, n, 1e-300);
    print_message("config %d: J v vs differences of p %.1e, G v vs differences of the "
                  "linearised gradient %.1e\n", ci, ej, eg);
    if (!(eg <= 1e-7))
        fail_msg("config %d: G v against differences of the linearised gradient: %g", ci, eg);
    free(dz);
    free(gfd);
    free(dp);
    free(fd);
    free(v);
    free(tp);
    free(pp);
    free(pm);
    free(pp2);
    free(pm2);
    lnk_workspace_free(w2);
    free(jv);
    free(g2);
}

/* The dense checks of G on one model (ci: a seed offset and the name in
 * messages); returns the worst |G - J^T H_out J| / max|G|. */
static double ggn_dense_check(const lnk_model *m, int ci)
{
    size_t n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * n);
    lnk_model_init_params(m, th);
    lnk_batch b;
    tu_rows(m, &b, 0, 3, 6, 7);
    lnk_workspace *ws = lnk_workspace_alloc(m, b.B, b.S, b.T, LNK_WS_HVP);
    assert_non_null(ws);
    assert_int_equal(lnk_model_hvp_prepare(ws, th, &b, NULL, NULL), LNK_OK);
    size_t R;
    int C;
    assert_int_equal(lnk_model_output_jvp(ws, NULL, NULL, NULL, &R, &C), LNK_OK);
    size_t RC = R * (size_t)C;
    double *G = malloc(sizeof(double) * n * n), *H = malloc(sizeof(double) * n * n);
    double *J = malloc(sizeof(double) * RC * n), *jv = malloc(sizeof(double) * RC);
    double *p = malloc(sizeof(double) * RC), *e = calloc(n, sizeof(double));
    double *h2 = malloc(sizeof(double) * n), *g2 = malloc(sizeof(double) * n);
    double both = 0;
    for (size_t j = 0; j < n; j++) {
        e[j] = 1;
        assert_int_equal(lnk_model_ggn_apply(ws, e, NULL, G + j * n), LNK_OK);
        assert_int_equal(lnk_model_hvp_apply(ws, e, H + j * n), LNK_OK);
        /* H v and G v from one tangent pass: the same numbers */
        assert_int_equal(lnk_model_ggn_apply(ws, e, h2, g2), LNK_OK);
        both = fmax(both, tu_relerr(h2, H + j * n, n, 1e-300));
        both = fmax(both, tu_relerr(g2, G + j * n, n, 1e-300));
        assert_int_equal(lnk_model_output_jvp(ws, e, jv, p, NULL, NULL), LNK_OK);
        for (size_t q = 0; q < RC; q++)
            J[q * n + j] = jv[q];
        e[j] = 0;
    }
    assert_true(both <= 1e-14);
    double *Gd = calloc(n * n, sizeof(double));
    dense_ggn(J, p, R, C, n, Gd);
    double gmax = maxabs(Gd, n * n), err = 0, asym = 0;
    for (size_t i = 0; i < n * n; i++)
        err = fmax(err, fabs(G[i] - Gd[i]));
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            asym = fmax(asym, fabs(G[i * n + j] - G[j * n + i]));
    if (!(err <= 1e-10 * gmax) || !(asym <= 1e-12 * gmax))
        fail_msg("config %d: |G - J^T H_out J| = %g, asymmetry %g, max|G| %g", ci, err, asym,
                 gmax);
    assert_true(gmax > 1e-8);
    /* PSD: eigenvalues of the symmetric part */
    double *S = malloc(sizeof(double) * n * n), *w = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            S[i * n + j] = 0.5 * (G[i * n + j] + G[j * n + i]);
    assert_int_equal(LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'N', 'U', (int)n, S, (int)n, w), 0);
    double lmax = fmax(fabs(w[0]), fabs(w[n - 1]));
    if (!(w[0] >= -1e-12 * lmax))
        fail_msg("config %d: G has eigenvalue %g (max |lambda| %g)", ci, w[0], lmax);
    /* the Hessian is indefinite here: G differs from it (F is not negligible) */
    double fmaxv = 0;
    for (size_t i = 0; i < n * n; i++)
        fmaxv = fmax(fmaxv, fabs(H[i] - G[i]));
    assert_true(fmaxv > 1e-4 * maxabs(H, n * n));

    ggn_fd_check(m, ws, th, &b, J, p, R, C, ci);
    free(S);
    free(w);
    free(Gd);
    free(G);
    free(H);
    free(J);
    free(jv);
    free(p);
    free(e);
    free(h2);
    free(g2);
    lnk_workspace_free(ws);
    lnk_batch_free(&b);
    free(th);
    return err / gmax;
}

static void test_ggn_dense(void **state)
{
    (void)state;
    for (int ci = 0; ci < N_CONFIGS; ci++) {
        lnk_config c;
        lnk_model *m = model_of(ci, &c);
        ggn_dense_check(m, ci);
        lnk_model_free(m);
        lnk_config_clear(&c);
    }
}

/* Dense columns of the operator of kind k (n = op size). */
static void dense_op(lnk_hessian *h, lnk_op_kind k, double *A)
{
    assert_int_equal(lnk_hessian_set_kind(h, k), LNK_OK);
    assert_int_equal(lnk_hessian_kind(h), k);
    lnk_operator op = lnk_hessian_operator(h);
    double *e = calloc(op.n, sizeof(double));
    for (size_t j = 0; j < op.n; j++) {
        e[j] = 1;
        assert_int_equal(op.apply(op.ctx, e, A + j * op.n), LNK_OK);
        e[j] = 0;
    }
    free(e);
}

/* G + F = H over a data set of two uneven chunks, full and on a block;
 * returns the worst |G + F - H| / max|H|. */
static double ggn_plus_functional_check(const lnk_model *m, int ci)
{
    double worst = 0;
    size_t np = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * np);
    lnk_model_init_params(m, th);
    lnk_batch ch[2];
    tu_rows(m, &ch[0], 0, 1, 6, 7);
    tu_rows(m, &ch[1], 1, 4, 6, 7);
    const char *blocks[] = {NULL, "*.attn.w*,*emb*"};
    for (int bi = 0; bi < 2; bi++) {
        lnk_hessian *h = lnk_hessian_alloc(m, th, ch, 2, blocks[bi]);
        assert_non_null(h);
        size_t n = lnk_hessian_block(h)->n;
        double *H = malloc(sizeof(double) * n * n), *G = malloc(sizeof(double) * n * n);
        double *F = malloc(sizeof(double) * n * n);
        dense_op(h, LNK_OP_GGN, G);
        dense_op(h, LNK_OP_HESSIAN, H);
        dense_op(h, LNK_OP_FUNCTIONAL, F);
        double hmax = maxabs(H, n * n), err = 0, fm = maxabs(F, n * n);
        for (size_t i = 0; i < n * n; i++)
            err = fmax(err, fabs(G[i] + F[i] - H[i]));
        worst = fmax(worst, err / hmax);
        if (!(err <= 1e-12 * hmax) || !(fm > 1e-4 * hmax))
            fail_msg("config %d block %d: |G + F - H| = %g, max|F| %g, max|H| %g", ci, bi,
                     err, fm, hmax);
        assert_int_equal(lnk_hessian_n_products(h), 3 * (long)n);
        free(H);
        free(G);
        free(F);
        lnk_hessian_free(h);
    }
    lnk_batch_free(&ch[0]);
    lnk_batch_free(&ch[1]);
    free(th);
    return worst;
}

static void test_ggn_plus_functional(void **state)
{
    (void)state;
    for (int ci = 0; ci < N_CONFIGS; ci++) {
        lnk_config c;
        lnk_model *m = model_of(ci, &c);
        ggn_plus_functional_check(m, ci);
        lnk_model_free(m);
        lnk_config_clear(&c);
    }
}

/* Every variant of tests/testutil.c (d 4, h 2, L 2, d_ff 6, V 7): G against
 * J^T H_out J, symmetric, PSD, J and G v against differences, and G + F = H. */
static void test_variants_ggn(void **state)
{
    (void)state;
    tu_variant v[96];
    int ns, n = tu_variants(v, 96, &ns);
    static const char *const sizes[] = {"d=4", "h=2", "L=2", "d_ff=6", "V=7", NULL};
    double wg = 0, wf = 0;
    for (int i = 0; i < n; i++) {
        lnk_config c = tu_variant_config(&v[i], sizes);
        lnk_model *m = lnk_model_alloc(&c);
        assert_non_null(m);
        double eg = ggn_dense_check(m, 100 + i), ef = ggn_plus_functional_check(m, 100 + i);
        print_message("variant %2d: |G - J^T H_out J| %.1e, |G + F - H| %.1e  [%s]\n", i, eg, ef,
                      v[i].label);
        wg = fmax(wg, eg), wf = fmax(wf, ef);
        lnk_model_free(m);
        lnk_config_clear(&c);
    }
    print_message("%d variants: worst |G - J^T H_out J| / max|G| %.2e, |G + F - H| / max|H| "
                  "%.2e\n", n, wg, wf);
}

static void test_kind_names(void **state)
{
    (void)state;
    lnk_op_kind k = LNK_OP_HESSIAN;
    assert_int_equal(lnk_op_kind_parse("ggn", &k), LNK_OK);
    assert_int_equal(k, LNK_OP_GGN);
    assert_int_equal(lnk_op_kind_parse("functional", &k), LNK_OK);
    assert_int_equal(k, LNK_OP_FUNCTIONAL);
    assert_string_equal(lnk_op_kind_name(LNK_OP_HESSIAN), "hessian");
    assert_int_equal(lnk_op_kind_parse("gauss", &k), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "'gauss'"));
    /* G v without a prepared pass is an error, not garbage */
    lnk_config c;
    lnk_model *m = model_of(0, &c);
    lnk_workspace *ws = lnk_workspace_alloc(m, 2, 0, 7, LNK_WS_HVP);
    size_t n = lnk_model_n_params(m);
    double *v = calloc(n, sizeof(double)), *y = calloc(n, sizeof(double));
    assert_int_equal(lnk_model_ggn_apply(ws, v, NULL, y), LNK_EINVAL);
    free(v);
    free(y);
    lnk_workspace_free(ws);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ggn_dense),
        cmocka_unit_test(test_ggn_plus_functional),
        cmocka_unit_test(test_variants_ggn),
        cmocka_unit_test(test_kind_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
