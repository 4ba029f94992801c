/* The geometry study's summarising step (studies/ln_geometry_summary) on rows whose
 * answers are known by hand: a heat map built so that the projection shifts it by
 * exactly one dimension, and orthogonality means that follow exact power laws; the
 * other CSVs are the committed ones (results/geometry, run from the repository's
 * root), for the labels of issue 16 item 4 and the plot scripts of item 5. */
#include "testutil.h"
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kit/analysis.h"

static const char *study_bin(const char *name)
{
    static char buf[4096];
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *d = dirname(dirname(exe));
    snprintf(buf, sizeof buf, "%s/studies/%s", d, name);
    return access(buf, X_OK) == 0 ? buf : NULL;
}

/* The fraction of runs with an unselectable key, "no norm", at (n, d): linear in d,
 * on a grid of 0.01 (100 runs). */
static double frac(int n, int d)
{
    double x = (n / 20.0) - 0.2 * d;
    x = x < 0 ? 0 : x > 1 ? 1 : x;
    return round(100 * x) / 100;
}

static void write_heatmap(const char *dir)
{
    char path[700];
    snprintf(path, sizeof path, "%s/heatmap.csv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "dist,norm,n,d,runs,frac_any,mean_frac,n_lp,n_ambiguous,n_near,min_sel_dist\n");
    static const char *const dist[2] = {"gauss", "offset"};
    static const char *const norm[4] = {"none", "center", "scale", "layernorm"};
    static const int ns[4] = {3, 20, 40, 60};
    for (int ds = 0; ds < 2; ds++)
        for (int k = 0; k < 4; k++)
            for (int d = 3; d <= 15; d++)
                for (int i = 0; i < 4; i++) {
                    /* P at d is "none" at d - 1; S and LayerNorm: nothing unselectable */
                    double p = k == 0 ? frac(ns[i], d) : k == 1 ? frac(ns[i], d - 1) : 0;
                    fprintf(f, "%s,%s,%d,%d,100,%.17g,%.17g,10,0,0,%s\n", dist[ds], norm[k], ns[i],
                            d, p, p / 2, k == 3 ? "4.0000000000000002e-10" : "0.001");
                }
    fclose(f);
}

/* gauss: 0.79 d^-0.5, offset: 0.3 d^-0.1, offset0: 0.9 d^-0.6, each with a standard
 * error of 1% (sd over 100 sets of 0.1 y); the theory column is the exact Gaussian. */
static void write_ortho(const char *dir)
{
    char path[700];
    snprintf(path, sizeof path, "%s/orthogonality.csv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "dist,d,keys,mean_abs_cos,sd_abs_cos,mean_angle_deg,gauss_theory_abs_cos,"
               "mean_abs_cos_after_center,sets,sd_set_mean_abs_cos\n");
    static const int ds[] = {3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512};
    static const char *const dist[3] = {"gauss", "offset", "offset0"};
    static const double A[3] = {0.79, 0.3, 0.9}, b[3] = {-0.5, -0.1, -0.6};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 16; i++) {
            int d = ds[i];
            double y = A[k] * pow(d, b[k]);
            double th = exp(lgamma(d / 2.0) - lgamma((d + 1) / 2.0)) / sqrt(M_PI);
            fprintf(f, "%s,%d,4000,%.17g,0.2,80,", dist[k], d, y);
            if (k == 0)
                fprintf(f, "%.17g", th);
            fprintf(f, ",1e-17,100,%.17g\n", 0.1 * y);
        }
    fclose(f);
}

/* value NAME of DIR/values.csv (the test fails if absent) */
static char *value(const char *dir, const char *name)
{
    char path[700];
    snprintf(path, sizeof path, "%s/values.csv", dir);
    lnk_csvdata t;
    assert_int_equal(lnk_csvdata_read(path, &t), LNK_OK);
    char *v = NULL;
    for (size_t r = 0; r < t.nrow; r++)
        if (!strcmp(lnk_csvdata_str(&t, r, 0), name))
            v = strdup(lnk_csvdata_str(&t, r, 1));
    lnk_csvdata_free(&t);
    if (!v)
        fail_msg("values.csv has no '%s'", name);
    return v;
}

static void expect(const char *dir, const char *name, const char *want)
{
    char *v = value(dir, name);
    if (strcmp(v, want))
        fail_msg("%s = '%s', expected '%s'", name, v, want);
    free(v);
}

static void expect_prefix(const char *dir, const char *name, const char *want)
{
    char *v = value(dir, name);
    if (strncmp(v, want, strlen(want)))
        fail_msg("%s = '%s', expected it to start with '%s'", name, v, want);
    free(v);
}

static char *read_in(const char *dir, const char *name)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return tu_read_file(path, NULL);
}

static void test_summary(void **state)
{
    (void)state;
    const char *bin = study_bin("ln_geometry_summary");
    if (!bin) {
        printf("  skipped: build/studies/ln_geometry_summary not built\n");
        skip();
    }
    if (access("results/geometry/model_select.csv", R_OK) != 0)
        fail_msg("results/geometry/model_select.csv not found: run from the repository's root");
    const char *dir = tu_path("geo");
    char *out = NULL;
    assert_int_equal(tu_run(&out, "mkdir -p '%s' && cp results/geometry/*.csv '%s'/", dir, dir), 0);
    free(out);
    write_heatmap(dir);
    write_ortho(dir);
    int rc = tu_run(&out, "'%s' '%s'", bin, dir);
    if (rc != 0)
        fail_msg("ln_geometry_summary failed (%d): %s", rc, out);
    free(out);

    /* thresholds by hand: n = 40, "none": 2 - 0.2 d <= 0.5 from d = 8, <= 0.05 from
     * d = 10 (9.75 rounded up); P one more; n = 60: 13 and 15, P: 14 and beyond 15 */
    expect(dir, "heat.gauss.none.n40.half", "8");
    expect(dir, "heat.gauss.none.n40.tail", "10");
    expect(dir, "heat.gauss.center.n40.half", "9");
    expect(dir, "heat.gauss.center.n40.tail", "11");
    expect(dir, "heat.gauss.none.n60.half", "13");
    expect(dir, "heat.gauss.center.n60.tail", "- (> 15)");
    expect(dir, "heat.gauss.scale.n60.half", "<= 3");
    expect(dir, "heat.gauss.layernorm.max", "0.00");
    expect(dir, "heat.ln_margin", "4e-10");
    /* the projection is the "none" map shifted by one dimension, exactly */
    expect(dir, "centre.chi2_1", "0.00");
    expect(dir, "centre.diff", "0.000 ± 0.000");
    expect(dir, "centre.within2", "100%");
    expect(dir, "centre.shift", "1.00 ± 0.00");
    expect(dir, "centre.shift_range", "1-1");
    expect(dir, "heat.affine.same", "52");
    expect(dir, "heat.affine.cells", "52");
    /* exact power laws: the fitted exponents and chi^2/dof 0; the exact Gaussian curve
     * has a slope below -1/2 over d = 8-512 (-1/2 - 1/(4d) locally) */
    expect_prefix(dir, "ortho.gauss.b", "-0.5000 ± 0.00");
    expect_prefix(dir, "ortho.offset.b", "-0.1000 ± 0.00");
    expect_prefix(dir, "ortho.offset0.b", "-0.6000 ± 0.00");
    expect(dir, "ortho.gauss.chi2", "0.0");
    {
        char *v = value(dir, "ortho.theory.b");
        double b = atof(v);
        if (!(b > -0.531 && b < -0.5005)) /* between the local slopes at d = 8 and 512 */
            fail_msg("ortho.theory.b = %s, expected in (-0.531, -0.5005)", v);
        free(v);
    }
    expect(dir, "ortho.range", "8-512");
    expect_prefix(dir, "ortho.offset.last_local", "-0.10");
    /* 0.79 / sqrt(d) <= 0.05 from d = 256 */
    expect(dir, "ortho.gauss.d005", "256");

    /* item 4: the model table says qk_norm none where it shows the none model, marks
     * Post-LN layer 0's N(x) as x; the attention table names each aggregation */
    char *ms = read_in(dir, "model_select.md");
    assert_null(strstr(ms, "| any |"));
    assert_non_null(strstr(ms, "| synthetic | 8/4 | post-LN | none | N(x) Wk_j | "));
    const char *p = strstr(ms, "| synthetic | 8/4 | post-LN | none | N(x) Wk_j | ");
    assert_non_null(strstr(p, " (x) |"));
    assert_true(strstr(p, " (x) |") < strchr(p, '\n'));
    p = strstr(ms, "| synthetic | 8/4 | pre-LN | none | N(x) Wk_j | ");
    assert_non_null(p);
    assert_true(!strstr(p, " (x) |") || strstr(p, " (x) |") > strchr(p, '\n'));
    char *as = read_in(dir, "attn_stats.md");
    assert_non_null(strstr(as, "row entropy: mean over heads (± sd) | min over heads and rows |"));
    assert_non_null(strstr(as, "| max over heads | largest logit: max over heads |"));
    /* item 5: viridis, labelled colour bars, the table's names; the orthogonality plot
     * draws the fitted lines on log axes */
    char *hg = read_in(dir, "heatmap_frac_any.gp");
    assert_non_null(strstr(hg, "'#440154'"));
    assert_non_null(strstr(hg, "'#fde725'"));
    assert_non_null(strstr(hg, "set cblabel 'fraction of runs with >= 1 unselectable key'"));
    assert_non_null(strstr(hg, "gauss keys, projection P"));
    assert_non_null(strstr(hg, "offset keys, LayerNorm S(P)"));
    char *og = read_in(dir, "orthogonality.gp");
    assert_non_null(strstr(og, "set logscale xy"));
    assert_non_null(strstr(og, "fit_line(x, a0, b0)"));
    assert_non_null(strstr(og, "sqrt(2 / (pi * x))"));
    /* deterministic: a second run writes the same files */
    char *v1 = read_in(dir, "values.csv"), *s1 = read_in(dir, "summary.md");
    assert_int_equal(tu_run(&out, "'%s' '%s'", bin, dir), 0);
    free(out);
    char *v2 = read_in(dir, "values.csv"), *s2 = read_in(dir, "summary.md");
    assert_string_equal(v1, v2);
    assert_string_equal(s1, s2);
    free(ms), free(as), free(hg), free(og), free(v1), free(v2), free(s1), free(s2);
}

/* A raw CSV that lacks a column the summary needs fails with exit 2 and names it. */
static void test_bad_input(void **state)
{
    (void)state;
    const char *bin = study_bin("ln_geometry_summary");
    if (!bin)
        skip();
    const char *dir = tu_path("geobad");
    char *out = NULL;
    assert_int_equal(tu_run(&out, "mkdir -p '%s' && cp results/geometry/*.csv '%s'/ && "
                                  "rm -f '%s/values.csv' && "
                                  "sed -i '1s/sd_set_mean_abs_cos/sd_other/' '%s/orthogonality.csv'",
                            dir, dir, dir, dir), 0);
    free(out);
    int rc = tu_run(&out, "'%s' '%s' 2>&1", bin, dir);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "sd_set_mean_abs_cos"));
    free(out);
    char path[700];
    snprintf(path, sizeof path, "%s/values.csv", dir);
    assert_int_equal(access(path, F_OK), -1); /* nothing half-written */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
