/* LayerNorm geometry (docs/MODEL.md section 7, include/lnkit/geometry.h):
 *   1. norms: LN outputs have cos to 1 below 1e-12 and norm sqrt(d) (eps = 0), LN = S(P);
 *      per-head slices of a full-width LN are not centred, of a per-head LN they are;
 *      statistics (cos, norm ratio, angle folded into [0, 90]);
 *   4. attention statistics: entropy of a uniform row is ln n, a one-hot column has
 *      column mass 1; a model's statistics against maps recomputed from its queries and
 *      keys; uniform maps under the theorem init; the activation stages of
 *      lnk_geom_unit_rows (norm in -> norm out -> keys -> qk-normed keys);
 *   5. `lnkit select`: its CSV equals the library's answer; bad input exits 2 with one line.
 * Selectability (2) is test_select, heat-map cells (3) test_heat_cells; helpers in
 * tests/testutil_geom.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "testutil_geom.h"
#include "lnkit/geometry.h"

/* ------------------------------------------------------------------- norms */

static void test_layernorm_sphere(void **state)
{
    (void)state;
    const int ds[] = {2, 3, 7, 64, 512, 1000};
    double x[1000], y[1000], z[1000];
    tg_rs = 11;
    for (size_t k = 0; k < sizeof ds / sizeof ds[0]; k++) {
        int d = ds[k];
        for (int rep = 0; rep < 20; rep++) {
            double off = rep % 2 ? 3.0 : 0.0; /* offset along 1 and anisotropic scales */
            for (int i = 0; i < d; i++)
                x[i] = off + tg_nrand() * exp(rep % 3 ? tg_nrand() : 0.0);
            lnk_geom_layernorm(x, y, d, 0.0);
            double c = lnk_geom_cos_ones(y, d);
            if (!(fabs(c) < 1e-12))
                fail_msg("d = %d: cos(LN(x), 1) = %.3e", d, c);
            double r = lnk_geom_norm_ratio(y, d);
            if (!(fabs(r - 1) < 1e-12))
                fail_msg("d = %d: ||LN(x)||/sqrt(d) - 1 = %.3e", d, r - 1);
            assert_true(fabs(lnk_geom_mean(y, d)) < 1e-13);
            /* LN = S(P) with eps = 0, and its angle to 1 is 90 degrees */
            lnk_geom_center(x, z, d);
            lnk_geom_scale(z, z, d);
            for (int i = 0; i < d; i++)
                assert_true(fabs(z[i] - y[i]) <= 1e-13 * (1 + fabs(y[i])));
            assert_true(fabs(lnk_geom_angle_ones(y, d) - 90) < 1e-9);
            /* with eps: ||LN(x)|| = sqrt(d var/(var + eps)) (MODEL.md section 7) */
            double mu = 0, var = 0, eps = 0.3;
            for (int i = 0; i < d; i++)
                mu += x[i] / d;
            for (int i = 0; i < d; i++)
                var += (x[i] - mu) * (x[i] - mu) / d;
            lnk_geom_layernorm(x, y, d, eps);
            assert_true(fabs(lnk_geom_norm_ratio(y, d) - sqrt(var / (var + eps))) < 1e-12);
            /* RMS (= S with eps 0): on the sphere, not centred in general */
            lnk_geom_rmsnorm(x, y, d, 0.0);
            assert_true(fabs(lnk_geom_norm_ratio(y, d) - 1) < 1e-12);
            if (off > 0 && rep % 3 == 0 && d >= 64) /* 3/sqrt(10) = 0.95 expected */
                assert_true(lnk_geom_cos_ones(y, d) > 0.8);
        }
    }
    /* zero vector: S leaves it 0 (no NaN), its angle to 1 is 90 */
    double zero[4] = {0, 0, 0, 0};
    lnk_geom_scale(zero, y, 4);
    for (int i = 0; i < 4; i++)
        assert_true(y[i] == 0);
    assert_true(lnk_geom_angle_ones(zero, 4) == 90);
    /* the angle is folded into [0, 90]: 1 and -1 are both at 0; (1, 0) at 45 */
    double one[3] = {2, 2, 2}, mone[3] = {-1, -1, -1}, e1[2] = {1, 0};
    assert_true(fabs(lnk_geom_angle_ones(one, 3)) < 1e-6);
    assert_true(fabs(lnk_geom_angle_ones(mone, 3)) < 1e-6);
    assert_true(fabs(lnk_geom_angle_ones(e1, 2) - 45) < 1e-12);
    assert_true(fabs(lnk_geom_cos_ones(e1, 2) - 1 / sqrt(2.0)) < 1e-15);
}

static void test_per_head(void **state)
{
    (void)state;
    enum { D = 64, N = 50 };
    static double X[N * D], Y[N * D];
    double cs[16], ra[16], mu[16];
    tg_rs = 5;
    for (int i = 0; i < N * D; i++)
        X[i] = 0.5 + tg_nrand();
    const int hs[] = {2, 4, 8, 16};
    for (int ih = 0; ih < 4; ih++) {
        int h = hs[ih];
        /* full-width LN: the whole row centred and on the sphere, the slices not */
        assert_int_equal(lnk_geom_apply(LNK_GEOM_LAYERNORM, X, Y, N, D, 1, 0.0), LNK_OK);
        double worst_mean = 0, worst_ratio = 0;
        for (int i = 0; i < N; i++) {
            assert_true(fabs(lnk_geom_cos_ones(Y + i * D, D)) < 1e-12);
            assert_int_equal(lnk_geom_head_stats(Y + i * D, D, h, cs, ra, mu), LNK_OK);
            for (int j = 0; j < h; j++) {
                worst_mean = fmax(worst_mean, fabs(mu[j]));
                worst_ratio = fmax(worst_ratio, fabs(ra[j] - 1));
                assert_true(fabs(cs[j] - mu[j] / ra[j]) < 1e-12);
            }
        }
        /* random slices have |mean| ~ 1/sqrt(dk) and norm ratio spread ~ sqrt(2/dk) */
        if (!(worst_mean > 0.1 && worst_ratio > 0.1))
            fail_msg("h = %d: full-width LN slices look centred and scaled (max |mean| %.3g, "
                     "max |ratio - 1| %.3g)", h, worst_mean, worst_ratio);
        /* per-head LN: every slice centred, norm sqrt(d_k) */
        assert_int_equal(lnk_geom_apply(LNK_GEOM_LAYERNORM, X, Y, N, D, h, 0.0), LNK_OK);
        for (int i = 0; i < N; i++) {
            assert_int_equal(lnk_geom_head_stats(Y + i * D, D, h, cs, ra, NULL), LNK_OK);
            for (int j = 0; j < h; j++)
                assert_true(fabs(cs[j]) < 1e-12 && fabs(ra[j] - 1) < 1e-12);
        }
        /* per-head RMS: scaled per slice, not centred (the inputs have mean 0.5) */
        assert_int_equal(lnk_geom_apply(LNK_GEOM_RMSNORM, X, Y, N, D, h, 0.0), LNK_OK);
        double mean_cos = 0;
        for (int i = 0; i < N; i++) {
            assert_int_equal(lnk_geom_head_stats(Y + i * D, D, h, cs, ra, NULL), LNK_OK);
            for (int j = 0; j < h; j++) {
                assert_true(fabs(ra[j] - 1) < 1e-12);
                mean_cos += cs[j] / (N * h);
            }
        }
        assert_true(mean_cos > 0.2); /* 0.5/sqrt(1.25) = 0.45 expected */
    }
    /* in place equals out of place; bad arguments */
    memcpy(Y, X, sizeof X);
    assert_int_equal(lnk_geom_apply(LNK_GEOM_CENTER, Y, Y, N, D, 4, 0.0), LNK_OK);
    static double Z[N * D];
    assert_int_equal(lnk_geom_apply(LNK_GEOM_CENTER, X, Z, N, D, 4, 0.0), LNK_OK);
    assert_memory_equal(Y, Z, sizeof Z);
    assert_int_equal(lnk_geom_apply(LNK_GEOM_LAYERNORM, X, Y, N, D, 5, 0.0), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "h = 5"));
    assert_int_equal(lnk_geom_apply(LNK_GEOM_LAYERNORM, X, Y, N, D, 1, -1.0), LNK_EINVAL);
    lnk_geom_norm k;
    assert_int_equal(lnk_geom_norm_parse("rmsnorm", &k), LNK_OK);
    assert_int_equal(k, LNK_GEOM_RMSNORM);
    assert_int_equal(lnk_geom_norm_parse("LayerNorm", &k), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "'LayerNorm'"));
}

/* ------------------------------------------------------ attention statistics */

static void test_map_stats(void **state)
{
    (void)state;
    double A[7 * 9];
    for (int n = 1; n <= 9; n++) {
        for (int i = 0; i < n; i++)
            A[i] = 1.0 / n;
        assert_true(fabs(lnk_geom_entropy(A, n) - log((double)n)) < 1e-14);
    }
    /* every row one-hot at column 4: column mass 1, entropy 0 */
    for (int t = 0; t < 7; t++)
        for (int j = 0; j < 9; j++)
            A[t * 9 + j] = j == 4;
    lnk_geom_map_stat st;
    assert_int_equal(lnk_geom_map_stats(A, 7, 9, NULL, &st), LNK_OK);
    assert_true(st.col_mass == 1 && st.col_argmax == 4 && st.ent_mean == 0 && st.n_rows == 7);
    /* uniform map: column mass 1/Tk, entropy ln Tk; pad rows skipped */
    uint8_t pad[7] = {0, 0, 0, 0, 0, 1, 1};
    for (int t = 0; t < 7; t++)
        for (int j = 0; j < 9; j++)
            A[t * 9 + j] = t < 5 ? 1.0 / 9 : (j == 0);
    assert_int_equal(lnk_geom_map_stats(A, 7, 9, pad, &st), LNK_OK);
    assert_int_equal(st.n_rows, 5);
    assert_true(fabs(st.col_mass - 1.0 / 9) < 1e-15);
    assert_true(fabs(st.ent_mean - log(9.0)) < 1e-14 && fabs(st.ent_min - log(9.0)) < 1e-14);
    uint8_t allpad[2] = {1, 1};
    assert_int_equal(lnk_geom_map_stats(A, 2, 9, allpad, &st), LNK_EINVAL);
}

/* A batch of B lm rows of stored length T (len[b] tokens then <pad>). */
static void make_batch(lnk_batch *b, int B, int T, const int *len, int V, uint64_t seed)
{
    memset(b, 0, sizeof *b);
    b->B = B;
    b->T = T;
    b->tgt = calloc((size_t)B * T, sizeof(int64_t));
    b->owns = 1;
    tg_rs = seed;
    for (int i = 0; i < B; i++)
        for (int t = 0; t < len[i]; t++)
            b->tgt[i * T + t] = t == 0 ? LNK_BOS : 4 + (int64_t)(tg_urand() * (V - 4));
}

static double *tensor_of(lnk_model *m, double *th, const char *name)
{
    const lnk_layout *lay = lnk_model_layout(m);
    int i = lnk_layout_find(lay, name);
    if (i < 0)
        fail_msg("no tensor %s", name);
    return th + lay->t[i].offset;
}

/* keys = X Wk, queries = X Wq (bias 0 at init) for the R rows of X (width d),
 * against K and Q; the keys recomputed into Kx. */
static void check_projections(const double *X, const double *wk, const double *wq,
                              const double *K, const double *Q, double *Kx, int R, int d)
{
    for (int r = 0; r < R; r++)
        for (int o = 0; o < d; o++) {
            double sk = 0, sq = 0;
            for (int i = 0; i < d; i++) {
                sk += X[r * d + i] * wk[i * d + o];
                sq += X[r * d + i] * wq[i * d + o];
            }
            assert_true(fabs(sk - K[r * d + o]) < 1e-12);
            assert_true(fabs(sq - Q[r * d + o]) < 1e-12);
            Kx[r * d + o] = sk;
        }
}

/* Head j's statistics a against maps recomputed from the qk-normed queries QQ
 * and keys KQ (B rows of Tq positions, the first len[b] real; width d, dk a
 * head), causal and padding masks applied here. */
static void check_head_stats(const lnk_geom_attn_stat *a, const double *QQ, const double *KQ,
                             const int *len, int B, int Tq, int d, int dk, int j,
                             const char *what, int iu)
{
    double es = 0, emin = INFINITY, cm = 0, cmax = 0, lmax = -INFINITY;
    int rows = 0;
    for (int b = 0; b < B; b++) {
        double col[Tq + 1];
        memset(col, 0, sizeof col);
        int nr = 0, lb = len[b] < Tq ? len[b] : Tq;
        for (int t = 0; t < lb; t++) {
            double z[Tq + 1], mx = -INFINITY, s = 0;
            for (int u = 0; u <= t; u++) {
                z[u] = 0;
                for (int e = 0; e < dk; e++)
                    z[u] += QQ[(b * Tq + t) * d + j * dk + e] *
                            KQ[(b * Tq + u) * d + j * dk + e];
                z[u] /= sqrt((double)dk);
                mx = fmax(mx, z[u]);
            }
            lmax = fmax(lmax, mx);
            for (int u = 0; u <= t; u++)
                s += exp(z[u] - mx);
            double ent = 0;
            for (int u = 0; u <= t; u++) {
                double p = exp(z[u] - mx) / s;
                ent -= p * log(p);
                col[u] += p;
            }
            es += ent;
            emin = fmin(emin, ent);
            nr++;
        }
        rows += nr;
        double mc = 0;
        for (int u = 0; u < Tq; u++)
            mc = fmax(mc, col[u] / nr);
        cm += mc / B;
        cmax = fmax(cmax, mc);
    }
    if (!(fabs(a->ent_mean - es / rows) < 1e-12))
        fail_msg("%s unit %d head %d: entropy %.17g, recomputed %.17g", what, iu, j,
                 a->ent_mean, es / rows);
    assert_true(fabs(a->ent_min - emin) < 1e-12);
    assert_true(fabs(a->col_mass - cm) < 1e-12);
    assert_true(fabs(a->col_mass_max - cmax) < 1e-12);
    assert_true(fabs(a->logit_max - lmax) < 1e-12);
}

/* The stages of lnk_geom_unit_rows chain as the model computes them, and the model's
 * attention statistics equal those of maps recomputed from its (qk-normed) queries and
 * keys, causal and padding masks applied here. */
static void test_model_rows_and_attn(void **state)
{
    (void)state;
    const char *pos[] = {"norm_pos=post", "norm_pos=pre"};
    const char *qk[] = {"qk_norm=none", "qk_norm=layernorm", "qk_norm=rmsnorm"};
    const char *nm[] = {"norm=layernorm", "norm=rmsnorm"};
    enum { B = 3, T = 8, d = 8, h = 2, dk = 4 };
    const int len[B] = {8, 5, 3};
    for (int ip = 0; ip < 2; ip++)
        for (int iq = 0; iq < 3; iq++)
            for (int in = 0; in < 2; in++) {
                lnk_config c = tu_config("task=lm", "d=8", "h=2", "L=2", "V=23", "seed=3",
                                         pos[ip], qk[iq], nm[in], NULL);
                lnk_model *m = lnk_model_alloc(&c);
                assert_non_null(m);
                double *th = malloc(sizeof(double) * lnk_model_n_params(m));
                assert_int_equal(lnk_model_init_params(m, th), LNK_OK);
                lnk_batch bt;
                make_batch(&bt, B, T, len, 23, 10 + ip);
                lnk_workspace *ws = lnk_workspace_alloc(m, B, 0, T, 0);
                assert_non_null(ws);
                double loss;
                assert_int_equal(lnk_model_eval(ws, th, &bt, &loss, NULL, NULL), LNK_OK);
                lnk_geom_unit us[8];
                int nu = lnk_geom_attn_units(ws, us, 8);
                assert_int_equal(nu, 2);
                lnk_geom_attn_stat *as;
                int nas;
                assert_int_equal(lnk_geom_model_attn(ws, &as, &nas), LNK_OK);
                assert_int_equal(nas, nu * h);
                int Tq = T - 1, R = B * Tq;
                static double Y[B * T * d], Kx[B * T * d], Kn[B * T * d];
                for (int iu = 0; iu < nu; iu++) {
                    assert_int_equal(us[iu].layer, iu);
                    assert_int_equal(us[iu].causal, 1);
                    const double *xin, *xout, *K, *KQ, *Q, *QQ;
                    int bb, tt;
                    const uint8_t *pad;
                    assert_int_equal(lnk_geom_unit_rows(ws, &us[iu], LNK_GEOM_NORM_IN, &xin, &bb,
                                                        &tt, &pad), LNK_OK);
                    assert_int_equal(bb, B);
                    assert_int_equal(tt, Tq);
                    for (int b = 0; b < B; b++)
                        for (int t = 0; t < Tq; t++)
                            assert_int_equal(pad[b * Tq + t], t >= len[b]);
                    assert_int_equal(lnk_geom_unit_rows(ws, &us[iu], LNK_GEOM_NORM_OUT, &xout,
                                                        &bb, &tt, NULL), LNK_OK);
                    assert_int_equal(lnk_geom_unit_rows(ws, &us[iu], LNK_GEOM_KEYS, &K, &bb, &tt,
                                                        NULL), LNK_OK);
                    assert_int_equal(lnk_geom_unit_rows(ws, &us[iu], LNK_GEOM_KEYS_QK, &KQ, &bb,
                                                        &tt, NULL), LNK_OK);
                    assert_int_equal(lnk_geom_unit_rows(ws, &us[iu], LNK_GEOM_QUERIES, &Q, &bb,
                                                        &tt, NULL), LNK_OK);
                    assert_int_equal(lnk_geom_unit_rows(ws, &us[iu], LNK_GEOM_QUERIES_QK, &QQ,
                                                        &bb, &tt, NULL), LNK_OK);
                    /* norm in -> norm out (gain 1, bias 0 at init); the first Post-LN unit
                     * reads the embedding directly */
                    int first_post = ip == 0 && iu == 0;
                    assert_int_equal(lnk_geom_apply(in ? LNK_GEOM_RMSNORM : LNK_GEOM_LAYERNORM,
                                                    xin, Y, R, d, 1, c.eps), LNK_OK);
                    for (int i = 0; i < R * d; i++)
                        assert_true(fabs((first_post ? xin[i] : Y[i]) - xout[i]) <=
                                    1e-12 * (1 + fabs(xout[i])));
                    /* keys = X Wk + bk, queries = X Wq + bq */
                    char name[64];
                    snprintf(name, sizeof name, "dec.%d.attn.wk", iu);
                    const double *wk = tensor_of(m, th, name);
                    snprintf(name, sizeof name, "dec.%d.attn.wq", iu);
                    const double *wq = tensor_of(m, th, name);
                    check_projections(xout, wk, wq, K, Q, Kx, R, d);
                    /* qk-normed keys: per-head norm of the keys */
                    lnk_geom_norm qn = iq == 0 ? LNK_GEOM_NONE
                                               : iq == 1 ? LNK_GEOM_LAYERNORM : LNK_GEOM_RMSNORM;
                    assert_int_equal(lnk_geom_apply(qn, Kx, Kn, R, d, h, c.eps), LNK_OK);
                    for (int i = 0; i < R * d; i++)
                        assert_true(fabs(Kn[i] - KQ[i]) <= 1e-11 * (1 + fabs(KQ[i])));
                    /* maps recomputed from QQ, KQ */
                    char what[96];
                    snprintf(what, sizeof what, "%s %s %s", pos[ip], qk[iq], nm[in]);
                    for (int j = 0; j < h; j++) {
                        const lnk_geom_attn_stat *a = &as[iu * h + j];
                        assert_int_equal(a->head, j);
                        assert_int_equal(a->u.unit, us[iu].unit);
                        check_head_stats(a, QQ, KQ, len, B, Tq, d, dk, j, what, iu);
                    }
                }
                free(as);
                lnk_workspace_free(ws);
                lnk_batch_free(&bt);
                free(th);
                lnk_model_free(m);
                lnk_config_clear(&c);
            }
}

/* Theorem init (Wq = Wk = 0): uniform causal maps, so the statistics are known in
 * closed form: row t has entropy ln(t + 1), the logits are 0, and without padding
 * column 0 has mass (1/T) sum_t 1/(t + 1). */
static void test_model_attn_uniform(void **state)
{
    (void)state;
    enum { B = 2, T = 9, h = 2 };
    const int len[B] = {9, 9};
    lnk_config c = tu_config("task=lm", "d=8", "h=2", "L=3", "V=30", "init=theorem",
                             "norm_pos=pre", NULL);
    lnk_model *m = lnk_model_alloc(&c);
    assert_non_null(m);
    double *th = malloc(sizeof(double) * lnk_model_n_params(m));
    assert_int_equal(lnk_model_init_params(m, th), LNK_OK);
    lnk_batch bt;
    make_batch(&bt, B, T, len, 30, 1);
    lnk_workspace *ws = lnk_workspace_alloc(m, B, 0, T, 0);
    double loss;
    assert_int_equal(lnk_model_eval(ws, th, &bt, &loss, NULL, NULL), LNK_OK);
    lnk_geom_attn_stat *as;
    int nas;
    assert_int_equal(lnk_geom_model_attn(ws, &as, &nas), LNK_OK);
    assert_int_equal(nas, 3 * h);
    int Tq = T - 1;
    double ent = 0, mass = 0;
    for (int t = 0; t < Tq; t++) {
        ent += log(t + 1.0) / Tq;
        mass += 1.0 / (t + 1) / Tq;
    }
    for (int i = 0; i < nas; i++) {
        assert_true(fabs(as[i].ent_mean - ent) < 1e-12);
        assert_true(as[i].ent_min == 0);
        assert_true(as[i].logit_max == 0);
        assert_true(fabs(as[i].col_mass - mass) < 1e-12);
        assert_int_equal(as[i].u.layer, i / h);
    }
    free(as);
    lnk_workspace_free(ws);
    lnk_batch_free(&bt);
    free(th);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* ------------------------------------------------------------- lnkit select */

/* Run `lnkit select ARGS` with stdout to a file; returns the exit status, *out gets
 * stdout and *err stderr. */
static int run_select(char **out, char **err, const char *args)
{
    char *dummy;
    int st = tu_run(&dummy, "'%s' select %s >'%s' 2>'%s'", tu_lnkit(), args, tu_path("sel.out"),
                    tu_path("sel.err"));
    free(dummy);
    *out = tu_read_file(tu_path("sel.out"), NULL);
    *err = tu_read_file(tu_path("sel.err"), NULL);
    assert_non_null(*out);
    assert_non_null(*err);
    return st;
}

/* The CSV index,selectable of `lnkit select` equals the library's answer on the same
 * keys, with and without a header row and a norm. */
static void test_cli_select(void **state)
{
    (void)state;
    enum { N = 30, D = 5 };
    double K[N * D], Y[N * D];
    int sel[N];
    tg_rs = 31;
    for (int i = 0; i < N * D; i++)
        K[i] = tg_nrand() + (i % D == 0 ? 2.0 : 0.0);
    memcpy(K + 7 * D, K + 3 * D, sizeof(double) * D); /* a duplicate */
    const lnk_geom_norm norms[] = {LNK_GEOM_NONE, LNK_GEOM_CENTER, LNK_GEOM_LAYERNORM,
                                   LNK_GEOM_RMSNORM, LNK_GEOM_SCALE};
    for (int header = 0; header < 2; header++) {
        FILE *f = fopen(tu_path("keys.csv"), "w");
        assert_non_null(f);
        if (header) /* with a UTF-8 byte-order mark and CRLF line ends, as spreadsheets write */
            fprintf(f, "\xEF\xBB\xBF" "a,b,c,d,e\r\n");
        for (int i = 0; i < N; i++)
            for (int c = 0; c < D; c++)
                fprintf(f, "%.17g%s", K[i * D + c], c + 1 < D ? ", " : (header ? "\r\n" : "\n"));
        fclose(f);
        for (int k = 0; k < 5; k++) {
            char args[600], *out, *err;
            snprintf(args, sizeof args, "--keys '%s' --key-norm %s", tu_path("keys.csv"),
                     lnk_geom_norm_name(norms[k]));
            int st = run_select(&out, &err, args);
            if (st != 0)
                fail_msg("lnkit select %s: exit %d: %s", args, st, err);
            assert_string_equal(err, "");
            assert_int_equal(lnk_geom_apply(norms[k], K, Y, N, D, 1, 1e-5), LNK_OK);
            tg_sel_ok(Y, N, D, 0, sel);
            char want[4096], *w = want;
            w += sprintf(w, "index,selectable\n");
            for (int i = 0; i < N; i++)
                w += sprintf(w, "%d,%d\n", i, sel[i]);
            assert_string_equal(out, want);
            if (norms[k] == LNK_GEOM_NONE) /* the duplicates */
                assert_true(sel[3] == 0 && sel[7] == 0);
            free(out);
            free(err);
        }
    }
}

/* Bad input: exit 2, one line "lnkit select: ..." naming the problem, nothing on stdout. */
static void test_cli_select_errors(void **state)
{
    (void)state;
    struct {
        const char *content, *args, *expect;
    } cases[] = {
        {NULL, "--keys '%s/absent.csv'", "absent.csv"},
        {"1,2,3\n4,5\n", "--keys '%s/k.csv'", "k.csv:2: 2 fields, expected 3 as in line 1"},
        {"x,y\n1,2\n3,oops\n", "--keys '%s/k.csv'",
         "k.csv:3: field 'y' (column 2): value 'oops': expected a finite number"},
        {"1,2\n3,nan\n", "--keys '%s/k.csv'", "k.csv:2: column 2: value 'nan': expected a finite"},
        {"x,y\n", "--keys '%s/k.csv'",
         "k.csv: 0 data rows (only a header row), expected at least 1"},
        {"", "--keys '%s/k.csv'", "k.csv: empty file"},
        {"1,2\n\n3,4\n", "--keys '%s/k.csv'", "k.csv:2: empty line"},
        {"x,x\n1,2\n", "--keys '%s/k.csv'", "k.csv:1: field 'x' (columns 1 and 2)"},
        {"1,\"2\n", "--keys '%s/k.csv'", "k.csv:1: column 2: unterminated quoted field"},
        {"1,2\n", "--keys '%s/k.csv' --key-norm layer", "'layer'"},
        {"1,2\n", "--keys '%s/k.csv' --key-eps -1", "--key-eps"},
        {"1,2\n", "", "--keys"},
        {"1,2\n", "--keys '%s/k.csv' --bogus", "--bogus"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (cases[k].content)
            tu_write_file(tu_path("k.csv"), cases[k].content, strlen(cases[k].content));
        char args[700], *out, *err;
        snprintf(args, sizeof args, cases[k].args, tu_tmpdir());
        int st = run_select(&out, &err, args);
        if (st != 2 || strncmp(err, "lnkit select: ", 14) || !strstr(err, cases[k].expect) ||
            strchr(err, '\n') != err + strlen(err) - 1 || out[0])
            fail_msg("case %zu (%s): exit %d, stderr '%s', stdout '%s'; expected exit 2 and one "
                     "line naming '%s'", k, args, st, err, out, cases[k].expect);
        free(out);
        free(err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm_sphere),
        cmocka_unit_test(test_per_head),
        cmocka_unit_test(test_map_stats),
        cmocka_unit_test(test_model_rows_and_attn),
        cmocka_unit_test(test_model_attn_uniform),
        cmocka_unit_test(test_cli_select),
        cmocka_unit_test(test_cli_select_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
