/* Heat-map cells of selectability (include/lnkit/geometry.h) for small
 * (n, d) against a brute-force direction search on the same keys; the offset
 * keys (an affine image of the Gaussian ones) give the same "none" cells.
 * The direction search shares no code with the LP; helpers in
 * tests/testutil_geom.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "testutil_geom.h"
#include "lnkit/geometry.h"

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
            q[c] = tg_nrand();
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
    tg_rs = 4;
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
                    tg_sel_ok(K, n, d, 0, sel);
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
    tg_sel_ok(K52, 52, 4, 0, s52);
    hyperplane_coords(K52, 52, 4, P52);
    for (int i = 0; i < 52; i++)
        assert_int_equal(direction_search(P52, 52, 3, i), s52[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heat_cells),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
