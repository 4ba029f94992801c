/* Resumable runs (issue 18): the checkpoint states of lnk_eigs, lnk_trace and
 * lnk_slq on a plain matrix, stopped at many points and resumed, give bitwise
 * the uninterrupted result; the checkpoint files (src/io/checkpoint.c) save and
 * read them back, and refuse a different run, a corrupt or truncated file, a
 * changed row and an orphan rows file with one line; the kill test of the
 * command line (tests/test_checkpoint.sh: SIGKILL at random points and during
 * saves, mismatch and corrupt-file refusals, partial + basis on disk against
 * full reorthogonalisation) runs from here. */
#include "testutil.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lnkit/checkpoint.h"
#include "lnkit/curvature.h"

#define assert_msg_has(s)                                                                   \
    do {                                                                                    \
        if (!strstr(lnk_errmsg(), (s)))                                                     \
            fail_msg("message \"%s\" lacks \"%s\"", lnk_errmsg(), (s));                     \
    } while (0)

/* ------------------------------------------------------------ the matrix */

enum { N = 240 };
typedef struct {
    double *A;
    long applies;
} dense_op;

static int dense_apply(void *ctx, const double *x, double *y)
{
    dense_op *d = ctx;
    cblas_dgemv(CblasRowMajor, CblasNoTrans, N, N, 1.0, d->A, N, x, 1, 0.0, y, 1);
    d->applies++;
    return LNK_OK;
}

/* A random symmetric matrix (semicircle bulk in [-2, 2]) with outliers at
 * both ends, so that Ritz values converge and partial reorthogonalisation
 * is triggered. */
static lnk_operator make_op(dense_op *d)
{
    d->A = malloc(sizeof(double) * N * N);
    assert_non_null(d->A);
    tu_randn(d->A, (size_t)N * N, 1801);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < i; j++)
            d->A[i * N + j] = d->A[j * N + i] = (d->A[i * N + j] + d->A[j * N + i]) / sqrt(2.0 * N);
    for (int i = 0; i < N; i++)
        d->A[i * N + i] = d->A[i * N + i] / sqrt(N);
    const double out[] = {9, 7.5, 6, -8, -5.5};
    for (int i = 0; i < 5; i++)
        d->A[(7 * i + 3) * N + 7 * i + 3] += out[i];
    d->applies = 0;
    return (lnk_operator){N, d, dense_apply, NULL};
}

/* ------------------------------------------------------- deep-copied states */

typedef struct {
    lnk_lanczos_state s;
    double *alpha, *beta, *om, *om_prev, *v0, *vprev, *vcur;
    int *ivl;
} lz_copy;

static double *ddup(const double *x, size_t k)
{
    if (!x)
        return NULL;
    double *y = malloc(sizeof(double) * (k ? k : 1));
    assert_non_null(y);
    memcpy(y, x, sizeof(double) * k);
    return y;
}

static void lz_save(lz_copy *c, const lnk_lanczos_state *s, size_t n)
{
    size_t m = (size_t)s->max_steps;
    c->s = *s;
    c->s.alpha = c->alpha = ddup(s->alpha, m);
    c->s.beta = c->beta = ddup(s->beta, m);
    c->s.om = c->om = ddup(s->om, m + 1);
    c->s.om_prev = c->om_prev = ddup(s->om_prev, m + 1);
    c->ivl = NULL;
    if (s->ivl) {
        c->ivl = malloc(sizeof(int) * 2 * (m + 1));
        assert_non_null(c->ivl);
        memcpy(c->ivl, s->ivl, sizeof(int) * 2 * (m + 1));
    }
    c->s.ivl = c->ivl;
    c->s.v0 = c->v0 = ddup(s->v0, n);
    c->s.vprev = c->vprev = ddup(s->vprev, n);
    c->s.vcur = c->vcur = ddup(s->vcur, n);
}

static void lz_free(lz_copy *c)
{
    free(c->alpha), free(c->beta), free(c->om), free(c->om_prev), free(c->ivl);
    free(c->v0), free(c->vprev), free(c->vcur);
    memset(c, 0, sizeof *c);
}

/* ----------------------------------------------------------------- eigs */

typedef struct {
    long at;              /* capture after this many applies */
    long seen;
    int taken;
    lz_copy lz;
    lnk_eigs_state st;
    double *resid;
    const double *basis;  /* the run's basis memory */
    double *basis_copy;
    size_t rows;
} eigs_cap;

static int eigs_capture(void *ctx, const lnk_eigs_state *st, int must)
{
    (void)must;
    eigs_cap *c = ctx;
    if (++c->seen != c->at || c->taken)
        return LNK_OK;
    c->taken = 1;
    lz_save(&c->lz, &st->lanczos, N);
    c->st = *st;
    c->st.lanczos = c->lz.s;
    c->resid = ddup(st->resid, (size_t)st->n_resid);
    c->st.resid = c->resid;
    if (c->basis)
        memcpy(c->basis_copy, c->basis, sizeof(double) * N * c->rows);
    return lnk_error(LNK_EINVAL, "stopped here by the test");
}

/* extra: applies done twice (LIGHT's second pass, when cut) */
static void check_eigs_same(const lnk_eigs_result *a, const lnk_eigs_result *b, long extra)
{
    assert_int_equal(a->k, b->k);
    assert_int_equal(a->steps, b->steps);
    assert_int_equal(a->stop, b->stop);
    assert_int_equal(a->n_applies + extra, b->n_applies);
    assert_int_equal(a->n_reorth, b->n_reorth);
    assert_memory_equal(a->value, b->value, sizeof(double) * (size_t)a->k);
    assert_memory_equal(a->residual, b->residual, sizeof(double) * (size_t)a->k);
    assert_memory_equal(a->bound, b->bound, sizeof(double) * (size_t)a->k);
    assert_true(a->scale == b->scale);
}

static void eigs_case(int mode, int reorth, const long *points, int np)
{
    dense_op d;
    lnk_operator op = make_op(&d);
    lnk_eigs_opts o;
    lnk_eigs_opts_default(&o);
    o.k_top = 3, o.k_bottom = 3, o.max_steps = 150, o.tol = 1e-10, o.mode = mode;
    o.reorth = reorth, o.seed = 7;
    size_t rows = (size_t)o.max_steps + 1;
    double *B = mode == LNK_LANCZOS_FULL ? malloc(sizeof(double) * N * rows) : NULL;
    double *B2 = mode == LNK_LANCZOS_FULL ? malloc(sizeof(double) * N * rows) : NULL;
    o.basis = B;
    lnk_eigs_result ref, r;
    eigs_cap count = {.at = -1};
    o.checkpoint = eigs_capture;
    o.checkpoint_ctx = &count;
    assert_int_equal(lnk_eigs(&op, &o, &ref), LNK_OK);
    long total = d.applies, calls = count.seen; /* LIGHT: its second pass reports nothing */
    assert_int_equal(calls, mode == LNK_LANCZOS_FULL ? total : total - (ref.steps - 1));
    int nres = 0;
    for (int p = 0; p < np; p++) {
        long at = points[p] < 0 ? calls + points[p] : points[p];
        eigs_cap c = {.at = at, .basis = B, .basis_copy = B2, .rows = rows};
        o.checkpoint = eigs_capture;
        o.checkpoint_ctx = &c;
        o.resume = NULL;
        if (B)
            memset(B, 0, sizeof(double) * N * rows);
        assert_int_not_equal(lnk_eigs(&op, &o, &r), LNK_OK);
        assert_true(c.taken);
        nres += c.st.n_resid > 0;
        /* resume in fresh memory (the copy of the basis, rows beyond junk) */
        if (B2)
            for (size_t i = (size_t)(c.st.lanczos.steps + 1) * N; i < N * rows; i++)
                B2[i] = 1e300;
        lnk_eigs_opts o2 = o;
        o2.checkpoint = NULL;
        o2.resume = &c.st;
        o2.basis = B2;
        d.applies = 0;
        assert_int_equal(lnk_eigs(&op, &o2, &r), LNK_OK);
        int twice = mode == LNK_LANCZOS_LIGHT && c.st.n_resid ? ref.steps - 1 : 0;
        check_eigs_same(&ref, &r, twice);
        /* no product done twice (LIGHT: but its second pass, if it had begun) */
        assert_int_equal(d.applies, calls - at + (mode == LNK_LANCZOS_LIGHT ? ref.steps - 1 : 0));
        lnk_eigs_result_free(&r);
        lz_free(&c.lz);
        free(c.resid);
    }
    assert_true(nres >= 1); /* one point in the residual phase */
    lnk_eigs_result_free(&ref);
    free(B), free(B2), free(d.A);
}

static void test_eigs_resume(void **s)
{
    (void)s;
    /* after the first apply, in the run, at its last step, in the residuals */
    const long pts[] = {1, 2, 17, 40, -7, -2, -1};
    eigs_case(LNK_LANCZOS_FULL, LNK_REORTH_PARTIAL, pts, 7);
    eigs_case(LNK_LANCZOS_FULL, LNK_REORTH_ALWAYS, pts, 7);
    eigs_case(LNK_LANCZOS_LIGHT, LNK_REORTH_PARTIAL, pts, 7);
}

/* ---------------------------------------------------------------- trace */

typedef struct {
    long at, seen;
    int taken;
    lnk_trace_state st;
    double *samples, *rows;
} trace_cap;

static int trace_capture(void *ctx, const lnk_trace_state *st, int must)
{
    (void)must;
    trace_cap *c = ctx;
    if (++c->seen != c->at || c->taken)
        return LNK_OK;
    c->taken = 1;
    c->st = *st;
    c->st.samples = c->samples = ddup(st->samples, (size_t)st->n_samples);
    c->st.rows = c->rows = ddup(st->rows, (size_t)st->n_rows * N);
    return lnk_error(LNK_EINVAL, "stopped here by the test");
}

static void test_trace_resume(void **s)
{
    (void)s;
    dense_op d;
    lnk_operator op = make_op(&d);
    for (int method = 0; method < 2; method++) {
        lnk_trace_opts o;
        lnk_trace_opts_default(&o);
        o.method = method, o.probes = 31, o.seed = 3;
        lnk_trace_result ref, r;
        assert_int_equal(lnk_trace(&op, &o, &ref), LNK_OK);
        int phases[3] = {0};
        for (long at = 1; at < o.probes; at += (method ? 1 : 4)) {
            trace_cap c = {.at = at};
            o.checkpoint = trace_capture;
            o.checkpoint_ctx = &c;
            o.resume = NULL;
            assert_int_not_equal(lnk_trace(&op, &o, &r), LNK_OK);
            assert_true(c.taken);
            phases[c.st.phase]++;
            lnk_trace_opts o2 = o;
            o2.checkpoint = NULL;
            o2.resume = &c.st;
            d.applies = 0;
            assert_int_equal(lnk_trace(&op, &o2, &r), LNK_OK);
            assert_int_equal(d.applies, o.probes - at);
            assert_true(r.trace == ref.trace);
            assert_true(r.std_error == ref.std_error);
            assert_int_equal(r.probes, ref.probes);
            free(c.samples), free(c.rows);
        }
        if (method) /* Hutch++: every phase was cut */
            assert_true(phases[0] > 0 && phases[1] > 0 && phases[2] > 0);
    }
    free(d.A);
}

/* ------------------------------------------------------------------ SLQ */

typedef struct {
    long at, seen;
    int taken, must;
    lz_copy lz;
    lnk_slq_state st;
    double *node, *weight;
    int *offset, *steps, *inv;
    const double *basis;
    double *basis_copy;
    size_t rows;
} slq_cap;

static int *idup(const int *x, size_t k)
{
    int *y = malloc(sizeof(int) * (k ? k : 1));
    assert_non_null(y);
    memcpy(y, x, sizeof(int) * k);
    return y;
}

static int slq_capture(void *ctx, const lnk_slq_state *st, int must)
{
    slq_cap *c = ctx;
    /* a must-save counts as a point of its own (same applies as the step before) */
    if (++c->seen != c->at || c->taken)
        return LNK_OK;
    c->taken = 1;
    c->must = must;
    c->st = *st;
    lz_save(&c->lz, &st->lanczos, N);
    c->st.lanczos = c->lz.s;
    c->st.offset = c->offset = idup(st->offset, (size_t)st->run + 1);
    c->st.node = c->node = ddup(st->node, (size_t)st->offset[st->run]);
    c->st.weight = c->weight = ddup(st->weight, (size_t)st->offset[st->run]);
    c->st.steps = c->steps = idup(st->steps, (size_t)st->run);
    c->st.invariant = c->inv = idup(st->invariant, (size_t)st->run);
    if (c->basis)
        memcpy(c->basis_copy, c->basis, sizeof(double) * N * c->rows);
    return lnk_error(LNK_EINVAL, "stopped here by the test");
}

static void test_slq_resume(void **s)
{
    (void)s;
    dense_op d;
    lnk_operator op = make_op(&d);
    for (int mode = 0; mode < 2; mode++) {
        lnk_slq_opts o;
        lnk_slq_opts_default(&o);
        o.runs = 3, o.steps = 40, o.seed = 11, o.mode = mode;
        size_t rows = (size_t)o.steps + 1;
        double *B = mode == LNK_LANCZOS_FULL ? malloc(sizeof(double) * N * rows) : NULL;
        double *B2 = mode == LNK_LANCZOS_FULL ? malloc(sizeof(double) * N * rows) : NULL;
        o.basis = B;
        lnk_slq_result ref, r;
        assert_int_equal(lnk_slq(&op, &o, &ref), LNK_OK);
        int musts = 0;
        /* points 41 and 82 are the must-saves between runs */
        const long pts[] = {1, 13, 40, 41, 42, 70, 82, 83, 100, 122};
        for (int p = 0; p < 10; p++) {
            slq_cap c = {.at = pts[p], .basis = B, .basis_copy = B2, .rows = rows};
            o.checkpoint = slq_capture;
            o.checkpoint_ctx = &c;
            o.resume = NULL;
            assert_int_not_equal(lnk_slq(&op, &o, &r), LNK_OK);
            assert_true(c.taken);
            musts += c.must;
            lnk_slq_opts o2 = o;
            o2.checkpoint = NULL;
            o2.resume = &c.st;
            o2.basis = B2;
            assert_int_equal(lnk_slq(&op, &o2, &r), LNK_OK);
            int tot = ref.offset[ref.runs];
            assert_memory_equal(ref.offset, r.offset, sizeof(int) * (size_t)(ref.runs + 1));
            assert_memory_equal(ref.node, r.node, sizeof(double) * (size_t)tot);
            assert_memory_equal(ref.weight, r.weight, sizeof(double) * (size_t)tot);
            assert_int_equal(ref.n_applies, r.n_applies);
            assert_true(ref.node_min == r.node_min && ref.node_max == r.node_max);
            lnk_slq_result_free(&r);
            lz_free(&c.lz);
            free(c.node), free(c.weight), free(c.offset), free(c.steps), free(c.inv);
        }
        assert_int_equal(musts, 2);
        lnk_slq_result_free(&ref);
        free(B), free(B2);
    }
    free(d.A);
}

/* ------------------------------------------------------ checkpoint files */

typedef struct {
    lnk_ckpt *ck;
    long products, stop_at;
} file_ctx;

static int save_eigs(void *ctx, const lnk_eigs_state *st, int must)
{
    (void)must;
    file_ctx *f = ctx;
    f->products++;
    if (f->products % 3 == 0) {
        int rc = lnk_ckpt_save_eigs(f->ck, st, f->products);
        if (rc != LNK_OK)
            return rc;
    }
    return f->products == f->stop_at ? lnk_error(LNK_EINVAL, "stopped by the test") : LNK_OK;
}

static void make_id(lnk_ckpt_id *id, const char *tol)
{
    memset(id, 0, sizeof *id);
    assert_int_equal(lnk_ckpt_id_add(id, "--weights (SHA-256)", "%s", "ab12"), LNK_OK);
    assert_int_equal(lnk_ckpt_id_add(id, "--tol", "%s", tol), LNK_OK);
}

static int open_ck(lnk_ckpt **ck, const char *path, const lnk_ckpt_id *id, int kind)
{
    return lnk_ckpt_open(ck, NULL, path, "eigs", id, kind, N, 151, 1);
}

/* Byte surgery on a file. */
static void patch(const char *path, long off, int whence, unsigned char x)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, off, whence), 0);
    int c = fgetc(f);
    assert_int_equal(fseek(f, off, whence), 0);
    fputc(c ^ x, f);
    fclose(f);
}

static void test_files(void **s)
{
    (void)s;
    dense_op d;
    lnk_operator op = make_op(&d);
    lnk_eigs_opts o;
    lnk_eigs_opts_default(&o);
    o.k_top = 3, o.k_bottom = 3, o.max_steps = 150, o.tol = 1e-10, o.seed = 7;
    lnk_eigs_result ref, r;
    assert_int_equal(lnk_eigs(&op, &o, &ref), LNK_OK);

    const char *P = tu_path("ck");
    char rows[PATH_MAX], cp[PATH_MAX];
    snprintf(rows, sizeof rows, "%s.basis", P);
    lnk_ckpt_id id;
    make_id(&id, "1e-10");
    /* stopped at 3 points in turn (the last in the residual phase) */
    long stops[] = {20, 44, ref.n_applies - 2};
    for (int i = 0; i < 3; i++) {
        lnk_ckpt *ck;
        assert_int_equal(open_ck(&ck, P, &id, LNK_CKPT_EIGS), LNK_OK);
        assert_int_equal(lnk_ckpt_resumed(ck), i > 0);
        file_ctx f = {ck, lnk_ckpt_products(ck), stops[i]};
        lnk_eigs_opts o2 = o;
        o2.basis = lnk_ckpt_basis(ck);
        o2.resume = lnk_ckpt_eigs_state(ck);
        o2.checkpoint = save_eigs;
        o2.checkpoint_ctx = &f;
        assert_int_not_equal(lnk_eigs(&op, &o2, &r), LNK_OK);
        lnk_ckpt_close(ck);
    }
    /* a copy of the good files for the corruption cases */
    char *out;
    assert_int_equal(tu_run(&out, "cp '%s' '%s.good' && cp '%s' '%s.good'", P, P, rows, rows), 0);
    free(out);
    lnk_ckpt *ck;
    assert_int_equal(open_ck(&ck, P, &id, LNK_CKPT_EIGS), LNK_OK);
    assert_int_equal(lnk_ckpt_products(ck), (ref.n_applies - 2) / 3 * 3);
    file_ctx f = {ck, lnk_ckpt_products(ck), -1};
    lnk_eigs_opts o2 = o;
    o2.basis = lnk_ckpt_basis(ck);
    o2.resume = lnk_ckpt_eigs_state(ck);
    o2.checkpoint = save_eigs;
    o2.checkpoint_ctx = &f;
    assert_int_equal(lnk_eigs(&op, &o2, &r), LNK_OK);
    check_eigs_same(&ref, &r, 0);
    lnk_eigs_result_free(&r);
    assert_int_equal(lnk_ckpt_remove(ck), LNK_OK);
    lnk_ckpt_close(ck);
    assert_int_not_equal(access(P, F_OK), 0);
    assert_int_not_equal(access(rows, F_OK), 0);

#define RESTORE()                                                                           \
    do {                                                                                    \
        assert_int_equal(tu_run(&out, "cp '%s.good' '%s' && cp '%s.good' '%s'", P, P, rows, \
                                rows), 0);                                                  \
        free(out);                                                                          \
    } while (0)
#define REFUSED(status, text)                                                               \
    do {                                                                                    \
        lnk_ckpt *c2 = NULL;                                                                \
        assert_int_equal(open_ck(&c2, P, &id, LNK_CKPT_EIGS), status);                      \
        assert_null(c2);                                                                    \
        assert_msg_has(text);                                                               \
        assert_null(strchr(lnk_errmsg(), '\n'));                                            \
    } while (0)
    /* another run: each item named */
    RESTORE();
    lnk_ckpt_id id2;
    make_id(&id2, "1e-08");
    assert_int_equal(open_ck(&ck, P, &id2, LNK_CKPT_EIGS), LNK_EMISMATCH);
    assert_msg_has("--tol is 1e-10 there, 1e-08 here");
    lnk_ckpt_id_free(&id2);
    memset(&id2, 0, sizeof id2);
    lnk_ckpt_id_add(&id2, "--weights (SHA-256)", "ffff");
    lnk_ckpt_id_add(&id2, "--tol", "1e-10");
    assert_int_equal(open_ck(&ck, P, &id2, LNK_CKPT_EIGS), LNK_EMISMATCH);
    assert_msg_has("--weights (SHA-256) is ab12 there, ffff here");
    lnk_ckpt_id_add(&id2, "--block", "*");
    assert_int_equal(open_ck(&ck, P, &id2, LNK_CKPT_EIGS), LNK_EMISMATCH);
    lnk_ckpt_id_free(&id2);
    assert_int_equal(open_ck(&ck, P, &id, LNK_CKPT_TRACE), LNK_EMISMATCH);
    assert_msg_has("written by lnkit eigs");
    /* corrupt: a flipped byte in the state, the end cut off, a changed row,
     * a short rows file, a foreign file */
    patch(P, 40, SEEK_SET, 0x10);
    REFUSED(LNK_EFORMAT, "SHA-256 does not match");
    RESTORE();
    assert_int_equal(truncate(P, 300), 0);
    REFUSED(LNK_EFORMAT, "truncated");
    RESTORE();
    patch(rows, 8 * N * 5 + 17, SEEK_SET, 0x01);
    REFUSED(LNK_EFORMAT, "row 5 does not match its checksum");
    RESTORE();
    assert_int_equal(truncate(rows, 8 * N * 30), 0);
    REFUSED(LNK_EFORMAT, "truncated?");
    tu_write_file(P, "which,index\n", 12);
    REFUSED(LNK_EFORMAT, "not a lnkit checkpoint");
    tu_write_file(P, "", 0);
    REFUSED(LNK_EFORMAT, "too short");
    /* an orphan rows file is not replaced */
    assert_int_equal(unlink(P), 0);
    REFUSED(LNK_EIO, "exists but its checkpoint");
    snprintf(cp, sizeof cp, "%s", rows);
    assert_int_equal(unlink(cp), 0);
    /* a folder as checkpoint */
    assert_int_equal(tu_run(&out, "mkdir '%s'", P), 0);
    free(out);
    REFUSED(LNK_EIO, "not a regular file");
    lnk_ckpt_id_free(&id);
    lnk_eigs_result_free(&ref);
    free(d.A);
}

/* --------------------------------------------------- the command line */

static void test_cli_kill(void **s)
{
    (void)s;
    tu_run_script("test_checkpoint.sh");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eigs_resume), cmocka_unit_test(test_trace_resume),
        cmocka_unit_test(test_slq_resume),  cmocka_unit_test(test_files),
        cmocka_unit_test(test_cli_kill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
