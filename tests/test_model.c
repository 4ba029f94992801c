/* Analytic and reproducibility tests of the model of docs/MODEL.md.
 *   1. the row-norm kernel: LayerNorm rows are centred with norm sqrt(n var/(var+eps)),
 *      RMSNorm rows have norm sqrt(n ms/(ms+eps)), y = g xhat + b exactly;
 *   2. theorem init (Wq = Wk = 0): every attention row is uniform over its allowed keys;
 *      every norm output lies on the sphere of radius sqrt(d var/(var+eps));
 *   3. padding invariance of loss, gradient and H v; the <pad> embedding row gets 0;
 *   4. causality: changing the last input token leaves every earlier attention row and
 *      every earlier prediction bitwise unchanged;
 *   5. loss ln C with zero output weights (and the exact output-layer gradient there);
 *      an independent scalar re-implementation of the loss written from docs/MODEL.md (lm, cls,
 *      seq2seq; Post/Pre; layernorm/rmsnorm/none; qk_norm; label smoothing; tie_output);
 *   6. determinism of init, eval and hvp; agreement across OpenBLAS thread counts;
 *   7. initialisation statistics (ranges, variances within 5 standard errors).
 * Tolerances come from rounding-error bounds or sampling standard errors, stated where used. */
#include <cblas.h>
#include <float.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "layers/layers.h"
#include "model/workspace.h"

static const double U = DBL_EPSILON / 2; /* unit roundoff */

/* ------------------------------------------------------------------ helpers */

typedef struct {
    lnk_config c;
    lnk_model *m;
    size_t n;
    double *th;
} fx;

/* FX_OPEN(&f, "key=value", ...): finalized config, model, initialised theta. */
#define FX_OPEN(f, ...) fx_model((f), tu_config(__VA_ARGS__, NULL))

static void fx_model(fx *f, lnk_config c)
{
    f->c = c;
    f->m = lnk_model_alloc(&f->c);
    if (!f->m)
        fail_msg("model: %s", lnk_errmsg());
    f->n = lnk_model_n_params(f->m);
    f->th = malloc(sizeof(double) * f->n);
    assert_non_null(f->th);
    assert_int_equal(lnk_model_init_params(f->m, f->th), LNK_OK);
}

static void fx_close(fx *f)
{
    lnk_model_free(f->m);
    lnk_config_clear(&f->c);
    free(f->th);
}

static lnk_workspace *ws_new(const lnk_model *m, int B, int S, int T, unsigned flags)
{
    lnk_workspace *ws = lnk_workspace_alloc(m, B, S, T, flags);
    if (!ws)
        fail_msg("workspace: %s", lnk_errmsg());
    return ws;
}

/* Tensor by name inside a flat vector (fails the test if absent). */
static double *tens(const lnk_model *m, double *x, const char *name, size_t *size)
{
    const lnk_layout *lay = lnk_model_layout(m);
    int i = lnk_layout_find(lay, name);
    if (i < 0)
        fail_msg("tensor '%s' not in the layout", name);
    if (size)
        *size = lay->t[i].size;
    return x + lay->t[i].offset;
}

/* A batch with rows of the given lengths (<pad> after them): src ids uniform in
 * [4, V_src), labels in [0, n_classes), tgt = <bos> then ids in [4, V_tgt). */
static void batch_make(const lnk_model *m, lnk_batch *b, int B, int S, const int *slen, int T,
                       const int *tlen, uint64_t seed)
{
    const lnk_config *c = lnk_model_config(m);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, (unsigned long)seed + 7u);
    memset(b, 0, sizeof *b);
    b->B = B;
    b->owns = 1;
    if (c->task != LNK_TASK_LM) {
        b->S = S;
        b->src = calloc((size_t)B * S, sizeof(int64_t));
        for (int i = 0; i < B; i++)
            for (int t = 0; t < slen[i]; t++)
                b->src[i * S + t] = 4 + (int64_t)gsl_rng_uniform_int(r, c->V_src - 4);
    }
    if (c->task == LNK_TASK_CLS) {
        b->labels = calloc((size_t)B * S, sizeof(int64_t));
        for (int i = 0; i < B; i++)
            for (int t = 0; t < slen[i]; t++)
                b->labels[i * S + t] = (int64_t)gsl_rng_uniform_int(r, c->n_classes);
    }
    if (c->task != LNK_TASK_CLS) {
        b->T = T;
        b->tgt = calloc((size_t)B * T, sizeof(int64_t));
        for (int i = 0; i < B; i++) {
            b->tgt[i * T] = LNK_BOS;
            for (int t = 1; t < tlen[i]; t++)
                b->tgt[i * T + t] = 4 + (int64_t)gsl_rng_uniform_int(r, c->V_tgt - 4);
        }
    }
    gsl_rng_free(r);
    if (lnk_batch_check(m, b) != LNK_OK)
        fail_msg("test batch rejected: %s", lnk_errmsg());
}

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

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static double maxabs(const double *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(x[i]));
    return m;
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
                                              3 * U * maxabs(yr, n));
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
            batch_make(f.m, &bt, 3, 6, slen, 7, tlen, 40 + ic);
            lnk_workspace *ws = ws_new(f.m, 3, 6, 7, 0);
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
                batch_make(f.m, &b0, 3, 5, slen, 6, tlen, 70 + it);
                batch_pad(&b0, 3, 4, &b1);
                lnk_workspace *ws = ws_new(f.m, 3, 8, 10, LNK_WS_HVP);
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
                assert_true(maxabs(g0, n) > 0 && maxabs(h0, n) > 0);
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
            batch_make(m, &bt, B, 0, NULL, Tst, tlen, 17);
            lnk_workspace *ws = ws_new(m, B, 0, Tst, 0);
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

/* ------------------------------------------------- 5. loss at W_out = 0 */

/* With W_out = 0 every logit is 0, p = 1/C, so every scored position costs exactly
 * log C (also with label smoothing: (1-a) log C + a log C).  The mean of N equal terms
 * is within (N+4)u log C of it.  No gradient reaches anything but out.w, whose gradient
 * is z^T (p - q)/N with q = (1-a) onehot(label) + a/C. */
static void test_loss_zero_output(void **state)
{
    (void)state;
    const char *tasks[] = {"task=lm", "task=cls", "task=seq2seq"};
    const char *poss[] = {"norm_pos=post", "norm_pos=pre"};
    const char *lss[] = {"label_smoothing=0", "label_smoothing=0.2"};
    const int slen[] = {5, 3, 5}, tlen[] = {6, 6, 4};
    for (int it = 0; it < 3; it++)
        for (int ip = 0; ip < 2; ip++)
            for (int il = 0; il < 2; il++) {
                fx f;
                FX_OPEN(&f, tasks[it], poss[ip], lss[il], "d=8", "h=2", "d_ff=12", "L=2",
                        "V=11", "n_classes=7");
                const lnk_model *m = f.m;
                const lnk_config *c = &m->cfg;
                lnk_batch bt;
                batch_make(m, &bt, 3, 5, slen, 6, tlen, 90 + it);
                lnk_workspace *ws = ws_new(m, 3, 5, 6, 0);
                size_t nw, n = f.n;
                double *W = tens(m, f.th, "out.w", &nw);
                memset(W, 0, sizeof(double) * nw);
                double *g = malloc(sizeof(double) * n), L;
                size_t N;
                assert_int_equal(lnk_model_eval(ws, f.th, &bt, &L, g, &N), LNK_OK);
                int C = c->task == LNK_TASK_CLS ? c->n_classes : c->V_tgt;
                assert_int_equal(nw, (size_t)c->d * C);
                /* count the scored positions from the batch, as MODEL.md §4 defines them */
                size_t Nw = 0;
                if (c->task == LNK_TASK_CLS) {
                    for (int i = 0; i < bt.B * bt.S; i++)
                        Nw += bt.src[i] != LNK_PAD;
                } else {
                    for (int b = 0; b < bt.B; b++)
                        for (int t = 1; t < bt.T; t++)
                            Nw += bt.tgt[b * bt.T + t] != LNK_PAD;
                }
                assert_int_equal(N, Nw);
                double want = log((double)C);
                if (fabs(L - want) > (N + 4) * U * want)
                    fail_msg("%s %s %s: loss %.17g with W_out = 0, expected ln %d = %.17g",
                             tasks[it], poss[ip], lss[il], L, C, want);
                /* only out.w has a gradient */
                size_t ow = W - f.th;
                for (size_t i = 0; i < n; i++)
                    if ((i < ow || i >= ow + nw) && g[i] != 0.0)
                        fail_msg("%s %s: gradient entry %zu is %.3e with W_out = 0, expected 0",
                                 tasks[it], poss[ip], i, g[i]);
                /* out.w gradient z^T (1/C - q)/N, from the stack output z */
                int has_dec = c->task != LNK_TASK_CLS, d = c->d;
                const double *z = has_dec ? ws->pr->dec.a.z : ws->pr->enc.a.z;
                int T = has_dec ? bt.T - 1 : bt.S;
                double a = c->label_smoothing;
                double *gw = calloc(nw, sizeof(double));
                for (int b = 0; b < bt.B; b++)
                    for (int t = 0; t < T; t++) {
                        int64_t y = has_dec ? bt.tgt[b * bt.T + t + 1] : bt.labels[b * bt.S + t];
                        if ((has_dec ? y : bt.src[b * bt.S + t]) == LNK_PAD)
                            continue;
                        const double *zr = z + ((size_t)b * T + t) * d;
                        for (int i = 0; i < d; i++)
                            for (int k = 0; k < C; k++) {
                                double q = (k == y ? 1 - a : 0) + a / C;
                                gw[i * C + k] += zr[i] * (1.0 / C - q) / (double)N;
                            }
                    }
                double e = tu_relerr(g + ow, gw, nw, 0);
                if (e > 1e-13)
                    fail_msg("%s %s %s: out.w gradient rel err %.2e", tasks[it], poss[ip],
                             lss[il], e);
                free(gw);
                free(g);
                lnk_workspace_free(ws);
                lnk_batch_free(&bt);
                fx_close(&f);
            }
}

/* ------------------------- 5b. an independent scalar reference of MODEL.md §2-4, all tasks */

/* Written from docs/MODEL.md alone: plain loops over one sequence at a time, no BLAS, no lnkit
 * kernels; parameters are looked up by their MODEL.md §6 names. */
#define RT 16 /* max positions */
#define RD 8  /* max width */
#define RF 32 /* max ffn width */
#define RV 16 /* max classes */

typedef struct {
    int task, d, h, dff, pre, norm, qk, tie;
    double eps, a;
    const lnk_model *m;
    const double *th;
} refm;

/* Parameter tensor by name; NULL when the configuration has none (RMSNorm's b). */
static const double *rp(const refm *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const double *rp(const refm *r, const char *fmt, ...)
{
    char name[LNK_NAME_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    const lnk_layout *lay = lnk_model_layout(r->m);
    int i = lnk_layout_find(lay, name);
    return i < 0 ? NULL : r->th + lay->t[i].offset;
}

/* MODEL.md §2 norms on one vector of n entries: LayerNorm g (x - mu)/sqrt(var + eps) + b,
 * RMSNorm g x / sqrt(mean(x^2) + eps) (g = NULL: 1, b = NULL: 0). */
static void ref_norm(const refm *r, int type, double *y, const double *x, int n, const double *g,
                     const double *b)
{
    double mu = 0, v = 0;
    if (type == LNK_NORM_LAYERNORM) {
        for (int i = 0; i < n; i++)
            mu += x[i];
        mu /= n;
    }
    for (int i = 0; i < n; i++)
        v += (x[i] - mu) * (x[i] - mu);
    v /= n;
    for (int i = 0; i < n; i++)
        y[i] = (g ? g[i] : 1.0) * (x[i] - mu) / sqrt(v + r->eps) + (b ? b[i] : 0.0);
}

/* The block norm "<pre>.<l>.<nn>" (or "<pre>.final_norm" when l < 0) on one vector. */
static void ref_bnorm(const refm *r, double *y, const double *x, const char *pre, int l,
                      const char *nn)
{
    if (r->norm == LNK_NORM_NONE) {
        memcpy(y, x, sizeof(double) * r->d);
        return;
    }
    const double *g = l < 0 ? rp(r, "%s.final_norm.g", pre) : rp(r, "%s.%d.%s.g", pre, l, nn);
    const double *b = l < 0 ? rp(r, "%s.final_norm.b", pre) : rp(r, "%s.%d.%s.b", pre, l, nn);
    assert_non_null(g);
    ref_norm(r, r->norm, y, x, r->d, g, b);
}

/* MODEL.md §2 MHA(Xq, Xkv, mask) of one sequence with the tensors "<pre>.<l>.<an>.*":
 * key s is masked when kid[s] is <pad>, or s > t when causal. */
static void ref_mha(const refm *r, const char *pre, int l, const char *an, double out[RT][RD],
                    double Xq[RT][RD], int Tq, double Xkv[RT][RD], const int64_t *kid, int Tk,
                    int causal)
{
    const double *wq = rp(r, "%s.%d.%s.wq", pre, l, an), *bq = rp(r, "%s.%d.%s.bq", pre, l, an);
    const double *wk = rp(r, "%s.%d.%s.wk", pre, l, an), *bk = rp(r, "%s.%d.%s.bk", pre, l, an);
    const double *wv = rp(r, "%s.%d.%s.wv", pre, l, an), *bv = rp(r, "%s.%d.%s.bv", pre, l, an);
    const double *wo = rp(r, "%s.%d.%s.wo", pre, l, an), *bo = rp(r, "%s.%d.%s.bo", pre, l, an);
    assert_true(wq && bq && wk && bk && wv && bv && wo && bo);
    int d = r->d, dk = d / r->h;
    double Q[RT][RD], K[RT][RD], Vv[RT][RD], ctx[RT][RD];
    for (int t = 0; t < Tq; t++)
        for (int c = 0; c < d; c++) {
            double q = bq[c];
            for (int i = 0; i < d; i++)
                q += Xq[t][i] * wq[i * d + c];
            Q[t][c] = q;
        }
    for (int s = 0; s < Tk; s++)
        for (int c = 0; c < d; c++) {
            double k = bk[c], v = bv[c];
            for (int i = 0; i < d; i++) {
                k += Xkv[s][i] * wk[i * d + c];
                v += Xkv[s][i] * wv[i * d + c];
            }
            K[s][c] = k;
            Vv[s][c] = v;
        }
    if (r->qk != LNK_NORM_NONE) /* per head, per row, over d_k entries, no gain or bias */
        for (int j = 0; j < r->h; j++) {
            double tmp[RD];
            for (int t = 0; t < Tq; t++) {
                ref_norm(r, r->qk, tmp, &Q[t][j * dk], dk, NULL, NULL);
                memcpy(&Q[t][j * dk], tmp, sizeof(double) * dk);
            }
            for (int s = 0; s < Tk; s++) {
                ref_norm(r, r->qk, tmp, &K[s][j * dk], dk, NULL, NULL);
                memcpy(&K[s][j * dk], tmp, sizeof(double) * dk);
            }
        }
    for (int j = 0; j < r->h; j++)
        for (int t = 0; t < Tq; t++) {
            double sc[RT], mx = -INFINITY, sum = 0;
            int ok[RT];
            for (int s = 0; s < Tk; s++) {
                ok[s] = kid[s] != LNK_PAD && (!causal || s <= t);
                if (!ok[s])
                    continue;
                double z = 0;
                for (int c = j * dk; c < (j + 1) * dk; c++)
                    z += Q[t][c] * K[s][c];
                sc[s] = z / sqrt((double)dk);
                mx = fmax(mx, sc[s]);
            }
            for (int s = 0; s < Tk; s++)
                if (ok[s])
                    sum += exp(sc[s] - mx);
            for (int c = j * dk; c < (j + 1) * dk; c++) {
                double acc = 0;
                for (int s = 0; s < Tk; s++)
                    if (ok[s])
                        acc += exp(sc[s] - mx) / sum * Vv[s][c];
                ctx[t][c] = acc;
            }
        }
    for (int t = 0; t < Tq; t++)
        for (int c = 0; c < d; c++) {
            double o = bo[c];
            for (int i = 0; i < d; i++)
                o += ctx[t][i] * wo[i * d + c];
            out[t][c] = o;
        }
}

/* MODEL.md §2 FFN(x) = ReLU(x W1 + b1) W2 + b2 on one vector. */
static void ref_ffn(const refm *r, const char *pre, int l, double *out, const double *x)
{
    const double *w1 = rp(r, "%s.%d.ffn.w1", pre, l), *b1 = rp(r, "%s.%d.ffn.b1", pre, l);
    const double *w2 = rp(r, "%s.%d.ffn.w2", pre, l), *b2 = rp(r, "%s.%d.ffn.b2", pre, l);
    assert_true(w1 && b1 && w2 && b2);
    double hid[RF];
    for (int f = 0; f < r->dff; f++) {
        double s = b1[f];
        for (int i = 0; i < r->d; i++)
            s += x[i] * w1[i * r->dff + f];
        hid[f] = s > 0 ? s : 0;
    }
    for (int c = 0; c < r->d; c++) {
        double s = b2[c];
        for (int f = 0; f < r->dff; f++)
            s += hid[f] * w2[f * r->d + c];
        out[c] = s;
    }
}

/* MODEL.md §2 embedding sqrt(d) E[x_t] + PE_t of one sequence. */
static void ref_embed(const refm *r, const char *E_name, double X[RT][RD], const int64_t *ids,
                      int T)
{
    const double *E = rp(r, "%s", E_name);
    int d = r->d;
    assert_non_null(E);
    for (int t = 0; t < T; t++)
        for (int k = 0; k < d / 2; k++) {
            double ang = t / pow(10000.0, 2.0 * k / d);
            X[t][2 * k] = sqrt((double)d) * E[ids[t] * d + 2 * k] + sin(ang);
            X[t][2 * k + 1] = sqrt((double)d) * E[ids[t] * d + 2 * k + 1] + cos(ang);
        }
}

/* MODEL.md §3: one stack over one sequence, X updated in place.  With M (the encoder output,
 * key ids mid) each block has cross-attention between self-attention and FFN. */
static void ref_stack(const refm *r, const char *pre, int L, double X[RT][RD],
                      const int64_t *ids, int T, int causal, double M[RT][RD],
                      const int64_t *mid, int Tm)
{
    int d = r->d;
    double H[RT][RD], F[RT][RD];
    for (int l = 0; l < L; l++) {
        int nunits = M ? 3 : 2;
        for (int u = 0; u < nunits; u++) {
            const char *nn = u == 0 ? "norm1" : u == 1 ? "norm2" : "norm3";
            int ffn = u == nunits - 1;
            if (ffn)
                nn = M ? "norm3" : "norm2";
            /* Post: X = N(X + F(X)); Pre: X = X + F(N(X)) */
            for (int t = 0; t < T; t++) {
                if (r->pre)
                    ref_bnorm(r, H[t], X[t], pre, l, nn);
                else
                    memcpy(H[t], X[t], sizeof(double) * d);
            }
            if (ffn)
                for (int t = 0; t < T; t++)
                    ref_ffn(r, pre, l, F[t], H[t]);
            else if (u == 0)
                ref_mha(r, pre, l, "attn", F, H, T, H, ids, T, causal);
            else
                ref_mha(r, pre, l, "xattn", F, H, T, M, mid, Tm, 0);
            for (int t = 0; t < T; t++) {
                for (int i = 0; i < d; i++)
                    F[t][i] += X[t][i];
                if (r->pre)
                    memcpy(X[t], F[t], sizeof(double) * d);
                else
                    ref_bnorm(r, X[t], F[t], pre, l, nn);
            }
        }
    }
    if (r->pre)
        for (int t = 0; t < T; t++) {
            double y[RD];
            ref_bnorm(r, y, X[t], pre, -1, NULL);
            memcpy(X[t], y, sizeof(double) * d);
        }
}

/* MODEL.md §4: the mean loss of a batch. */
static double ref_loss(const refm *r, const lnk_batch *bt, size_t *nscored)
{
    const lnk_config *c = lnk_model_config(r->m);
    int d = r->d, lm = r->task == LNK_TASK_LM, cls = r->task == LNK_TASK_CLS;
    int T = cls ? bt->S : bt->T - 1, C = cls ? c->n_classes : c->V_tgt;
    const char *emb = cls ? "src_emb" : "tgt_emb";
    const double *W = r->tie ? rp(r, "%s", emb) : rp(r, "out.w");
    assert_non_null(W);
    assert_true(C <= RV && T <= RT && bt->S <= RT);
    double total = 0;
    size_t N = 0;
    for (int b = 0; b < bt->B; b++) {
        double X[RT][RD], M[RT][RD];
        const int64_t *src = bt->src ? bt->src + (size_t)b * bt->S : NULL;
        const int64_t *tgt = bt->tgt ? bt->tgt + (size_t)b * bt->T : NULL;
        if (!lm) {
            ref_embed(r, "src_emb", cls ? X : M, src, bt->S);
            ref_stack(r, "enc", c->L_enc, cls ? X : M, src, bt->S, 0, NULL, NULL, 0);
        }
        if (!cls) {
            ref_embed(r, "tgt_emb", X, tgt, T);
            ref_stack(r, "dec", c->L_dec, X, tgt, T, 1, lm ? NULL : M, src, bt->S);
        }
        for (int t = 0; t < T; t++) {
            int64_t y = cls ? bt->labels[(size_t)b * bt->S + t] : tgt[t + 1];
            if ((cls ? src[t] : y) == LNK_PAD)
                continue;
            /* logits = z W_out, or z E^T when tied (no sqrt(d)) */
            double lg[RV], mx = -INFINITY, se = 0, mean = 0;
            for (int v = 0; v < C; v++) {
                double s = 0;
                for (int i = 0; i < d; i++)
                    s += X[t][i] * (r->tie ? W[v * d + i] : W[i * C + v]);
                lg[v] = s;
                mx = fmax(mx, s);
            }
            for (int v = 0; v < C; v++) {
                se += exp(lg[v] - mx);
                mean += lg[v] / C;
            }
            double lse = mx + log(se);
            total += (1 - r->a) * (lse - lg[y]) + r->a * (lse - mean);
            N++;
        }
    }
    *nscored = N;
    return total / N;
}

static void test_reference_loss(void **state)
{
    (void)state;
    /* lm, Post-LN, LayerNorm, h = 2, d = 4, L = 1, B = 2 with padding first, then variants */
    const char *cases[][10] = {
        {"task=lm", "norm_pos=post", "norm=layernorm", "d=4", "L=1", NULL},
        {"task=lm", "norm_pos=post", "norm=layernorm", "d=4", "L=1", "label_smoothing=0.1", NULL},
        {"task=lm", "norm_pos=pre", "norm=layernorm", "d=4", "L=1", NULL},
        {"task=lm", "norm_pos=post", "norm=rmsnorm", "d=4", "L=1", NULL},
        {"task=lm", "norm_pos=pre", "norm=rmsnorm", "d=4", "L=1", "label_smoothing=0.1", NULL},
        {"task=lm", "norm_pos=post", "norm=none", "d=4", "L=2", NULL},
        {"task=lm", "norm_pos=pre", "norm=layernorm", "d=4", "L=2", "label_smoothing=0.1",
         "tie_output=true", NULL},
        {"task=lm", "norm_pos=post", "qk_norm=layernorm", "d=8", "L=1", NULL},
        {"task=lm", "norm_pos=pre", "qk_norm=rmsnorm", "d=8", "L=1", NULL},
        {"task=cls", "norm_pos=post", "norm=layernorm", "d=4", "L=2", "n_classes=5", NULL},
        {"task=cls", "norm_pos=pre", "norm=rmsnorm", "d=4", "L=1", "label_smoothing=0.2",
         "n_classes=5", NULL},
        {"task=cls", "norm_pos=pre", "norm=layernorm", "d=4", "L=1", "tie_output=true", NULL},
        {"task=seq2seq", "norm_pos=post", "norm=layernorm", "d=4", "L_enc=2", "L_dec=1",
         "V_src=13", NULL},
        {"task=seq2seq", "norm_pos=pre", "norm=layernorm", "d=4", "L_enc=1", "L_dec=2",
         "V_src=13", "label_smoothing=0.1", NULL},
        {"task=seq2seq", "norm_pos=pre", "norm=rmsnorm", "qk_norm=layernorm", "d=8", "L=1",
         "tie_output=true", NULL},
        {"task=seq2seq", "norm_pos=post", "norm=none", "qk_norm=rmsnorm", "d=4", "L=1", NULL},
    };
    const int ncases = sizeof cases / sizeof cases[0];
    const int slen[] = {6, 4}, tlen[] = {7, 5};
    double worst = 0;
    for (int ic = 0; ic < ncases; ic++) {
        const char *const *k = cases[ic];
        char desc[256] = "";
        for (int i = 0; i < 10 && k[i]; i++)
            snprintf(desc + strlen(desc), sizeof desc - strlen(desc), "%s ", k[i]);
        fx f;
        FX_OPEN(&f, "h=2", "V=11", "d_ff=12", "seed=21", k[0], k[1], k[2], k[3], k[4], k[5],
                k[6], k[7], k[8]);
        const lnk_config *c = lnk_model_config(f.m);
        /* gains and biases away from 1 and 0 so that every term is exercised */
        const lnk_layout *lay = lnk_model_layout(f.m);
        for (int i = 0; i < lay->n_tensors; i++)
            if (lay->t[i].ndim == 1) {
                double *x = f.th + lay->t[i].offset;
                tu_randn(x, lay->t[i].size, 300 + i);
                for (size_t j = 0; j < lay->t[i].size; j++)
                    x[j] = (ends_with(lay->t[i].name, ".g") ? 1.0 : 0.0) + 0.3 * x[j];
            }
        lnk_batch bt;
        batch_make(f.m, &bt, 2, 6, slen, 7, tlen, 123 + ic);
        lnk_workspace *ws = ws_new(f.m, 2, 6, 7, 0);
        double L;
        size_t N, Nr;
        assert_int_equal(lnk_model_eval(ws, f.th, &bt, &L, NULL, &N), LNK_OK);
        refm r = {c->task, c->d, c->h, c->d_ff, c->norm_pos == LNK_POS_PRE, c->norm, c->qk_norm,
                  c->tie_output, c->eps, c->label_smoothing, f.m, f.th};
        assert_true(r.d <= RD && r.dff <= RF);
        double Lr = ref_loss(&r, &bt, &Nr);
        assert_int_equal(N, Nr);
        double rel = fabs(L - Lr) / fabs(Lr);
        worst = fmax(worst, rel);
        if (!(rel <= 1e-12))
            fail_msg("%s: lnkit loss %.17g, independent reference %.17g (rel %.2e)", desc, L, Lr,
                     rel);
        lnk_workspace_free(ws);
        lnk_batch_free(&bt);
        fx_close(&f);
    }
    print_message("independent reference: %d configurations, worst rel diff %.2e\n", ncases,
                  worst);
}

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
        double *x1 = tens(f.m, f.th, shared[i], &s1), *x2 = tens(h.m, h.th, shared[i], &s2);
        assert_int_equal(s1, s2);
        assert_memory_equal(x1, x2, sizeof(double) * s1);
    }
    fx_close(&h);
    fx_close(&g);
    /* eval and hvp twice: bitwise the same */
    const int slen[] = {5, 4}, tlen[] = {6, 5};
    lnk_batch bt;
    batch_make(f.m, &bt, 2, 5, slen, 6, tlen, 8);
    lnk_workspace *ws = ws_new(f.m, 2, 5, 6, LNK_WS_HVP);
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
    batch_make(f.m, &small, 1, 2, slen2, 3, tlen2, 9);
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
    lnk_workspace *ws = ws_new(f.m, 8, 0, 32, LNK_WS_HVP);
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
                    double want = ends_with(t->name, ".g") ? 1.0 : 0.0;
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
                if (ii == 2 && attn && (ends_with(t->name, ".wq") || ends_with(t->name, ".wk"))) {
                    for (size_t k = 0; k < n; k++)
                        if (x[k] != 0.0)
                            fail_msg("theorem %s[%zu] = %g, expected 0", t->name, k, x[k]);
                    continue;
                }
                if (ii == 2 && attn && ends_with(t->name, ".wo")) {
                    assert_int_equal(in, out);
                    for (int r = 0; r < in; r++)
                        for (int k = 0; k < out; k++)
                            if (x[r * out + k] != (r == k ? 1.0 : 0.0))
                                fail_msg("theorem %s[%d,%d] = %g, expected the identity",
                                         t->name, r, k, x[r * out + k]);
                    continue;
                }
                double s2 = 2.0 / (in + out), mx = maxabs(x, n);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_norm_kernel),
        cmocka_unit_test(test_theorem_uniform),
        cmocka_unit_test(test_padding_invariance),
        cmocka_unit_test(test_causal_mask),
        cmocka_unit_test(test_loss_zero_output),
        cmocka_unit_test(test_reference_loss),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test_teardown(test_blas_threads, restore_threads),
        cmocka_unit_test(test_init_stats),
    };
    return cmocka_run_group_tests_name("model", tests, NULL, NULL);
}
