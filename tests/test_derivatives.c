/* Derivative checks for every configuration at tiny sizes:
 *   - the gradient against central finite differences of the loss, every coordinate;
 *   - H v against central finite differences of the gradient;
 *   - u . H v == v . H u;
 *   - the dense Hessian (n HVPs) of a few-hundred-parameter model is symmetric.
 * Configurations: task x norm position x norm type x qk_norm x {xavier, theorem},
 * with padding in the batch, plus tie_output / label_smoothing variants. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static const char *tasks[] = {"lm", "cls", "seq2seq"};
static const char *poss[] = {"post", "pre"};
static const char *norms[] = {"layernorm", "rmsnorm", "none"};
static const char *qks[] = {"none", "layernorm", "rmsnorm"};
static const char *inits[] = {"xavier", "theorem"};

/* A small batch with padding at the end of the second row (and of its source). */
static void make_batch(const lnk_model *m, lnk_batch *b, int B, int S, int T, uint64_t seed)
{
    const lnk_config *c = lnk_model_config(m);
    memset(b, 0, sizeof *b);
    b->B = B;
    b->owns = 1;
    double *r = malloc(sizeof(double) * 3 * B * (S + T + 1));
    tu_randn(r, (size_t)3 * B * (S + T + 1), seed);
    int k = 0;
#define RID(V) (4 + (int64_t)(fabs(r[k++]) * 1000) % ((V) - 4))
    if (c->task != LNK_TASK_LM) {
        b->S = S;
        b->src = calloc((size_t)B * S, sizeof(int64_t));
        b->labels = calloc((size_t)B * S, sizeof(int64_t));
        for (int i = 0; i < B; i++) {
            int len = i == 1 ? S - 2 : S;
            for (int t = 0; t < len; t++) {
                b->src[i * S + t] = RID(c->V_src);
                b->labels[i * S + t] = (int64_t)(fabs(r[k++]) * 1000) % c->n_classes;
            }
        }
    }
    if (c->task != LNK_TASK_CLS) {
        b->T = T;
        b->tgt = calloc((size_t)B * T, sizeof(int64_t));
        for (int i = 0; i < B; i++) {
            int len = i == 1 ? T - 2 : T;
            b->tgt[i * T] = LNK_BOS;
            for (int t = 1; t < len; t++)
                b->tgt[i * T + t] = RID(c->V_tgt);
        }
    }
#undef RID
    free(r);
}

typedef struct {
    lnk_config c;
    lnk_model *m;
    lnk_workspace *ws;
    lnk_batch b;
    double *th;
    size_t n;
} fixture;

static void fx_open(fixture *f, const char *task, const char *pos, const char *norm,
                    const char *qk, const char *init, const char *extra1, const char *extra2)
{
    char kv[8][64];
    snprintf(kv[0], 64, "task=%s", task);
    snprintf(kv[1], 64, "norm_pos=%s", pos);
    snprintf(kv[2], 64, "norm=%s", norm);
    snprintf(kv[3], 64, "qk_norm=%s", qk);
    snprintf(kv[4], 64, "init=%s", init);
    f->c = tu_config(kv[0], kv[1], kv[2], kv[3], kv[4], "d=8", "h=2", "d_ff=12", "L=2", "V=9",
                     "seed=3", extra1, extra2, NULL);
    f->m = lnk_model_alloc(&f->c);
    if (!f->m)
        fail_msg("model: %s", lnk_errmsg());
    f->n = lnk_model_n_params(f->m);
    f->th = malloc(sizeof(double) * f->n);
    assert_int_equal(lnk_model_init_params(f->m, f->th), LNK_OK);
    /* theorem init has exact zeros and identities: perturb biases/gains slightly
     * so that every second-order path is exercised, but keep Wq = Wk = 0. */
    make_batch(f->m, &f->b, 3, 5, 6, 11);
    f->ws = lnk_workspace_alloc(f->m, 3, 5, 6, LNK_WS_HVP);
    if (!f->ws)
        fail_msg("workspace: %s", lnk_errmsg());
}

/* A variant of tests/testutil.c's list at the sizes above (d 8, h 2, d_ff 12,
 * L 2, V 9, B 3, S 5, T 6). */
static void fx_open_variant(fixture *f, const tu_variant *v)
{
    static const char *const sizes[] = {"d=8", "h=2", "d_ff=12", "L=2", "V=9", "seed=3", NULL};
    f->c = tu_variant_config(v, sizes);
    f->m = lnk_model_alloc(&f->c);
    if (!f->m)
        fail_msg("model %s: %s", v->label, lnk_errmsg());
    f->n = lnk_model_n_params(f->m);
    f->th = malloc(sizeof(double) * f->n);
    assert_int_equal(lnk_model_init_params(f->m, f->th), LNK_OK);
    make_batch(f->m, &f->b, 3, 5, 6, 11);
    f->ws = lnk_workspace_alloc(f->m, 3, 5, 6, LNK_WS_HVP);
    if (!f->ws)
        fail_msg("workspace %s: %s", v->label, lnk_errmsg());
}

static void fx_close(fixture *f)
{
    lnk_workspace_free(f->ws);
    lnk_batch_free(&f->b);
    lnk_model_free(f->m);
    lnk_config_clear(&f->c);
    free(f->th);
}

static double loss_at(fixture *f, const double *th)
{
    double L;
    if (lnk_model_eval(f->ws, th, &f->b, &L, NULL, NULL) != LNK_OK)
        fail_msg("eval: %s", lnk_errmsg());
    return L;
}

/* Gradient vs central differences, every coordinate; returns max relative error. */
static double check_grad(fixture *f, char *where, size_t wn)
{
    size_t n = f->n;
    double *g = malloc(sizeof(double) * n), *fd = malloc(sizeof(double) * n);
    double *t = malloc(sizeof(double) * n);
    double L;
    assert_int_equal(lnk_model_eval(f->ws, f->th, &f->b, &L, g, NULL), LNK_OK);
    memcpy(t, f->th, sizeof(double) * n);
    const double h = 1e-5;
    for (size_t i = 0; i < n; i++) {
        double x = t[i];
        t[i] = x + h;
        double lp = loss_at(f, t);
        t[i] = x - h;
        double lm = loss_at(f, t);
        t[i] = x;
        fd[i] = (lp - lm) / (2 * h);
    }
    double gmax = 0;
    for (size_t i = 0; i < n; i++)
        gmax = fmax(gmax, fabs(fd[i]));
    /* error per tensor, relative to the largest gradient entry of the model */
    const lnk_layout *lay = lnk_model_layout(f->m);
    double worst = 0;
    for (int k = 0; k < lay->n_tensors; k++) {
        double e = 0;
        for (size_t i = lay->t[k].offset; i < lay->t[k].offset + lay->t[k].size; i++)
            e = fmax(e, fabs(g[i] - fd[i]) / fmax(gmax, 1e-3));
        if (e > worst) {
            worst = e;
            snprintf(where, wn, "%s", lay->t[k].name);
        }
    }
    free(g);
    free(fd);
    free(t);
    return worst;
}

/* H v vs central differences of the gradient. */
static double check_hvp(fixture *f, uint64_t seed)
{
    size_t n = f->n;
    double *v = malloc(sizeof(double) * n), *hv = malloc(sizeof(double) * n);
    double *gp = malloc(sizeof(double) * n), *gm = malloc(sizeof(double) * n);
    double *t = malloc(sizeof(double) * n);
    tu_randn(v, n, seed);
    double nv = tu_norm(v, n);
    for (size_t i = 0; i < n; i++)
        v[i] /= nv;
    assert_int_equal(lnk_model_hvp(f->ws, f->th, &f->b, v, hv, NULL, NULL), LNK_OK);
    const double eps = 1e-4; /* fourth-order-accurate 5-point stencil below */
    double *g2p = malloc(sizeof(double) * n), *g2m = malloc(sizeof(double) * n);
    double L;
    for (int s = -2; s <= 2; s++) {
        if (s == 0)
            continue;
        for (size_t i = 0; i < n; i++)
            t[i] = f->th[i] + s * eps * v[i];
        double *dst = s == 1 ? gp : s == -1 ? gm : s == 2 ? g2p : g2m;
        assert_int_equal(lnk_model_eval(f->ws, t, &f->b, &L, dst, NULL), LNK_OK);
    }
    for (size_t i = 0; i < n; i++)
        gp[i] = (8 * (gp[i] - gm[i]) - (g2p[i] - g2m[i])) / (12 * eps);
    double e = tu_relerr(hv, gp, n, 1e-6);
    free(v);
    free(hv);
    free(gp);
    free(gm);
    free(g2p);
    free(g2m);
    free(t);
    return e;
}

static double check_symmetry(fixture *f)
{
    size_t n = f->n;
    double *u = malloc(sizeof(double) * n), *v = malloc(sizeof(double) * n);
    double *hu = malloc(sizeof(double) * n), *hv = malloc(sizeof(double) * n);
    tu_randn(u, n, 101);
    tu_randn(v, n, 202);
    assert_int_equal(lnk_model_hvp(f->ws, f->th, &f->b, v, hv, NULL, NULL), LNK_OK);
    assert_int_equal(lnk_model_hvp(f->ws, f->th, &f->b, u, hu, NULL, NULL), LNK_OK);
    double a = tu_dot(u, hv, n), b = tu_dot(v, hu, n);
    double scale = tu_norm(u, n) * tu_norm(hv, n) + 1e-300;
    free(u);
    free(v);
    free(hu);
    free(hv);
    return fabs(a - b) / scale;
}

static void run_matrix(const char *task)
{
    int count = 0, bad = 0;
    for (int ip = 0; ip < 2; ip++)
        for (int in = 0; in < 3; in++)
            for (int iq = 0; iq < 3; iq++)
                for (int ii = 0; ii < 2; ii++) {
                    fixture f;
                    fx_open(&f, task, poss[ip], norms[in], qks[iq], inits[ii], NULL, NULL);
                    char where[LNK_NAME_MAX] = "";
                    double eg = check_grad(&f, where, sizeof where);
                    double eh = check_hvp(&f, 7 + count);
                    double es = check_symmetry(&f);
                    if (eg > 1e-7 || eh > 1e-6 || es > 1e-10) {
                        print_error("%s pos=%s norm=%s qk=%s init=%s: grad err %.2e (%s), "
                                    "hvp err %.2e, symmetry %.2e\n",
                                    task, poss[ip], norms[in], qks[iq], inits[ii], eg, where, eh,
                                    es);
                        bad++;
                    }
                    count++;
                    fx_close(&f);
                }
    print_message("%s: %d configurations checked, %d failed\n", task, count, bad);
    assert_int_equal(bad, 0);
}

static void test_lm(void **s) { (void)s; run_matrix("lm"); }
static void test_cls(void **s) { (void)s; run_matrix("cls"); }
static void test_seq2seq(void **s) { (void)s; run_matrix("seq2seq"); }

/* tie_output and label_smoothing, on each task and both positions. */
static void test_options(void **s)
{
    (void)s;
    const char *opts[][2] = {{"tie_output=true", NULL},
                             {"label_smoothing=0.1", NULL},
                             {"tie_output=true", "label_smoothing=0.2"}};
    for (int it = 0; it < 3; it++)
        for (int ip = 0; ip < 2; ip++)
            for (int io = 0; io < 3; io++) {
                fixture f;
                fx_open(&f, tasks[it], poss[ip], "layernorm", "layernorm", "xavier", opts[io][0],
                        opts[io][1]);
                char where[LNK_NAME_MAX] = "";
                double eg = check_grad(&f, where, sizeof where);
                double eh = check_hvp(&f, 99);
                double es = check_symmetry(&f);
                if (eg > 1e-7 || eh > 1e-6 || es > 1e-10)
                    fail_msg("%s %s %s %s: grad %.2e (%s) hvp %.2e sym %.2e", tasks[it], poss[ip],
                             opts[io][0], opts[io][1] ? opts[io][1] : "", eg, where, eh, es);
                fx_close(&f);
            }
}

/* The dense Hessian of a small model (n HVPs) is symmetric to 1e-10. */
static void test_dense_symmetric(void **s)
{
    (void)s;
    for (int it = 0; it < 3; it++) {
        fixture f;
        fx_open(&f, tasks[it], "post", "layernorm", "none", "xavier", "L=1", NULL);
        size_t n = f.n;
        assert_true(n < 2000);
        double *H = malloc(sizeof(double) * n * n), *e = calloc(n, sizeof(double));
        for (size_t i = 0; i < n; i++) {
            e[i] = 1;
            assert_int_equal(lnk_model_hvp(f.ws, f.th, &f.b, e, H + i * n, NULL, NULL), LNK_OK);
            e[i] = 0;
        }
        double amax = 0, asym = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                amax = fmax(amax, fabs(H[i * n + j]));
                asym = fmax(asym, fabs(H[i * n + j] - H[j * n + i]));
            }
        print_message("%s: dense Hessian %zu x %zu, max |H| %.3e, max |H - H^T| %.3e\n",
                      tasks[it], n, n, amax, asym);
        assert_true(amax > 0);
        assert_true(asym <= 1e-10 * amax);
        free(H);
        free(e);
        fx_close(&f);
    }
}

/* Every variant (tests/testutil.c: each part against the defaults, then the
 * pairwise-covering set): the gradient against central differences (every
 * coordinate), H v against differences of the gradient, u . H v = v . H u. */
static void test_variants(void **s)
{
    (void)s;
    tu_variant v[96];
    int ns, n = tu_variants(v, 96, &ns), bad = 0;
    assert_int_equal(tu_variants_pairs_covered(v + ns, n - ns), 0);
    double wg = 0, wh = 0, wsym = 0;
    for (int i = 0; i < n; i++) {
        fixture f;
        fx_open_variant(&f, &v[i]);
        char where[LNK_NAME_MAX] = "";
        double eg = check_grad(&f, where, sizeof where);
        double eh = check_hvp(&f, 300 + i);
        double es = check_symmetry(&f);
        print_message("variant %2d: grad %.1e (%s) hvp %.1e sym %.1e  [%s]\n", i, eg, where, eh,
                      es, v[i].label);
        if (!(eg <= 1e-7) || !(eh <= 1e-6) || !(es <= 1e-10)) {
            print_error("variant %d FAILED: %s\n", i, v[i].label);
            bad++;
        }
        wg = fmax(wg, eg), wh = fmax(wh, eh), wsym = fmax(wsym, es);
        fx_close(&f);
    }
    print_message("%d variants (%d single, %d pairwise): worst grad %.2e, hvp %.2e, symmetry "
                  "%.2e\n", n, ns, n - ns, wg, wh, wsym);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_variants),
        cmocka_unit_test(test_lm),
        cmocka_unit_test(test_cls),
        cmocka_unit_test(test_seq2seq),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_dense_symmetric),
    };
    return cmocka_run_group_tests_name("derivatives", tests, NULL, NULL);
}
