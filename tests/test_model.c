/* Analytic tests of the model of docs/MODEL.md (helpers: tests/testutil_model.c).
 *   1. the row-norm kernel: LayerNorm rows are centred with norm sqrt(n var/(var+eps)),
 *      RMSNorm rows have norm sqrt(n ms/(ms+eps)), y = g xhat + b exactly;
 *   2. theorem init (Wq = Wk = 0): every attention row is uniform over its allowed keys;
 *      every norm output lies on the sphere of radius sqrt(d var/(var+eps));
 *   3. padding invariance of loss, gradient and H v; the <pad> embedding row gets 0;
 *   4. causality: changing the last input token leaves every earlier attention row and
 *      every earlier prediction bitwise unchanged.
 * The loss against an independent re-implementation is test_model_loss; determinism and
 * initialisation statistics test_model_repro.
 * Tolerances come from rounding-error bounds, stated where used. */
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

/* The same batch with ps extra <pad> columns on src (and labels) and pt on tgt. */
static void batch_pad(const lnk_batch *in, int ps, int pt, lnk_batch *out)
{
    memset(out, 0, sizeof *out);
    out->B = in->B;
    out->owns = 1;
    if (in->src) {
        out->S = in->S + ps;
        out->src = calloc((size_t)out->B * out->S, sizeof(int64_t));
        for (int i = 0; i < in->B; i++)
            memcpy(out->src + (size_t)i * out->S, in->src + (size_t)i * in->S,
                   sizeof(int64_t) * in->S);
    }
    if (in->labels) {
        out->labels = calloc((size_t)out->B * out->S, sizeof(int64_t));
        for (int i = 0; i < in->B; i++)
            memcpy(out->labels + (size_t)i * out->S, in->labels + (size_t)i * in->S,
                   sizeof(int64_t) * in->S);
    }
    if (in->tgt) {
        out->T = in->T + pt;
        out->tgt = calloc((size_t)out->B * out->T, sizeof(int64_t));
        for (int i = 0; i < in->B; i++)
            memcpy(out->tgt + (size_t)i * out->T, in->tgt + (size_t)i * in->T,
                   sizeof(int64_t) * in->T);
    }
}

/* Row statistics in long double, two-pass: mean, biased variance, mean square, mean |x|. */
typedef struct {
    long double mu, var, ms, mabs;
} rowstat;

static rowstat row_stats(const double *x, int n)
{
    rowstat s = {0, 0, 0, 0};
    for (int i = 0; i < n; i++) {
        s.mu += x[i];
        s.ms += (long double)x[i] * x[i];
        s.mabs += fabsl((long double)x[i]);
    }
    s.mu /= n;
    s.ms /= n;
    s.mabs /= n;
    for (int i = 0; i < n; i++)
        s.var += (x[i] - s.mu) * (x[i] - s.mu);
    s.var /= n;
    return s;
}

static long double row_norm(const double *y, int n)
{
    long double s = 0;
    for (int i = 0; i < n; i++)
        s += (long double)y[i] * y[i];
    return sqrtl(s);
}

/* --------------------------------------------------- 1. the norm kernel */

/* Rounding bounds used below (u = unit roundoff, n = row length):
 *  - mean(y): the kernel's mean has error <= (n-1)u mean|x| + u|mu|, which shifts every
 *    entry by r times that; each entry adds 2 roundings.  |mean(y)| <= (n+1) u r mean|x|
 *    + 3u max|y|; we allow twice that.
 *  - ||y||: the sum of squares has relative error <= (n-1)u, r gets half of it plus a
 *    few u, so ||y|| is within ~(n/2 + 6)u relative (6e-14 at n = 1024): we assert 1e-12. */
static void test_norm_kernel(void **state)
{
    (void)state;
    const int ns[] = {2, 3, 16, 255, 1024};
    const double scales[] = {1e-3, 0.1, 1.0, 10.0, 1e3};
    const double offs[] = {0.0, 3.0};
    const double epss[] = {1e-5, 0.0};
    const int R = 6;
    double worst_mean = 0, worst_norm = 0, worst_cos = 0;
    for (int in = 0; in < 5; in++) {
        int n = ns[in];
        size_t N = (size_t)R * n;
        double *x = malloc(sizeof(double) * N), *y = malloc(sizeof(double) * N);
        double *xh = malloc(sizeof(double) * N), *y2 = malloc(sizeof(double) * N);
        double *xh2 = malloc(sizeof(double) * N), *g = malloc(sizeof(double) * n);
        double *bb = malloc(sizeof(double) * n), r[6], r2[6];
        tu_randn(g, n, 500 + n);
        tu_randn(bb, n, 600 + n);
        for (int is = 0; is < 5; is++)
            for (int io = 0; io < 2; io++)
                for (int ie = 0; ie < 2; ie++)
                    for (int center = 0; center <= 1; center++) {
                        double sc = scales[is], eps = epss[ie];
                        tu_randn(x, N, 1000 * in + 100 * is + 10 * io + ie);
                        for (size_t i = 0; i < N; i++)
                            x[i] = sc * (offs[io] + x[i]);
                        lnk_norm_forward(y, xh, r, x, NULL, NULL, R, n, center, eps);
                        for (int row = 0; row < R; row++) {
                            const double *xr = x + (size_t)row * n, *yr = y + (size_t)row * n;
                            rowstat st = row_stats(xr, n);
                            long double v = center ? st.var : st.ms;
                            long double want = sqrtl(n * v / (v + eps));
                            long double nrm = row_norm(yr, n);
                            double rel = (double)fabsl(nrm / want - 1);
                            worst_norm = fmax(worst_norm, rel);
                            if (rel > 1e-12)
                                fail_msg("norm n=%d scale=%g off=%g eps=%g center=%d row %d: "
                                         "||y|| = %.17g, expected %.17Lg (rel %.2e)",
                                         n, sc, offs[io], eps, center, row, (double)nrm, want,
                                         rel);
                            /* r is 1/sqrt(v + eps) */
                            double rr = (double)(1 / sqrtl(v + eps));
                            assert_true(fabs(r[row] / rr - 1) <= (n + 8) * U);
                            /* y is xhat when g = b = NULL */
                            assert_memory_equal(yr, xh + (size_t)row * n, sizeof(double) * n);
                            if (!center)
                                continue;
                            long double sy = 0;
                            for (int i = 0; i < n; i++)
                                sy += yr[i];
                            double mean = (double)(sy / n);
                            double tol = 2 * ((n + 1) * U * rr * (double)st.mabs +
                                              3 * U * tm_maxabs(yr, n));
                            worst_mean = fmax(worst_mean, fabs(mean) / tol);
                            if (fabs(mean) > tol || fabs(mean) >= 1e-12)
                                fail_msg("layernorm n=%d scale=%g off=%g eps=%g row %d: mean %.3e "
                                         "(bound %.3e)", n, sc, offs[io], eps, row, mean, tol);
                            if (eps == 0) { /* on the sphere of radius sqrt(n), orthogonal to 1 */
                                double cosv = (double)(sy / (nrm * sqrtl(n)));
                                worst_cos = fmax(worst_cos, fabs(cosv));
                                assert_true(fabs(cosv) < 1e-12);
                                assert_true(fabs((double)(nrm / sqrtl(n)) - 1) <= 1e-12);
                            }
                        }
                        /* with a gain and a bias: y = g xhat + b exactly, same xhat and r */
                        lnk_norm_forward(y2, xh2, r2, x, g, center ? bb : NULL, R, n, center,
                                         eps);
                        assert_memory_equal(xh2, xh, sizeof(double) * N);
                        assert_memory_equal(r2, r, sizeof(double) * R);
                        for (int row = 0; row < R; row++)
                            for (int i = 0; i < n; i++) {
                                double e = g[i] * xh[(size_t)row * n + i];
                                if (center)
                                    e = e + bb[i];
                                if (y2[(size_t)row * n + i] != e)
                                    fail_msg("norm with g, b: y[%d,%d] = %.17g, g xhat + b = %.17g",
                                             row, i, y2[(size_t)row * n + i], e);
                            }
                    }
        free(x);
        free(y);
        free(xh);
        free(y2);
        free(xh2);
        free(g);
        free(bb);
    }
    print_message("norm kernel: worst |mean|/bound %.2e, worst ||y|| rel err %.2e, worst cos %.2e\n",
                  worst_mean, worst_norm, worst_cos);
}

/* --------------------------------------------- 2. the theorem setting */

/* Is key u allowed for a query at t?  ids: the key side's input ids of the batch row. */
static int key_allowed(const int64_t *ids, int u, int t, int causal)
{
    return ids[u] != LNK_PAD && (!causal || u <= t);
}

/* Every attention map of every unit: 1/count on allowed keys, 0 elsewhere (to 1e-15). */
static void check_uniform(const lnk_model *m, const lnk_workspace *ws, const lnk_batch *bt,
                          const char *what)
{
    int h = m->cfg.h;
    for (int side = 0; side < 2; side++) {
        const lnk_stack *st = side ? &m->dec : &m->enc;
        const stack_buf *sb = side ? &ws->pr->dec : &ws->pr->enc;
        if (st->n_units == 0)
            continue;
        int T = side ? bt->T - 1 : bt->S; /* query rows of this stack */
        for (int k = 0; k < st->n_units; k++) {
            const lnk_unit *u = &st->u[k];
            if (u->kind == UNIT_FFN)
                continue;
            int cross = u->kind == UNIT_CROSS_ATTN, causal = side && !cross;
            int Tk = cross ? bt->S : T;
            assert_int_equal(u->causal, causal);
            for (int b = 0; b < bt->B; b++) {
                const int64_t *ids = (side && !cross) ? bt->tgt + (size_t)b * bt->T
                                                      : bt->src + (size_t)b * bt->S;
                for (int j = 0; j < h; j++)
                    for (int t = 0; t < T; t++) {
                        int count = 0;
                        for (int s = 0; s < Tk; s++)
                            count += key_allowed(ids, s, t, causal);
                        assert_true(count > 0);
                        const double *row = sb->a.u[k].a + (((size_t)b * h + j) * T + t) * Tk;
                        for (int s = 0; s < Tk; s++) {
                            double want = key_allowed(ids, s, t, causal) ? 1.0 / count : 0.0;
                            if (!(fabs(row[s] - want) <= 1e-15))
                                fail_msg("%s: %s unit %d row b=%d head=%d t=%d key %d: A = %.17g, "
                                         "expected %.17g", what, side ? "dec" : "enc", k, b, j, t,
                                         s, row[s], want);
                        }
                    }
            }
        }
    }
}

/* One norm: out rows have norm sqrt(d var/(var+eps)) (var of the input row), to 1e-12
 * relative; and that is sqrt(d) up to the eps effect: sqrt(d) - ||y|| in [0, sqrt(d) eps/(2 var)]. */
static void check_norm_rows(const double *in, const double *out, int R, int d, double eps,
                            const char *what, int k, double *worst)
{
    for (int row = 0; row < R; row++) {
        rowstat s = row_stats(in + (size_t)row * d, d);
        long double want = sqrtl(d * s.var / (s.var + eps));
        long double nrm = row_norm(out + (size_t)row * d, d);
        double rel = (double)fabsl(nrm / want - 1);
        *worst = fmax(*worst, rel);
        if (rel > 1e-12)
            fail_msg("%s norm %d row %d: ||N(x)|| = %.17g, expected sqrt(d var/(var+eps)) = "
                     "%.17Lg", what, k, row, (double)nrm, want);
        double sd = sqrt((double)d), gap = sd - (double)nrm;
        if (gap < -1e-12 * sd || gap > sd * eps / (2 * (double)s.var) + 1e-12 * sd)
            fail_msg("%s norm %d row %d: sqrt(d) - ||N(x)|| = %.3e outside [0, sqrt(d) eps/(2 var) "
                     "= %.3e]", what, k, row, gap, sd * eps / (2 * (double)s.var));
    }
}

static void check_theorem_norms(const lnk_model *m, const lnk_workspace *ws, const lnk_batch *bt,
                                const char *what, double *worst)
{
    const lnk_config *c = &m->cfg;
    int post = c->norm_pos == LNK_POS_POST;
    for (int side = 0; side < 2; side++) {
        const lnk_stack *st = side ? &m->dec : &m->enc;
        const stack_buf *sb = side ? &ws->pr->dec : &ws->pr->enc;
        if (st->n_units == 0)
            continue;
        int R = bt->B * (side ? bt->T - 1 : bt->S);
        for (int k = 0; k < st->n_units; k++)
            check_norm_rows(post ? sb->a.u[k].s : sb->a.x[k],
                            post ? sb->a.u[k].npost.out : sb->a.u[k].nin.out, R, c->d, c->eps,
                            what, k, worst);
        if (!post)
            check_norm_rows(sb->a.x[st->n_units], sb->a.fin.out, R, c->d, c->eps, what, -1, worst);
    }
}

static void test_theorem_uniform(void **state)
{
    (void)state;
    const char *cf[][4] = {{"task=lm", "h=1", "d_ff=8", "V=13"},
                           {"task=lm", "h=2", "d_ff=16", "V=13"},
                           {"task=cls", "h=2", "d_ff=8", "V=13"},
                           {"task=seq2seq", "h=2", "d_ff=8", "V=13"},
                           {"task=lm", "h=4", "d_ff=8", "qk_norm=layernorm"}};
    const char *poss[] = {"norm_pos=post", "norm_pos=pre"};
    const int slen[] = {6, 3, 5}, tlen[] = {7, 4, 6};
    double worst = 0;
    for (int ic = 0; ic < 5; ic++)
        for (int ip = 0; ip < 2; ip++) {
            fx f;
            FX_OPEN(&f, "init=theorem", "d=8", "L=2", "seed=5", cf[ic][0], cf[ic][1], cf[ic][2],
                    cf[ic][3], poss[ip]);
            lnk_batch bt;
            tm_batch_make(f.m, &bt, 3, 6, slen, 7, tlen, 40 + ic);
            lnk_workspace *ws = tm_ws_new(f.m, 3, 6, 7, 0);
            double L;
            assert_int_equal(lnk_model_eval(ws, f.th, &bt, &L, NULL, NULL), LNK_OK);
            char what[128];
            snprintf(what, sizeof what, "theorem %s %s %s %s", cf[ic][0], cf[ic][1], cf[ic][3],
                     poss[ip]);
            check_uniform(f.m, ws, &bt, what);
            check_theorem_norms(f.m, ws, &bt, what, &worst);
            lnk_workspace_free(ws);
            lnk_batch_free(&bt);
            fx_close(&f);
        }
    print_message("theorem setting: worst norm-output rel err %.2e\n", worst);
}

/* ---------------------------------------------- 3. padding invariance */

/* The gradient (and H v) of embedding row 0 (<pad>) is exactly 0 when pads only end rows. */
static void check_pad_row_zero(const lnk_model *m, double *g, const char *what)
{
    const char *embs[] = {"src_emb", "tgt_emb"};
    for (int e = 0; e < 2; e++) {
        int i = lnk_layout_find(lnk_model_layout(m), embs[e]);
        if (i < 0)
            continue;
        const double *row0 = g + m->lay.t[i].offset;
        for (int c = 0; c < m->cfg.d; c++)
            if (row0[c] != 0.0)
                fail_msg("%s: %s row 0 (<pad>) entry %d is %.3e, expected exactly 0", what,
                         embs[e], c, row0[c]);
    }
}

static void test_padding_invariance(void **state)
{
    (void)state;
    const char *tasks[] = {"task=lm", "task=cls", "task=seq2seq"};
    const char *poss[] = {"norm_pos=post", "norm_pos=pre"};
    const char *norms[] = {"norm=layernorm", "norm=rmsnorm"};
    const int slen[] = {5, 3, 5}, tlen[] = {6, 6, 4};
    double wl = 0, wg = 0, wh = 0;
    for (int it = 0; it < 3; it++)
        for (int ip = 0; ip < 2; ip++)
            for (int in = 0; in < 2; in++) {
                fx f;
                FX_OPEN(&f, tasks[it], poss[ip], norms[in], "d=8", "h=2", "d_ff=12", "L=2",
                        "V=11", "seed=9");
                char what[96];
                snprintf(what, sizeof what, "%s %s %s", tasks[it], poss[ip], norms[in]);
                lnk_batch b0, b1;
                tm_batch_make(f.m, &b0, 3, 5, slen, 6, tlen, 70 + it);
                batch_pad(&b0, 3, 4, &b1);
                lnk_workspace *ws = tm_ws_new(f.m, 3, 8, 10, LNK_WS_HVP);
                size_t n = f.n;
                double *g0 = malloc(sizeof(double) * n), *g1 = malloc(sizeof(double) * n);
                double *h0 = malloc(sizeof(double) * n), *h1 = malloc(sizeof(double) * n);
                double *v = malloc(sizeof(double) * n), L0, L1;
                size_t N0, N1;
                tu_randn(v, n, 3);
                assert_int_equal(lnk_model_eval(ws, f.th, &b0, &L0, g0, &N0), LNK_OK);
                assert_int_equal(lnk_model_eval(ws, f.th, &b1, &L1, g1, &N1), LNK_OK);
                assert_int_equal(N0, N1);
                double el = fabs(L1 - L0) / fabs(L0), eg = tu_relerr(g1, g0, n, 0);
                check_pad_row_zero(f.m, g0, what);
                check_pad_row_zero(f.m, g1, what);
                assert_int_equal(lnk_model_hvp(ws, f.th, &b0, v, h0, NULL, NULL), LNK_OK);
                assert_int_equal(lnk_model_hvp(ws, f.th, &b1, v, h1, NULL, NULL), LNK_OK);
                double eh = tu_relerr(h1, h0, n, 0);
                check_pad_row_zero(f.m, h0, what);
                check_pad_row_zero(f.m, h1, what);
                wl = fmax(wl, el);
                wg = fmax(wg, eg);
                wh = fmax(wh, eh);
                if (!(el <= 1e-13 && eg <= 1e-12 && eh <= 1e-12))
                    fail_msg("%s: extra <pad> columns change loss by %.2e, grad by %.2e, Hv by "
                             "%.2e (relative)", what, el, eg, eh);
                assert_true(tm_maxabs(g0, n) > 0 && tm_maxabs(h0, n) > 0);
                free(g0);
                free(g1);
                free(h0);
                free(h1);
                free(v);
                lnk_workspace_free(ws);
                lnk_batch_free(&b0);
                lnk_batch_free(&b1);
                fx_close(&f);
            }
    print_message("padding: worst rel change loss %.2e, grad %.2e, Hv %.2e\n", wl, wg, wh);
}

/* ------------------------------------------------------- 4. causality */

static void test_causal_mask(void **state)
{
    (void)state;
    const char *poss[] = {"norm_pos=post", "norm_pos=pre"};
    const char *qks[] = {"qk_norm=none", "qk_norm=layernorm"};
    const int B = 3, Tst = 8, Tq = Tst - 1, tlen[] = {8, 8, 6};
    for (int ip = 0; ip < 2; ip++)
        for (int iq = 0; iq < 2; iq++) {
            fx f;
            FX_OPEN(&f, "task=lm", poss[ip], qks[iq], "d=8", "h=2", "d_ff=12", "L=2", "V=11");
            const lnk_model *m = f.m;
            int h = m->cfg.h, C = m->n_out, nu = m->dec.n_units;
            lnk_batch bt;
            tm_batch_make(m, &bt, B, 0, NULL, Tst, tlen, 17);
            lnk_workspace *ws = tm_ws_new(m, B, 0, Tst, 0);
            size_t amap = (size_t)B * h * Tq * Tq;
            double *a0 = malloc(sizeof(double) * amap * nu);
            double *p0 = malloc(sizeof(double) * (size_t)B * Tq * C), L0, L1;
            assert_int_equal(lnk_model_eval(ws, f.th, &bt, &L0, NULL, NULL), LNK_OK);
            for (int k = 0; k < nu; k++)
                if (m->dec.u[k].kind == UNIT_SELF_ATTN)
                    memcpy(a0 + k * amap, ws->pr->dec.a.u[k].a, sizeof(double) * amap);
            memcpy(p0, ws->pr->prob, sizeof(double) * (size_t)B * Tq * C); /* probabilities */
            /* change the last input token of row 1 (position Tq-1); it is also the label of
             * position Tq-2 */
            int64_t *x = &bt.tgt[1 * Tst + Tq - 1];
            *x = 4 + (*x - 4 + 1) % (m->cfg.V_tgt - 4);
            assert_int_equal(lnk_model_eval(ws, f.th, &bt, &L1, NULL, NULL), LNK_OK);
            assert_true(L1 != L0);
            int changed_last = 0;
            for (int k = 0; k < nu; k++) {
                if (m->dec.u[k].kind != UNIT_SELF_ATTN)
                    continue;
                for (int b = 0; b < B; b++)
                    for (int j = 0; j < h; j++)
                        for (int t = 0; t < Tq; t++) {
                            size_t o = (((size_t)b * h + j) * Tq + t) * Tq;
                            int same = memcmp(a0 + k * amap + o, ws->pr->dec.a.u[k].a + o,
                                              sizeof(double) * Tq) == 0;
                            if (b == 1 && t == Tq - 1)
                                changed_last |= !same;
                            else if (!same)
                                fail_msg("%s %s: unit %d attention row b=%d head=%d t=%d changed "
                                         "after changing the input at t=%d of row 1",
                                         poss[ip], qks[iq], k, b, j, t, Tq - 1);
                        }
            }
            assert_true(changed_last); /* the modified query row itself does change */
            for (int b = 0; b < B; b++)
                for (int t = 0; t < Tq; t++) {
                    if (b == 1 && t == Tq - 1)
                        continue;
                    size_t o = ((size_t)b * Tq + t) * C;
                    if (memcmp(p0 + o, ws->pr->prob + o, sizeof(double) * C) != 0)
                        fail_msg("%s %s: prediction b=%d t=%d changed", poss[ip], qks[iq], b, t);
                }
            free(a0);
            free(p0);
            lnk_workspace_free(ws);
            lnk_batch_free(&bt);
            fx_close(&f);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_norm_kernel),
        cmocka_unit_test(test_theorem_uniform),
        cmocka_unit_test(test_padding_invariance),
        cmocka_unit_test(test_causal_mask),
    };
    return cmocka_run_group_tests_name("model", tests, NULL, NULL);
}
