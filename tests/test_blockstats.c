/* Block statistics (include/lnkit/blockstats.h):
 *   - Hutchinson's ||A||_F (on ||A z||^2) against the exact Frobenius norm of
 *     a dense matrix and of dense diagonal blocks of a small model's H, G and
 *     F: within 3 standard errors, and converging (the error and the
 *     standard error fall with the probes: 10 -> 4000);
 *   - the blocks' extreme eigenvalues against dsyev's on the dense blocks;
 *   - the Jensen-Shannon distance: 0 for identical densities, sqrt(ln 2) for
 *     disjoint ones, equal to an independent computation by entropies
 *     (JSD = h(m) - (h(p) + h(q)) / 2) and to scipy's jensenshannon on the
 *     normalised vectors (when /usr/bin/python3 has scipy); bad input is an
 *     error naming it;
 *   - the common grid covers every block's nodes;
 *   - lnk_hessian_set_block gives the bits of an operator made on that block. */
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/blockstats.h"
#include "lnkit/hessian.h"
#include "testutil.h"

typedef struct {
    size_t n;
    const double *A;
} dense;

static int dense_apply(void *ctx, const double *x, double *y)
{
    const dense *d = ctx;
    for (size_t i = 0; i < d->n; i++) {
        double s = 0;
        for (size_t j = 0; j < d->n; j++)
            s += d->A[i * d->n + j] * x[j];
        y[i] = s;
    }
    return LNK_OK;
}

static double frob_exact(const double *A, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n * n; i++)
        s += A[i] * A[i];
    return sqrt(s);
}

static void test_frobenius_dense(void **state)
{
    (void)state;
    size_t n = 60;
    double *A = malloc(sizeof(double) * n * n);
    tu_randn(A, n * n, 7);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            A[i * n + j] = A[j * n + i];
    for (size_t i = 0; i < n; i++)
        A[i * n + i] += 3.0 * (double)(i % 5); /* some diagonal structure */
    dense d = {n, A};
    lnk_operator op = {n, &d, dense_apply, NULL};
    double exact = frob_exact(A, n);
    int probes[] = {10, 100, 1000, 4000};
    double se[4], err[4];
    for (int k = 0; k < 4; k++) {
        lnk_frob_result r;
        assert_int_equal(lnk_frobenius(&op, probes[k], 3, &r), LNK_OK);
        err[k] = fabs(r.frob - exact);
        se[k] = r.frob_se;
        if (!(err[k] <= 3 * se[k]))
            fail_msg("%d probes: ||A||_F %g +- %g, exact %g", probes[k], r.frob, r.frob_se, exact);
        assert_true(fabs(r.frob2 - exact * exact) <= 3 * r.frob2_se);
        assert_int_equal(r.probes, probes[k]);
    }
    /* converging: the standard error falls like 1/sqrt(N) (400x the probes:
     * 20x smaller expected; at least 10x), and the error with it */
    assert_true(se[3] < se[0] / 10);
    assert_true(err[3] < 0.02 * exact);
    /* errors */
    lnk_frob_result r;
    assert_int_equal(lnk_frobenius(&op, 1, 0, &r), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "probes"));
    free(A);
}

/* A small model, its dense block of kind k on the patterns, and the operator. */
typedef struct {
    lnk_config c;
    lnk_model *m;
    double *th;
    lnk_batch b;
} small;

static void small_open(small *s, const char *task)
{
    s->c = tu_config(task, "d=8", "h=2", "L=1", "d_ff=8", "V=9", "norm_pos=pre",
                     "label_smoothing=0.1", NULL);
    s->m = lnk_model_alloc(&s->c);
    assert_non_null(s->m);
    size_t n = lnk_model_n_params(s->m);
    s->th = malloc(sizeof(double) * n);
    lnk_model_init_params(s->m, s->th);
    assert_int_equal(lnk_batch_synthetic(s->m, 3, 6, 11, &s->b), LNK_OK);
}

static void small_close(small *s)
{
    lnk_batch_free(&s->b);
    free(s->th);
    lnk_model_free(s->m);
    lnk_config_clear(&s->c);
}

static double *dense_block(lnk_hessian *h)
{
    lnk_operator op = lnk_hessian_operator(h);
    double *A = malloc(sizeof(double) * op.n * op.n), *e = calloc(op.n, sizeof(double));
    for (size_t j = 0; j < op.n; j++) {
        e[j] = 1;
        assert_int_equal(op.apply(op.ctx, e, A + j * op.n), LNK_OK);
        e[j] = 0;
    }
    free(e);
    return A;
}

static void test_model_blocks(void **state)
{
    (void)state;
    const char *tasks[] = {"task=lm", "task=seq2seq"};
    const char *pats[] = {"dec.0.attn.wv", "*.attn.wq,*.ffn.b1"};
    for (int ti = 0; ti < 2; ti++) {
        small s;
        small_open(&s, tasks[ti]);
        for (int pi = 0; pi < 2; pi++)
            for (int k = 0; k < 3; k++) {
                lnk_hessian *h = lnk_hessian_alloc(s.m, s.th, &s.b, 1, pats[pi]);
                assert_non_null(h);
                assert_int_equal(lnk_hessian_set_kind(h, (lnk_op_kind)k), LNK_OK);
                lnk_operator op = lnk_hessian_operator(h);
                size_t n = op.n;
                double *A = dense_block(h), exact = frob_exact(A, n);
                /* the dense eigenvalues */
                double *S = malloc(sizeof(double) * n * n), *w = malloc(sizeof(double) * n);
                for (size_t i = 0; i < n; i++)
                    for (size_t j = 0; j < n; j++)
                        S[i * n + j] = 0.5 * (A[i * n + j] + A[j * n + i]);
                assert_int_equal(LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'N', 'U', (int)n, S, (int)n, w),
                                 0);
                double lmax = fmax(fabs(w[0]), fabs(w[n - 1]));
                lnk_blockstat_opts o;
                lnk_blockstat_opts_default(&o);
                o.probes = 200;
                o.eig_steps = (int)n + 5;
                o.eig_tol = 1e-10;
                o.slq_runs = 2;
                o.slq_steps = 20;
                o.seed = 5 + k;
                lnk_blockstat r;
                assert_int_equal(lnk_blockstat_compute(&op, &o, &r), LNK_OK);
                assert_int_equal(r.n, n);
                if (!(fabs(r.frob.frob - exact) <= 3 * r.frob.frob_se) ||
                    !(r.frob.frob_se < 0.2 * exact))
                    fail_msg("%s %s %s: ||A_bb||_F %g +- %g, exact %g", tasks[ti], pats[pi],
                             lnk_op_kind_name((lnk_op_kind)k), r.frob.frob, r.frob.frob_se,
                             exact);
                if (!(fabs(r.top - w[n - 1]) <= 1e-8 * lmax) ||
                    !(fabs(r.bottom - w[0]) <= 1e-8 * lmax))
                    fail_msg("%s %s %s: extremes [%.15g, %.15g], dsyev [%.15g, %.15g]", tasks[ti],
                             pats[pi], lnk_op_kind_name((lnk_op_kind)k), r.bottom, r.top, w[0],
                             w[n - 1]);
                if (ti == 0 && pi == 1) { /* converging with the probes, on the model too */
                    lnk_frob_result f20, f2k;
                    assert_int_equal(lnk_frobenius(&op, 20, 77, &f20), LNK_OK);
                    assert_int_equal(lnk_frobenius(&op, 2000, 77, &f2k), LNK_OK);
                    assert_true(fabs(f20.frob - exact) <= 3 * f20.frob_se);
                    assert_true(fabs(f2k.frob - exact) <= 3 * f2k.frob_se);
                    assert_true(f2k.frob_se < f20.frob_se / 5); /* 1/sqrt(100) = 1/10 expected */
                    if (!(fabs(f2k.frob - exact) < f20.frob_se)) /* below the first spread */
                        fail_msg("2000 probes: %g +- %g, exact %g (20: +- %g)", f2k.frob,
                                 f2k.frob_se, exact, f20.frob_se);
                }
                assert_true(r.top_converged && r.bottom_converged);
                assert_true(r.top_residual <= 1e-8 * lmax && r.bottom_residual <= 1e-8 * lmax);
                /* the quadrature's nodes lie in the spectrum */
                assert_true(r.slq.node_min >= w[0] - 1e-8 * lmax);
                assert_true(r.slq.node_max <= w[n - 1] + 1e-8 * lmax);
                lnk_blockstat_free(&r);
                free(S);
                free(w);
                free(A);
                lnk_hessian_free(h);
            }
        small_close(&s);
    }
}

/* lnk_hessian_set_block: the same bits as an operator allocated on that block;
 * a bad pattern is an error that leaves the block as it was. */
static void test_set_block(void **state)
{
    (void)state;
    small s;
    small_open(&s, "task=seq2seq");
    lnk_hessian *h = lnk_hessian_alloc(s.m, s.th, &s.b, 1, NULL);
    assert_non_null(h);
    assert_int_equal(lnk_hessian_set_kind(h, LNK_OP_FUNCTIONAL), LNK_OK);
    const char *pats[] = {"enc.0.attn.wq", "*.ffn.*,dec.0.xattn.wv", "*"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(lnk_hessian_set_block(h, pats[i]), LNK_OK);
        lnk_hessian *r = lnk_hessian_alloc(s.m, s.th, &s.b, 1, pats[i]);
        assert_non_null(r);
        assert_int_equal(lnk_hessian_set_kind(r, LNK_OP_FUNCTIONAL), LNK_OK);
        lnk_operator a = lnk_hessian_operator(h), b = lnk_hessian_operator(r);
        assert_int_equal(a.n, b.n);
        assert_int_equal(lnk_hessian_block(h)->n, a.n);
        double *x = malloc(sizeof(double) * a.n), *y = malloc(sizeof(double) * a.n),
               *z = malloc(sizeof(double) * a.n);
        tu_randn(x, a.n, 9 + i);
        assert_int_equal(a.apply(a.ctx, x, y), LNK_OK);
        assert_int_equal(b.apply(b.ctx, x, z), LNK_OK);
        assert_memory_equal(y, z, sizeof(double) * a.n);
        free(x);
        free(y);
        free(z);
        lnk_hessian_free(r);
    }
    size_t n = lnk_hessian_block(h)->n;
    assert_int_equal(lnk_hessian_set_block(h, "no.such.*"), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "no.such.*"));
    assert_int_equal(lnk_hessian_block(h)->n, n);
    lnk_hessian_free(h);
    small_close(&s);
}

static double gauss(double t, double mu, double s)
{
    return exp(-0.5 * (t - mu) * (t - mu) / (s * s)) / (s * sqrt(2 * M_PI));
}

/* -int f ln f by the trapezoid rule (f normalised by its trapezoid integral). */
static double entropy(const double *t, const double *f, size_t n)
{
    double z = lnk_trapezoid(t, f, n), *g = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++)
        g[i] = f[i] > 0 ? -(f[i] / z) * log(f[i] / z) : 0;
    double h = lnk_trapezoid(t, g, n);
    free(g);
    return h;
}

static void test_js_distance(void **state)
{
    (void)state;
    size_t n = 801;
    double *t = malloc(sizeof(double) * n), *p = malloc(sizeof(double) * n),
           *q = malloc(sizeof(double) * n), *m = malloc(sizeof(double) * n), d;
    for (size_t i = 0; i < n; i++) {
        t[i] = -10 + 20.0 * (double)i / (double)(n - 1);
        p[i] = gauss(t[i], -1, 1);
        q[i] = 2.5 * gauss(t[i], 0.5, 0.7); /* not normalised: the distance normalises */
    }
    /* identical (up to scale) */
    assert_int_equal(lnk_js_distance(t, p, p, n, &d), LNK_OK);
    assert_true(d == 0);
    for (size_t i = 0; i < n; i++)
        m[i] = 3 * p[i];
    assert_int_equal(lnk_js_distance(t, p, m, n, &d), LNK_OK);
    assert_true(d < 1e-7); /* sqrt of rounding */
    /* disjoint: sqrt(ln 2) */
    for (size_t i = 0; i < n; i++) {
        m[i] = t[i] < 0 ? p[i] : 0;
        p[i] = t[i] >= 0 ? q[i] : 0;
    }
    assert_int_equal(lnk_js_distance(t, p, m, n, &d), LNK_OK);
    assert_true(fabs(d - sqrt(M_LN2)) < 1e-14);
    /* overlapping: against the entropies, JSD = h(m) - (h(p) + h(q)) / 2 */
    for (size_t i = 0; i < n; i++) {
        p[i] = gauss(t[i], -1, 1);
        q[i] = gauss(t[i], 0.5, 0.7);
        m[i] = 0.5 * (p[i] + q[i]);
    }
    assert_int_equal(lnk_js_distance(t, p, q, n, &d), LNK_OK);
    double jsd = entropy(t, m, n) - 0.5 * (entropy(t, p, n) + entropy(t, q, n));
    if (!(fabs(d * d - jsd) < 1e-12))
        fail_msg("JS distance %.15g, by entropies %.15g", d, sqrt(jsd));
    assert_true(d > 0.3 && d < 0.8);
    /* scipy.spatial.distance.jensenshannon on the vectors (a uniform grid and
     * densities vanishing at its ends: the same quadrature) */
    char *out;
    if (tu_run(&out, "/usr/bin/python3 -c 'import scipy' 2>&1") == 0) {
        free(out);
        FILE *f = fopen(tu_path("js.txt"), "w");
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%.17g %.17g\n", p[i], q[i]);
        fclose(f);
        assert_int_equal(tu_run(&out, "/usr/bin/python3 -c 'import numpy as np; "
                                "from scipy.spatial.distance import jensenshannon as js; "
                                "a = np.loadtxt(\"%s\"); print(\"%%.17g\" %% js(a[:, 0], a[:, 1]))'",
                                tu_path("js.txt")), 0);
        double ds = atof(out);
        if (!(fabs(ds - d) < 1e-12))
            fail_msg("JS distance %.17g, scipy %.17g", d, ds);
    } else {
        print_message("SKIPPED: the scipy comparison (/usr/bin/python3 has no scipy)\n");
    }
    free(out);
    /* bad input */
    p[3] = -1;
    assert_int_equal(lnk_js_distance(t, p, q, n, &d), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "value 3"));
    p[3] = 0;
    memset(q, 0, sizeof(double) * n);
    assert_int_equal(lnk_js_distance(t, p, q, n, &d), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "integrates to 0"));
    t[5] = t[4];
    assert_int_equal(lnk_js_distance(t, p, p, n, &d), LNK_EINVAL);
    assert_int_equal(lnk_js_distance(t, p, p, 1, &d), LNK_EINVAL);
    free(t);
    free(p);
    free(q);
    free(m);
}

static void test_common_grid(void **state)
{
    (void)state;
    double n1[] = {-1, 0.5}, w1[] = {0.5, 0.5}, n2[] = {2, 3}, w2[] = {0.3, 0.7};
    int off[] = {0, 2}, steps[] = {2}, inv[] = {0};
    lnk_slq_result a = {1, off, n1, w1, steps, inv, -1, 0.5, 0, 0};
    lnk_slq_result b = {1, off, n2, w2, steps, inv, 2, 3, 0, 0};
    const lnk_slq_result *r[] = {&a, &b};
    double *t;
    size_t np;
    assert_int_equal(lnk_slq_grid_common(r, 2, 0.1, 6, 4, 100000, &t, &np), LNK_OK);
    assert_true(fabs(t[0] - (-1.6)) < 1e-12 && fabs(t[np - 1] - 3.6) < 1e-12);
    assert_true((t[1] - t[0]) <= 0.1 / 4 + 1e-12);
    /* both densities integrate to 1 on it */
    double *phi = malloc(sizeof(double) * np);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(lnk_slq_density(r[k], 0.1, t, np, phi), LNK_OK);
        assert_true(fabs(lnk_trapezoid(t, phi, np) - 1) < 1e-8);
    }
    free(phi);
    free(t);
    assert_int_equal(lnk_slq_grid_common(r, 2, 1e-9, 6, 4, 1000, &t, &np), LNK_EINVAL);
    assert_non_null(strstr(lnk_errmsg(), "larger sigma"));
    assert_int_equal(lnk_slq_grid_common(r, 0, 0.1, 6, 4, 1000, &t, &np), LNK_EINVAL);
}

/* sigma a fraction of the node range (the commands' default) makes the number
 * of grid cells an integer in exact arithmetic: node ranges that differ by a
 * few ulps (a run on 2 ranks against one process) must give the same grid,
 * where a plain ceil gives one point more for some of them. */
static void test_grid_rounding(void **state)
{
    (void)state;
    int off[] = {0, 2}, steps[] = {2}, inv[] = {0};
    double w[] = {0.5, 0.5};
    size_t want = 400 + 2 * 6 * 4 + 1; /* 1 / 0.01 sigma, 4 points a sigma, pad 6 sigma */
    int plain_flips = 0;
    for (int k = 0; k < 64; k++) {
        double lo = -0.98684578962945046 - 0.0137 * k, hi = 1.480336810894691 + 0.0071 * k;
        for (int u = -4; u <= 4; u++) {
            double h = hi;
            for (int j = 0; j < (u < 0 ? -u : u); j++)
                h = nextafter(h, u < 0 ? -INFINITY : INFINITY);
            double n[] = {lo, h};
            lnk_slq_result a = {1, off, n, w, steps, inv, lo, h, 0, 0};
            const lnk_slq_result *r[] = {&a};
            double sigma, *t;
            size_t np;
            assert_int_equal(lnk_sigma_from_fraction(0.01, lo, h, &sigma), LNK_OK);
            plain_flips += (size_t)ceil((h - lo + 2 * 6 * sigma) / (sigma / 4)) + 1 != want;
            assert_int_equal(lnk_slq_grid_common(r, 1, sigma, 6, 4, 100000, &t, &np), LNK_OK);
            if (np != want)
                fail_msg("range [%.17g, %.17g]: common grid of %zu points, expected %zu", lo, h,
                         np, want);
            free(t);
            assert_int_equal(lnk_slq_grid_size(&a, sigma, 6, 4), want);
            assert_int_equal(lnk_slq_pool_grid(r, 1, sigma, 6, 4, NULL, NULL, &t, &np), LNK_OK);
            assert_int_equal(np, want);
            free(t);
        }
    }
    /* the trap is real: without the rounding some of these ranges get a point more */
    assert_true(plain_flips > 0);
}

/* Blocks judged together: the numbers are set by hand, the expected flags
 * follow from the rule in blockstats.h (S = 4, tol S = 4e-6). */
static void test_settle(void **state)
{
    (void)state;
    lnk_blockstat b[5];
    memset(b, 0, sizeof b);
    b[0] = (lnk_blockstat){.top = 4, .bottom = -1, .top_converged = 1, .bottom_residual = 2e-3,
                           .eig_steps = 30};
    b[1] = (lnk_blockstat){.top = 1e-12, .bottom = -2e-12, .top_residual = 3e-6,
                           .bottom_residual = 5e-6, .eig_steps = 12}; /* zero: top passes */
    b[2] = (lnk_blockstat){.top = 0, .bottom = 0, .top_residual = 1e-7, .bottom_residual = 1e-7};
    b[3] = (lnk_blockstat){.top = 4e-9, .bottom = 1e-9, .top_residual = 1e-8,
                           .bottom_residual = 1e-8, .eig_steps = 50}; /* 1e-9 S: not zero */
    b[4] = (lnk_blockstat){.top = 1, .bottom = 0.5, .top_residual = 0.1, .bottom_residual = 0.1};
    lnk_blockstat *p[5] = {&b[0], &b[1], &b[2], &b[3], &b[4]};
    lnk_blockstat_settle(p, 5, 1e-6);
    const int top[5] = {1, 1, 1, 0, 0}, bottom[5] = {0, 0, 1, 0, 0};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(b[i].top_converged, top[i]);
        assert_int_equal(b[i].bottom_converged, bottom[i]);
    }
    double worst;
    int steps;
    assert_int_equal(lnk_blockstat_unconverged((const lnk_blockstat *const *)p, 5, &worst,
                                               &steps), 6);
    assert_int_equal(steps, 50);
    assert_true(fabs(worst - 2.5e6) <= 1e-3); /* block 1's bottom: 5e-6 / 2e-12 */
    /* a zero block alone: S = 0, its residual counts as is */
    b[2].top_converged = b[2].bottom_converged = 0;
    assert_int_equal(lnk_blockstat_unconverged((const lnk_blockstat *const *)&p[2], 1, &worst,
                                               &steps), 2);
    assert_true(worst == 1e-7);
    /* a block alone is its own S: nothing changes unless it is exactly 0 */
    b[4].top_converged = 0;
    lnk_blockstat_settle(&p[4], 1, 1e-6);
    assert_int_equal(b[4].top_converged, 0);
}

/* The reasons of lnk_blockstat_why, each reached by numbers set by hand. */
static void test_why(void **state)
{
    (void)state;
    const lnk_blockstat_names nm = {"--steps-opt", "--tol-opt", "--more-opt"};
    char buf[1024];
    lnk_blockstat a = {.top = 2, .bottom = 1e-9, .top_converged = 1, .bottom_residual = 1e-4,
                       .eig_steps = 100};
    const lnk_blockstat *p[2] = {&a, NULL};
    lnk_blockstat_why(p, 1, 0, 100, &nm, buf, sizeof buf); /* the step limit */
    assert_non_null(strstr(buf, "step limit was reached (a larger --steps-opt"));
    assert_null(strstr(buf, "semidefinite"));
    lnk_blockstat_why(p, 1, 1, 100, &nm, buf, sizeof buf); /* G: the bottom's cluster at 0 */
    assert_non_null(strstr(buf, "G_bb is positive semidefinite"));
    assert_null(strstr(buf, "step limit"));
    a.eig_steps = 12; /* ended early, residual 1e-4 <= 1e-3 * 2: rounding above tol */
    lnk_blockstat_why(p, 1, 0, 100, &nm, buf, sizeof buf);
    assert_non_null(strstr(buf, "a larger --tol-opt makes them converge"));
    /* a zero block alone: residuals as large as its values, no larger block */
    lnk_blockstat z = {.top = 1e-17, .bottom = -1e-17, .top_residual = 9e-18,
                       .bottom_residual = 9e-18, .eig_steps = 16};
    p[0] = &z;
    lnk_blockstat_why(p, 1, 0, 100, &nm, buf, sizeof buf);
    assert_non_null(strstr(buf, "no larger block in this run to judge it against; add one "
                                "(--more-opt)"));
    /* beside a larger block it is rounding, not 'alone' */
    a.bottom_converged = 1;
    p[1] = &a;
    lnk_blockstat_why(p, 2, 0, 100, &nm, buf, sizeof buf);
    assert_non_null(strstr(buf, "of the largest block's 2"));
    assert_null(strstr(buf, "no larger block"));
    /* all converged: empty */
    z.top_converged = z.bottom_converged = 1;
    lnk_blockstat_why(p, 2, 1, 100, &nm, buf, sizeof buf);
    assert_string_equal(buf, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frobenius_dense),
        cmocka_unit_test(test_model_blocks),
        cmocka_unit_test(test_set_block),
        cmocka_unit_test(test_js_distance),
        cmocka_unit_test(test_common_grid),
        cmocka_unit_test(test_grid_rounding),
        cmocka_unit_test(test_settle),
        cmocka_unit_test(test_why),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
