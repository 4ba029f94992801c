/* The Hessian operator: block restriction equals the sub-matrix of the dense
 * Hessian; a data set in uneven chunks equals one batch holding all its rows
 * (token-weighted mean); pattern errors list the tensor names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/hessian.h"
#include "testutil.h"

static void test_block_is_submatrix(void **s)
{
    (void)s;
    const char *tasks[] = {"lm", "seq2seq"};
    for (int it = 0; it < 2; it++) {
        char task[32];
        snprintf(task, sizeof task, "task=%s", tasks[it]);
        lnk_config c = tu_config(task, "d=8", "h=2", "L=1", "d_ff=8", "V=9", "norm_pos=pre", NULL);
        lnk_model *m = lnk_model_alloc(&c);
        size_t n = lnk_model_n_params(m);
        double *th = malloc(sizeof(double) * n);
        lnk_model_init_params(m, th);
        lnk_batch b;
        tu_rows(m, &b, 0, 3, 6, 7);
        lnk_hessian *hf = lnk_hessian_alloc(m, th, &b, 1, NULL);
        assert_non_null(hf);
        lnk_operator F = lnk_hessian_operator(hf);
        assert_int_equal(F.n, n);
        double *H = malloc(sizeof(double) * n * n), *e = calloc(n, sizeof(double));
        for (size_t j = 0; j < n; j++) {
            e[j] = 1;
            assert_int_equal(F.apply(F.ctx, e, H + j * n), LNK_OK); /* column j (= row j) */
            e[j] = 0;
        }
        const char *pat = "*.ffn.w2,dec.0.norm1.*,*emb";
        lnk_hessian *hb = lnk_hessian_alloc(m, th, &b, 1, pat);
        assert_non_null(hb);
        lnk_operator Bop = lnk_hessian_operator(hb);
        const lnk_block *blk = lnk_hessian_block(hb);
        /* the block's coordinates in the full vector */
        size_t *idx = malloc(sizeof(size_t) * Bop.n), k = 0;
        const lnk_layout *lay = lnk_model_layout(m);
        for (int t = 0; t < blk->n_tensors; t++)
            for (size_t q = 0; q < lay->t[blk->tensor[t]].size; q++)
                idx[k++] = lay->t[blk->tensor[t]].offset + q;
        assert_int_equal(k, Bop.n);
        assert_true(Bop.n < n);
        double *eb = calloc(Bop.n, sizeof(double)), *col = malloc(sizeof(double) * Bop.n);
        double err = 0, hmax = 0;
        for (size_t j = 0; j < Bop.n; j++) {
            eb[j] = 1;
            assert_int_equal(Bop.apply(Bop.ctx, eb, col), LNK_OK);
            eb[j] = 0;
            for (size_t i = 0; i < Bop.n; i++) {
                double ref = H[idx[j] * n + idx[i]];
                err = fmax(err, fabs(col[i] - ref));
                hmax = fmax(hmax, fabs(ref));
            }
        }
        print_message("%s: block '%s' of %zu / %zu coordinates, max |H_BB - H[B,B]| = %.2e "
                      "(max |H_BB| %.2e)\n", tasks[it], pat, Bop.n, n, err, hmax);
        assert_true(hmax > 0);
        assert_true(err <= 1e-15 * hmax);
        assert_int_equal(lnk_hessian_n_products(hb), (long)Bop.n);
        free(idx);
        free(eb);
        free(col);
        free(H);
        free(e);
        lnk_hessian_free(hb);
        lnk_hessian_free(hf);
        lnk_batch_free(&b);
        free(th);
        lnk_model_free(m);
        lnk_config_clear(&c);
    }
}

/* Uneven chunks (1, 4, 2 rows of different lengths) vs one batch of all 7 rows. */
static void test_chunks_equal_one_batch(void **s)
{
    (void)s;
    const char *tasks[] = {"lm", "cls", "seq2seq"};
    for (int it = 0; it < 3; it++) {
        char task[32];
        snprintf(task, sizeof task, "task=%s", tasks[it]);
        lnk_config c = tu_config(task, "d=16", "h=4", "L=2", "V=23", "label_smoothing=0.1", NULL);
        lnk_model *m = lnk_model_alloc(&c);
        size_t n = lnk_model_n_params(m);
        double *th = malloc(sizeof(double) * n), *v = malloc(sizeof(double) * n);
        lnk_model_init_params(m, th);
        tu_randn(v, n, 5);
        lnk_batch all, ch[3];
        tu_rows(m, &all, 0, 7, 9, 10);
        tu_rows(m, &ch[0], 0, 1, 9, 10);
        tu_rows(m, &ch[1], 1, 5, 9, 10);
        tu_rows(m, &ch[2], 5, 7, 9, 10);
        double L1, L3, *g1 = malloc(sizeof(double) * n), *g3 = malloc(sizeof(double) * n);
        double *h1 = malloc(sizeof(double) * n), *h3 = malloc(sizeof(double) * n);
        size_t N1, N3;
        assert_int_equal(lnk_dataset_eval(m, th, &all, 1, &L1, g1, &N1), LNK_OK);
        assert_int_equal(lnk_dataset_eval(m, th, ch, 3, &L3, g3, &N3), LNK_OK);
        assert_int_equal(N1, N3);
        lnk_hessian *a = lnk_hessian_alloc(m, th, &all, 1, NULL), *b = lnk_hessian_alloc(m, th, ch, 3, NULL);
        lnk_operator A = lnk_hessian_operator(a), Bo = lnk_hessian_operator(b);
        assert_int_equal(A.apply(A.ctx, v, h1), LNK_OK);
        assert_int_equal(Bo.apply(Bo.ctx, v, h3), LNK_OK);
        double el = fabs(L1 - L3) / fabs(L1), eg = tu_relerr(g3, g1, n, 0), eh = tu_relerr(h3, h1, n, 0);
        print_message("%s: %zu scored tokens; chunked vs one batch: loss %.2e grad %.2e Hv %.2e\n",
                      tasks[it], N1, el, eg, eh);
        assert_true(el < 1e-13);
        assert_true(eg < 1e-12);
        assert_true(eh < 1e-12);
        /* the same chunks cut from the big batch by lnk_batch_slice (which trims
         * all-pad columns) give the same numbers */
        lnk_batch sl[3];
        int cut[4] = {0, 1, 5, 7};
        for (int k = 0; k < 3; k++)
            assert_int_equal(lnk_batch_slice(&all, cut[k], cut[k + 1], &sl[k]), LNK_OK);
        if (sl[2].tgt)
            assert_true(sl[2].T < all.T); /* rows 5, 6 are shorter: columns were trimmed */
        double Ls;
        assert_int_equal(lnk_dataset_eval(m, th, sl, 3, &Ls, NULL, NULL), LNK_OK);
        assert_true(fabs(Ls - L3) <= 1e-14 * fabs(L3));
        for (int k = 0; k < 3; k++)
            lnk_batch_free(&sl[k]);
        /* a mean of per-chunk means would differ: check the test can tell */
        double naive = 0, Lc;
        for (int k = 0; k < 3; k++) {
            assert_int_equal(lnk_dataset_eval(m, th, &ch[k], 1, &Lc, NULL, NULL), LNK_OK);
            naive += Lc / 3;
        }
        assert_true(fabs(naive - L1) > 1e-8 * fabs(L1));
        lnk_hessian_free(a);
        lnk_hessian_free(b);
        for (int k = 0; k < 3; k++)
            lnk_batch_free(&ch[k]);
        lnk_batch_free(&all);
        free(th);
        free(v);
        free(g1);
        free(g3);
        free(h1);
        free(h3);
        lnk_model_free(m);
        lnk_config_clear(&c);
    }
}

static void test_errors(void **s)
{
    (void)s;
    lnk_config c = tu_config("d=8", "h=2", "L=1", "V=9", NULL);
    lnk_model *m = lnk_model_alloc(&c);
    size_t n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * n);
    lnk_model_init_params(m, th);
    lnk_batch b;
    tu_rows(m, &b, 0, 2, 5, 6);
    assert_null(lnk_hessian_alloc(m, th, &b, 1, "dec.7.*"));
    assert_non_null(strstr(lnk_errmsg(), "'dec.7.*' matches no tensor"));
    assert_non_null(strstr(lnk_errmsg(), "dec.0.ffn.w2"));
    assert_null(lnk_hessian_alloc(m, th, &b, 0, NULL));
    assert_non_null(strstr(lnk_errmsg(), "no chunks"));
    b.tgt[1] = 99; /* token id out of range */
    assert_null(lnk_hessian_alloc(m, th, &b, 1, NULL));
    assert_non_null(strstr(lnk_errmsg(), "out of range"));
    lnk_batch_free(&b);
    free(th);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* Shards: contiguous, covering, each cut at the prefix-sum point nearest to
 * r N / P (checked against a brute-force search); lnk_comm_split; and in a
 * one-process job the shard Hessian and data-set eval are the plain ones. */
static void test_shards(void **s)
{
    (void)s;
    lnk_config c = tu_config("d=8", "h=2", "L=1", "V=13", NULL);
    lnk_model *m = lnk_model_alloc(&c);
    enum { NC = 11 };
    lnk_batch ch[NC];
    double cum[NC + 1] = {0};
    for (int k = 0; k < NC; k++) {
        tu_rows(m, &ch[k], 3 * k, 3 * k + 1 + k % 3, 6, 12);
        cum[k + 1] = cum[k] + (double)lnk_batch_n_scored(m, &ch[k]);
    }
    for (int P = 1; P <= 14; P++) {
        int first[16];
        assert_int_equal(lnk_shard_chunks(m, ch, NC, P, first), LNK_OK);
        assert_int_equal(first[0], 0);
        assert_int_equal(first[P], NC);
        for (int r = 1; r < P; r++) {
            assert_true(first[r] >= first[r - 1]);
            /* the cut minimises |cum[cut] - target| among cuts >= the previous one */
            double target = cum[NC] * r / P, best = INFINITY;
            for (int k = first[r - 1]; k <= NC; k++)
                best = fmin(best, fabs(cum[k] - target));
            if (fabs(cum[first[r]] - target) > best + 1e-9)
                fail_msg("P = %d, cut %d at chunk %d: |%g - %g| > best %g", P, r, first[r],
                         cum[first[r]], target, best);
        }
    }
    size_t cnt[4], dsp[4];
    lnk_comm_split(10, 4, cnt, dsp);
    assert_true(cnt[0] == 3 && cnt[1] == 3 && cnt[2] == 2 && cnt[3] == 2);
    assert_true(dsp[0] == 0 && dsp[1] == 3 && dsp[2] == 6 && dsp[3] == 8);
    /* a data set shared by a group of one process: the plain functions, bitwise */
    assert_int_equal(lnk_comm_size(), 1);
    size_t n = lnk_model_n_params(m), N = (size_t)cum[NC];
    double *th = malloc(sizeof(double) * n), *v = malloc(sizeof(double) * n);
    double *g1 = malloc(sizeof(double) * n), *g2 = malloc(sizeof(double) * n);
    double *h1 = malloc(sizeof(double) * n), *h2 = malloc(sizeof(double) * n);
    lnk_model_init_params(m, th);
    tu_randn(v, n, 3);
    double L1, L2;
    assert_int_equal(lnk_dataset_eval(m, th, ch, NC, &L1, g1, NULL), LNK_OK);
    lnk_dataset ds = {ch, NC, NC, 0, N, lnk_comm_world()};
    assert_int_equal(lnk_dataset_loss(m, th, &ds, &L2, g2), LNK_OK);
    assert_true(L1 == L2 && !memcmp(g1, g2, sizeof(double) * n));
    lnk_hessian *a = lnk_hessian_alloc(m, th, ch, NC, NULL);
    lnk_hessian *b = lnk_hessian_alloc_dataset(m, th, &ds, NULL);
    assert_non_null(a);
    assert_non_null(b);
    lnk_operator oa = lnk_hessian_operator(a);
    assert_int_equal(oa.apply(oa.ctx, v, h1), LNK_OK);
    assert_int_equal(lnk_hessian_apply_full(b, v, h2), LNK_OK);
    assert_true(!memcmp(h1, h2, sizeof(double) * n));
    size_t off, count;
    lnk_hessian_slice(b, &off, &count);
    assert_true(off == 0 && count == n);
    lnk_hessian_free(a);
    lnk_hessian_free(b);
    for (int k = 0; k < NC; k++)
        lnk_batch_free(&ch[k]);
    free(th), free(v), free(g1), free(g2), free(h1), free(h2);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* The data-set type: chunks of rows (the same as slicing by hand), the
 * scored tokens of the whole set, the shard of a group (what
 * lnk_shard_chunks cuts), chunks taken over from an array, and the Hessian
 * and loss over it bitwise those of the chunk functions. */
static void test_dataset(void **s)
{
    (void)s;
    lnk_config c = tu_config("d=8", "h=2", "L=1", "V=13", NULL);
    lnk_model *m = lnk_model_alloc(&c);
    lnk_batch b, by_hand[4];
    tu_rows(m, &b, 0, 11, 6, 12);
    lnk_dataset ds;
    lnk_dataset_init(&ds);
    assert_int_equal(lnk_dataset_add_rows(&ds, m, &b, 3), LNK_OK);
    assert_int_equal(ds.n_chunks, 4);
    assert_int_equal(ds.n_total, 4);
    assert_null(ds.procs);
    size_t N = 0;
    for (int k = 0; k < 4; k++) {
        assert_int_equal(lnk_batch_slice(&b, 3 * k, 3 * k + 3 < 11 ? 3 * k + 3 : 11, &by_hand[k]),
                         LNK_OK);
        assert_int_equal(ds.chunks[k].B, by_hand[k].B);
        assert_int_equal(ds.chunks[k].T, by_hand[k].T);
        assert_true(!memcmp(ds.chunks[k].tgt, by_hand[k].tgt,
                            sizeof(int64_t) * (size_t)by_hand[k].B * by_hand[k].T));
        N += lnk_batch_n_scored(m, &by_hand[k]);
    }
    assert_true(ds.n_scored == N && N == lnk_batch_n_scored(m, &b));
    /* loss and Hessian: bitwise the chunk functions' */
    size_t n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * n), *v = malloc(sizeof(double) * n);
    double *g1 = malloc(sizeof(double) * n), *g2 = malloc(sizeof(double) * n);
    double *h1 = malloc(sizeof(double) * n), *h2 = malloc(sizeof(double) * n);
    lnk_model_init_params(m, th);
    tu_randn(v, n, 5);
    double L1, L2;
    assert_int_equal(lnk_dataset_eval(m, th, by_hand, 4, &L1, g1, NULL), LNK_OK);
    assert_int_equal(lnk_dataset_loss(m, th, &ds, &L2, g2), LNK_OK);
    assert_true(L1 == L2 && !memcmp(g1, g2, sizeof(double) * n));
    lnk_hessian *ha = lnk_hessian_alloc(m, th, by_hand, 4, "*.attn.*");
    lnk_hessian *hb = lnk_hessian_alloc_dataset(m, th, &ds, "*.attn.*");
    assert_non_null(ha);
    assert_non_null(hb);
    lnk_operator oa = lnk_hessian_operator(ha), ob = lnk_hessian_operator(hb);
    assert_true(oa.n == ob.n && oa.n < n);
    assert_int_equal(oa.apply(oa.ctx, v, h1), LNK_OK);
    assert_int_equal(ob.apply(ob.ctx, v, h2), LNK_OK);
    assert_true(!memcmp(h1, h2, sizeof(double) * oa.n));
    lnk_hessian_free(ha);
    lnk_hessian_free(hb);
    /* the shard of rank 1 of 3 (only rank and size are read when sharding) */
    int first[4];
    assert_int_equal(lnk_shard_chunks(m, by_hand, 4, 3, first), LNK_OK);
    lnk_procs g = *lnk_comm_world();
    g.rank = 1;
    g.size = 3;
    assert_int_equal(lnk_dataset_shard(&ds, m, &g), LNK_OK);
    assert_int_equal(ds.first, first[1]);
    assert_int_equal(ds.n_chunks, first[2] - first[1]);
    assert_int_equal(ds.n_total, 4);
    assert_true(ds.n_scored == N && ds.procs == &g);
    for (int k = 0; k < ds.n_chunks; k++)
        assert_int_equal(ds.chunks[k].B, by_hand[first[1] + k].B);
    assert_int_equal(lnk_dataset_shard(&ds, m, &g), LNK_EINVAL); /* once */
    assert_int_equal(lnk_dataset_add_rows(&ds, m, &b, 3), LNK_EINVAL);
    lnk_dataset_free(&ds);
    /* chunks taken over: the array's entries own nothing afterwards */
    lnk_dataset_init(&ds);
    assert_int_equal(lnk_dataset_add_chunks(&ds, m, by_hand, 4), LNK_OK);
    assert_true(ds.n_chunks == 4 && ds.n_scored == N);
    for (int k = 0; k < 4; k++)
        assert_int_equal(by_hand[k].owns, 0);
    assert_int_equal(lnk_dataset_loss(m, th, &ds, &L2, NULL), LNK_OK);
    assert_true(L1 == L2);
    lnk_dataset_free(&ds);
    for (int k = 0; k < 4; k++)
        lnk_batch_free(&by_hand[k]); /* frees nothing: not owned */
    lnk_batch_free(&b);
    free(th), free(v), free(g1), free(g2), free(h1), free(h2);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* Every variant of tests/testutil.c (d 4, h 2, L 2, d_ff 6, V 7, 3 rows): the
 * dense Hessian, column j = H e_j, against the Hessian of central differences
 * of the gradient (fourth-order stencil, column by column), symmetric, and
 * H v for a random v against the dense matrix times v. */
static void test_variants_dense(void **s)
{
    (void)s;
    tu_variant v[96];
    int ns, nv = tu_variants(v, 96, &ns);
    static const char *const sizes[] = {"d=4", "h=2", "L=2", "d_ff=6", "V=7", "seed=2", NULL};
    double wfd = 0, wsym = 0, wlin = 0;
    for (int i = 0; i < nv; i++) {
        lnk_config c = tu_variant_config(&v[i], sizes);
        lnk_model *m = lnk_model_alloc(&c);
        assert_non_null(m);
        size_t n = lnk_model_n_params(m);
        double *th = malloc(sizeof(double) * n), *t = malloc(sizeof(double) * n);
        lnk_model_init_params(m, th);
        lnk_batch b;
        tu_rows(m, &b, 0, 3, 6, 7);
        lnk_workspace *ws = lnk_workspace_alloc(m, b.B, b.S, b.T, LNK_WS_HVP);
        lnk_workspace *w2 = lnk_workspace_alloc(m, b.B, b.S, b.T, 0);
        assert_non_null(ws);
        assert_non_null(w2);
        double *H = malloc(sizeof(double) * n * n), *F = malloc(sizeof(double) * n * n);
        double *e = calloc(n, sizeof(double)), *g[4];
        for (int k = 0; k < 4; k++)
            g[k] = malloc(sizeof(double) * n);
        assert_int_equal(lnk_model_hvp_prepare(ws, th, &b, NULL, NULL), LNK_OK);
        const double eps = 1e-5, st[4] = {1, -1, 2, -2};
        memcpy(t, th, sizeof(double) * n);
        for (size_t j = 0; j < n; j++) {
            e[j] = 1;
            assert_int_equal(lnk_model_hvp_apply(ws, e, H + j * n), LNK_OK);
            e[j] = 0;
            for (int k = 0; k < 4; k++) {
                t[j] = th[j] + st[k] * eps;
                assert_int_equal(lnk_model_eval(w2, t, &b, NULL, g[k], NULL), LNK_OK);
            }
            t[j] = th[j];
            for (size_t q = 0; q < n; q++)
                F[j * n + q] = (8 * (g[0][q] - g[1][q]) - (g[2][q] - g[3][q])) / (12 * eps);
        }
        double hmax = 0, efd = 0, esym = 0;
        for (size_t q = 0; q < n * n; q++)
            hmax = fmax(hmax, fabs(H[q]));
        for (size_t a = 0; a < n; a++)
            for (size_t c2 = 0; c2 < n; c2++) {
                efd = fmax(efd, fabs(H[a * n + c2] - F[a * n + c2]));
                esym = fmax(esym, fabs(H[a * n + c2] - H[c2 * n + a]));
            }
        efd /= hmax, esym /= hmax;
        /* a product with a random vector against the dense matrix */
        double *x = malloc(sizeof(double) * n), *hx = malloc(sizeof(double) * n);
        double *ref = calloc(n, sizeof(double));
        tu_randn(x, n, 500 + i);
        assert_int_equal(lnk_model_hvp_apply(ws, x, hx), LNK_OK);
        for (size_t j = 0; j < n; j++)
            for (size_t q = 0; q < n; q++)
                ref[q] += H[j * n + q] * x[j];
        double elin = tu_relerr(hx, ref, n, 1e-300);
        print_message("variant %2d: n %4zu, max|H| %.2e, |H - H_fd| %.1e, |H - H^T| %.1e, "
                      "|H x - (H) x| %.1e  [%s]\n", i, n, hmax, efd, esym, elin, v[i].label);
        if (!(hmax > 0) || !(efd <= 1e-6) || !(esym <= 1e-10) || !(elin <= 1e-12))
            fail_msg("variant %d (%s): dense Hessian check failed", i, v[i].label);
        wfd = fmax(wfd, efd), wsym = fmax(wsym, esym), wlin = fmax(wlin, elin);
        free(x);
        free(hx);
        free(ref);
        for (int k = 0; k < 4; k++)
            free(g[k]);
        free(H);
        free(F);
        free(e);
        free(th);
        free(t);
        lnk_workspace_free(ws);
        lnk_workspace_free(w2);
        lnk_batch_free(&b);
        lnk_model_free(m);
        lnk_config_clear(&c);
    }
    print_message("%d variants: worst |H - H_fd| / max|H| %.2e, asymmetry %.2e, product %.2e\n",
                  nv, wfd, wsym, wlin);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_variants_dense),
        cmocka_unit_test(test_block_is_submatrix),
        cmocka_unit_test(test_chunks_equal_one_batch),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_shards),
        cmocka_unit_test(test_dataset),
    };
    return cmocka_run_group_tests_name("hessian", tests, NULL, NULL);
}
