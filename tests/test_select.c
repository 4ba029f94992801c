/* Selectability of keys (docs/MODEL.md section 7, include/lnkit/geometry.h)
 * against independent exact methods written here: gift wrapping in 2-D
 * (exact on integer grids, with collinear points and duplicates),
 * Caratheodory (a key inside some tetrahedron of the others) in 3-D, on a few
 * thousand random sets; rank-deficient sets (centred keys, planar sets
 * embedded in R^6); circle and sphere points all selectable; the centroid of
 * others, duplicates, collinear keys; near-boundary keys on both sides of the
 * tolerance.  The gift-wrapping and tetrahedron references share no code with
 * the LP; helpers in tests/testutil_geom.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "testutil_geom.h"
#include "lnkit/geometry.h"

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
    tg_rs = 2024;
    int unsel = 0, total = 0;
    /* Gaussian sets (general position) */
    for (int set = 0; set < 1500; set++) {
        int n = 3 + set % 30;
        for (int i = 0; i < 2 * n; i++)
            P[i] = tg_nrand();
        tg_sel_ok(P, n, 2, 0, sel);
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
            P[i] = (double)(int)(tg_urand() * g);
        tg_sel_ok(P, n, 2, 0, sel);
        giftwrap_sel(P, n, ref);
        compare_sets(sel, ref, n, "integer grid 2-D", set);
        for (int i = 0; i < n; i++) {
            E[4 * i] = P[2 * i];
            E[4 * i + 1] = P[2 * i + 1];
            E[4 * i + 2] = P[2 * i] + P[2 * i + 1];
            E[4 * i + 3] = P[2 * i] - P[2 * i + 1];
        }
        tg_sel_ok(E, n, 4, 0, sel);
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
    tg_rs = 77;
    for (int set = 0; set < 2000; set++) {
        int n = 4 + set % 9;
        for (int i = 0; i < 3 * n; i++)
            K[i] = tg_nrand() * (set % 2 ? 1.0 : (1 + i % 3)) + (set % 3 == 0 ? 5.0 : 0.0);
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
    tg_rs = 99;
    int unsel = 0;
    for (int set = 0; set < 600; set++) {
        int n = 3 + set % 28;
        for (int i = 0; i < 3 * n; i++)
            K[i] = tg_nrand() + 2.0;
        assert_int_equal(lnk_geom_apply(LNK_GEOM_CENTER, K, K, n, 3, 1, 0.0), LNK_OK);
        for (int i = 0; i < n; i++) {
            P[2 * i] = P[2 * i + 1] = 0;
            for (int c = 0; c < 3; c++) {
                P[2 * i] += K[3 * i + c] * e1[c];
                P[2 * i + 1] += K[3 * i + c] * e2[c];
            }
        }
        tg_sel_ok(K, n, 3, 0, sel);
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
            Q[i] = tg_nrand();
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
            off[c] = 3 * tg_nrand();
        for (int i = 0; i < 2 * n; i++)
            P[i] = tg_nrand();
        for (int i = 0; i < n; i++)
            for (int c = 0; c < 6; c++)
                K[6 * i + c] = off[c] + Q[2 * c] * P[2 * i] + Q[2 * c + 1] * P[2 * i + 1];
        tg_sel_ok(K, n, 6, 0, sel);
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
        tg_sel_ok(K, n, 2, 0, sel);
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
    tg_sel_ok(K, n, 3, 0, sel);
    for (int i = 0; i < n; i++)
        assert_int_equal(sel[i], 1);
    /* LayerNorm outputs of Gaussian keys in d = 8 (a 6-sphere in a hyperplane) */
    tg_rs = 3;
    n = 200;
    for (int i = 0; i < n * 8; i++)
        K[i] = tg_nrand();
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
            K[i] = tg_nrand();
        for (int c = 0; c < d; c++) {
            K[m * d + c] = 0;
            for (int i = 0; i < m; i++)
                K[m * d + c] += K[i * d + c] / m;
        }
        tg_sel_ok(K, m + 1, d, 0, sel);
        for (int i = 0; i < m; i++)
            assert_int_equal(sel[i], 1);
        assert_int_equal(sel[m], 0);
        double dist;
        assert_int_equal(lnk_geom_hull_dist(K, m + 1, d, m, 0, &dist, NULL), LNK_OK);
        assert_true(dist < 1e-12);
    }
    /* duplicates: every copy unselectable, the rest unaffected */
    double Dp[] = {0, 0, 4, 0, 0, 4, 0, 0, 1, 1};
    tg_sel_ok(Dp, 5, 2, 0, sel);
    assert_int_equal(sel[0], 0);
    assert_int_equal(sel[3], 0);
    assert_int_equal(sel[1], 1);
    assert_int_equal(sel[2], 1);
    assert_int_equal(sel[4], 0); /* inside the triangle */
    /* one key: selectable; all keys equal: none */
    tg_sel_ok(Dp, 1, 2, 0, sel);
    assert_int_equal(sel[0], 1);
    double Eq[] = {1, 2, 3, 1, 2, 3, 1, 2, 3};
    tg_sel_ok(Eq, 3, 3, 0, sel);
    for (int i = 0; i < 3; i++)
        assert_int_equal(sel[i], 0);
    /* collinear keys in R^5: only the two ends are selectable */
    double v[5], w[5], ts[12];
    for (int c = 0; c < 5; c++) {
        v[c] = tg_nrand();
        w[c] = tg_nrand();
    }
    for (int i = 0; i < 12; i++)
        ts[i] = tg_nrand();
    int lo = 0, hi = 0;
    for (int i = 0; i < 12; i++) {
        lo = ts[i] < ts[lo] ? i : lo;
        hi = ts[i] > ts[hi] ? i : hi;
        for (int c = 0; c < 5; c++)
            K[5 * i + c] = w[c] + ts[i] * v[c];
    }
    tg_sel_ok(K, 12, 5, 0, sel);
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
    tg_rs = 8;
    /* a random orthogonal 7x7 (Gram-Schmidt) */
    for (int i = 0; i < 49; i++)
        R[i] = tg_nrand();
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
    tg_allow_ambiguous = 1;
    for (size_t k = 0; k < sizeof deltas / sizeof deltas[0]; k++) {
        double dl = deltas[k];
        double base[8] = {0, 0, 2, 0, 1, -1, 1, dl};
        memcpy(K, base, sizeof base);
        int want = dl / 2 > LNK_GEOM_SEL_TOL;
        tg_sel_ok(K, 4, 2, 0, sel);
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
            tg_sel_ok(K, 4, 2, 1e-5, sel);
            assert_int_equal(sel[3], 0);
        }
        if (dl == 1e-12) {
            tg_sel_ok(K, 4, 2, 1e-13, sel);
            assert_int_equal(sel[3], 1);
        }
        /* rotated into R^7 (shifted by 5 in every coordinate): the l1 distance changes by
         * at most sqrt(7), so the clear cases keep their answer */
        if (fabs(dl) == 1e-6 || dl == 1e-3 || fabs(dl) == 1e-12 || dl == 0) {
            for (int i = 0; i < 4; i++)
                for (int c = 0; c < 7; c++)
                    E[7 * i + c] = 5 + R[7 * c] * K[2 * i] + R[7 * c + 1] * K[2 * i + 1];
            tg_sel_ok(E, 4, 7, 0, sel);
            if (sel[3] != want)
                fail_msg("delta = %g in R^7: selectable = %d, expected %d", dl, sel[3], want);
        }
    }
    tg_allow_ambiguous = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select_2d),
        cmocka_unit_test(test_select_3d),
        cmocka_unit_test(test_select_rank_deficient),
        cmocka_unit_test(test_select_special),
        cmocka_unit_test(test_select_near_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
