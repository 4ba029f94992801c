/* The curvature-anatomy study (studies/anatomy, and its summary, python3 -m
 * studies.summary anatomy)
 * at a tiny size (lm L = 1, 2, 3 at d = 8 with the RMSNorm and qk_norm
 * variants, seq2seq L = 1 on 3 Multi30k pairs, 2 seeds):
 *   - every unit eigenvector's masses per tensor lie in [0, 1] and sum to 1
 *     within 1e-12; G's bottom eigenvalue is >= -1e-10 of its scale; the
 *     converged flag is the residual test; every JS distance (as is and
 *     of the scale-normalised spectra, whose kernel width is at most 1% of
 *     [-1, 1]) lies in [0, sqrt(ln 2)], every pair of kind blocks once; one block-norm row
 *     per layer, weight matrix and operator;
 *   - the study's extremes of H, G and F equal `lnkit eigs` on the same
 *     weights and batch (1e-9 relative), and a block norm equals `lnkit
 *     blocks` (same probes: 1e-9); `lnkit eigs --mass` gives the study's masses
 *     per tensor (1e-9), summing to 1 within 1e-12, with a sidecar;
 *   - the summary's depth exponent equals the least-squares slope through the
 *     per-seed values worked out here from extremes.csv (1e-9), inside its
 *     interval, and it writes its tables, figures, values and claims;
 *   - --resume: a run in two parts (L = 1, 2, then 1, 2, 3) writes the four
 *     CSVs of one run byte for byte, skipping the points done; a run cut off
 *     between its files (a point in extremes.csv, mass.csv, blocknorms.csv
 *     but not js.csv) has that point's rows dropped and computed again, the
 *     same bytes; a resume with another setting (--probes) fails naming it
 *     and leaves the files as they were. */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "testutil.h"
#include "lnkit/csv_table.h"

static char root[4096], bin[4096];

/* build/tests/test_anatomy -> build/studies/anatomy and the repository. */
static int find_paths(void)
{
    char exe[4096], a[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return 0;
    exe[n] = '\0';
    snprintf(a, sizeof a, "%s", exe);
    char *build = dirname(dirname(a));
    snprintf(bin, sizeof bin, "%s/studies/anatomy", build);
    snprintf(root, sizeof root, "%s", dirname(build));
    return access(bin, X_OK) == 0;
}

static const char *OUT(void) { return tu_path("anat"); }

/* Run the study once (group setup). */
static int setup(void **state)
{
    (void)state;
    if (!find_paths())
        return 0;
    char *out;
    int rc = tu_run(&out, "OPENBLAS_NUM_THREADS=1 '%s' --out '%s/lm' --lm-L 1,2,3 --lm-d '' "
                    "--lm-L-ref 2 --lm-d-ref 8 --s2s-L '' --s2s-d '' --h 2 --V 16 --rows 2 "
                    "--len 5 --seeds 2 --quiet && OPENBLAS_NUM_THREADS=1 '%s' --out "
                    "'%s/seq2seq' --lm-L '' --lm-d '' --s2s-L 1 --s2s-d '' --s2s-L-ref 1 "
                    "--s2s-d-ref 8 --h 2 --s2s-rows 3 --src '%s/data/multi30k/val.de' --tgt "
                    "'%s/data/multi30k/val.en' --seeds 1 --quiet",
                    bin, OUT(), bin, OUT(), root, root);
    if (rc) {
        fprintf(stderr, "study failed (%d): %s\n", rc, out);
        free(out);
        return -1;
    }
    free(out);
    return 0;
}

static void need_bin(void)
{
    if (access(bin, X_OK) != 0) {
        printf("  skipped: build/studies/anatomy not built\n");
        skip();
    }
}

static void read_csv(lnk_csv_table *t, const char *part, const char *name)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s/%s", OUT(), part, name);
    if (lnk_csv_table_read(p, NULL, t) != LNK_OK)
        fail_msg("%s: %s", p, lnk_errmsg());
}

static double num(const lnk_csv_table *t, size_t r, const char *col)
{
    int c = lnk_csv_table_col(t, col);
    assert_true(c >= 0);
    double v;
    assert_int_equal(lnk_csv_table_num(t, r, c, &v), LNK_OK);
    return v;
}

static const char *str(const lnk_csv_table *t, size_t r, const char *col)
{
    int c = lnk_csv_table_col(t, col);
    assert_true(c >= 0);
    return lnk_csv_table_str(t, r, c);
}

/* The key columns and what follows up to `upto` as one string. */
static void rowkey(const lnk_csv_table *t, size_t r, int upto, char *k, size_t n)
{
    k[0] = 0;
    for (int j = 0; j < upto; j++) {
        strncat(k, lnk_csv_table_str(t, r, j), n - strlen(k) - 2);
        strcat(k, ",");
    }
}

static void test_rows(void **state)
{
    (void)state;
    need_bin();
    const char *parts[2] = {"lm", "seq2seq"};
    for (int pi = 0; pi < 2; pi++) {
        /* masses: per (point, operator, which) in [0, 1], summing to 1 */
        lnk_csv_table t;
        read_csv(&t, parts[pi], "mass.csv");
        int cm = lnk_csv_table_col(&t, "tensor");
        assert_true(cm > 0);
        char prev[512] = "", k[512];
        double sum = 0;
        int groups = 0;
        for (size_t r = 0; r <= t.nrow; r++) {
            if (r < t.nrow)
                rowkey(&t, r, cm, k, sizeof k);
            if (r == t.nrow || strcmp(k, prev)) {
                if (prev[0]) {
                    if (fabs(sum - 1) > 1e-12)
                        fail_msg("%s: masses of %s sum to %.17g", parts[pi], prev, sum);
                    groups++;
                }
                sum = 0;
                snprintf(prev, sizeof prev, "%s", k);
            }
            if (r < t.nrow) {
                double m = num(&t, r, "mass");
                assert_true(m >= 0 && m <= 1 + 1e-12);
                sum += m;
            }
        }
        /* 3 operators x top and bottom per point: lm 2 pos x (3 depths + 2
         * variants) x 2 seeds; seq2seq 2 pos x 1 seed */
        assert_int_equal(groups, 6 * (pi ? 2 : 2 * 5 * 2));
        lnk_csv_table_free(&t);

        /* extremes: G >= -1e-10 scale; converged = residual test */
        read_csv(&t, parts[pi], "extremes.csv");
        for (size_t r = 0; r < t.nrow; r++) {
            double v = num(&t, r, "eigenvalue"), sc = num(&t, r, "scale");
            double res = num(&t, r, "residual");
            if (!strcmp(str(&t, r, "operator"), "ggn") && !strcmp(str(&t, r, "which"), "bottom"))
                assert_true(v >= -1e-10 * sc);
            assert_int_equal((int)num(&t, r, "converged"), res <= 1e-6 * sc);
        }
        lnk_csv_table_free(&t);

        /* JS: in [0, sqrt(ln 2)], every pair once per point */
        read_csv(&t, parts[pi], "js.csv");
        int nk = pi ? 19 : 8, npts = pi ? 2 : 20;
        assert_int_equal((int)t.nrow, npts * nk * (nk - 1) / 2);
        for (size_t r = 0; r < t.nrow; r++) {
            double j = num(&t, r, "js_distance"), js = num(&t, r, "js_scaled");
            assert_true(j >= 0 && j <= sqrt(log(2.0)) + 1e-12);
            assert_true(js >= 0 && js <= sqrt(log(2.0)) + 1e-12);
            assert_true(num(&t, r, "sigma") > 0 && num(&t, r, "sigma_scaled") > 0 &&
                        num(&t, r, "sigma_scaled") <= 0.02 + 1e-15);
            assert_string_not_equal(str(&t, r, "block_a"), str(&t, r, "block_b"));
        }
        lnk_csv_table_free(&t);

        /* block norms: 6 (lm) / 16 (seq2seq) matrices a layer, 3 operators */
        read_csv(&t, parts[pi], "blocknorms.csv");
        size_t want = pi ? (size_t)2 * 16 * 3 : (size_t)2 * 2 * (6 * (1 + 2 + 3) + 2 * 6 * 2) * 3;
        assert_int_equal(t.nrow, want);
        for (size_t r = 0; r < t.nrow; r++)
            assert_true(num(&t, r, "frob") > 0 && num(&t, r, "frob_se") >= 0);
        lnk_csv_table_free(&t);
    }
}

/* The value of column col in the first row of a CSV file matching which and index 0. */
static double eigs_value(const char *path, const char *which)
{
    lnk_csv_table t;
    assert_int_equal(lnk_csv_table_read(path, NULL, &t), LNK_OK);
    double v = NAN;
    for (size_t r = 0; r < t.nrow; r++)
        if (!strcmp(str(&t, r, "which"), which))
            v = num(&t, r, "eigenvalue");
    lnk_csv_table_free(&t);
    return v;
}

static void test_against_cli(void **state)
{
    (void)state;
    need_bin();
    char *out;
    /* the point lm, pre, layernorm, L = 2, d = 8, seed 1 */
    int rc = tu_run(&out, "cd '%s' && L='%s' && $L init --task lm --d 8 --h 2 --L 2 --V 16 "
                    "--norm-pos pre --seed 1 -o w.safetensors --quiet && $L batch --synthetic "
                    "--config w.json --rows 2 --len 5 --rng-seed 1234 -o b.safetensors --quiet && "
                    "for op in hessian ggn functional; do $L eigs --config w.json --weights "
                    "w.safetensors --batch b.safetensors -k 1 --which both --tol 1e-6 "
                    "--max-steps 300 --operator $op -o e_$op.csv --mass m_$op.csv --quiet || exit 1; done "
                    "&& "
                    "$L blocks --config w.json --weights w.safetensors --batch b.safetensors "
                    "--no-tensors --group dec.1.attn.wv --probes 6 --operator functional "
                    "-o bl.csv --quiet",
                    tu_tmpdir(), tu_lnkit());
    if (rc)
        fail_msg("lnkit (%d): %s", rc, out);
    free(out);
    lnk_csv_table t;
    read_csv(&t, "lm", "extremes.csv");
    int found = 0;
    for (size_t r = 0; r < t.nrow; r++) {
        if (strcmp(str(&t, r, "norm_pos"), "pre") || strcmp(str(&t, r, "norm"), "layernorm") ||
            strcmp(str(&t, r, "qk_norm"), "none") || num(&t, r, "L") != 2 ||
            num(&t, r, "seed") != 1)
            continue;
        char p[64];
        snprintf(p, sizeof p, "e_%s.csv", str(&t, r, "operator"));
        double cli = eigs_value(tu_path(p), str(&t, r, "which"));
        double v = num(&t, r, "eigenvalue"), sc = num(&t, r, "scale");
        if (!(fabs(v - cli) <= 1e-9 * sc))
            fail_msg("%s %s: study %.17g, lnkit eigs %.17g", str(&t, r, "operator"),
                     str(&t, r, "which"), v, cli);
        found++;
    }
    assert_int_equal(found, 6);
    lnk_csv_table_free(&t);
    /* lnkit eigs --mass against the study's masses of the same point */
    read_csv(&t, "lm", "mass.csv");
    found = 0;
    const char *ops[3] = {"hessian", "ggn", "functional"};
    for (int o = 0; o < 3; o++) {
        char p[64];
        snprintf(p, sizeof p, "m_%s.meta.json", ops[o]);
        assert_int_equal(access(tu_path(p), R_OK), 0);
        snprintf(p, sizeof p, "m_%s.csv", ops[o]);
        lnk_csv_table m;
        assert_int_equal(lnk_csv_table_read(tu_path(p), NULL, &m), LNK_OK);
        double sum[2] = {0, 0};
        for (size_t i = 0; i < m.nrow; i++) {
            int top = !strcmp(str(&m, i, "which"), "top");
            assert_true(num(&m, i, "index") == 0);
            sum[top] += num(&m, i, "mass");
            for (size_t r = 0; r < t.nrow; r++)
                if (!strcmp(str(&t, r, "norm_pos"), "pre") &&
                    !strcmp(str(&t, r, "norm"), "layernorm") &&
                    !strcmp(str(&t, r, "qk_norm"), "none") && num(&t, r, "L") == 2 &&
                    num(&t, r, "seed") == 1 && !strcmp(str(&t, r, "operator"), ops[o]) &&
                    !strcmp(str(&t, r, "which"), str(&m, i, "which")) &&
                    !strcmp(str(&t, r, "tensor"), str(&m, i, "tensor"))) {
                    double a = num(&t, r, "mass"), b = num(&m, i, "mass");
                    if (!(fabs(a - b) <= 1e-9))
                        fail_msg("%s %s %s: study mass %.17g, lnkit eigs --mass %.17g", ops[o],
                                 str(&m, i, "which"), str(&m, i, "tensor"), a, b);
                    found++;
                }
        }
        assert_true(fabs(sum[0] - 1) <= 1e-12 && fabs(sum[1] - 1) <= 1e-12);
        lnk_csv_table_free(&m);
    }
    /* lm L = 2: 2 x 16 layer tensors, tgt_emb, the final norm (g, b), out.w */
    assert_int_equal(found, 3 * 2 * (2 * 16 + 4));
    lnk_csv_table_free(&t);
    /* on a block: its tensors only, in layout order, masses summing to 1 */
    rc = tu_run(&out, "cd '%s' && '%s' eigs --config w.json --weights w.safetensors --batch "
                "b.safetensors -k 2 --which top --block 'dec.1.*,out.w' --mass mb.csv --quiet "
                "-o eb.csv", tu_tmpdir(), tu_lnkit());
    if (rc)
        fail_msg("lnkit eigs --block --mass (%d): %s", rc, out);
    free(out);
    lnk_csv_table m;
    assert_int_equal(lnk_csv_table_read(tu_path("mb.csv"), NULL, &m), LNK_OK);
    assert_int_equal((int)m.nrow, 2 * 17);
    double sum[2] = {0, 0};
    for (size_t i = 0; i < m.nrow; i++) {
        const char *tn = str(&m, i, "tensor");
        assert_true(!strncmp(tn, "dec.1.", 6) || (i % 17 == 16 && !strcmp(tn, "out.w")));
        sum[(int)num(&m, i, "index")] += num(&m, i, "mass");
    }
    assert_true(fabs(sum[0] - 1) <= 1e-12 && fabs(sum[1] - 1) <= 1e-12);
    lnk_csv_table_free(&m);
    lnk_csv_table b;
    assert_int_equal(lnk_csv_table_read(tu_path("bl.csv"), NULL, &b), LNK_OK);
    double cli = num(&b, 0, "frob");
    lnk_csv_table_free(&b);
    read_csv(&t, "lm", "blocknorms.csv");
    found = 0;
    for (size_t r = 0; r < t.nrow; r++)
        if (!strcmp(str(&t, r, "norm_pos"), "pre") && !strcmp(str(&t, r, "norm"), "layernorm") &&
            !strcmp(str(&t, r, "qk_norm"), "none") && num(&t, r, "L") == 2 &&
            num(&t, r, "seed") == 1 && !strcmp(str(&t, r, "block"), "dec.1.attn.wv") &&
            !strcmp(str(&t, r, "operator"), "functional")) {
            double v = num(&t, r, "frob");
            if (!(fabs(v - cli) <= 1e-9 * cli))
                fail_msg("||F_bb||_F: study %.17g, lnkit blocks %.17g", v, cli);
            found++;
        }
    assert_int_equal(found, 1);
    lnk_csv_table_free(&t);
}

static void test_summary(void **state)
{
    (void)state;
    need_bin();
    char *out;
    const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    /* the summary writes its sidecars through this build's lnkit (under
     * check-asan: build-asan's, where build/ may not exist) */
    int rc = tu_run(&out, "cd '%s' && LNKIT='%s' %s -m studies.summary anatomy '%s'", root,
                    tu_lnkit(), py, OUT());
    if (rc)
        fail_msg("summary (%d): %s", rc, out);
    free(out);
    const char *files[] = {"summary.md", "report.json", "values.csv", "values.meta.json",
                           "claims.csv", "claims.meta.json", "fits.csv", "fits.meta.json",
                           "fits.md", "fits.tex", "extremes.md", "extremes.pdf",
                           "blocknorms.pdf", "layers.md", "mass.tex"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", OUT(), files[i]);
        if (access(p, R_OK))
            fail_msg("no %s", p);
    }
    /* the depth exponent of Post-LN's top Hessian eigenvalue: least squares of
     * ln(eigenvalue) on ln L over every converged seed, worked out here */
    lnk_csv_table t;
    read_csv(&t, "lm", "extremes.csv");
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int n = 0;
    for (size_t r = 0; r < t.nrow; r++)
        if (!strcmp(str(&t, r, "norm_pos"), "post") && !strcmp(str(&t, r, "norm"), "layernorm") &&
            !strcmp(str(&t, r, "qk_norm"), "none") && !strcmp(str(&t, r, "operator"), "hessian") &&
            !strcmp(str(&t, r, "which"), "top") && num(&t, r, "converged") == 1 &&
            num(&t, r, "d") == 8) {
            double x = log(num(&t, r, "L")), y = log(fabs(num(&t, r, "eigenvalue")));
            sx += x, sy += y, sxx += x * x, sxy += x * y, n++;
        }
    lnk_csv_table_free(&t);
    assert_int_equal(n, 6); /* L = 1, 2, 3 x 2 seeds */
    double b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    lnk_csv_table fits;
    char p[1200];
    snprintf(p, sizeof p, "%s/fits.csv", OUT());
    assert_int_equal(lnk_csv_table_read(p, NULL, &fits), LNK_OK);
    int found = 0;
    for (size_t r = 0; r < fits.nrow; r++)
        if (!strcmp(str(&fits, r, "task"), "lm") && !strcmp(str(&fits, r, "sweep"), "depth") &&
            !strcmp(str(&fits, r, "series"), "post") &&
            !strcmp(str(&fits, r, "quantity"), "H_top")) {
            double s = num(&fits, r, "slope");
            if (!(fabs(s - b) <= 1e-9 * fmax(1, fabs(b))))
                fail_msg("summary slope %.17g, by hand %.17g", s, b);
            assert_true(num(&fits, r, "ci_lo") < s && s < num(&fits, r, "ci_hi"));
            assert_int_equal((int)num(&fits, r, "seeds"), 6);
            found++;
        }
    assert_int_equal(found, 1);
    lnk_csv_table_free(&fits);
}

static int same_file(const char *a, const char *b)
{
    char *out = NULL;
    int rc = tu_run(&out, "cmp '%s' '%s'", a, b);
    free(out);
    return rc == 0;
}

static void test_resume(void **state)
{
    (void)state;
    need_bin();
    const char *dir = tu_path("resume");
    assert_int_equal(mkdir(dir, 0700), 0);
    static const char *const C = "--lm-d '' --s2s-L '' --s2s-d '' --no-variants --lm-L-ref 2 "
                                 "--lm-d-ref 8 --h 2 --seeds 2 --probes 2 --runs 1 --steps 6 "
                                 "--max-steps 60 --V 16 --rows 2 --len 4 --quiet";
    char *out = NULL;
    int rc = tu_run(&out, "cd '%s' && export OPENBLAS_NUM_THREADS=1 && '%s' --out one --lm-L 1,2,3 "
                    "%s && '%s' --out two --lm-L 1,2 %s --resume && '%s' --out two --lm-L 1,2,3 "
                    "%s --resume", dir, bin, C, bin, C, bin, C);
    if (rc)
        fail_msg("runs failed (%d): %s", rc, out);
    free(out);
    static const char *const F[] = {"extremes", "mass", "blocknorms", "js"};
    char a[1200], b[1200];
    for (int k = 0; k < 4; k++) {
        snprintf(a, sizeof a, "%s/one/%s.csv", dir, F[k]);
        snprintf(b, sizeof b, "%s/two/%s.csv", dir, F[k]);
        if (!same_file(a, b))
            fail_msg("%s: a run in two parts differs from one run", F[k]);
    }
    /* cut off between the files: the last point (L = 3, pre, seed 1) gone from js.csv */
    rc = tu_run(&out, "cd '%s/two' && grep -v '^lm,pre,layernorm,none,3,8,1,' js.csv > j && "
                "mv j js.csv && export OPENBLAS_NUM_THREADS=1 && '%s' --out . --lm-L 1,2,3 %s "
                "--resume", dir, bin, C);
    if (rc || !strstr(out, "dropped"))
        fail_msg("resume after a cut (%d): %s", rc, out);
    free(out);
    for (int k = 0; k < 4; k++) {
        snprintf(a, sizeof a, "%s/one/%s.csv", dir, F[k]);
        snprintf(b, sizeof b, "%s/two/%s.csv", dir, F[k]);
        if (!same_file(a, b))
            fail_msg("%s: the point cut off was not computed again as before", F[k]);
    }
    /* another setting: refused, the files untouched */
    rc = tu_run(&out, "cd '%s' && '%s' --out two --lm-L 1,2,3,4 %s --probes 3 --resume", dir, bin,
                C);
    assert_int_equal(rc, 2);
    if (!strstr(out, "probes") || !strstr(out, "--resume"))
        fail_msg("expected a message naming probes: %s", out);
    free(out);
    for (int k = 0; k < 4; k++) {
        snprintf(a, sizeof a, "%s/one/%s.csv", dir, F[k]);
        snprintf(b, sizeof b, "%s/two/%s.csv", dir, F[k]);
        assert_true(same_file(a, b));
    }
}

/* Each point's line says the time left: "anatomy: i/n ...: E s (T s so far,
 * about X left)", one per point computed. */
static void test_progress(void **state)
{
    (void)state;
    need_bin();
    char *out = NULL;
    int rc = tu_run(&out, "cd '%s' && OPENBLAS_NUM_THREADS=1 '%s' --out prog --lm-L 1 --lm-d '' "
                    "--s2s-L '' --s2s-d '' --no-variants --lm-L-ref 1 --lm-d-ref 8 --h 2 "
                    "--seeds 2 --probes 2 --runs 1 --steps 6 --max-steps 60 --V 16 --rows 2 "
                    "--len 4 2>&1 >/dev/null", tu_tmpdir(), bin);
    if (rc)
        fail_msg("run failed (%d): %s", rc, out);
    int points = 0, computed = -1;
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
        int i, n;
        if (sscanf(l, "anatomy: %d/%d ", &i, &n) == 2) {
            size_t len = strlen(l);
            if (!strstr(l, " s so far, about ") || len < 7 || strcmp(l + len - 6, " left)"))
                fail_msg("a point's line without the time left: '%s'", l);
            points++;
        }
        sscanf(l, "anatomy: %d points computed", &computed);
    }
    if (points < 2 || points != computed)
        fail_msg("%d point lines, %d points computed", points, computed);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_against_cli),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_resume),
        cmocka_unit_test(test_progress),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
