/* The curvature operators and block statistics from the command line:
 *   - eigs --operator ggn|functional on a block of a data set of two files in
 *     chunks equals the dense block of the library's G / F (1e-8);
 *   - hvp --operator ggn|functional equals lnk_model_ggn_apply;
 *   - lnkit blocks: one row per tensor and group, extremes against the dense
 *     block's eigenvalues, ||A_bb||_F within 3 standard errors of the dense
 *     one, a tensor block and a group of the same tensor give identical
 *     densities (JS distance 0), every pair once, sidecars naming the
 *     operator; for every task;
 *   - bad input: one line 'lnkit blocks: ...', exit 2, no output left behind. */
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "testutil.h"

static int count_files(const char *dir)
{
    char *out;
    tu_run(&out, "ls -A '%s' | wc -l", dir);
    int n = atoi(out);
    free(out);
    return n;
}

/* w_TASK.{json,safetensors}, b1_TASK, b2_TASK in the temporary directory. */
static void make_files(const char *task)
{
    char *out;
    int st = tu_run(&out, "cd '%s' && L='%s' && $L init --task %s --d 8 --h 2 --L 1 --d-ff 8 "
                    "--V 11 --norm-pos pre --label-smoothing 0.1 --seed 3 -o w_%s.safetensors "
                    "--quiet && $L batch --synthetic --config w_%s.json --rows 3 --len 5 --rng-seed 1 "
                    "-o b1_%s.safetensors --quiet && $L batch --synthetic --config w_%s.json "
                    "--rows 2 --len 4 --rng-seed 2 -o b2_%s.safetensors --quiet",
                    tu_tmpdir(), tu_lnkit(), task, task, task, task, task, task);
    if (st)
        fail_msg("setup %s (%d): %s", task, st, out);
    free(out);
}

typedef struct {
    lnk_config c;
    lnk_model *m;
    double *th;
    lnk_batch b[2];
} lib;

static void lib_open(lib *l, const char *task)
{
    char p[600];
    lnk_config_default(&l->c);
    snprintf(p, sizeof p, "w_%s.json", task);
    assert_int_equal(lnk_config_load_json(&l->c, tu_path(p)), LNK_OK);
    assert_int_equal(lnk_config_finalize(&l->c), LNK_OK);
    l->m = lnk_model_alloc(&l->c);
    assert_non_null(l->m);
    l->th = malloc(sizeof(double) * lnk_model_n_params(l->m));
    snprintf(p, sizeof p, "w_%s.safetensors", task);
    assert_int_equal(lnk_weights_load(tu_path(p), l->m, l->th), LNK_OK);
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "b%d_%s.safetensors", i + 1, task);
        assert_int_equal(lnk_batch_load(tu_path(p), l->m, &l->b[i]), LNK_OK);
    }
}

static void lib_close(lib *l)
{
    lnk_batch_free(&l->b[0]);
    lnk_batch_free(&l->b[1]);
    free(l->th);
    lnk_model_free(l->m);
    lnk_config_clear(&l->c);
}

/* Ascending eigenvalues of the dense block of kind k on patterns over both
 * files (malloc'd, *n its size); *frob its Frobenius norm. */
static double *dense_eigs(lib *l, const char *patterns, lnk_op_kind k, size_t *n, double *frob)
{
    lnk_hessian *h = lnk_hessian_alloc(l->m, l->th, l->b, 2, patterns);
    assert_non_null(h);
    assert_int_equal(lnk_hessian_set_kind(h, k), LNK_OK);
    lnk_operator op = lnk_hessian_operator(h);
    size_t m = op.n;
    double *A = malloc(sizeof(double) * m * m), *e = calloc(m, sizeof(double));
    double *w = malloc(sizeof(double) * m), f = 0;
    for (size_t j = 0; j < m; j++) {
        e[j] = 1;
        assert_int_equal(op.apply(op.ctx, e, A + j * m), LNK_OK);
        e[j] = 0;
    }
    for (size_t i = 0; i < m * m; i++)
        f += A[i] * A[i];
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < i; j++)
            A[i * m + j] = A[j * m + i] = 0.5 * (A[i * m + j] + A[j * m + i]);
    assert_int_equal(LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'N', 'U', (int)m, A, (int)m, w), 0);
    free(A);
    free(e);
    lnk_hessian_free(h);
    *n = m;
    *frob = sqrt(f);
    return w;
}

static const char *tasks[] = {"lm", "cls", "seq2seq"};

static void test_eigs_operator(void **s)
{
    (void)s;
    for (int ti = 0; ti < 3; ti++) {
        const char *task = tasks[ti];
        make_files(task);
        lib l;
        lib_open(&l, task);
        const char *pat = ti == 1 ? "enc.0.attn.wv,*.ffn.b2" : "dec.0.attn.wv,*.ffn.b2";
        const char *kinds[] = {"ggn", "functional"};
        for (int k = 0; k < 2; k++) {
            size_t n;
            double f, *w = dense_eigs(&l, pat, (lnk_op_kind)(k + 1), &n, &f);
            char *out;
            int st = tu_run(&out, "cd '%s' && '%s' eigs --config w_%s.json --weights "
                            "w_%s.safetensors --batch b1_%s.safetensors --batch b2_%s.safetensors "
                            "--chunk 2 --block '%s' --operator %s -k 2 --which both --tol 1e-10 "
                            "--max-steps 200 -o e_%s_%s.csv --quiet && cat e_%s_%s.csv && "
                            "grep -c '\"operator\": \"%s\"' e_%s_%s.meta.json",
                            tu_tmpdir(), tu_lnkit(), task, task, task, task, pat, kinds[k], task,
                            kinds[k], task, kinds[k], kinds[k], task, kinds[k]);
            if (st)
                fail_msg("eigs %s %s (%d): %s", task, kinds[k], st, out);
            /* which,index,eigenvalue,...: top 0, top 1, bottom 0, bottom 1 */
            double v[4];
            char *p = strchr(out, '\n');
            for (int i = 0; i < 4; i++) {
                p = strchr(p, ',') + 1;
                p = strchr(p, ',') + 1;
                v[i] = strtod(p, &p);
                p = strchr(p, '\n');
            }
            double want[4] = {w[n - 1], w[n - 2], w[0], w[1]}, scale = fmax(-w[0], w[n - 1]);
            /* G is singular (rank <= the scored rows times C - 1): its null space is a
             * multiple eigenvalue 0, which one Krylov space finds once (curvature.h), so
             * its second bottom value is the next distinct one */
            for (int i = 0; i < (k == 0 ? 3 : 4); i++)
                if (!(fabs(v[i] - want[i]) <= 1e-8 * scale))
                    fail_msg("eigs %s %s: eigenvalue %d is %.15g, dense %.15g", task, kinds[k], i,
                             v[i], want[i]);
            assert_non_null(strstr(p, "1"));
            if (k == 0) /* G is PSD */
                assert_true(w[0] >= -1e-12 * scale);
            free(out);
            free(w);
        }
        lib_close(&l);
    }
}

static void test_hvp_operator(void **s)
{
    (void)s;
    make_files("lm");
    lib l;
    lib_open(&l, "lm");
    size_t n = lnk_model_n_params(l.m);
    double *v = malloc(sizeof(double) * n), *h = malloc(sizeof(double) * n),
           *g = malloc(sizeof(double) * n), *y = malloc(sizeof(double) * n);
    tu_randn(v, n, 4);
    assert_int_equal(lnk_vector_save(tu_path("v.safetensors"), l.m, v, 0), LNK_OK);
    lnk_workspace *ws = lnk_workspace_alloc(l.m, l.b[0].B, l.b[0].S, l.b[0].T, LNK_WS_HVP);
    assert_int_equal(lnk_model_hvp_prepare(ws, l.th, &l.b[0], NULL, NULL), LNK_OK);
    assert_int_equal(lnk_model_ggn_apply(ws, v, h, g), LNK_OK);
    const char *kinds[] = {"ggn", "functional"};
    for (int k = 0; k < 2; k++) {
        char *out;
        int st = tu_run(&out, "cd '%s' && '%s' hvp --config w_lm.json --weights w_lm.safetensors "
                        "--batch b1_lm.safetensors --vector v.safetensors --operator %s -o "
                        "hv_%s.safetensors --repeat 2 --quiet", tu_tmpdir(), tu_lnkit(), kinds[k],
                        kinds[k]);
        if (st)
            fail_msg("hvp --operator %s (%d): %s", kinds[k], st, out);
        free(out);
        char p[64];
        snprintf(p, sizeof p, "hv_%s.safetensors", kinds[k]);
        int layout;
        assert_int_equal(lnk_vector_load(tu_path(p), l.m, y, &layout), LNK_OK);
        for (size_t i = 0; i < n; i++) {
            double want = k ? h[i] - g[i] : g[i];
            assert_true(fabs(y[i] - want) <= 1e-13 * (1 + fabs(want)));
        }
    }
    lnk_workspace_free(ws);
    free(v);
    free(h);
    free(g);
    free(y);
    lib_close(&l);
}

/* The field col (0-based) of the CSV row whose first field is key and second type. */
static double field(const char *csv, const char *key, const char *type, int col)
{
    char pre[200];
    int quoted = strchr(key, ',') != NULL; /* CSV quotes a field with a comma */
    snprintf(pre, sizeof pre, quoted ? "\n\"%s\",%s," : "\n%s,%s,", key, type);
    const char *p = strstr(csv, pre);
    if (!p)
        fail_msg("no row %s,%s in:\n%s", key, type, csv);
    p += strlen(pre);
    for (int i = 2; i < col; i++)
        p = strchr(p, ',') + 1;
    return strtod(p, NULL);
}

static void test_blocks(void **s)
{
    (void)s;
    for (int ti = 0; ti < 3; ti++) {
        const char *task = tasks[ti], *stack = ti == 1 ? "enc" : "dec";
        make_files(task);
        lib l;
        lib_open(&l, task);
        char grp[80], one[80];
        snprintf(grp, sizeof grp, "%s.0.attn.wq,*.ffn.w1", stack);
        snprintf(one, sizeof one, "%s.0.attn.wv", stack);
        const char *kinds[] = {"hessian", "ggn", "functional"};
        for (int k = 0; k < 3; k++) {
            char *out, dir[700];
            snprintf(dir, sizeof dir, "%s/blk_%s_%d", tu_tmpdir(), task, k);
            mkdir(dir, 0777);
            int st = tu_run(&out, "cd '%s' && '%s' blocks --config ../w_%s.json --weights "
                            "../w_%s.safetensors --batch ../b1_%s.safetensors --batch "
                            "../b2_%s.safetensors --block '%s.0.*' --group '%s' --group '%s' "
                            "--operator %s --probes 100 --max-steps 200 --tol 1e-10 --runs 2 "
                            "--steps 15 -o b.csv --pairs p.csv --density d.csv --quiet "
                            "2>warn.txt; rc=$?; { [ $rc = 0 ] || [ $rc = 3 ]; } && "
                            "cat b.csv && echo PAIRS && cat p.csv && exit $rc",
                            dir, tu_lnkit(), task, task, task, task, stack, grp, one, kinds[k]);
            if (st != 0 && st != 3)
                fail_msg("blocks %s %s (%d): %s", task, kinds[k], st, out);
            /* exit 3 exactly when an extreme did not converge (docs/guide/files.md, "Exit
             * status"): a 0 in top_converged or bottom_converged */
            int zeros = 0;
            for (const char *p = strchr(out, '\n'); p && p[1] && strncmp(p + 1, "PAIRS", 5);
                 p = strchr(p + 1, '\n')) {
                const char *f = p + 1;
                if (*f == '"')
                    f = strchr(f + 1, '"');
                for (int c = 1; c < 15 && f; c++) {
                    f = strchr(f, ',');
                    f = f ? f + 1 : NULL;
                    if (f && (c == 11 || c == 14))
                        zeros += *f == '0';
                }
            }
            if ((st == 3) != (zeros > 0))
                fail_msg("blocks %s %s: exit %d with %d extremes not converged", task, kinds[k],
                         st, zeros);
            const char *pairs = strstr(out, "PAIRS\n");
            assert_non_null(pairs);
            int rows = 0, prs = -1;
            for (const char *p = out; p < pairs; p++)
                rows += *p == '\n';
            for (const char *p = pairs + 6; *p; p++)
                prs += *p == '\n';
            rows -= 1; /* header */
            /* the tensors of block 0 of the stack and the two groups */
            const lnk_layout *lay = lnk_model_layout(l.m);
            int nt = 0;
            char pre[16];
            snprintf(pre, sizeof pre, "%s.0.", stack);
            for (int i = 0; i < lay->n_tensors; i++)
                nt += !strncmp(lay->t[i].name, pre, 4 + 1);
            assert_int_equal(rows, nt + 2);
            assert_int_equal(prs, rows * (rows - 1) / 2);
            /* the group against its dense block */
            size_t n;
            double f, *w = dense_eigs(&l, grp, (lnk_op_kind)k, &n, &f);
            double scale = fmax(fabs(w[0]), fabs(w[n - 1]));
            assert_int_equal((size_t)field(out, grp, "group", 2), n);
            double top = field(out, grp, "group", 9), bot = field(out, grp, "group", 12);
            if (!(fabs(top - w[n - 1]) <= 1e-8 * scale) || !(fabs(bot - w[0]) <= 1e-8 * scale))
                fail_msg("blocks %s %s: extremes [%.15g, %.15g], dense [%.15g, %.15g]", task,
                         kinds[k], bot, top, w[0], w[n - 1]);
            double fr = field(out, grp, "group", 5), se = field(out, grp, "group", 6);
            if (!(fabs(fr - f) <= 3 * se) || !(se > 0))
                fail_msg("blocks %s %s: ||A_bb||_F %g +- %g, dense %g", task, kinds[k], fr, se, f);
            free(w);
            /* the tensor block and the one-tensor group: the same operator, seeds and density */
            char pair[200];
            snprintf(pair, sizeof pair, "\n%s,%s,0\n", one, one);
            if (!strstr(pairs, pair))
                fail_msg("blocks %s %s: no JS distance 0 between %s and itself:\n%s", task,
                         kinds[k], one, pairs);
            assert_true(fabs(field(out, one, "tensor", 5) - field(out, one, "group", 5)) == 0);
            free(out);
            /* the sidecars */
            st = tu_run(&out, "cd '%s' && grep -l '\"operator\": \"%s\"' b.meta.json p.meta.json "
                        "d.meta.json | wc -l && head -1 d.csv", dir, kinds[k]);
            assert_int_equal(st, 0);
            assert_int_equal(atoi(out), 3);
            assert_non_null(strstr(out, "block,t,density"));
            free(out);
        }
        lib_close(&l);
    }
}

static void test_bad_input(void **s)
{
    (void)s;
    make_files("lm");
    char dir[700];
    snprintf(dir, sizeof dir, "%s/bad", tu_tmpdir());
    mkdir(dir, 0777);
    const char *base = "--config ../w_lm.json --weights ../w_lm.safetensors --batch "
                       "../b1_lm.safetensors";
    struct {
        const char *cmd, *args, *words;
    } cases[] = {
        {"blocks", "--operator hess -o o.csv", "--operator"},
        {"eigs", "--operator gauss-newton -o o.csv", "--operator"},
        {"hvp", "--vector ../v.safetensors --operator x -o o.safetensors", "--operator"},
        {"blocks", "--group 'nothing.*' -o o.csv", "nothing.*"},
        {"blocks", "--probes 1 -o o.csv", "probes"},
        {"blocks", "--no-tensors -o o.csv", "--group"},
        {"blocks", "--group '' -o o.csv", "--group"},
        {"blocks", "--sigma 0 -o o.csv", "sigma"},
        {"blocks", "--sigma 1 --sigma-fraction 0.1 -o o.csv", "only one"},
        {"blocks", "--sigma 1e-12 --block dec.0.attn.wq --no-tensors --group dec.0.attn.wq "
                   "-o o.csv --pairs p.csv", "larger sigma"},
        {"blocks", "-o o.csv --pairs o.csv", "o.csv"},
        {"blocks", "-o o.csv --pairs o.meta.json", "sidecar of -o"},
        {"blocks", "-o o.csv --checkpoint c.ckpt", "unknown option '--checkpoint'"},
        {"blocks", "-o o.csv --checkpoint-every 3", "unknown option '--checkpoint-every'"},
        {"eigs", "-k 1 -o o.csv --mass o.meta.json", "sidecar of -o"},
        {"eigs", "-k 1 -o o.csv --checkpoint ../w_lm.safetensors", "--checkpoint"},
        {"density", "--sigma 0.1 -o o.csv --nodes o.meta.json", "sidecar of -o"},
        {"trace", "-o ../w_lm.json", "--config"},
        {"blocks", "-o /nonexistent/o.csv", "/nonexistent"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *err;
        int st = tu_run(&err, "cd '%s' && '%s' %s %s %s --quiet 2>&1 >/dev/null", dir,
                        tu_lnkit(), cases[i].cmd, base, cases[i].args);
        size_t len = strlen(err);
        int lines = 0;
        for (size_t j = 0; j < len; j++)
            lines += err[j] == '\n';
        char pre[32];
        snprintf(pre, sizeof pre, "lnkit %s: ", cases[i].cmd);
        if (st != 2 || lines != 1 || strncmp(err, pre, strlen(pre)) || !strstr(err, cases[i].words))
            fail_msg("lnkit %s %s: exit %d, stderr '%s' (want one line naming '%s')",
                     cases[i].cmd, cases[i].args, st, err, cases[i].words);
        free(err);
        assert_int_equal(count_files(dir), 0);
    }
}

/* Why extremes did not converge, in the warning (exit 3, results written):
 * G_bb's bottom end at 0, said before the run too; an attention key bias
 * (zero to rounding) alone, with no larger block to judge it against; the
 * step limit. */
static void test_hint(void **s)
{
    (void)s;
    make_files("lm");
    const char *base = "--config w_lm.json --weights w_lm.safetensors --batch b1_lm.safetensors "
                       "--probes 2 --runs 1 --steps 3 -o h.csv";
    struct {
        const char *args, *want, *not;
    } cases[] = {
        {"--operator ggn --block dec.0.attn.wv --tol 1e-12", "resolves slowly; each bottom value "
         "v is >= 0 up to rounding", "step limit was reached"},
        {"--operator ggn --block dec.0.attn.wv --tol 1e-12", "--operator ggn: each block G_bb is "
         "positive semidefinite", NULL},
        {"--block dec.0.attn.bk", "a block zero to rounding (an attention key bias, say), and "
         "no larger block in this run", "step limit was reached"},
        {"--block dec.0.attn.wq --max-steps 3", "the step limit was reached (a larger "
         "--max-steps", "semidefinite"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *err;
        int st = tu_run(&err, "cd '%s' && '%s' blocks %s %s 2>&1 >/dev/null", tu_tmpdir(),
                        tu_lnkit(), base, cases[i].args);
        if (st != 3 || !strstr(err, cases[i].want) || (cases[i].not && strstr(err, cases[i].not)))
            fail_msg("lnkit blocks %s: exit %d, stderr '%s' (want exit 3, '%s'%s%s)",
                     cases[i].args, st, err, cases[i].want, cases[i].not ? ", not " : "",
                     cases[i].not ? cases[i].not : "");
        free(err);
    }
}

/* The header names what blocks works on: the model its blocks are parts of
 * (not "the whole model"), and under --no-tensors no tensor blocks. */
static void test_header(void **s)
{
    (void)s;
    make_files("lm");
    char *err;
    int st = tu_run(&err, "cd '%s' && '%s' blocks --config w_lm.json --weights w_lm.safetensors "
                    "--batch b1_lm.safetensors --probes 2 --runs 1 --steps 3 -o hd.csv --block "
                    "'dec.0.*' --no-tensors --group dec.0.attn.wq 2>&1 >/dev/null", tu_tmpdir(),
                    tu_lnkit());
    if ((st != 0 && st != 3) || strstr(err, "whole model") ||
        !strstr(err, "lnkit blocks: the model (its blocks below): ") ||
        !strstr(err, "1 block: 1 group(s), no tensor blocks (--no-tensors; --block 'dec.0.*' "
                "selects none)"))
        fail_msg("lnkit blocks --no-tensors: exit %d, stderr '%s'", st, err);
    free(err);
}

/* Progress inside a block (the run's cli_meter, each product reported):
 * with LNK_TEST_PROGRESS=0 a line at every product, 'block I/N NAME: P%
 * done  E s (about L left)', P the share of the plan (the products a block
 * may take) done, as many lines as the closing line's products; the CSV the
 * same as without the hook; a short run without it, and -q, no such line. */
static void test_progress(void **s)
{
    (void)s;
    char *err, *a, *b;
    const char *run = "$L blocks --config wp.json --weights wp.safetensors --batch bp.safetensors "
                      "--block 'dec.0.attn.w*' --probes 2 --runs 1 --steps 3";
    int st = tu_run(&err, "cd '%s' && L='%s' && $L init --d 16 --h 2 --L 1 --V 40 --norm-pos "
                    "pre -o wp.safetensors -q && $L batch --synthetic --config wp.json --rows 4 "
                    "--len 12 --rng-seed 1 -o bp.safetensors -q && LNK_TEST_PROGRESS=0 %s -o "
                    "p1.csv 2>&1 >/dev/null", tu_tmpdir(), tu_lnkit(), run);
    const char *fin = strstr(err, " products, sigma ");
    long products = 0;
    while (fin && fin > err && fin[-1] != ' ')
        fin--;
    if (fin)
        products = atol(fin);
    int lines = 0, pc_last = -1;
    for (const char *l = strstr(err, "lnkit blocks: block "); l;
         l = strstr(l + 1, "lnkit blocks: block ")) {
        int i, n, pc;
        char name[64], left[64];
        if (sscanf(l, "lnkit blocks: block %d/%d %63[^:]: %d%% done %*f s (about %63[^)])", &i,
                   &n, name, &pc, left) != 5 || n != 4 || i < 1 || i > 4 ||
            strncmp(name, "dec.0.attn.w", 12) || pc < pc_last || pc > 100 ||
            !strstr(left, " left"))
            fail_msg("lnkit blocks: a bad progress line: %.*s", (int)strcspn(l, "\n"), l);
        pc_last = pc, lines++;
    }
    if ((st != 0 && st != 3) || products < 4 || lines != products)
        fail_msg("lnkit blocks, LNK_TEST_PROGRESS=0: exit %d, %d lines for %ld products: %s", st,
                 lines, products, err);
    free(err);
    for (int q = 0; q < 2; q++) {
        st = tu_run(&err, "cd '%s' && L='%s' && %s %s -o p2.csv 2>&1 >/dev/null", tu_tmpdir(),
                    tu_lnkit(), run, q ? "-q" : "");
        if ((st != 0 && st != 3) || strstr(err, "% done"))
            fail_msg("lnkit blocks%s: exit %d, a progress line in a short run: %s",
                     q ? " -q" : "", st, err);
        free(err);
        assert_int_equal(tu_run(&a, "cat '%s/p1.csv'", tu_tmpdir()), 0);
        assert_int_equal(tu_run(&b, "cat '%s/p2.csv'", tu_tmpdir()), 0);
        assert_string_equal(a, b);
        free(a), free(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eigs_operator),
        cmocka_unit_test(test_hvp_operator),
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_hint),
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_progress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
