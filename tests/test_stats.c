/* Hidden-state and gradient-norm statistics (include/lnkit/stats.h) and the
 * gradient-norm study program's resume:
 *   1. lnk_stats_rows on hand-made rows: mean, sd, max, the (eps, delta)
 *      fraction, Lemma 3's Jacobian norm, the skip mask;
 *   2. theorem setting, h = 1, Post-LN: every norm output has ||x||^2 = d var/(var+eps)
 *      (sqrt(d) up to eps), checked per token against var recomputed from the norm's
 *      input, and the library's summaries against the same numbers; its Jacobian
 *      summary against 1/sqrt(var) from the input;
 *   3. Lemma 2 (Pre-LN interval) for the sample mean over tokens and seeds, with a
 *      tolerance from the number of seeds (derivation at the test);
 *   4. per-tensor and glob-group gradient norms;
 *   5. resume of build/studies/grad_norms: a second run computes nothing and leaves
 *      the CSVs byte-identical; a run with rows removed recomputes exactly those,
 *      with the same numbers. */
#include "testutil.h"
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gsl/gsl_statistics_double.h>
#include "lnkit/csv_table.h"
#include "lnkit/stats.h"
#include "model/workspace.h"

#define assert_msg_has(s)                                                                   \
    do {                                                                                    \
        if (!strstr(lnk_errmsg(), (s)))                                                     \
            fail_msg("message \"%s\" lacks \"%s\"", lnk_errmsg(), (s));                     \
    } while (0)

static void test_rows(void **state)
{
    (void)state;
    /* d = 4; Z/d = ||x||^2/4: rows 1, 1, 1, 2.25, and a skipped row of 100 */
    double x[] = {1, -1, 1, -1,   /* Z/d 1, centred norm 2 -> jac sqrt(4)/2 = 1 */
                  1, 1, 1, 1,     /* Z/d 1, constant: jac inf */
                  2, 0, 0, 0,     /* Z/d 1, mean 0.5, centred norm sqrt(3) */
                  3, 0, 0, 0,     /* Z/d 2.25 */
                  20, 0, 0, 0};   /* skipped */
    unsigned char skip[] = {0, 0, 0, 0, 1};
    lnk_stats_sq sq;
    lnk_stats_jac jac;
    lnk_stats_rows(x, skip, 5, 4, 0.5, &sq, &jac, 1);
    assert_int_equal((int)sq.n, 4);
    double mean = (1 + 1 + 1 + 2.25) / 4; /* 1.3125 */
    assert_true(fabs(sq.mean - mean) < 1e-15);
    double var = (3 * (1 - mean) * (1 - mean) + (2.25 - mean) * (2.25 - mean)) / 3;
    assert_true(fabs(sq.sd - sqrt(var)) < 1e-15);
    assert_true(sq.min == 1 && sq.max == 2.25);
    /* (2.25 - 1.3125)/1.3125 = 0.714 > 0.5; (1 - 1.3125)/1.3125 < 0 */
    assert_true(sq.frac_over == 0.25);
    assert_true(isinf(jac.max));
    /* without the constant row: mean of 1, 2/sqrt(3), 2/sqrt(9 - 9/4) */
    unsigned char skip2[] = {0, 1, 0, 0, 1};
    lnk_stats_rows(x, skip2, 5, 4, 0.5, &sq, &jac, 1);
    double j3 = 2 / sqrt(3.0), j4 = 2 / sqrt(9 - 2.25);
    assert_true(fabs(jac.mean - (1 + j3 + j4) / 3) < 1e-15);
    assert_true(fabs(jac.max - j3) < 1e-15);
    /* RMSNorm: sqrt(d)/||x||, no centring: row 1 -> 2/2 */
    lnk_stats_rows(x, NULL, 1, 4, 0.5, &sq, &jac, 0);
    assert_true(fabs(jac.mean - 1) < 1e-15);
    /* all rows skipped: n = 0 */
    unsigned char all[] = {1, 1, 1, 1, 1};
    lnk_stats_rows(x, all, 5, 4, 0.5, &sq, NULL, 1);
    assert_int_equal((int)sq.n, 0);
}

typedef struct {
    lnk_config c;
    lnk_model *m;
    double *th, *g;
    lnk_workspace *ws;
    lnk_batch b;
} fx;

static void fx_open(fx *f, lnk_config c, int B, int len, uint64_t data_seed)
{
    f->c = c;
    f->m = lnk_model_alloc(&f->c);
    if (!f->m)
        fail_msg("model: %s", lnk_errmsg());
    size_t n = lnk_model_n_params(f->m);
    f->th = malloc(sizeof(double) * n);
    f->g = malloc(sizeof(double) * n);
    assert_int_equal(lnk_model_init_params(f->m, f->th), LNK_OK);
    assert_int_equal(lnk_batch_synthetic(f->m, B, len, data_seed, &f->b), LNK_OK);
    int S = c.task == LNK_TASK_LM ? 0 : len, T = c.task == LNK_TASK_CLS ? 0 : len + 1;
    f->ws = lnk_workspace_alloc(f->m, B, S, T, 0);
    assert_non_null(f->ws);
    double loss;
    assert_int_equal(lnk_model_eval(f->ws, f->th, &f->b, &loss, f->g, NULL), LNK_OK);
}

static void fx_close(fx *f)
{
    lnk_workspace_free(f->ws);
    lnk_batch_free(&f->b);
    lnk_model_free(f->m);
    lnk_config_clear(&f->c);
    free(f->th);
    free(f->g);
}

/* Biased variance of a row (the norm's), recomputed here. */
static double row_var(const double *x, int d)
{
    double mu = 0, v = 0;
    for (int i = 0; i < d; i++)
        mu += x[i] / d;
    for (int i = 0; i < d; i++)
        v += (x[i] - mu) * (x[i] - mu);
    return v / d;
}

static void check_post_stack(const lnk_model *m, const stack_buf *sb, const lnk_stats_stack *st,
                             int R, int d, double eps)
{
    int per = st->blk[0].n_units;
    for (int l = 0; l < st->L; l++)
        for (int j = 0; j < per; j++) {
            const unit_buf *u = &sb->a.u[l * per + j];
            double s_ratio = 0, s_jac = 0, mn = INFINITY, mx = 0;
            for (int r = 0; r < R; r++) {
                double var = row_var(u->s + (size_t)r * d, d), z = 0;
                const double *o = u->npost.out + (size_t)r * d;
                for (int i = 0; i < d; i++)
                    z += o[i] * o[i];
                double want = var / (var + eps); /* ||LN(s)||^2 / d exactly */
                if (fabs(z / d - want) > 1e-13)
                    fail_msg("block %d unit %d row %d: ||out||^2/d = %.17g, d var/(var+eps)/d "
                             "= %.17g", l, j, r, z / d, want);
                /* sqrt(d) up to eps: 1 - eps/var <= ||out||^2/d <= 1 */
                assert_true(z / d <= 1 && z / d >= 1 - eps / var);
                s_ratio += want;
                s_jac += 1 / sqrt(var); /* sqrt(d)/||s - mu|| */
                mn = fmin(mn, want);
                mx = fmax(mx, want);
            }
            const lnk_stats_block *b = &st->blk[l];
            assert_true(fabs(b->norm_out[j].mean - s_ratio / R) < 1e-13);
            assert_true(fabs(b->norm_out[j].min - mn) < 1e-13);
            assert_true(fabs(b->norm_out[j].max - mx) < 1e-13);
            assert_true(fabs(b->jac[j].mean - s_jac / R) < 1e-12 * (s_jac / R));
            assert_true(b->norm_out[j].frac_over == 0); /* all within eps of each other */
            /* the block input of block l+1 is this norm's output */
            if (j == per - 1 && l + 1 < st->L)
                assert_true(st->blk[l + 1].in.mean == b->norm_out[j].mean);
            (void)m;
        }
}

static void test_post_norm_sqrt_d(void **state)
{
    (void)state;
    const char *tasks[] = {"cls", "seq2seq"};
    for (int t = 0; t < 2; t++) {
        fx f;
        char task[32];
        snprintf(task, sizeof task, "task=%s", tasks[t]);
        fx_open(&f, tu_config(task, "norm_pos=post", "init=theorem", "h=1", "d=32", "d_ff=32",
                              "L=3", "V=40", "seed=7", "eps=1e-3", NULL), 4, 8, 11);
        lnk_stats_hidden_t h;
        assert_int_equal(lnk_stats_hidden(f.ws, 0.1, &h), LNK_OK);
        assert_int_equal(h.post, 1);
        assert_int_equal(h.enc.L, 3);
        check_post_stack(f.m, &f.ws->pr->enc, &h.enc, 4 * 8, 32, 1e-3);
        assert_int_equal(h.enc.has_final, 0);
        /* Post-LN stack output is the last norm's output */
        assert_true(h.enc.out.mean == h.enc.blk[2].norm_out[1].mean);
        if (t == 1) {
            assert_int_equal(h.dec.L, 3);
            assert_int_equal(h.dec.blk[0].n_units, 3);
            assert_string_equal(h.dec.blk[0].unit[1], "xattn");
            check_post_stack(f.m, &f.ws->pr->dec, &h.dec, 4 * 8, 32, 1e-3);
        } else
            assert_int_equal(h.dec.L, 0);
        lnk_stats_hidden_free(&h);
        fx_close(&f);
    }
}

/* Lemma 2 for Pre-LN in the theorem setting (h = 1, d_ff = d, Wq = Wk = 0, Wo = I,
 * Xavier-normal N(0, 1/d) for the d x d matrices), cls task (no causal mask).
 *
 * Expected value.  x_1 = sqrt(d) E[tok] + PE: E||x_1||^2 = d + d/2 exactly (E has
 * variance 1/d; ||PE_t||^2 = d/2 for every t, sin^2 + cos^2 per pair).  A block adds
 * MHA = mean_s(LN(x_s)) Wv and FFN = ReLU(LN(y) W1) W2; conditional on the input the
 * weights of the block are fresh and zero-mean, so the cross terms vanish in
 * expectation and E||x_{l+1}||^2 = E||x_l||^2 + E||ybar||^2 + E||LN(y)||^2 / 2 with
 * ||ybar||^2 in [0, d] (a mean of vectors of norm^2 <= d) and ||LN(y)||^2 = d var/(var+eps).
 * So E||x_l||^2/d in [1.5 + (l-1)(1/2 - eps/var), 1.5 + 3(l-1)/2], inside Lemma 2's
 * [1 + l/2, 1 + 3l/2] up to l eps/(2 var) <= 1e-4 here, with l = 1 exactly at the lower end.
 *
 * Tolerance.  Tokens of one seed share the weights, so the replication unit is
 * the seed: m_s = mean over the seed's tokens (B T of them) of ||x_l||^2/d, S = 24
 * independent seeds (weights and batch both seeded).  The sample mean of m_s has
 * standard error se = sd(m_s)/sqrt(S); with the sd itself estimated from S = 24
 * values, Student's t with 23 degrees of freedom has P(t < -4) ~ 3e-4, so each of
 * the 2 (L+1) one-sided checks uses lo - 4 se <= mean <= hi + 4 se (plus the
 * 1e-4 eps term).  The seeds are fixed, so the test is deterministic. */
static void test_lemma2_pre(void **state)
{
    (void)state;
    enum { S = 24, L = 4, B = 8, T = 16, D = 32 };
    double m[L + 1][S];
    for (int s = 0; s < S; s++) {
        char seed[32];
        snprintf(seed, sizeof seed, "seed=%d", 100 + s);
        fx f;
        fx_open(&f, tu_config("task=cls", "norm_pos=pre", "init=theorem", "h=1", "d=32",
                              "d_ff=32", "L=4", "V=64", seed, NULL), B, T, 5000 + s);
        lnk_stats_hidden_t h;
        assert_int_equal(lnk_stats_hidden(f.ws, 0.1, &h), LNK_OK);
        assert_int_equal(h.post, 0);
        assert_int_equal(h.enc.has_final, 1);
        for (int l = 0; l < L; l++) {
            assert_int_equal((int)h.enc.blk[l].in.n, B * T);
            m[l][s] = h.enc.blk[l].in.mean;
            /* Pre-LN: the block's ffn residual is the next block's input */
            if (l + 1 < L)
                assert_true(h.enc.blk[l].res[1].mean == h.enc.blk[l + 1].in.mean);
        }
        m[L][s] = h.enc.out.mean;
        /* the final norm's output is on the sphere of radius sqrt(d) (up to eps) */
        assert_true(h.enc.final_out.max <= 1 && h.enc.final_out.min > 1 - 1e-4);
        /* Lemma 3 at the final norm: 1/sqrt(var) <= 1/sqrt(E||x||^2/d - ...) ~ small */
        assert_true(h.enc.final_jac.mean > 0 && h.enc.final_jac.mean < 1);
        lnk_stats_hidden_free(&h);
        fx_close(&f);
    }
    for (int l = 1; l <= L + 1; l++) {
        double mean = gsl_stats_mean(m[l - 1], 1, S), sd = gsl_stats_sd(m[l - 1], 1, S);
        double se = sd / sqrt((double)S), lo = 1 + l / 2.0, hi = 1 + 1.5 * l;
        if (mean < lo - 4 * se - 1e-4 || mean > hi + 4 * se + 1e-4)
            fail_msg("l = %d: E||x||^2/d = %.4f ± %.4f (se) outside [%g, %g]", l, mean, se, lo,
                     hi);
        /* and the sharper interval of this model: [1.5 + (l-1)/2, 1.5 + 3(l-1)/2] */
        if (mean < 1.5 + (l - 1) / 2.0 - 4 * se - 1e-4 || mean > 1.5 * l + 4 * se)
            fail_msg("l = %d: E||x||^2/d = %.4f ± %.4f (se) outside the model's interval", l,
                     mean, se);
    }
    /* and the growth is real: l = L+1 is well above l = 1 */
    assert_true(gsl_stats_mean(m[L], 1, S) > gsl_stats_mean(m[0], 1, S) + 1.5);
}

static void test_grad_norms(void **state)
{
    (void)state;
    lnk_config c = tu_config("task=lm", "L=3", "d=8", "h=2", "V=16", NULL);
    lnk_model *m = lnk_model_alloc(&c);
    assert_non_null(m);
    const lnk_layout *lay = lnk_model_layout(m);
    size_t n = lnk_model_n_params(m);
    double *g = calloc(n, sizeof(double));
    /* 3 in dec.0.ffn.w2 and 4 in dec.2.ffn.w2, 12 in dec.1.attn.wq */
    g[lay->t[lnk_layout_find(lay, "dec.0.ffn.w2")].offset + 5] = 3;
    g[lay->t[lnk_layout_find(lay, "dec.2.ffn.w2")].offset] = 4;
    g[lay->t[lnk_layout_find(lay, "dec.1.attn.wq")].offset + 1] = 12;
    double v;
    int k;
    assert_int_equal(lnk_stats_group_norm(m, g, "dec.*.ffn.w2", &v, &k), LNK_OK);
    assert_int_equal(k, 3);
    assert_true(v == 5);
    assert_int_equal(lnk_stats_group_norm(m, g, "dec.1.*", &v, &k), LNK_OK);
    assert_true(v == 12);
    assert_true(k > 6);
    assert_int_equal(lnk_stats_group_norm(m, g, "*", &v, NULL), LNK_OK);
    assert_true(v == 13);
    assert_int_equal(lnk_stats_tensor_norm(m, g, "dec.2.ffn.w2", &v), LNK_OK);
    assert_true(v == 4);
    assert_int_equal(lnk_stats_tensor_norm(m, g, "dec.3.ffn.w2", &v), LNK_EINVAL);
    assert_msg_has("dec.3.ffn.w2");
    assert_int_equal(lnk_stats_group_norm(m, g, "enc.*", &v, &k), LNK_EINVAL);
    assert_msg_has("'enc.*'");
    assert_int_equal(k, 0);
    /* every tensor's norm and the total, as lnkit eval reports them */
    double *norm = calloc((size_t)lay->n_tensors + 1, sizeof *norm);
    assert_int_equal(lnk_stats_grad_norms(m, g, norm), LNK_OK);
    for (int i = 0; i < lay->n_tensors; i++) {
        const char *nm = lay->t[i].name;
        double want = !strcmp(nm, "dec.0.ffn.w2") ? 3 : !strcmp(nm, "dec.2.ffn.w2") ? 4
                      : !strcmp(nm, "dec.1.attn.wq") ? 12 : 0;
        if (norm[i] != want)
            fail_msg("norm of %s: %g, expected %g", nm, norm[i], want);
    }
    assert_true(norm[lay->n_tensors] == 13);
    /* entries near the largest double: each norm without overflow, the total
     * beyond the range refused, naming it */
    g[lay->t[lnk_layout_find(lay, "dec.0.ffn.w2")].offset + 5] = 1.5e308;
    g[lay->t[lnk_layout_find(lay, "dec.2.ffn.w2")].offset] = 1.5e308;
    assert_int_equal(lnk_stats_grad_norms(m, g, norm), LNK_ENONFINITE);
    assert_msg_has("over all parameters");
    assert_true(norm[lnk_layout_find(lay, "dec.0.ffn.w2")] == 1.5e308);
    free(norm);
    char w2[LNK_NAME_MAX];
    lnk_stats_last_w2(m, w2, sizeof w2);
    assert_string_equal(w2, "dec.2.ffn.w2");
    /* a workspace that has seen no batch, and a bad threshold */
    lnk_workspace *ws = lnk_workspace_alloc(m, 1, 0, 4, 0);
    lnk_stats_hidden_t h;
    assert_int_equal(lnk_stats_hidden(ws, 0.1, &h), LNK_EINVAL);
    assert_msg_has("lnk_model_eval");
    assert_int_equal(lnk_stats_hidden(ws, 0, &h), LNK_EINVAL);
    assert_msg_has("eps");
    lnk_workspace_free(ws);
    free(g);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

/* build/tests/test_stats -> build/studies/grad_norms */
static const char *study_bin(void)
{
    static char buf[4096];
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    snprintf(buf, sizeof buf, "%s/studies/grad_norms", dirname(dirname(exe)));
    return access(buf, X_OK) == 0 ? buf : NULL;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* The CSV without the timing column ("seconds", the last one), lines sorted. */
static char *canon(const char *path)
{
    lnk_csv_table t;
    assert_int_equal(lnk_csv_table_read(path, NULL, &t), LNK_OK);
    int js = lnk_csv_table_col(&t, "seconds");
    char **lines = calloc(t.nrow, sizeof(char *));
    size_t tot = 1;
    for (size_t r = 0; r < t.nrow; r++) {
        size_t len = 0;
        for (int j = 0; j < t.ncol; j++)
            if (j != js)
                len += strlen(lnk_csv_table_str(&t, r, j)) + 1;
        lines[r] = calloc(len + 2, 1);
        for (int j = 0; j < t.ncol; j++)
            if (j != js) {
                strcat(lines[r], lnk_csv_table_str(&t, r, j));
                strcat(lines[r], ",");
            }
        tot += len + 1;
    }
    for (size_t a = 1; a < t.nrow; a++) /* insertion sort: small files */
        for (size_t b = a; b > 0 && strcmp(lines[b - 1], lines[b]) > 0; b--) {
            char *x = lines[b];
            lines[b] = lines[b - 1];
            lines[b - 1] = x;
        }
    char *out = calloc(tot + 1, 1);
    for (size_t r = 0; r < t.nrow; r++) {
        strcat(out, lines[r]);
        strcat(out, "\n");
        free(lines[r]);
    }
    free(lines);
    lnk_csv_table_free(&t);
    return out;
}

static void test_resume(void **state)
{
    (void)state;
    const char *bin = study_bin();
    if (!bin) {
        printf("  skipped: build/studies/grad_norms not built (make build/studies/grad_norms)\n");
        skip();
    }
    const char *dir = tu_path("resume");
    assert_int_equal(mkdir(dir, 0700), 0);
    char csv[600], hid[600], meta[600], cmd[6000];
    snprintf(csv, sizeof csv, "%s/depth.csv", dir);
    snprintf(hid, sizeof hid, "%s/depth_hidden.csv", dir);
    snprintf(meta, sizeof meta, "%s/depth.meta.json", dir);
    /* 2 settings x 2 norm positions x 2 depths x 2 seeds = 16 points */
    snprintf(cmd, sizeof cmd, "'%s' depth --Ls 1,2 --d 16 --V 16 --seeds 2 --batches 2 "
             "--rows 2 --len 4 --threads 1 --out '%s'", bin, csv);
    char *out = NULL;
    int rc = tu_run(&out, "%s", cmd);
    if (rc != 0)
        fail_msg("first run failed (%d): %s", rc, out);
    assert_non_null(strstr(out, "computed 16 points, skipped 0"));
    free(out);
    size_t n1, nh1, nm1;
    char *c1 = tu_read_file(csv, &n1), *h1 = tu_read_file(hid, &nh1);
    char *m1 = tu_read_file(meta, &nm1);
    assert_int_equal((int)count_lines(c1), 17);
    /* second run: nothing computed, files untouched (byte for byte) */
    rc = tu_run(&out, "%s", cmd);
    assert_int_equal(rc, 0);
    if (!strstr(out, "computed 0 points, skipped 16"))
        fail_msg("second run: %s", out);
    free(out);
    size_t n2, nh2, nm2;
    char *c2 = tu_read_file(csv, &n2), *h2 = tu_read_file(hid, &nh2);
    char *m2 = tu_read_file(meta, &nm2);
    assert_int_equal(n1, n2);
    assert_memory_equal(c1, c2, n1);
    assert_int_equal(nh1, nh2);
    assert_memory_equal(h1, h2, nh1);
    assert_int_equal(nm1, nm2);
    assert_memory_equal(m1, m2, nm1);
    /* drop the last 5 rows (an interrupted run): the third run computes exactly
     * those 5 again, with the same numbers */
    char *cut = strdup(c1), *p = cut;
    for (int k = 0; k < 12; k++) /* keep the header and 11 rows */
        p = strchr(p, '\n') + 1;
    tu_write_file(csv, cut, (size_t)(p - cut));
    rc = tu_run(&out, "%s", cmd);
    assert_int_equal(rc, 0);
    if (!strstr(out, "computed 5 points, skipped 11"))
        fail_msg("third run: %s", out);
    free(out);
    char *a = canon(csv);
    tu_write_file(tu_path("orig.csv"), c1, n1);
    char *b = canon(tu_path("orig.csv"));
    assert_string_equal(a, b);
    /* the kept rows are verbatim at the top of the rewritten file */
    char *c3 = tu_read_file(csv, NULL);
    assert_memory_equal(c3, cut, (size_t)(p - cut));
    free(a), free(b), free(c3), free(cut);
    free(c1), free(h1), free(m1), free(c2), free(h2), free(m2);
    /* a CSV with other columns is refused, naming the file */
    tu_write_file(csv, "x,y\n1,2\n", 8);
    rc = tu_run(&out, "%s", cmd);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(out, "columns differ"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),       cmocka_unit_test(test_post_norm_sqrt_d),
        cmocka_unit_test(test_lemma2_pre), cmocka_unit_test(test_grad_norms),
        cmocka_unit_test(test_resume),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
