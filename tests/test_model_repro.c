/* Reproducibility and initialisation of the model of docs/MODEL.md (helpers:
 * tests/testutil_model.c):
 *   6. determinism of init, eval and hvp; agreement across OpenBLAS thread counts;
 *   7. initialisation statistics (ranges, variances within 5 standard errors).
 * Tolerances come from sampling standard errors, stated where used. */
#include <cblas.h>
#include <float.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "testutil_model.h"
#include "layers/layers.h"
#include "model/workspace.h"

/* ----------------------------------------------------- 6. determinism */

static void test_determinism(void **state)
{
    (void)state;
    fx f, g;
    FX_OPEN(&f, "task=seq2seq", "d=8", "h=2", "L=2", "V=11", "seed=4");
    FX_OPEN(&g, "task=seq2seq", "d=8", "h=2", "L=2", "V=11", "seed=5");
    size_t n = f.n;
    double *t2 = malloc(sizeof(double) * n);
    assert_int_equal(lnk_model_init_params(f.m, t2), LNK_OK);
    assert_memory_equal(t2, f.th, sizeof(double) * n);
    /* another seed: every random entry differs (constant 1-D tensors aside) */
    const lnk_layout *lay = lnk_model_layout(f.m);
    size_t nrand = 0, ndiff = 0;
    for (int i = 0; i < lay->n_tensors; i++)
        if (lay->t[i].ndim == 2)
            for (size_t k = lay->t[i].offset; k < lay->t[i].offset + lay->t[i].size; k++) {
                nrand++;
                ndiff += f.th[k] != g.th[k];
            }
    assert_true(nrand > 0);
    assert_int_equal(ndiff, nrand);
    /* each tensor has its own stream: lm shares the decoder tensors' values with seq2seq */
    fx h;
    FX_OPEN(&h, "task=lm", "d=8", "h=2", "L=2", "V=11", "seed=4");
    const char *shared[] = {"tgt_emb", "dec.0.attn.wq", "dec.1.ffn.w2", "out.w"};
    for (int i = 0; i < 4; i++) {
        size_t s1, s2;
        double *x1 = tm_tens(f.m, f.th, shared[i], &s1), *x2 = tm_tens(h.m, h.th, shared[i], &s2);
        assert_int_equal(s1, s2);
        assert_memory_equal(x1, x2, sizeof(double) * s1);
    }
    fx_close(&h);
    fx_close(&g);
    /* eval and hvp twice: bitwise the same */
    const int slen[] = {5, 4}, tlen[] = {6, 5};
    lnk_batch bt;
    tm_batch_make(f.m, &bt, 2, 5, slen, 6, tlen, 8);
    lnk_workspace *ws = tm_ws_new(f.m, 2, 5, 6, LNK_WS_HVP);
    double *g1 = malloc(sizeof(double) * n), *g2 = malloc(sizeof(double) * n);
    double *h1 = malloc(sizeof(double) * n), *h2 = malloc(sizeof(double) * n);
    double *v = malloc(sizeof(double) * n), L1, L2;
    tu_randn(v, n, 77);
    assert_int_equal(lnk_model_eval(ws, f.th, &bt, &L1, g1, NULL), LNK_OK);
    assert_int_equal(lnk_model_eval(ws, f.th, &bt, &L2, g2, NULL), LNK_OK);
    assert_memory_equal(&L1, &L2, sizeof L1);
    assert_memory_equal(g1, g2, sizeof(double) * n);
    assert_int_equal(lnk_model_hvp(ws, f.th, &bt, v, h1, &L1, g1), LNK_OK);
    assert_int_equal(lnk_model_hvp(ws, f.th, &bt, v, h2, &L2, g2), LNK_OK);
    assert_memory_equal(&L1, &L2, sizeof L1);
    assert_memory_equal(g1, g2, sizeof(double) * n);
    assert_memory_equal(h1, h2, sizeof(double) * n);
    /* a smaller batch in between leaves no trace in the workspace */
    const int slen2[] = {2}, tlen2[] = {3};
    lnk_batch small;
    tm_batch_make(f.m, &small, 1, 2, slen2, 3, tlen2, 9);
    assert_int_equal(lnk_model_hvp(ws, f.th, &small, v, h2, &L2, g2), LNK_OK);
    assert_int_equal(lnk_model_hvp(ws, f.th, &bt, v, h2, &L2, g2), LNK_OK);
    assert_memory_equal(&L1, &L2, sizeof L1);
    assert_memory_equal(g1, g2, sizeof(double) * n);
    assert_memory_equal(h1, h2, sizeof(double) * n);
    lnk_batch_free(&small);
    free(g1);
    free(g2);
    free(h1);
    free(h2);
    free(v);
    free(t2);
    lnk_workspace_free(ws);
    lnk_batch_free(&bt);
    fx_close(&f);
}

/* Gradient and H v with 1 and 2 OpenBLAS threads, on GEMMs large enough to be split
 * (OpenBLAS threads a dgemm above m n k = 262144; here e.g. 248 x 256 x 64).
 * The thread count is restored by the teardown, also after a failed assertion. */
static int saved_threads = -1;

static int restore_threads(void **state)
{
    (void)state;
    if (saved_threads > 0)
        openblas_set_num_threads(saved_threads);
    return 0;
}

static void test_blas_threads(void **state)
{
    (void)state;
    saved_threads = openblas_get_num_threads();
    openblas_set_num_threads(2);
    int got = openblas_get_num_threads();
    if (got < 2) {
        print_message("OpenBLAS gives %d thread(s) only\n", got);
        skip();
    }
    fx f;
    FX_OPEN(&f, "task=lm", "d=64", "h=4", "L=2", "V=200", "seed=2");
    lnk_batch bt;
    if (lnk_batch_synthetic(f.m, 8, 31, 6, &bt) != LNK_OK)
        fail_msg("synthetic batch: %s", lnk_errmsg());
    assert_int_equal(bt.T, 32);
    lnk_workspace *ws = tm_ws_new(f.m, 8, 0, 32, LNK_WS_HVP);
    size_t n = f.n;
    double *g[2], *hv[2], L[2];
    double *v = malloc(sizeof(double) * n);
    tu_randn(v, n, 12);
    for (int k = 0; k < 2; k++) {
        openblas_set_num_threads(k + 1);
        g[k] = malloc(sizeof(double) * n);
        hv[k] = malloc(sizeof(double) * n);
        assert_int_equal(lnk_model_hvp(ws, f.th, &bt, v, hv[k], &L[k], g[k]), LNK_OK);
    }
    restore_threads(NULL);
    assert_int_equal(openblas_get_num_threads(), saved_threads);
    double el = fabs(L[0] - L[1]) / fabs(L[0]);
    double eg = tu_relerr(g[1], g[0], n, 0), eh = tu_relerr(hv[1], hv[0], n, 0);
    print_message("1 vs 2 BLAS threads (%zu params): loss %.1e, grad %.1e, Hv %.1e\n", n, el, eg,
                  eh);
    assert_true(el <= 1e-13);
    assert_true(eg <= 1e-12);
    assert_true(eh <= 1e-12);
    for (int k = 0; k < 2; k++) {
        free(g[k]);
        free(hv[k]);
    }
    free(v);
    lnk_workspace_free(ws);
    lnk_batch_free(&bt);
    fx_close(&f);
}

/* ------------------------------------------------- 7. init statistics */

/* Sample mean within 5 standard errors of 0 and mean(x^2) within 5 s.e. of var:
 * s.e.(mean) = sqrt(var/n), s.e.(mean x^2) = sqrt(Var(x^2)/n) with Var(x^2) given. */
static void check_moments(const char *name, const double *x, size_t n, double var, double var_x2)
{
    long double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        s += x[i];
        s2 += (long double)x[i] * x[i];
    }
    double mean = (double)(s / n), m2 = (double)(s2 / n);
    double se1 = sqrt(var / n), se2 = sqrt(var_x2 / n);
    if (fabs(mean) > 5 * se1)
        fail_msg("%s: mean %.4g, expected 0 +- 5 x %.3g", name, mean, se1);
    if (fabs(m2 - var) > 5 * se2)
        fail_msg("%s: variance %.5g, expected %.5g +- 5 x %.3g", name, m2, var, se2);
}

static void test_init_stats(void **state)
{
    (void)state;
    const char *inits[] = {"init=xavier", "init=xavier_normal", "init=theorem"};
    const char *tasks[] = {"task=seq2seq", "task=cls"};
    int checked = 0;
    for (int ii = 0; ii < 3; ii++)
        for (int it = 0; it < 2; it++) {
            fx f;
            FX_OPEN(&f, tasks[it], inits[ii], "d=32", "h=4", "d_ff=48", "L=2", "V=40",
                    "n_classes=24", "seed=13");
            const lnk_config *c = lnk_model_config(f.m);
            const lnk_layout *lay = lnk_model_layout(f.m);
            for (int i = 0; i < lay->n_tensors; i++) {
                const lnk_tensor_info *t = &lay->t[i];
                const double *x = f.th + t->offset;
                size_t n = t->size;
                if (t->ndim == 1) { /* biases 0, gains 1 */
                    double want = tm_ends_with(t->name, ".g") ? 1.0 : 0.0;
                    for (size_t k = 0; k < n; k++)
                        if (x[k] != want)
                            fail_msg("%s %s[%zu] = %g, expected %g", inits[ii], t->name, k, x[k],
                                     want);
                    continue;
                }
                checked++;
                if (!strcmp(t->name, "src_emb") || !strcmp(t->name, "tgt_emb")) {
                    double s2 = 1.0 / c->d; /* N(0, 1/d): Var(x^2) = 2 s2^2 */
                    check_moments(t->name, x, n, s2, 2 * s2 * s2);
                    continue;
                }
                int in = t->shape[0], out = t->shape[1];
                int attn = strstr(t->name, "attn.") != NULL;
                if (ii == 2 && attn && (tm_ends_with(t->name, ".wq") || tm_ends_with(t->name, ".wk"))) {
                    for (size_t k = 0; k < n; k++)
                        if (x[k] != 0.0)
                            fail_msg("theorem %s[%zu] = %g, expected 0", t->name, k, x[k]);
                    continue;
                }
                if (ii == 2 && attn && tm_ends_with(t->name, ".wo")) {
                    assert_int_equal(in, out);
                    for (int r = 0; r < in; r++)
                        for (int k = 0; k < out; k++)
                            if (x[r * out + k] != (r == k ? 1.0 : 0.0))
                                fail_msg("theorem %s[%d,%d] = %g, expected the identity",
                                         t->name, r, k, x[r * out + k]);
                    continue;
                }
                double s2 = 2.0 / (in + out), mx = tm_maxabs(x, n);
                if (ii == 0) { /* U(-a, a), a^2 = 3 s2: Var(x^2) = a^4/5 - a^4/9 */
                    double a = sqrt(6.0 / (in + out)), a4 = a * a * a * a;
                    if (mx > a)
                        fail_msg("xavier %s: |x| = %.17g exceeds a = %.17g", t->name, mx, a);
                    /* the interval is filled: P(all |x| <= 0.9a) = 0.9^n < 1e-11 for n >= 256 */
                    assert_true(n >= 256 && mx > 0.9 * a);
                    check_moments(t->name, x, n, s2, a4 / 5 - a4 / 9);
                } else { /* N(0, s2): Var(x^2) = 2 s2^2 */
                    check_moments(t->name, x, n, s2, 2 * s2 * s2);
                    /* a normal exceeds sqrt(3 s2) (a uniform's edge) w.p. 0.083 per entry */
                    assert_true(n >= 256 && mx > sqrt(3 * s2));
                }
            }
            fx_close(&f);
        }
    print_message("init statistics: %d matrices checked\n", checked);
}

/* lnk_model_set_progress: after each unit of each sweep, done counting 1..total
 * in every sweep (a seq2seq model: the encoder's units, then the decoder's,
 * and back), the sweeps in the passes' order; the numbers are the same bits
 * with the hook as without. */
typedef struct {
    int n, sweep[256], done[256], total[256];
} ticks;

static void record(void *ctx, int sweep, int done, int total)
{
    ticks *t = ctx;
    if (t->n < 256) {
        t->sweep[t->n] = sweep, t->done[t->n] = done, t->total[t->n] = total;
        t->n++;
    }
}

/* The ticks from k on are the sweeps sw[0..ns) of `units` units each. */
static int sweeps_are(const ticks *t, int k, const int *sw, int ns, int units)
{
    for (int s = 0; s < ns; s++)
        for (int u = 1; u <= units; u++, k++)
            if (k >= t->n || t->sweep[k] != sw[s] || t->done[k] != u || t->total[k] != units)
                return 0;
    return k == t->n;
}

static void test_progress_hook(void **state)
{
    (void)state;
    fx f;
    FX_OPEN(&f, "task=seq2seq", "d=8", "h=2", "L=2", "V=11", "seed=4");
    size_t n = f.n;
    const int slen[] = {5, 4}, tlen[] = {6, 5};
    lnk_batch bt;
    tm_batch_make(f.m, &bt, 2, 5, slen, 6, tlen, 8);
    lnk_workspace *ws = tm_ws_new(f.m, 2, 5, 6, LNK_WS_HVP);
    double *g[2], *h[2], *gv[2], *v = malloc(sizeof(double) * n), L[2], Lh[2];
    tu_randn(v, n, 77);
    ticks t = {0};
    for (int k = 0; k < 2; k++) { /* k = 1: with the hook */
        g[k] = malloc(sizeof(double) * n), h[k] = malloc(sizeof(double) * n);
        gv[k] = malloc(sizeof(double) * n);
        lnk_model_set_progress(f.m, k ? record : NULL, k ? &t : NULL);
        assert_int_equal(lnk_model_eval(ws, f.th, &bt, &L[k], g[k], NULL), LNK_OK);
        assert_int_equal(lnk_model_hvp(ws, f.th, &bt, v, h[k], &Lh[k], NULL), LNK_OK);
        assert_int_equal(lnk_model_ggn_apply(ws, v, NULL, gv[k]), LNK_OK);
    }
    lnk_model_set_progress(f.m, NULL, NULL);
    assert_memory_equal(L, L + 1, sizeof *L);
    assert_memory_equal(Lh, Lh + 1, sizeof *Lh);
    assert_memory_equal(g[0], g[1], sizeof(double) * n);
    assert_memory_equal(h[0], h[1], sizeof(double) * n);
    assert_memory_equal(gv[0], gv[1], sizeof(double) * n);
    /* encoder: 2 x (attention, ffn); decoder: 2 x (self, cross, ffn) */
    const int sw[] = {LNK_SWEEP_FORWARD, LNK_SWEEP_REVERSE,                  /* eval */
                      LNK_SWEEP_FORWARD, LNK_SWEEP_REVERSE,                  /* hvp */
                      LNK_SWEEP_TANGENT, LNK_SWEEP_TANGENT_REVERSE,
                      LNK_SWEEP_TANGENT, LNK_SWEEP_REVERSE};                 /* G v */
    if (!sweeps_are(&t, 0, sw, 8, 10))
        fail_msg("%d ticks, not 8 sweeps of 10 units in order", t.n);
    for (int k = 0; k < 2; k++)
        free(g[k]), free(h[k]), free(gv[k]);
    free(v);
    lnk_workspace_free(ws);
    lnk_batch_free(&bt);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_determinism),
        cmocka_unit_test_teardown(test_blas_threads, restore_threads),
        cmocka_unit_test(test_init_stats),
        cmocka_unit_test(test_progress_hook),
    };
    return cmocka_run_group_tests_name("model_repro", tests, NULL, NULL);
}
