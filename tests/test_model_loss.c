/* The model's loss (docs/MODEL.md) from first principles (helpers:
 * tests/testutil_model.c):
 *   5. loss ln C with zero output weights (and the exact output-layer gradient there);
 *      an independent scalar re-implementation of the loss written from docs/MODEL.md (lm, cls,
 *      seq2seq; Post/Pre; layernorm/rmsnorm/none; qk_norm; label smoothing; tie_output).
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
                tm_batch_make(m, &bt, 3, 5, slen, 6, tlen, 90 + it);
                lnk_workspace *ws = tm_ws_new(m, 3, 5, 6, 0);
                size_t nw, n = f.n;
                double *W = tm_tens(m, f.th, "out.w", &nw);
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
                    x[j] = (tm_ends_with(lay->t[i].name, ".g") ? 1.0 : 0.0) + 0.3 * x[j];
            }
        lnk_batch bt;
        tm_batch_make(f.m, &bt, 2, 6, slen, 7, tlen, 123 + ic);
        lnk_workspace *ws = tm_ws_new(f.m, 2, 6, 7, 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss_zero_output),
        cmocka_unit_test(test_reference_loss),
    };
    return cmocka_run_group_tests_name("model_loss", tests, NULL, NULL);
}
