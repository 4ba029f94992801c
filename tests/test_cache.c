/* Kept primal passes (lnk_model_hvp_prepare / _apply; the Hessian's per-chunk
 * cache, lnk_hessian_set_cache): every product equals the recomputed one bit
 * for bit, on 1 and 2 BLAS threads, for every task; the cached data-set
 * Hessian equals central differences of the data-set gradient; a kept pass is
 * never used after it was replaced. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static int saved_threads = -1;

static int restore_threads(void **state)
{
    (void)state;
    if (saved_threads > 0)
        openblas_set_num_threads(saved_threads);
    return 0;
}

/* A batch of B rows with uneven lengths (pads after), from seed. */
static void make_batch(const lnk_model *m, int B, int len, int seed, lnk_batch *b)
{
    assert_int_equal(lnk_batch_synthetic(m, B, len, (uint64_t)seed, b), LNK_OK);
    for (int r = 1; r < B; r++) {
        int keep = len - (r * 3 + seed) % (len - 2);
        if (b->tgt)
            for (int t = keep + 1; t < b->T; t++)
                b->tgt[(size_t)r * b->T + t] = LNK_PAD;
        if (b->src)
            for (int t = keep; t < b->S; t++)
                b->src[(size_t)r * b->S + t] = LNK_PAD;
    }
}

static const char *const CFG[][4] = {
    {"task=lm", "norm_pos=post", "qk_norm=none", "label_smoothing=0.1"},
    {"task=lm", "norm_pos=pre", "qk_norm=layernorm", "tie_output=true"},
    {"task=lm", "norm_pos=pre", "norm=none", "qk_norm=rmsnorm"},
    {"task=seq2seq", "norm_pos=post", "qk_norm=layernorm", "norm=rmsnorm"},
    {"task=seq2seq", "norm_pos=pre", "qk_norm=none", "tie_output=true"},
    {"task=cls", "norm_pos=post", "qk_norm=none", "norm=layernorm"},
};
#define N_CFG 6

/* prepare once, apply to three vectors: each equals lnk_model_hvp bit for
 * bit; prepare's loss and gradient equal lnk_model_eval's. */
static void test_model_reuse(void **s)
{
    (void)s;
    saved_threads = openblas_get_num_threads();
    for (int th = 1; th <= 2; th++) {
        openblas_set_num_threads(th);
        for (int ci = 0; ci < N_CFG; ci++) {
            /* GEMMs of 256 x 64 x 64: large enough for OpenBLAS to use 2 threads */
            lnk_config c = tu_config(CFG[ci][0], CFG[ci][1], CFG[ci][2], CFG[ci][3], "d=64",
                                     "h=4", "L=2", "V=50", NULL);
            lnk_model *m = lnk_model_alloc(&c);
            size_t n = lnk_model_n_params(m);
            double *theta = malloc(sizeof(double) * n), *g0 = malloc(sizeof(double) * n);
            double *g1 = malloc(sizeof(double) * n), *v = malloc(sizeof(double) * 3 * n);
            double *h0 = malloc(sizeof(double) * n), *h1 = malloc(sizeof(double) * n);
            lnk_model_init_params(m, theta);
            tu_randn(v, 3 * n, 7 + ci);
            lnk_batch b;
            make_batch(m, 8, 32, ci, &b);
            lnk_workspace *ws = lnk_workspace_alloc(m, b.B, b.S, b.T, LNK_WS_HVP);
            lnk_workspace *wr = lnk_workspace_alloc(m, b.B, b.S, b.T, LNK_WS_HVP);
            assert_non_null(ws);
            double L0, L1;
            assert_int_equal(lnk_model_eval(wr, theta, &b, &L0, g0, NULL), LNK_OK);
            assert_int_equal(lnk_model_hvp_prepare(ws, theta, &b, &L1, g1), LNK_OK);
            assert_true(L0 == L1);
            assert_memory_equal(g0, g1, sizeof(double) * n);
            for (int k = 0; k < 3; k++) {
                assert_int_equal(lnk_model_hvp_apply(ws, v + k * n, h1), LNK_OK);
                assert_int_equal(lnk_model_hvp(wr, theta, &b, v + k * n, h0, NULL, NULL), LNK_OK);
                assert_memory_equal(h0, h1, sizeof(double) * n);
                assert_true(tu_norm(h0, n) > 0);
            }
            lnk_workspace_free(ws);
            lnk_workspace_free(wr);
            lnk_batch_free(&b);
            free(theta), free(g0), free(g1), free(v), free(h0), free(h1);
            lnk_model_free(m);
            lnk_config_clear(&c);
        }
    }
    restore_threads(NULL);
}

/* A kept pass is replaced by the next eval / prepare, never reused stale. */
static void test_model_replaced(void **s)
{
    (void)s;
    lnk_config c = tu_config("task=lm", "d=8", "h=2", "L=1", "V=11", NULL);
    lnk_model *m = lnk_model_alloc(&c);
    size_t n = lnk_model_n_params(m);
    double *theta = malloc(sizeof(double) * n), *v = malloc(sizeof(double) * n);
    double *h0 = malloc(sizeof(double) * n), *h1 = malloc(sizeof(double) * n);
    lnk_model_init_params(m, theta);
    tu_randn(v, n, 3);
    lnk_batch b1, b2;
    make_batch(m, 3, 6, 1, &b1);
    make_batch(m, 3, 6, 2, &b2);
    lnk_workspace *ws = lnk_workspace_alloc(m, 3, 0, 7, LNK_WS_HVP);
    lnk_workspace *w0 = lnk_workspace_alloc(m, 3, 0, 7, 0);
    /* no pass yet */
    assert_int_equal(lnk_model_hvp_apply(ws, v, h1), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "prepare"));
    /* a workspace without LNK_WS_HVP */
    assert_int_equal(lnk_model_hvp_prepare(w0, theta, &b1, NULL, NULL), LNK_EINVAL);
    assert_int_equal(lnk_model_hvp_apply(w0, v, h1), LNK_EINVAL);
    assert_int_equal(lnk_model_hvp_prepare(ws, theta, &b1, NULL, NULL), LNK_OK);
    /* a forward-only eval of another batch: no pass to reuse any more */
    assert_int_equal(lnk_model_eval(ws, theta, &b2, NULL, NULL, NULL), LNK_OK);
    assert_int_equal(lnk_model_hvp_apply(ws, v, h1), LNK_EINVAL);
    /* an eval with gradient keeps b2's full pass: apply is H(b2) v */
    double *g = malloc(sizeof(double) * n);
    assert_int_equal(lnk_model_eval(ws, theta, &b2, NULL, g, NULL), LNK_OK);
    assert_int_equal(lnk_model_hvp_apply(ws, v, h1), LNK_OK);
    lnk_workspace *wr = lnk_workspace_alloc(m, 3, 0, 7, LNK_WS_HVP);
    assert_int_equal(lnk_model_hvp(wr, theta, &b2, v, h0, NULL, NULL), LNK_OK);
    assert_memory_equal(h0, h1, sizeof(double) * n);
    /* a failed prepare (bad batch) leaves nothing to reuse */
    b1.tgt[0] = LNK_PAD;
    assert_int_equal(lnk_model_hvp_prepare(ws, theta, &b1, NULL, NULL), LNK_EINVAL);
    assert_int_equal(lnk_model_hvp_apply(ws, v, h1), LNK_EINVAL);
    /* a non-finite vector is refused */
    assert_int_equal(lnk_model_hvp_prepare(ws, theta, &b2, NULL, NULL), LNK_OK);
    v[3] = NAN;
    assert_int_equal(lnk_model_hvp_apply(ws, v, h1), LNK_ENONFINITE);
    lnk_workspace_free(ws), lnk_workspace_free(w0), lnk_workspace_free(wr);
    lnk_batch_free(&b1), lnk_batch_free(&b2);
    free(theta), free(v), free(h0), free(h1), free(g);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* Chunks of several shapes (rows and lengths). */
static int make_chunks(const lnk_model *m, lnk_batch *ch)
{
    const int rows[] = {5, 3, 4, 2};
    const int lens[] = {12, 9, 16, 7};
    for (int i = 0; i < 4; i++)
        make_batch(m, rows[i], lens[i], 10 + i, &ch[i]);
    return 4;
}

/* The data-set Hessian with every cache budget: all chunks kept, one extra
 * kept (the others share the workspace), none: the same bits over three
 * products, for full and block operators, on 1 and 2 threads. */
static void test_hessian_budgets(void **s)
{
    (void)s;
    saved_threads = openblas_get_num_threads();
    for (int th = 1; th <= 2; th++) {
        openblas_set_num_threads(th);
        for (int ci = 0; ci < N_CFG; ci += 2) {
            lnk_config c = tu_config(CFG[ci][0], CFG[ci][1], CFG[ci][2], CFG[ci][3], "d=64",
                                     "h=4", "L=1", "V=40", NULL);
            lnk_model *m = lnk_model_alloc(&c);
            size_t n = lnk_model_n_params(m);
            double *theta = malloc(sizeof(double) * n);
            lnk_model_init_params(m, theta);
            lnk_batch ch[4];
            int nc = make_chunks(m, ch);
            for (int blk = 0; blk < 2; blk++) {
                const char *pat = blk ? "*.attn.w*,*.ffn.b1" : NULL;
                /* budgets: 0 (none), one chunk's primal state, everything */
                size_t one = 0;
                lnk_hessian *hs[3];
                for (int k = 0; k < 3; k++) {
                    hs[k] = lnk_hessian_alloc(m, theta, ch, nc, pat);
                    assert_non_null(hs[k]);
                }
                lnk_hessian *probe = lnk_hessian_alloc(m, theta, ch, nc, pat);
                assert_int_equal(lnk_hessian_set_cache(probe, (size_t)1 << 40), LNK_OK);
                lnk_operator P = lnk_hessian_operator(probe);
                double *x = malloc(sizeof(double) * P.n), *y = malloc(sizeof(double) * P.n);
                tu_randn(x, P.n, 5);
                assert_int_equal(P.apply(P.ctx, x, y), LNK_OK);
                size_t all_bytes;
                assert_int_equal(lnk_hessian_cached_chunks(probe, &all_bytes), nc);
                one = all_bytes / 2; /* room for the first chunk (the largest of them) */
                assert_int_equal(lnk_hessian_set_cache(probe, 0), LNK_EINVAL); /* too late */
                lnk_hessian_free(probe);
                assert_int_equal(lnk_hessian_set_cache(hs[0], 0), LNK_OK);
                assert_int_equal(lnk_hessian_set_cache(hs[1], one), LNK_OK);
                assert_int_equal(lnk_hessian_set_cache(hs[2], (size_t)1 << 40), LNK_OK);
                size_t nb = lnk_hessian_operator(hs[0]).n;
                double *out[3];
                for (int k = 0; k < 3; k++)
                    out[k] = malloc(sizeof(double) * nb);
                for (int rep = 0; rep < 3; rep++) {
                    tu_randn(x, nb, 100 + rep);
                    for (int k = 0; k < 3; k++) {
                        lnk_operator O = lnk_hessian_operator(hs[k]);
                        assert_int_equal(O.apply(O.ctx, x, out[k]), LNK_OK);
                    }
                    assert_memory_equal(out[0], out[1], sizeof(double) * nb);
                    assert_memory_equal(out[0], out[2], sizeof(double) * nb);
                }
                size_t b1;
                int k0 = lnk_hessian_cached_chunks(hs[0], NULL);
                int k1 = lnk_hessian_cached_chunks(hs[1], &b1);
                int k2 = lnk_hessian_cached_chunks(hs[2], NULL);
                assert_int_equal(k0, 0);
                assert_true(k1 >= 1 && k1 < nc && b1 > 0 && b1 <= one);
                assert_int_equal(k2, nc);
                for (int k = 0; k < 3; k++) {
                    lnk_hessian_free(hs[k]);
                    free(out[k]);
                }
                free(x), free(y);
            }
            for (int i = 0; i < nc; i++)
                lnk_batch_free(&ch[i]);
            free(theta);
            lnk_model_free(m);
            lnk_config_clear(&c);
        }
    }
    restore_threads(NULL);
}

/* The cached data-set Hessian equals central differences of the data-set
 * gradient, column by column (seq2seq, 4 uneven chunks, cache on). */
static void test_hessian_fd(void **s)
{
    (void)s;
    lnk_config c = tu_config("task=seq2seq", "norm_pos=pre", "qk_norm=layernorm", "d=8", "h=2",
                             "L=1", "d_ff=8", "V=9", NULL);
    lnk_model *m = lnk_model_alloc(&c);
    size_t n = lnk_model_n_params(m);
    double *theta = malloc(sizeof(double) * n), *tp = malloc(sizeof(double) * n);
    double *gp = malloc(sizeof(double) * n), *gm = malloc(sizeof(double) * n);
    double *e = calloc(n, sizeof(double)), *col = malloc(sizeof(double) * n);
    lnk_model_init_params(m, theta);
    lnk_batch ch[4];
    int nc = make_chunks(m, ch);
    lnk_hessian *h = lnk_hessian_alloc(m, theta, ch, nc, NULL);
    assert_int_equal(lnk_hessian_set_cache(h, (size_t)1 << 40), LNK_OK);
    lnk_operator O = lnk_hessian_operator(h);
    double worst = 0, eps = 1e-5;
    for (size_t j = 0; j < n; j += 7) {
        e[j] = 1;
        assert_int_equal(O.apply(O.ctx, e, col), LNK_OK);
        e[j] = 0;
        memcpy(tp, theta, sizeof(double) * n);
        tp[j] += eps;
        assert_int_equal(lnk_dataset_eval(m, tp, ch, nc, NULL, gp, NULL), LNK_OK);
        tp[j] -= 2 * eps;
        assert_int_equal(lnk_dataset_eval(m, tp, ch, nc, NULL, gm, NULL), LNK_OK);
        for (size_t i = 0; i < n; i++)
            gp[i] = (gp[i] - gm[i]) / (2 * eps);
        double err = tu_relerr(col, gp, n, 1e-2);
        worst = err > worst ? err : worst;
    }
    assert_int_equal(lnk_hessian_cached_chunks(h, NULL), nc);
    print_message("cached data-set Hessian vs central differences: worst %.2e\n", worst);
    assert_true(worst < 1e-6);
    lnk_hessian_free(h);
    for (int i = 0; i < nc; i++)
        lnk_batch_free(&ch[i]);
    free(theta), free(tp), free(gp), free(gm), free(e), free(col);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* lnkit eigs / trace over chunks: --cache-mb 0 and the default write the same
 * numbers; hvp --repeat with the pass kept writes the same H v. */
static void test_cli(void **s)
{
    (void)s;
    char *out;
    const char *L = tu_lnkit(), *d = tu_tmpdir();
    int st = tu_run(&out, "cd '%s' && '%s' init --task seq2seq --d 16 --h 2 --L 1 --V 30 "
                    "-o w.safetensors && '%s' batch --synthetic --task seq2seq --V 30 --rows 9 "
                    "--len 8 --rng-seed 4 -o b.safetensors", d, L, L);
    assert_int_equal(st, 0);
    free(out);
    const char *cmd[] = {"eigs -k 3 --which both --tol 1e-10",
                         "trace --probes 12 --method hutchpp"};
    for (int i = 0; i < 2; i++) {
        st = tu_run(&out, "cd '%s' && '%s' %s --config w.json --weights w.safetensors --batch "
                    "b.safetensors --chunk 2 --quiet -o a.csv && '%s' %s --config w.json "
                    "--weights w.safetensors --batch b.safetensors --chunk 2 --quiet "
                    "--cache-mb 0 -o z.csv && cmp a.csv z.csv && grep -c '\"cached_chunks\": 5' "
                    "a.meta.json && grep -c '\"cached_chunks\": 0' z.meta.json", d, L, cmd[i], L,
                    cmd[i]);
        print_message("%s: %s", cmd[i], out);
        assert_int_equal(st, 0);
        free(out);
    }
    st = tu_run(&out, "cd '%s' && '%s' hvp --config w.json --weights w.safetensors --batch "
                "b.safetensors --vector w.safetensors -o h1.safetensors --repeat 3 && '%s' hvp "
                "--config w.json --weights w.safetensors --batch b.safetensors --vector "
                "w.safetensors -o h0.safetensors --cache-mb 0 && cmp h0.safetensors "
                "h1.safetensors", d, L, L);
    print_message("%s", out);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "primal pass kept"));
    free(out);
    st = tu_run(&out, "'%s' eigs --cache-mb -3 --config x --weights y --batch z -o e.csv", L);
    assert_int_equal(st, 2);
    assert_non_null(strstr(out, "cache-mb"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_model_reuse, restore_threads),
        cmocka_unit_test(test_model_replaced),
        cmocka_unit_test_teardown(test_hessian_budgets, restore_threads),
        cmocka_unit_test(test_hessian_fd),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
