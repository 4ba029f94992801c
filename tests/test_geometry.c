/* LayerNorm geometry (docs/MODEL.md section 7, include/lnkit/geometry.h):
 *   1. norms: LN outputs have cos to 1 below 1e-12 and norm sqrt(d) (eps = 0), LN = S(P);
 *      per-head slices of a full-width LN are not centred, of a per-head LN they are;
 *      statistics (cos, norm ratio, angle folded into [0, 90]);
 *   2. selectability against independent exact methods written here: gift wrapping in
 *      2-D (exact on integer grids, with collinear points and duplicates), Caratheodory
 *      (a key inside some tetrahedron of the others) in 3-D, on a few thousand random
 *      sets; rank-deficient sets (centred keys, planar sets embedded in R^6); circle and
 *      sphere points all selectable; the centroid of others, duplicates, collinear keys;
 *      near-boundary keys on both sides of the tolerance;
 *   3. heat-map cells for small (n, d) against a brute-force direction search on the
 *      same keys; the offset keys (an affine image of the Gaussian ones) give the same
 *      "none" cells;
 *   4. attention statistics: entropy of a uniform row is ln n, a one-hot column has
 *      column mass 1; a model's statistics against maps recomputed from its queries and
 *      keys; uniform maps under the theorem init; the activation stages of
 *      lnk_geom_unit_rows (norm in -> norm out -> keys -> qk-normed keys);
 *   5. `lnkit select`: its CSV equals the library's answer; bad input exits 2 with one line.
 * The gift-wrapping, tetrahedron and direction-search references share no code with
 * the LP. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "lnkit/geometry.h"

/* ------------------------------------------------------------------ helpers */

/* Selectability, failing the test on error; outside near-boundary tests every key must
 * be decided by a pre-test or by an LP whose certified bounds settle it. */
static int allow_ambiguous = 0;
static void sel_ok(const double *K, int n, int d, double tol, int *sel)
{
    lnk_geom_sel_info info;
    if (lnk_geom_selectable(K, n, d, tol, sel, &info) != LNK_OK)
        fail_msg("selectable: %s", lnk_errmsg());
    assert_int_equal(info.n_pretest + info.n_lp, n);
    if (!allow_ambiguous && info.n_ambiguous)
        fail_msg("%d of %d keys (dimension %d) left ambiguous by the LP certificates",
                 info.n_ambiguous, n, d);
}

/* A small deterministic generator for test data (xorshift64*), independent of GSL. */
static uint64_t rs;
static double urand(void)
{
    rs ^= rs >> 12;
    rs ^= rs << 25;
    rs ^= rs >> 27;
    return (double)((rs * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0);
}
static double nrand(void)
{
    double u = urand(), v = urand();
    return sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
}

/* ------------------------------------------------------------------- norms */

static void test_layernorm_sphere(void **state)
{
    (void)state;
    const int ds[] = {2, 3, 7, 64, 512, 1000};
    double x[1000], y[1000], z[1000];
    rs = 11;
    for (size_t k = 0; k < sizeof ds / sizeof ds[0]; k++) {
        int d = ds[k];
        for (int rep = 0; rep < 20; rep++) {
            double off = rep % 2 ? 3.0 : 0.0; /* offset along 1 and anisotropic scales */
            for (int i = 0; i < d; i++)
                x[i] = off + nrand() * exp(rep % 3 ? nrand() : 0.0);
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
    rs = 5;
    for (int i = 0; i < N * D; i++)
        X[i] = 0.5 + nrand();
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

/* ------------------------------------------------------ reference: 2-D hull */

static double orient(const double *a, const double *b, const double *c)
{
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
}
static double dist2(const double *a, const double *b)
{
    return (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]);
}

/* Reference selectability in 2-D: a key is selectable iff it has no duplicate and is a
 * strict vertex of the hull (Jarvis march keeping only the farthest of collinear points). */
static void giftwrap_sel(const double *P, int n, int *sel)
{
    for (int i = 0; i < n; i++)
        sel[i] = 0;
    if (n == 1) {
        sel[0] = 1;
        return;
    }
    int start = 0;
    for (int i = 1; i < n; i++)
        if (P[2 * i] < P[2 * start] || (P[2 * i] == P[2 * start] && P[2 * i + 1] < P[2 * start + 1]))
            start = i;
    int cur = start, guard = 0;
    do {
        sel[cur] = 1;
        int nxt = -1;
        for (int p = 0; p < n; p++) {
            if (P[2 * p] == P[2 * cur] && P[2 * p + 1] == P[2 * cur + 1])
                continue; /* cur itself or its duplicates */
            if (nxt < 0) {
                nxt = p;
                continue;
            }
            double o = orient(P + 2 * cur, P + 2 * nxt, P + 2 * p);
            if (o < 0 || (o == 0 && dist2(P + 2 * cur, P + 2 * p) > dist2(P + 2 * cur, P + 2 * nxt)))
                nxt = p;
        }
        if (nxt < 0)
            break; /* all points equal */
        cur = nxt;
        assert_true(++guard <= n + 1);
    } while (!(P[2 * cur] == P[2 * start] && P[2 * cur + 1] == P[2 * start + 1]));
    /* duplicates of a vertex are unselectable, and so is the vertex */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && P[2 * i] == P[2 * j] && P[2 * i + 1] == P[2 * j + 1])
                sel[i] = 0;
}

static void compare_sets(const int *a, const int *b, int n, const char *what, int set)
{
    for (int i = 0; i < n; i++)
        if (a[i] != b[i])
            fail_msg("%s, set %d, key %d: LP says %d, reference says %d", what, set, i, a[i], b[i]);
}

static void test_select_2d(void **state)
{
    (void)state;
    double P[2 * 40], E[4 * 40];
    int sel[40], ref[40];
    rs = 2024;
    int unsel = 0, total = 0;
    /* Gaussian sets (general position) */
    for (int set = 0; set < 1500; set++) {
        int n = 3 + set % 30;
        for (int i = 0; i < 2 * n; i++)
            P[i] = nrand();
        sel_ok(P, n, 2, 0, sel);
        giftwrap_sel(P, n, ref);
        compare_sets(sel, ref, n, "gaussian 2-D", set);
        for (int i = 0; i < n; i++)
            unsel += !sel[i];
        total += n;
    }
    assert_true(unsel > total / 4); /* the sets do have interior keys */
    /* integer grids: collinear points and duplicates, decided exactly by the reference;
     * the same sets embedded in R^4 by (x, y) -> (x, y, x + y, x - y) (rank 2, exact) */
    int dup_sets = 0;
    for (int set = 0; set < 1500; set++) {
        int n = 2 + set % 25, g = 2 + set % 4;
        for (int i = 0; i < 2 * n; i++)
            P[i] = (double)(int)(urand() * g);
        sel_ok(P, n, 2, 0, sel);
        giftwrap_sel(P, n, ref);
        compare_sets(sel, ref, n, "integer grid 2-D", set);
        for (int i = 0; i < n; i++) {
            E[4 * i] = P[2 * i];
            E[4 * i + 1] = P[2 * i + 1];
            E[4 * i + 2] = P[2 * i] + P[2 * i + 1];
            E[4 * i + 3] = P[2 * i] - P[2 * i + 1];
        }
        sel_ok(E, n, 4, 0, sel);
        compare_sets(sel, ref, n, "integer grid embedded in R^4", set);
        int dups = 0;
        for (int i = 0; i < n; i++)
            dups += !ref[i];
        dup_sets += dups > 0;
    }
    assert_true(dup_sets > 1000);
}

/* -------------------------------------------------- reference: 3-D simplices */

static double det3(const double *a, const double *b, const double *c)
{
    return a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
           a[2] * (b[0] * c[1] - b[1] * c[0]);
}

/* Is p inside the tetrahedron a b c e?  Barycentric coordinates by Cramer's rule. */
static int in_tetra(const double *p, const double *a, const double *b, const double *c,
                    const double *e)
{
    double u[3], v[3], w[3], r[3];
    for (int k = 0; k < 3; k++) {
        u[k] = b[k] - a[k];
        v[k] = c[k] - a[k];
        w[k] = e[k] - a[k];
        r[k] = p[k] - a[k];
    }
    double D = det3(u, v, w);
    if (D == 0)
        return 0;
    double l1 = det3(r, v, w) / D, l2 = det3(u, r, w) / D, l3 = det3(u, v, r) / D;
    return l1 >= 0 && l2 >= 0 && l3 >= 0 && l1 + l2 + l3 <= 1;
}

/* Caratheodory: in general position k_i is in the hull of the others iff it lies in a
 * tetrahedron of four of them. */
static void tetra_sel(const double *K, int n, int *sel)
{
    for (int i = 0; i < n; i++) {
        sel[i] = 1;
        int o[16], m = 0;
        for (int j = 0; j < n; j++)
            if (j != i)
                o[m++] = j;
        for (int a = 0; a < m && sel[i]; a++)
            for (int b = a + 1; b < m && sel[i]; b++)
                for (int c = b + 1; c < m && sel[i]; c++)
                    for (int e = c + 1; e < m && sel[i]; e++)
                        if (in_tetra(K + 3 * i, K + 3 * o[a], K + 3 * o[b], K + 3 * o[c],
                                     K + 3 * o[e]))
                            sel[i] = 0;
    }
}

static void test_select_3d(void **state)
{
    (void)state;
    double K[3 * 12];
    int sel[12], ref[12], unsel = 0;
    rs = 77;
    for (int set = 0; set < 2000; set++) {
        int n = 4 + set % 9;
        for (int i = 0; i < 3 * n; i++)
            K[i] = nrand() * (set % 2 ? 1.0 : (1 + i % 3)) + (set % 3 == 0 ? 5.0 : 0.0);
        lnk_geom_sel_info info;
        assert_int_equal(lnk_geom_selectable(K, n, 3, 0, sel, &info), LNK_OK);
        assert_int_equal(info.n_pretest + info.n_lp, n);
        tetra_sel(K, n, ref);
        compare_sets(sel, ref, n, "gaussian 3-D", set);
        /* the pre-tests agree with the LP alone */
        for (int i = 0; set % 10 == 0 && i < n; i++) {
            double dist;
            assert_int_equal(lnk_geom_hull_dist(K, n, 3, i, 0, &dist, NULL), LNK_OK);
            assert_int_equal(dist > LNK_GEOM_SEL_TOL, sel[i]);
        }
        for (int i = 0; i < n; i++)
            unsel += !sel[i];
    }
    assert_true(unsel > 1000);
}

/* Rank-deficient sets: Gaussian keys centred in R^3 lie in the plane orthogonal to 1;
 * planar sets embedded in R^6 by a random orthonormal map plus an offset. */
static void test_select_rank_deficient(void **state)
{
    (void)state;
    double K[6 * 30], P[2 * 30];
    int sel[30], ref[30];
    const double e1[3] = {1 / sqrt(2.0), -1 / sqrt(2.0), 0},
                 e2[3] = {1 / sqrt(6.0), 1 / sqrt(6.0), -2 / sqrt(6.0)};
    rs = 99;
    int unsel = 0;
    for (int set = 0; set < 600; set++) {
        int n = 3 + set % 28;
        for (int i = 0; i < 3 * n; i++)
            K[i] = nrand() + 2.0;
        assert_int_equal(lnk_geom_apply(LNK_GEOM_CENTER, K, K, n, 3, 1, 0.0), LNK_OK);
        for (int i = 0; i < n; i++) {
            P[2 * i] = P[2 * i + 1] = 0;
            for (int c = 0; c < 3; c++) {
                P[2 * i] += K[3 * i + c] * e1[c];
                P[2 * i + 1] += K[3 * i + c] * e2[c];
            }
        }
        sel_ok(K, n, 3, 0, sel);
        giftwrap_sel(P, n, ref);
        compare_sets(sel, ref, n, "centred keys in R^3", set);
        for (int i = 0; i < n; i++)
            unsel += !sel[i];
    }
    assert_true(unsel > 1000);
    for (int set = 0; set < 600; set++) {
        int n = 3 + set % 28;
        double Q[12], off[6];
        for (int i = 0; i < 12; i++)
            Q[i] = nrand();
        /* Gram-Schmidt on the two columns Q[c*2 + 0], Q[c*2 + 1] */
        double a = 0, b = 0, ab = 0;
        for (int c = 0; c < 6; c++)
            a += Q[2 * c] * Q[2 * c];
        for (int c = 0; c < 6; c++)
            Q[2 * c] /= sqrt(a);
        for (int c = 0; c < 6; c++)
            ab += Q[2 * c] * Q[2 * c + 1];
        for (int c = 0; c < 6; c++)
            Q[2 * c + 1] -= ab * Q[2 * c];
        for (int c = 0; c < 6; c++)
            b += Q[2 * c + 1] * Q[2 * c + 1];
        for (int c = 0; c < 6; c++)
            Q[2 * c + 1] /= sqrt(b);
        for (int c = 0; c < 6; c++)
            off[c] = 3 * nrand();
        for (int i = 0; i < 2 * n; i++)
            P[i] = nrand();
        for (int i = 0; i < n; i++)
            for (int c = 0; c < 6; c++)
                K[6 * i + c] = off[c] + Q[2 * c] * P[2 * i] + Q[2 * c + 1] * P[2 * i + 1];
        sel_ok(K, n, 6, 0, sel);
        giftwrap_sel(P, n, ref);
        compare_sets(sel, ref, n, "planar keys in R^6", set);
    }
}

/* --------------------------------------------------------- special key sets */

static void test_select_special(void **state)
{
    (void)state;
    enum { NMAX = 400 };
    static double K[NMAX * 8];
    int sel[NMAX];
    /* points on a circle (even and jittered) and on a sphere: all selectable */
    for (int n = 3; n <= 200; n += 49) {
        for (int i = 0; i < n; i++) {
            double t = 2 * M_PI * i / n + (n % 2 ? 0.3 / n : 0);
            K[2 * i] = 3 + 2 * cos(t);
            K[2 * i + 1] = -1 + 2 * sin(t);
        }
        sel_ok(K, n, 2, 0, sel);
        for (int i = 0; i < n; i++)
            assert_int_equal(sel[i], 1);
        /* the LP itself agrees (no pre-test) */
        for (int i = 0; i < n; i += 17) {
            double dist;
            assert_int_equal(lnk_geom_hull_dist(K, n, 2, i, 0, &dist, NULL), LNK_OK);
            assert_true(dist > 1e-6);
        }
    }
    int n = 300; /* Fibonacci sphere */
    for (int i = 0; i < n; i++) {
        double z = 1 - (2.0 * i + 1) / n, r = sqrt(1 - z * z), ph = i * M_PI * (3 - sqrt(5.0));
        K[3 * i] = r * cos(ph);
        K[3 * i + 1] = r * sin(ph);
        K[3 * i + 2] = z;
    }
    sel_ok(K, n, 3, 0, sel);
    for (int i = 0; i < n; i++)
        assert_int_equal(sel[i], 1);
    /* LayerNorm outputs of Gaussian keys in d = 8 (a 6-sphere in a hyperplane) */
    rs = 3;
    n = 200;
    for (int i = 0; i < n * 8; i++)
        K[i] = nrand();
    int cnt = -1;
    assert_int_equal(lnk_geom_count_unselectable(K, n, 8, 0, &cnt, NULL), LNK_OK);
    assert_true(cnt > 0); /* raw keys: 200 points in R^8 have interior points */
    assert_int_equal(lnk_geom_apply(LNK_GEOM_LAYERNORM, K, K, n, 8, 1, 0.0), LNK_OK);
    assert_int_equal(lnk_geom_count_unselectable(K, n, 8, 0, &cnt, NULL), LNK_OK);
    assert_int_equal(cnt, 0);
    /* the centroid of the others is unselectable; the others (5 Gaussian points in R^4,
     * in general position: a simplex) are selectable */
    for (int rep = 0; rep < 50; rep++) {
        int d = 4, m = 5;
        for (int i = 0; i < m * d; i++)
            K[i] = nrand();
        for (int c = 0; c < d; c++) {
            K[m * d + c] = 0;
            for (int i = 0; i < m; i++)
                K[m * d + c] += K[i * d + c] / m;
        }
        sel_ok(K, m + 1, d, 0, sel);
        for (int i = 0; i < m; i++)
            assert_int_equal(sel[i], 1);
        assert_int_equal(sel[m], 0);
        double dist;
        assert_int_equal(lnk_geom_hull_dist(K, m + 1, d, m, 0, &dist, NULL), LNK_OK);
        assert_true(dist < 1e-12);
    }
    /* duplicates: every copy unselectable, the rest unaffected */
    double Dp[] = {0, 0, 4, 0, 0, 4, 0, 0, 1, 1};
    sel_ok(Dp, 5, 2, 0, sel);
    assert_int_equal(sel[0], 0);
    assert_int_equal(sel[3], 0);
    assert_int_equal(sel[1], 1);
    assert_int_equal(sel[2], 1);
    assert_int_equal(sel[4], 0); /* inside the triangle */
    /* one key: selectable; all keys equal: none */
    sel_ok(Dp, 1, 2, 0, sel);
    assert_int_equal(sel[0], 1);
    double Eq[] = {1, 2, 3, 1, 2, 3, 1, 2, 3};
    sel_ok(Eq, 3, 3, 0, sel);
    for (int i = 0; i < 3; i++)
        assert_int_equal(sel[i], 0);
    /* collinear keys in R^5: only the two ends are selectable */
    double v[5], w[5], ts[12];
    for (int c = 0; c < 5; c++) {
        v[c] = nrand();
        w[c] = nrand();
    }
    for (int i = 0; i < 12; i++)
        ts[i] = nrand();
    int lo = 0, hi = 0;
    for (int i = 0; i < 12; i++) {
        lo = ts[i] < ts[lo] ? i : lo;
        hi = ts[i] > ts[hi] ? i : hi;
        for (int c = 0; c < 5; c++)
            K[5 * i + c] = w[c] + ts[i] * v[c];
    }
    sel_ok(K, 12, 5, 0, sel);
    for (int i = 0; i < 12; i++)
        assert_int_equal(sel[i], i == lo || i == hi);
    /* errors */
    assert_int_equal(lnk_geom_selectable(K, 0, 5, 0, sel, NULL), LNK_EINVAL);
    K[7] = NAN;
    assert_int_equal(lnk_geom_selectable(K, 12, 5, 0, sel, NULL), LNK_ENONFINITE);
    assert_non_null(strstr(lnk_errmsg(), "key 1, coordinate 2"));
}

/* Near the boundary: key m = (1, delta) above the edge (0,0)-(2,0) of the triangle with
 * (1,-1).  Its l1 distance to the hull is delta (delta > 0), and the scale is
 * s = max(max_j ||k_j - m||_1, max_j ||k_j||_1) = max(1 + delta, 2) = 2, so the relative
 * distance is delta / 2.  Also embedded in R^7 by a random rotation and a shift (the
 * clear cases must not depend on the coordinates). */
static void test_select_near_boundary(void **state)
{
    (void)state;
    const double deltas[] = {1e-3, 1e-6, 1e-8, 3e-10, 4e-12, 1.5e-12, 1e-12, 0, -1e-12, -1e-6};
    double K[8], R[49], E[4 * 7];
    int sel[4];
    rs = 8;
    /* a random orthogonal 7x7 (Gram-Schmidt) */
    for (int i = 0; i < 49; i++)
        R[i] = nrand();
    for (int a = 0; a < 7; a++) {
        for (int b = 0; b < a; b++) {
            double p = 0;
            for (int c = 0; c < 7; c++)
                p += R[7 * a + c] * R[7 * b + c];
            for (int c = 0; c < 7; c++)
                R[7 * a + c] -= p * R[7 * b + c];
        }
        double q = 0;
        for (int c = 0; c < 7; c++)
            q += R[7 * a + c] * R[7 * a + c];
        for (int c = 0; c < 7; c++)
            R[7 * a + c] /= sqrt(q);
    }
    allow_ambiguous = 1;
    for (size_t k = 0; k < sizeof deltas / sizeof deltas[0]; k++) {
        double dl = deltas[k];
        double base[8] = {0, 0, 2, 0, 1, -1, 1, dl};
        memcpy(K, base, sizeof base);
        int want = dl / 2 > LNK_GEOM_SEL_TOL;
        sel_ok(K, 4, 2, 0, sel);
        if (sel[3] != want)
            fail_msg("delta = %g: selectable = %d, expected %d", dl, sel[3], want);
        double dist;
        assert_int_equal(lnk_geom_hull_dist(K, 4, 2, 3, 0, &dist, NULL), LNK_OK);
        /* the value is GLPK's (tolerances 1e-12) inside the certified interval */
        if (dl > 0 && !(fabs(dist - dl / 2) <= 1e-6 * dl + 2e-12))
            fail_msg("delta = %g: relative distance %.17g, expected %.17g", dl, dist, dl / 2);
        if (dl <= 0)
            assert_true(dist <= 1e-15);
        /* a larger tolerance turns a selectable key into an unselectable one */
        if (dl == 1e-6) {
            sel_ok(K, 4, 2, 1e-5, sel);
            assert_int_equal(sel[3], 0);
        }
        if (dl == 1e-12) {
            sel_ok(K, 4, 2, 1e-13, sel);
            assert_int_equal(sel[3], 1);
        }
        /* rotated into R^7 (shifted by 5 in every coordinate): the l1 distance changes by
         * at most sqrt(7), so the clear cases keep their answer */
        if (fabs(dl) == 1e-6 || dl == 1e-3 || fabs(dl) == 1e-12 || dl == 0) {
            for (int i = 0; i < 4; i++)
                for (int c = 0; c < 7; c++)
                    E[7 * i + c] = 5 + R[7 * c] * K[2 * i] + R[7 * c + 1] * K[2 * i + 1];
            sel_ok(E, 4, 7, 0, sel);
            if (sel[3] != want)
                fail_msg("delta = %g in R^7: selectable = %d, expected %d", dl, sel[3], want);
        }
    }
    allow_ambiguous = 0;
}

/* ---------------------------------------------- heat-map cells vs a direction search */


/* Determinant of an m x m matrix (m <= 4), Gaussian elimination with partial pivoting. */
static double detm(double *M, int m)
{
    double det = 1;
    for (int c = 0; c < m; c++) {
        int p = c;
        for (int r = c + 1; r < m; r++)
            if (fabs(M[r * m + c]) > fabs(M[p * m + c]))
                p = r;
        if (M[p * m + c] == 0)
            return 0;
        if (p != c) {
            for (int k = 0; k < m; k++) {
                double t = M[c * m + k];
                M[c * m + k] = M[p * m + k];
                M[p * m + k] = t;
            }
            det = -det;
        }
        det *= M[c * m + c];
        for (int r = c + 1; r < m; r++) {
            double f = M[r * m + c] / M[c * m + c];
            for (int k = c; k < m; k++)
                M[r * m + k] -= f * M[c * m + k];
        }
    }
    return det;
}

/* Margin of q for key i: min_j q.(k_i - k_j). */
static double qmargin(const double *K, int n, int d, int i, const double *q)
{
    double m = INFINITY;
    for (int j = 0; j < n; j++) {
        if (j == i)
            continue;
        double a = 0;
        for (int c = 0; c < d; c++)
            a += q[c] * (K[i * d + c] - K[j * d + c]);
        m = fmin(m, a);
    }
    return m;
}

/* Is key i the strict argmax of q.k for some direction q?  A brute-force search over
 * candidate directions: random ones, and the sum of the outward normals of every
 * hull facet through k_i, found by trying every hyperplane through k_i and d - 1 other
 * keys (keys in general position in R^d, d <= 4).  A direction found is a witness. */
static int direction_search(const double *K, int n, int d, int i)
{
    double q[8];
    for (int t = 0; t < 500; t++) {
        for (int c = 0; c < d; c++)
            q[c] = nrand();
        if (qmargin(K, n, d, i, q) > 0)
            return 1;
    }
    double sum[8] = {0};
    int S[4], m = d - 1, nf = 0;
    /* all (d-1)-subsets of the other keys, in lexicographic order */
    for (int k = 0; k < m; k++)
        S[k] = k;
    for (;;) {
        int ok = 1;
        for (int k = 0; k < m; k++)
            ok &= S[k] < n - 1;
        if (!ok)
            break;
        int idx[4];
        for (int k = 0; k < m; k++)
            idx[k] = S[k] >= i ? S[k] + 1 : S[k];
        /* normal: cofactors of the rows k_idx - k_i (generalised cross product) */
        double nrm[8], M[16];
        for (int c = 0; c < d; c++) {
            for (int r = 0; r < m; r++)
                for (int cc = 0, col = 0; cc < d; cc++)
                    if (cc != c)
                        M[r * m + col++] = K[idx[r] * d + cc] - K[i * d + cc];
            nrm[c] = (c % 2 ? -1 : 1) * detm(M, m);
        }
        int pos = 0, neg = 0;
        for (int j = 0; j < n; j++) {
            int in = j == i;
            for (int k = 0; k < m; k++)
                in |= j == idx[k];
            if (in)
                continue;
            double a = 0;
            for (int c = 0; c < d; c++)
                a += nrm[c] * (K[j * d + c] - K[i * d + c]);
            pos += a > 0;
            neg += a < 0;
        }
        if ((pos == 0 || neg == 0) && pos + neg > 0) { /* a facet: the rest on one side */
            double len = 0, sg = pos == 0 ? 1 : -1;
            for (int c = 0; c < d; c++)
                len += nrm[c] * nrm[c];
            for (int c = 0; c < d; c++)
                sum[c] += sg * nrm[c] / sqrt(len);
            nf++;
        }
        /* next subset */
        int k = m - 1;
        while (k >= 0 && S[k] == n - 1 - m + k)
            k--;
        if (k < 0)
            break;
        S[k]++;
        for (int r = k + 1; r < m; r++)
            S[r] = S[r - 1] + 1;
    }
    return nf > 0 && qmargin(K, n, d, i, sum) > 0;
}

/* Coordinates of keys centred into the hyperplane orthogonal to 1, in an orthonormal
 * basis of it (d - 1 coordinates): the direction search needs full-rank sets. */
static void hyperplane_coords(const double *K, int n, int d, double *out)
{
    double Bs[8 * 8];
    int nb = 0;
    for (int e = 0; e < d && nb < d - 1; e++) {
        double v[8];
        for (int c = 0; c < d; c++)
            v[c] = (c == e) - 1.0 / d;
        for (int b = 0; b < nb; b++) {
            double p = 0;
            for (int c = 0; c < d; c++)
                p += v[c] * Bs[b * d + c];
            for (int c = 0; c < d; c++)
                v[c] -= p * Bs[b * d + c];
        }
        double l = 0;
        for (int c = 0; c < d; c++)
            l += v[c] * v[c];
        for (int c = 0; c < d; c++)
            Bs[nb * d + c] = v[c] / sqrt(l);
        nb++;
    }
    for (int i = 0; i < n; i++)
        for (int b = 0; b < d - 1; b++) {
            double p = 0;
            for (int c = 0; c < d; c++)
                p += K[i * d + c] * Bs[b * d + c];
            out[i * (d - 1) + b] = p;
        }
}

static void test_heat_cells(void **state)
{
    (void)state;
    const lnk_geom_norm norms[] = {LNK_GEOM_NONE, LNK_GEOM_CENTER, LNK_GEOM_LAYERNORM};
    double K[20 * 4], Kp[20 * 4];
    int sel[20];
    rs = 4;
    int cells = 0, nonzero = 0;
    for (int in = 0; in < 3; in++)
        for (int n = 5; n <= 20; n += 5)
            for (int d = 3; d <= 4; d++) {
                int runs = 100;
                lnk_geom_cell cell;
                assert_int_equal(lnk_geom_heat_cell(LNK_GEOM_KEYS_GAUSS, norms[in], n, d, runs, 7,
                                                    0, &cell),
                                 LNK_OK);
                int any = 0, uns = 0;
                for (int r = 0; r < runs; r++) {
                    assert_int_equal(lnk_geom_random_keys(LNK_GEOM_KEYS_GAUSS, n, d,
                                                          lnk_geom_run_seed(7, n, d, r), K),
                                     LNK_OK);
                    assert_int_equal(lnk_geom_apply(norms[in], K, K, n, d, 1, 0.0), LNK_OK);
                    sel_ok(K, n, d, 0, sel);
                    int u = 0, dd = d;
                    if (norms[in] != LNK_GEOM_NONE) { /* keys in the hyperplane: R^(d-1) */
                        hyperplane_coords(K, n, d, Kp);
                        dd = d - 1;
                    }
                    for (int i = 0; i < n; i++) {
                        int ds = direction_search(norms[in] == LNK_GEOM_NONE ? K : Kp, n, dd, i);
                        if (ds != sel[i])
                            fail_msg("%s n = %d d = %d run %d key %d: LP %d, direction search %d",
                                     lnk_geom_norm_name(norms[in]), n, d, r, i, sel[i], ds);
                        u += !ds;
                    }
                    any += u > 0;
                    uns += u;
                }
                assert_true(cell.n_ambiguous == 0);
                assert_true(fabs(cell.frac_any - (double)any / runs) < 1e-12);
                assert_true(fabs(cell.mean_frac - (double)uns / ((double)runs * n)) < 1e-12);
                if (norms[in] == LNK_GEOM_LAYERNORM)
                    assert_true(cell.frac_any == 0);
                nonzero += cell.frac_any > 0;
                cells++;
                /* the offset keys are an affine image of the same z: same "none" cell */
                if (norms[in] == LNK_GEOM_NONE) {
                    lnk_geom_cell off;
                    assert_int_equal(lnk_geom_heat_cell(LNK_GEOM_KEYS_OFFSET, LNK_GEOM_NONE, n,
                                                        d, runs, 7, 0, &off),
                                     LNK_OK);
                    assert_true(off.frac_any == cell.frac_any && off.mean_frac == cell.mean_frac);
                }
            }
    assert_true(nonzero >= 8); /* none and center cells do have unselectable keys */
    /* regression: with its tolerances at 1e-12, GLPK's primal simplex cycled on one LP of
     * this set (centred offset keys, n = 52, d = 4, run 24 of the study's grid); the
     * iteration limit moves on to the dual simplex.  The answer matches the search. */
    double K52[52 * 4], P52[52 * 3];
    int s52[52];
    assert_int_equal(lnk_geom_random_keys(LNK_GEOM_KEYS_OFFSET, 52, 4, lnk_geom_run_seed(0, 52, 4, 24),
                                          K52), LNK_OK);
    assert_int_equal(lnk_geom_apply(LNK_GEOM_CENTER, K52, K52, 52, 4, 1, 0.0), LNK_OK);
    sel_ok(K52, 52, 4, 0, s52);
    hyperplane_coords(K52, 52, 4, P52);
    for (int i = 0; i < 52; i++)
        assert_int_equal(direction_search(P52, 52, 3, i), s52[i]);
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
    rs = seed;
    for (int i = 0; i < B; i++)
        for (int t = 0; t < len[i]; t++)
            b->tgt[i * T + t] = t == 0 ? LNK_BOS : 4 + (int64_t)(urand() * (V - 4));
}

static double *tensor_of(lnk_model *m, double *th, const char *name)
{
    const lnk_layout *lay = lnk_model_layout(m);
    int i = lnk_layout_find(lay, name);
    if (i < 0)
        fail_msg("no tensor %s", name);
    return th + lay->t[i].offset;
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
                    for (int r = 0; r < R; r++)
                        for (int o = 0; o < d; o++) {
                            double sk = 0, sq = 0;
                            for (int i = 0; i < d; i++) {
                                sk += xout[r * d + i] * wk[i * d + o];
                                sq += xout[r * d + i] * wq[i * d + o];
                            }
                            assert_true(fabs(sk - K[r * d + o]) < 1e-12);
                            assert_true(fabs(sq - Q[r * d + o]) < 1e-12);
                            Kx[r * d + o] = sk;
                        }
                    /* qk-normed keys: per-head norm of the keys */
                    lnk_geom_norm qn = iq == 0 ? LNK_GEOM_NONE
                                               : iq == 1 ? LNK_GEOM_LAYERNORM : LNK_GEOM_RMSNORM;
                    assert_int_equal(lnk_geom_apply(qn, Kx, Kn, R, d, h, c.eps), LNK_OK);
                    for (int i = 0; i < R * d; i++)
                        assert_true(fabs(Kn[i] - KQ[i]) <= 1e-11 * (1 + fabs(KQ[i])));
                    /* maps recomputed from QQ, KQ */
                    for (int j = 0; j < h; j++) {
                        double es = 0, emin = INFINITY, cm = 0, cmax = 0, lmax = -INFINITY;
                        int rows = 0;
                        for (int b = 0; b < B; b++) {
                            double col[T] = {0};
                            int nr = 0, lb = len[b] < Tq ? len[b] : Tq;
                            for (int t = 0; t < lb; t++) {
                                double z[T], mx = -INFINITY, s = 0;
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
                        const lnk_geom_attn_stat *a = &as[iu * h + j];
                        assert_int_equal(a->head, j);
                        assert_int_equal(a->u.unit, us[iu].unit);
                        if (!(fabs(a->ent_mean - es / rows) < 1e-12))
                            fail_msg("%s %s %s unit %d head %d: entropy %.17g, recomputed %.17g",
                                     pos[ip], qk[iq], nm[in], iu, j, a->ent_mean, es / rows);
                        assert_true(fabs(a->ent_min - emin) < 1e-12);
                        assert_true(fabs(a->col_mass - cm) < 1e-12);
                        assert_true(fabs(a->col_mass_max - cmax) < 1e-12);
                        assert_true(fabs(a->logit_max - lmax) < 1e-12);
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
    rs = 31;
    for (int i = 0; i < N * D; i++)
        K[i] = nrand() + (i % D == 0 ? 2.0 : 0.0);
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
            sel_ok(Y, N, D, 0, sel);
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
        {"1,2,3\n4,5\n", "--keys '%s/k.csv'", "row 2 has 2 fields, expected 3"},
        {"x,y\n1,2\n3,oops\n", "--keys '%s/k.csv'", "row 3, column 2: 'oops'"},
        {"1,2\n3,nan\n", "--keys '%s/k.csv'", "row 2, column 2"},
        {"x,y\n", "--keys '%s/k.csv'", "no keys"},
        {"", "--keys '%s/k.csv'", "no keys"},
        {"1,2\n\n3,4\n", "--keys '%s/k.csv'", "row 2 is empty"},
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
        cmocka_unit_test(test_select_2d),
        cmocka_unit_test(test_select_3d),
        cmocka_unit_test(test_select_rank_deficient),
        cmocka_unit_test(test_select_special),
        cmocka_unit_test(test_select_near_boundary),
        cmocka_unit_test(test_heat_cells),
        cmocka_unit_test(test_map_stats),
        cmocka_unit_test(test_model_rows_and_attn),
        cmocka_unit_test(test_model_attn_uniform),
        cmocka_unit_test(test_cli_select),
        cmocka_unit_test(test_cli_select_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
