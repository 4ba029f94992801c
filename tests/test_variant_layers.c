/* The sub-layers of issue 32 on their own (src/layers/{gelu,swiglu,rope,
 * embed}.c), each against a formula written here from docs/MODEL.md §2, not
 * from the code:
 *   - GELU: x (1 + erf(x/sqrt 2))/2 at known points; its derivative cache and
 *     second derivative against central differences;
 *   - SwiGLU's gate: a c / (1 + e^-a); tangent against central differences,
 *     backward as the adjoint of the tangent (<du, J w> = <J^T du, w>), the
 *     backward tangent against central differences of the backward;
 *   - rotary positions: the complex product (q_2i + i q_2i+1) e^{i t theta_i}
 *     (C99 complex arithmetic), scores that depend only on t - s, norms kept,
 *     backward = transpose, position 0 the identity;
 *   - the embedding: learned table, scale 1, input_scale, and its backward as
 *     the adjoint of the forward map.
 * Tolerances: rounding (1e-14 relative) for the formulas, 1e-8 for central
 * differences with step 1e-5 (truncation ~1e-10 here). */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "layers/layers.h"

static double maxdiff(const double *a, const double *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(a[i] - b[i]));
    return m;
}

static void test_gelu(void **s)
{
    (void)s;
    enum { N = 9 };
    const double x[N] = {-6, -2.5, -1, -0.3, 0, 0.2, 1, 2.7, 7};
    double y[N], d1[N], yp[N], ym[N], dp[N], dm[N], xs[N];
    lnk_gelu_forward(y, d1, x, N);
    for (int i = 0; i < N; i++) { /* GELU(x) = x Phi(x), Phi through erfc for accuracy */
        double want = x[i] * 0.5 * erfc(-x[i] / sqrt(2.0));
        assert_true(fabs(y[i] - want) <= 1e-15 * fmax(1, fabs(want)));
    }
    const double h = 1e-5;
    for (int i = 0; i < N; i++)
        xs[i] = x[i] + h;
    lnk_gelu_forward(yp, dp, xs, N);
    for (int i = 0; i < N; i++)
        xs[i] = x[i] - h;
    lnk_gelu_forward(ym, dm, xs, N);
    double xd[N], dy[N], dyd[N], out[N], bt[N];
    for (int i = 0; i < N; i++) {
        assert_true(fabs((yp[i] - ym[i]) / (2 * h) - d1[i]) <= 1e-9);
        xd[i] = 0.3 + 0.1 * i, dy[i] = 1.0 - 0.2 * i, dyd[i] = -0.5 + 0.05 * i;
    }
    /* tangent and backward: the diagonal d1 */
    lnk_gelu_tangent(out, d1, xd, N);
    for (int i = 0; i < N; i++)
        assert_true(out[i] == d1[i] * xd[i]);
    lnk_gelu_backward(out, d1, dy, N);
    for (int i = 0; i < N; i++)
        assert_true(out[i] == d1[i] * dy[i]);
    /* backward tangent: R{dx} = d1 R{dy} + (d/dx d1) xdot dy */
    lnk_gelu_backward_tangent(bt, dyd, dy, xd, x, d1, N);
    for (int i = 0; i < N; i++) {
        double d2 = (dp[i] - dm[i]) / (2 * h), want = d1[i] * dyd[i] + d2 * xd[i] * dy[i];
        assert_true(fabs(bt[i] - want) <= 1e-8);
    }
}

static void test_swiglu(void **s)
{
    (void)s;
    enum { N = 7 };
    const double a[N] = {-30, -2, -0.5, 0, 0.7, 3, 40}, c[N] = {0.5, -1.5, 2, 1, -0.3, 0.8, -2};
    const double ad[N] = {0.2, -0.4, 1, 0.3, -1.2, 0.5, 0.1};
    const double cd[N] = {-0.6, 0.3, 0.2, -1, 0.4, 0.9, 0.7};
    const double du[N] = {1, -0.5, 0.25, 2, -1, 0.3, -0.7};
    const double dud[N] = {0.4, 0.1, -0.3, 0.2, 0.6, -0.8, 0.5};
    double u[N], sg[N], ut[N], da[N], dc[N], dat[N], dct[N];
    lnk_swiglu_forward(u, sg, a, c, N);
    for (int i = 0; i < N; i++) {
        double want = a[i] * c[i] / (1 + exp(-a[i]));
        assert_true(fabs(u[i] - want) <= 1e-15 * fmax(1, fabs(want)));
    }
    lnk_swiglu_tangent(ut, ad, cd, a, c, sg, N);
    lnk_swiglu_backward(da, dc, du, a, c, sg, N);
    lnk_swiglu_backward_tangent(dat, dct, dud, du, ad, cd, a, c, sg, N);
    const double h = 1e-5;
    double ap[N], cp[N], am[N], cm[N], up[N], um[N], sp[N], sm[N];
    double dap[N], dcp[N], dam[N], dcm[N];
    for (int i = 0; i < N; i++) {
        ap[i] = a[i] + h * ad[i], cp[i] = c[i] + h * cd[i];
        am[i] = a[i] - h * ad[i], cm[i] = c[i] - h * cd[i];
    }
    lnk_swiglu_forward(up, sp, ap, cp, N);
    lnk_swiglu_forward(um, sm, am, cm, N);
    /* R{da} along (ad, cd) with du moving as dud: central differences of the backward */
    double dup[N], dum[N];
    for (int i = 0; i < N; i++)
        dup[i] = du[i] + h * dud[i], dum[i] = du[i] - h * dud[i];
    lnk_swiglu_backward(dap, dcp, dup, ap, cp, sp, N);
    lnk_swiglu_backward(dam, dcm, dum, am, cm, sm, N);
    double lhs = 0, rhs = 0;
    for (int i = 0; i < N; i++) {
        assert_true(fabs((up[i] - um[i]) / (2 * h) - ut[i]) <= 1e-8 * fmax(1, fabs(ut[i])));
        assert_true(fabs((dap[i] - dam[i]) / (2 * h) - dat[i]) <= 1e-8 * fmax(1, fabs(dat[i])));
        assert_true(fabs((dcp[i] - dcm[i]) / (2 * h) - dct[i]) <= 1e-8 * fmax(1, fabs(dct[i])));
        lhs += du[i] * ut[i];
        rhs += da[i] * ad[i] + dc[i] * cd[i];
    }
    assert_true(fabs(lhs - rhs) <= 1e-14 * fmax(1, fabs(lhs)));
}

/* R = 2 sequences of T = 5 positions, d = 12 in h = 2 heads of d_k = 6. */
enum { RT = 5, RR = 10, RD = 12, RH = 2, RDK = 6 };

static void rope_ref(double *y, const double *x)
{
    for (int r = 0; r < RR; r++) {
        int t = r % RT;
        for (int hd = 0; hd < RH; hd++)
            for (int i = 0; i < RDK / 2; i++) {
                int p = r * RD + hd * RDK + 2 * i;
                double theta = pow(10000.0, -2.0 * i / RDK);
                double complex z = (x[p] + I * x[p + 1]) * cexp(I * t * theta);
                y[p] = creal(z), y[p + 1] = cimag(z);
            }
    }
}

static void test_rope(void **s)
{
    (void)s;
    double cs[RT * RDK / 2], sn[RT * RDK / 2];
    double x[RR * RD], y[RR * RD], ref[RR * RD], w[RR * RD], back[RR * RD];
    lnk_rope_table(cs, sn, RT, RDK);
    tu_randn(x, RR * RD, 7);
    tu_randn(w, RR * RD, 8);
    lnk_rope_forward(y, x, cs, sn, RR, RT, RD, RH);
    rope_ref(ref, x);
    assert_true(maxdiff(y, ref, RR * RD) <= 1e-14);
    for (int i = 0; i < RD; i++) /* position 0 of each sequence: the identity */
        assert_true(y[i] == x[i] && y[RT * RD + i] == x[RT * RD + i]);
    /* the tangent is the same linear map; in place gives the same numbers */
    double t2[RR * RD];
    memcpy(t2, x, sizeof x);
    lnk_rope_tangent(t2, t2, cs, sn, RR, RT, RD, RH);
    assert_true(maxdiff(t2, y, RR * RD) == 0);
    /* backward = transpose: <w, R x> = <R^T w, x>; and R^T R = I */
    lnk_rope_backward(back, w, cs, sn, RR, RT, RD, RH);
    assert_true(fabs(tu_dot(w, y, RR * RD) - tu_dot(back, x, RR * RD)) <= 1e-13);
    lnk_rope_backward_tangent(back, y, cs, sn, RR, RT, RD, RH);
    assert_true(maxdiff(back, x, RR * RD) <= 1e-14);
    /* scores depend on t - s only: q at t and k at s against q at t+1, k at s+1 */
    double q[RR * RD], k[RR * RD], qy[RR * RD], ky[RR * RD];
    for (int i = 0; i < RD; i++)
        for (int t = 0; t < RT; t++)
            q[t * RD + i] = x[i], k[t * RD + i] = w[i];
    memcpy(q + RT * RD, q, sizeof(double) * RT * RD);
    memcpy(k + RT * RD, k, sizeof(double) * RT * RD);
    lnk_rope_forward(qy, q, cs, sn, RR, RT, RD, RH);
    lnk_rope_forward(ky, k, cs, sn, RR, RT, RD, RH);
    for (int hd = 0; hd < RH; hd++) {
        double s02 = 0, s13 = 0, n0 = 0, n3 = 0;
        for (int i = 0; i < RDK; i++) {
            int c = hd * RDK + i;
            s02 += qy[0 * RD + c] * ky[2 * RD + c];
            s13 += qy[1 * RD + c] * ky[3 * RD + c];
            n0 += qy[0 * RD + c] * qy[0 * RD + c];
            n3 += qy[3 * RD + c] * qy[3 * RD + c];
        }
        assert_true(fabs(s02 - s13) <= 1e-13 * fmax(1, fabs(s02)));
        assert_true(fabs(n0 - n3) <= 1e-13 * n0); /* rotations keep the norm */
    }
}

static void test_embed(void **s)
{
    (void)s;
    enum { V = 6, D = 5, T = 3, R = 6, L = 4 };
    const int64_t ids[R] = {4, 5, 2, 3, 4, 1};
    double E[V * D], P[L * D], e[R * D], ref[R * D], w[R * D], dE[V * D], dP[L * D];
    tu_randn(E, V * D, 1);
    tu_randn(P, L * D, 2);
    tu_randn(w, R * D, 3);
    const double sigma = 0.7;
    /* learned: sigma (E[id] + P[t]) */
    lnk_embed_forward(e, ids, E, P, R, T, D, 0, sigma);
    for (int r = 0; r < R; r++)
        for (int i = 0; i < D; i++)
            ref[r * D + i] = sigma * (E[ids[r] * D + i] + P[(r % T) * D + i]);
    assert_true(maxdiff(e, ref, R * D) <= 1e-15);
    /* none: E[id] alone, unscaled */
    lnk_embed_forward(e, ids, E, NULL, R, T, D, 0, 1.0);
    for (int r = 0; r < R; r++)
        for (int i = 0; i < D; i++)
            assert_true(e[r * D + i] == E[ids[r] * D + i]);
    /* backward = adjoint of the (linear) forward map, in (E, P) */
    memset(dE, 0, sizeof dE);
    memset(dP, 0, sizeof dP);
    lnk_embed_backward(dE, dP, ids, w, R, T, D, 0, sigma);
    lnk_embed_forward(e, ids, E, P, R, T, D, 0, sigma);
    double lhs = tu_dot(w, e, R * D), rhs = tu_dot(dE, E, V * D) + tu_dot(dP, P, L * D);
    assert_true(fabs(lhs - rhs) <= 1e-13 * fmax(1, fabs(lhs)));
    /* the tangent is the forward map without the sinusoidal table */
    double et[R * D];
    lnk_embed_tangent(et, ids, E, P, R, T, D, 0, sigma);
    assert_true(maxdiff(et, e, R * D) <= 1e-15);
    /* sinusoidal with sigma: sigma (sqrt(d) E[id] + PE_t), d even */
    enum { D2 = 4 };
    double E2[V * D2], e2[R * D2];
    tu_randn(E2, V * D2, 4);
    lnk_embed_forward(e2, ids, E2, NULL, R, T, D2, 1, sigma);
    for (int r = 0; r < R; r++)
        for (int i = 0; i < D2; i++) {
            double ang = (r % T) / pow(10000.0, (double)(i - i % 2) / D2);
            double pe = i % 2 ? cos(ang) : sin(ang);
            double want = sigma * (sqrt((double)D2) * E2[ids[r] * D2 + i] + pe);
            assert_true(fabs(e2[r * D2 + i] - want) <= 1e-14 * fmax(1, fabs(want)));
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gelu),
        cmocka_unit_test(test_swiglu),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_embed),
    };
    return cmocka_run_group_tests_name("variant layers", tests, NULL, NULL);
}
