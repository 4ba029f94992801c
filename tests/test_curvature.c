/* Curvature library: bad input and callbacks (progress, cancel, checkpoint,
 * failing operators) of Lanczos, eigs, trace and SLQ, and distributed
 * vectors (a simulated group).  The methods' accuracy on known spectra is
 * tested in test_lanczos, test_eigs and test_slq (helpers:
 * tests/testutil_curv.c). */
#include "testutil.h"
#include "testutil_curv.h"

#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curvature/internal.h"
#include "lnkit/curvature.h"

/* -------------------------------------------------- bad input, callbacks */

static int cancel_at_5(void *ctx, const lnk_eigs_progress *p)
{
    int *calls = ctx;
    (*calls)++;
    assert_true(p->n_top >= 1 && p->top[0] >= p->top[p->n_top - 1]);
    assert_true(p->elapsed >= 0);
    return p->step >= 5;
}

/* ctx: {calls, last done, total, stop_at} */
static int count_progress(void *ctx, int done, int total, double elapsed)
{
    int *c = ctx;
    c[0]++;
    assert_true(done > c[1] && done <= total && elapsed >= 0);
    c[1] = done;
    c[2] = total;
    return c[3] > 0 && done >= c[3];
}

static void test_bad_input(void **state)
{
    (void)state;
    double lam[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    tc_diag_op g = {10, lam};
    lnk_operator op = tc_diag_operator(&g);
    lnk_eigs_opts o;
    lnk_eigs_result r;
    lnk_eigs_opts_default(&o);
    o.k_top = 11;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_EINVAL);
    assert_msg_has("k_top = 11");
    assert_msg_has("n = 10");
    o.k_top = -1;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_EINVAL);
    assert_msg_has("k_top = -1");
    o.k_top = 0;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_EINVAL);
    assert_msg_has("nothing requested");
    o.k_top = 3;
    o.k_bottom = 3;
    o.max_steps = 5;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_EINVAL);
    assert_msg_has("max_steps = 5");
    o.max_steps = 100;
    o.tol = -1;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_EINVAL);
    assert_msg_has("tol = -1");
    o.tol = 1e-10;
    assert_int_equal(lnk_eigs(NULL, &o, &r), LNK_EINVAL);
    assert_msg_has("NULL operator");
    lnk_operator bad = {0, NULL, tc_diag_apply, NULL};
    assert_int_equal(lnk_eigs(&bad, &o, &r), LNK_EINVAL);
    assert_msg_has("n = 0");
    double zero[10] = {0};
    o.v0 = zero;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_EINVAL);
    assert_msg_has("norm 0");
    o.v0 = NULL;

    lnk_slq_opts so;
    lnk_slq_result sr;
    lnk_slq_opts_default(&so);
    so.runs = 0;
    assert_int_equal(lnk_slq(&op, &so, &sr), LNK_EINVAL);
    assert_msg_has("runs = 0");
    so.runs = 2;
    so.steps = 0;
    assert_int_equal(lnk_slq(&op, &so, &sr), LNK_EINVAL);
    assert_msg_has("steps = 0");
    so.steps = 80;
    assert_int_equal(lnk_slq(NULL, &so, &sr), LNK_EINVAL);
    assert_int_equal(lnk_slq(&op, &so, &sr), LNK_OK);
    double t[4], phi[4];
    assert_int_equal(lnk_slq_density(&sr, 0.0, t, 4, phi), LNK_EINVAL);
    assert_msg_has("sigma = 0");
    assert_int_equal(lnk_slq_density(&sr, -1.0, t, 4, phi), LNK_EINVAL);
    assert_msg_has("sigma = -1");
    assert_int_equal(lnk_slq_grid(&sr, 0.0, 6, 4, t), LNK_EINVAL);
    assert_msg_has("sigma = 0");
    assert_int_equal(lnk_slq_grid(&sr, 0.1, 6, 1, t), LNK_EINVAL);
    assert_msg_has("npts = 1");
    /* n = 10 < m = 80: each run stops at the invariant whole space */
    for (int v = 0; v < 2; v++)
        assert_true(sr.steps[v] <= 10 && sr.invariant[v]);
    lnk_slq_result_free(&sr);

    lnk_trace_opts to;
    lnk_trace_result tr;
    lnk_trace_opts_default(&to);
    to.probes = 1;
    assert_int_equal(lnk_trace(&op, &to, &tr), LNK_EINVAL);
    assert_msg_has("probes = 1");
    to.method = LNK_TRACE_HUTCHPP;
    to.probes = 3;
    assert_int_equal(lnk_trace(&op, &to, &tr), LNK_EINVAL);
    assert_msg_has("probes = 3");
    to.method = 7;
    assert_int_equal(lnk_trace(&op, &to, &tr), LNK_EINVAL);
    assert_msg_has("method = 7");

    assert_null(lnk_lanczos_alloc(10, 0, LNK_LANCZOS_FULL));
    assert_msg_has("max_steps = 0");
    assert_null(lnk_lanczos_alloc(10, 5, 9));
    assert_msg_has("mode = 9");
    lnk_lanczos *w = lnk_lanczos_alloc(10, 5, LNK_LANCZOS_FULL);
    assert_int_equal(lnk_lanczos_step(w, &op), LNK_EINVAL);
    assert_msg_has("no run started");
    lnk_lanczos_free(w);
}

/* The operator of the callback tests: spectrum cos(0.37 i), rotated (seed 51). */
static double *callback_matrix(int n)
{
    double *lam = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++)
        lam[i] = cos(0.37 * i);
    double *A = tc_spectral_matrix(n, lam, 51, NULL);
    free(lam);
    return A;
}

/* eigs: progress and cancel, the step limit, an operator's error passed
 * through by eigs, trace and SLQ. */
static void test_callbacks_and_errors(void **state)
{
    (void)state;
    int n = 200;
    double *A = callback_matrix(n);
    tc_dense_op d = {n, A, 0, 0};
    lnk_operator op = tc_dense_operator(&d);
    lnk_eigs_opts o;
    lnk_eigs_result r;
    lnk_eigs_opts_default(&o);
    o.k_top = 2;
    o.k_bottom = 2;
    o.tol = 1e-10; /* 8 steps must not reach it (the default is 1e-6) */
    /* progress and cancel */
    int calls = 0;
    o.progress = cancel_at_5;
    o.progress_ctx = &calls;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_OK);
    assert_int_equal(r.stop, LNK_EIGS_CANCELLED);
    assert_int_equal(r.steps, 5);
    assert_int_equal(calls, 5);
    assert_int_equal(r.k, 4);
    lnk_eigs_result_free(&r);
    /* step limit: not converged, and said so */
    o.progress = NULL;
    o.max_steps = 8;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_OK);
    assert_int_equal(r.stop, LNK_EIGS_MAXSTEPS);
    assert_int_equal(r.steps, 8);
    int nconv = 0;
    for (int i = 0; i < r.k; i++)
        nconv += r.converged[i];
    assert_true(nconv < r.k);
    assert_string_equal(lnk_eigs_stop_name(r.stop), "max_steps");
    lnk_eigs_result_free(&r);
    /* the operator's error is passed through with its message */
    o.max_steps = 100;
    d.calls = 0;
    d.fail_at = 3;
    assert_int_equal(lnk_eigs(&op, &o, &r), LNK_ENONFINITE);
    assert_msg_has("failing on purpose");
    assert_null(r.value);
    d.calls = 0;
    lnk_trace_opts to;
    lnk_trace_result tr;
    lnk_trace_opts_default(&to);
    assert_int_equal(lnk_trace(&op, &to, &tr), LNK_ENONFINITE);
    d.calls = 0;
    lnk_slq_opts so;
    lnk_slq_result sr;
    lnk_slq_opts_default(&so);
    assert_int_equal(lnk_slq(&op, &so, &sr), LNK_ENONFINITE);
    assert_null(sr.node);
    free(A);
}

/* SLQ and trace: seeds, runs, progress, cancelling, the CSV writers. */
static void test_callbacks_slq_trace(void **state)
{
    (void)state;
    int n = 200;
    double *A = callback_matrix(n);
    tc_dense_op d = {n, A, 0, 0};
    lnk_operator op = tc_dense_operator(&d);
    lnk_trace_opts to;
    lnk_trace_result tr;
    lnk_trace_opts_default(&to);
    lnk_slq_opts so;
    lnk_slq_opts_default(&so);
    /* same seed, same result; another seed, another start */
    lnk_slq_result a, b, c;
    so.runs = 2;
    so.steps = 20;
    assert_int_equal(lnk_slq(&op, &so, &a), LNK_OK);
    assert_int_equal(lnk_slq(&op, &so, &b), LNK_OK);
    so.seed = 1;
    assert_int_equal(lnk_slq(&op, &so, &c), LNK_OK);
    assert_memory_equal(a.node, b.node, 40 * sizeof(double));
    assert_true(memcmp(a.node, c.node, 40 * sizeof(double)) != 0);
    /* run v does not depend on the number of runs */
    lnk_slq_result one;
    so.seed = 0;
    so.runs = 1;
    assert_int_equal(lnk_slq(&op, &so, &one), LNK_OK);
    assert_memory_equal(one.node, a.node, 20 * sizeof(double));
    /* progress of SLQ and trace; cancelling */
    int pc[4] = {0, 0, 0, 0};
    so.progress = count_progress;
    so.progress_ctx = pc;
    so.runs = 3;
    lnk_slq_result e;
    assert_int_equal(lnk_slq(&op, &so, &e), LNK_OK);
    lnk_slq_result_free(&e);
    assert_int_equal(pc[0], 60);
    assert_int_equal(pc[1], 60);
    assert_int_equal(pc[2], 60);
    to.progress = count_progress;
    to.progress_ctx = pc;
    to.probes = 12;
    for (int method = 0; method < 2; method++) {
        memset(pc, 0, sizeof pc);
        to.method = method;
        assert_int_equal(lnk_trace(&op, &to, &tr), LNK_OK);
        assert_int_equal(pc[0], 12);
        assert_int_equal(pc[2], 12);
        memset(pc, 0, sizeof pc);
        pc[3] = 3;
        assert_int_equal(lnk_trace(&op, &to, &tr), LNK_EINVAL);
        assert_msg_has("cancelled");
        assert_int_equal(pc[0], 3);
    }
    memset(pc, 0, sizeof pc);
    pc[3] = 7;
    assert_int_equal(lnk_slq(&op, &so, &e), LNK_EINVAL);
    assert_msg_has("cancelled");
    assert_null(e.node);
    /* CSV of the nodes */
    const char *path = tu_path("nodes.csv");
    assert_int_equal(lnk_slq_write_nodes(&a, path), LNK_OK);
    size_t len;
    char *txt = tu_read_file(path, &len);
    assert_true(strncmp(txt, "run,index,node,weight\n", 22) == 0);
    int rows = 0;
    for (size_t i = 0; i < len; i++)
        rows += txt[i] == '\n';
    assert_int_equal(rows, 41);
    free(txt);
    double tt[3] = {-1, 0, 0.5}, ff[3] = {0, 0.25, 1e-300};
    path = tu_path("density.csv");
    assert_int_equal(lnk_density_write(path, tt, ff, 3), LNK_OK);
    txt = tu_read_file(path, &len);
    assert_string_equal(txt, "t,density\n-1,0\n0,0.25\n0.5,1e-300\n");
    free(txt);
    path = tu_path("select.csv");
    assert_int_equal(lnk_select_write(path, (const int[]){1, 0, 1}, 3), LNK_OK);
    txt = tu_read_file(path, &len);
    assert_string_equal(txt, "index,selectable\n0,1\n1,0\n2,1\n");
    free(txt);
    lnk_slq_result_free(&a), lnk_slq_result_free(&b), lnk_slq_result_free(&c);
    lnk_slq_result_free(&one);
    free(A);
}

/* ------------------------------------------- distributed vectors (groups)
 *
 * A group of P members simulated by P threads in one process: each thread
 * holds a slice of every vector, its sum() adds the members' values in
 * member order through a shared buffer (barriers on both sides), and its
 * operator allgathers x and applies its rows of A.  This exercises the
 * distributed code paths of Lanczos, eigs, trace and SLQ without MPI (the
 * MPI runs are tests/mpi/run.sh). */
#include <pthread.h>

#define GMAXC 1024 /* longest sum: the Gram-Schmidt coefficients (<= m + 1) */
typedef struct {
    int P, n;
    const double *A;
    pthread_barrier_t bar;
    double *buf, *xfull;
    size_t cnt[4], off[4];
    int which; /* 0 eigs, 1 Hutchinson, 2 Hutch++, 3 SLQ */
} gshared;

typedef struct {
    gshared *sh;
    int rank;
    lnk_group g;
    int rc;
    lnk_eigs_result er;
    lnk_trace_result tr;
    lnk_slq_result sr;
    char msg[256];
} gmember;

static int gsum_thr(void *ctx, double *x, int count)
{
    gmember *m = ctx;
    gshared *s = m->sh;
    if (count > GMAXC)
        return lnk_error(LNK_EINVAL, "test group: sum of %d > %d values", count, GMAXC);
    memcpy(s->buf + (size_t)m->rank * GMAXC, x, sizeof(double) * (size_t)count);
    pthread_barrier_wait(&s->bar);
    for (int i = 0; i < count; i++) {
        double v = s->buf[i];
        for (int r = 1; r < s->P; r++)
            v += s->buf[(size_t)r * GMAXC + i];
        x[i] = v;
    }
    pthread_barrier_wait(&s->bar);
    return LNK_OK;
}

static int gapply_thr(void *ctx, const double *x, double *y)
{
    gmember *m = ctx;
    gshared *s = m->sh;
    size_t o = s->off[m->rank], c = s->cnt[m->rank];
    memcpy(s->xfull + o, x, sizeof(double) * c);
    pthread_barrier_wait(&s->bar);
    cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)c, s->n, 1.0, s->A + o * (size_t)s->n, s->n,
                s->xfull, 1, 0.0, y, 1);
    pthread_barrier_wait(&s->bar);
    return LNK_OK;
}

static void *gmember_run(void *arg)
{
    gmember *m = arg;
    gshared *s = m->sh;
    m->g = (lnk_group){m->rank, s->P, (size_t)s->n, s->off[m->rank], gsum_thr, m};
    lnk_operator op = {s->cnt[m->rank], m, gapply_thr, &m->g};
    if (s->which == 0) {
        lnk_eigs_opts o;
        lnk_eigs_opts_default(&o);
        o.k_top = 3, o.k_bottom = 2, o.seed = 5, o.vectors = 1;
        m->rc = lnk_eigs(&op, &o, &m->er);
    } else if (s->which <= 2) {
        lnk_trace_opts o;
        lnk_trace_opts_default(&o);
        o.method = s->which == 1 ? LNK_TRACE_HUTCHINSON : LNK_TRACE_HUTCHPP;
        o.probes = 30, o.seed = 9;
        m->rc = lnk_trace(&op, &o, &m->tr);
    } else {
        lnk_slq_opts o;
        lnk_slq_opts_default(&o);
        o.runs = 3, o.steps = 25, o.seed = 2;
        m->rc = lnk_slq(&op, &o, &m->sr);
    }
    snprintf(m->msg, sizeof m->msg, "%s", lnk_errmsg());
    return NULL;
}

static void test_group_simulated(void **state)
{
    (void)state;
    int n = 150;
    double *A = malloc((size_t)n * n * sizeof(double)), *B = malloc((size_t)n * n * sizeof(double));
    tu_randn(B, (size_t)n * n, 31);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++)
            A[(size_t)i * n + k] = (B[(size_t)i * n + k] + B[(size_t)k * n + i]) / sqrt(2.0 * n);
    tc_dense_op d = {n, A, 0, 0};
    lnk_operator op1 = tc_dense_operator(&d);
    /* one-process references */
    lnk_eigs_opts eo;
    lnk_eigs_opts_default(&eo);
    eo.k_top = 3, eo.k_bottom = 2, eo.seed = 5, eo.vectors = 1;
    lnk_eigs_result er, ef;
    assert_int_equal(lnk_eigs(&op1, &eo, &er), LNK_OK);
    eo.reorth = LNK_REORTH_ALWAYS; /* the distributed partial runs against it too */
    assert_int_equal(lnk_eigs(&op1, &eo, &ef), LNK_OK);
    lnk_trace_result tr[2];
    for (int t = 0; t < 2; t++) {
        lnk_trace_opts o;
        lnk_trace_opts_default(&o);
        o.method = t == 0 ? LNK_TRACE_HUTCHINSON : LNK_TRACE_HUTCHPP;
        o.probes = 30, o.seed = 9;
        assert_int_equal(lnk_trace(&op1, &o, &tr[t]), LNK_OK);
    }
    lnk_slq_opts so;
    lnk_slq_opts_default(&so);
    so.runs = 3, so.steps = 25, so.seed = 2;
    lnk_slq_result sr;
    assert_int_equal(lnk_slq(&op1, &so, &sr), LNK_OK);

    for (int P = 2; P <= 3; P++) {
        for (int which = 0; which < 4; which++) {
            gshared s = {P, n, A, {{0}}, NULL, NULL, {0}, {0}, which};
            s.buf = calloc((size_t)P * GMAXC, sizeof(double));
            s.xfull = calloc((size_t)n, sizeof(double));
            size_t o = 0;
            for (int r = 0; r < P; r++) {
                s.cnt[r] = (size_t)n / P + ((size_t)r < (size_t)n % P);
                s.off[r] = o;
                o += s.cnt[r];
            }
            pthread_barrier_init(&s.bar, NULL, (unsigned)P);
            gmember mem[3];
            pthread_t th[3];
            for (int r = 0; r < P; r++) {
                memset(&mem[r], 0, sizeof mem[r]);
                mem[r].sh = &s, mem[r].rank = r;
                assert_int_equal(pthread_create(&th[r], NULL, gmember_run, &mem[r]), 0);
            }
            for (int r = 0; r < P; r++)
                pthread_join(th[r], NULL);
            pthread_barrier_destroy(&s.bar);
            for (int r = 0; r < P; r++) {
                if (mem[r].rc != LNK_OK)
                    fail_msg("P = %d, routine %d, member %d: %s", P, which, r, mem[r].msg);
                if (which == 0) {
                    assert_int_equal(mem[r].er.k, er.k);
                    assert_int_equal(mem[r].er.steps, er.steps);
                    for (int i = 0; i < er.k; i++) {
                        assert_true(tc_relerr(mem[r].er.value[i], er.value[i]) < 1e-12);
                        /* this member's slice of each eigenvector (same sign rule) */
                        for (size_t t = 0; t < s.cnt[r]; t++)
                            assert_true(fabs(mem[r].er.vectors[(size_t)i * s.cnt[r] + t] -
                                             er.vectors[(size_t)i * n + s.off[r] + t]) < 1e-9);
                        /* every member holds the same values, bitwise */
                        assert_true(mem[r].er.value[i] == mem[0].er.value[i]);
                        /* and full reorthogonalisation's, to 1e-10 of ||A|| */
                        assert_true(fabs(mem[r].er.value[i] - ef.value[i]) < 1e-10 * ef.scale);
                        assert_true(fabs(mem[r].er.residual[i] - ef.residual[i]) <
                                    1e-10 * ef.scale);
                    }
                } else if (which <= 2) {
                    assert_true(tc_relerr(mem[r].tr.trace, tr[which - 1].trace) < 1e-12);
                    assert_true(tc_relerr(mem[r].tr.std_error, tr[which - 1].std_error) < 1e-10);
                    assert_true(mem[r].tr.trace == mem[0].tr.trace);
                } else {
                    int total = sr.offset[sr.runs];
                    assert_int_equal(mem[r].sr.offset[mem[r].sr.runs], total);
                    for (int i = 0; i < total; i++) {
                        assert_true(fabs(mem[r].sr.node[i] - sr.node[i]) < 1e-12 * 4);
                        assert_true(fabs(mem[r].sr.weight[i] - sr.weight[i]) < 1e-12);
                        assert_true(mem[r].sr.node[i] == mem[0].sr.node[i]);
                    }
                }
            }
            for (int r = 0; r < P; r++)
                if (which == 0)
                    lnk_eigs_result_free(&mem[r].er);
                else if (which == 3)
                    lnk_slq_result_free(&mem[r].sr);
            free(s.buf);
            free(s.xfull);
        }
    }
    print_message("      group: partial reorthogonalisation %d steps, %d reorthogonalisations\n",
                  er.steps, er.n_reorth);
    assert_true(er.n_reorth > 0);
    lnk_eigs_result_free(&er);
    lnk_eigs_result_free(&ef);
    lnk_slq_result_free(&sr);
    free(A);
    free(B);
}

/* The agreement check on T fails when a member's values differ: a "group"
 * whose sum is the identity (member 1 of 2 never sees member 0's hash). */
static int sum_identity(void *ctx, double *x, int count)
{
    (void)ctx, (void)x, (void)count;
    return LNK_OK;
}

static void test_group_disagreement(void **state)
{
    (void)state;
    double t[3] = {1, 2, 3};
    lnk_group g = {1, 2, 6, 3, sum_identity, NULL};
    assert_int_equal(lnk_cv_check_same(&g, t, 3, "eigs"), LNK_EINVAL);
    assert_msg_has("rank 1's tridiagonal differs");
    lnk_group g0 = {0, 1, 3, 0, sum_identity, NULL};
    assert_int_equal(lnk_cv_check_same(&g0, t, 3, "eigs"), LNK_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_callbacks_and_errors),
        cmocka_unit_test(test_callbacks_slq_trace),
        cmocka_unit_test(test_group_simulated),
        cmocka_unit_test(test_group_disagreement),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
