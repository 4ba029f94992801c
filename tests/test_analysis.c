/* The analysis helpers (studies/kit/analysis.h) and the grad_table tool:
 *   1. power-law fits: exact data give the exponent to rounding; noisy synthetic
 *      data (fixed seeds) give it within 3 standard errors, and the standard
 *      error agrees with the textbook formula;
 *   2. mean / sd and the "mean ± sd" format;
 *   3. Markdown and LaTeX tables (escaping) against hand-written text;
 *   4. the CSV reader (quotes, CRLF, errors naming line and column);
 *   5. grad_table on a small hand-written depth.csv: its Markdown and LaTeX
 *      tables against text worked out by hand. */
#include "testutil.h"
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kit/analysis.h"

#define assert_msg_has(s)                                                                   \
    do {                                                                                    \
        if (!strstr(lnk_errmsg(), (s)))                                                     \
            fail_msg("message \"%s\" lacks \"%s\"", lnk_errmsg(), (s));                     \
    } while (0)

static const double LX[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48};
enum { NX = 11 };

/* Sum of squared deviations of ln x: the OLS slope's se is sigma / sqrt(Sxx). */
static double sxx(void)
{
    double m = 0, s = 0;
    for (int i = 0; i < NX; i++)
        m += log(LX[i]) / NX;
    for (int i = 0; i < NX; i++)
        s += (log(LX[i]) - m) * (log(LX[i]) - m);
    return s;
}

static void test_fit_exact(void **state)
{
    (void)state;
    double y[NX];
    for (int i = 0; i < NX; i++)
        y[i] = 3.0 * pow(LX[i], -0.5);
    lnk_fit f;
    assert_int_equal(lnk_fit_power(LX, y, NULL, NX, &f), LNK_OK);
    assert_true(fabs(f.slope + 0.5) < 1e-12);
    assert_true(fabs(f.intercept - log(3.0)) < 1e-12);
    assert_true(f.se_slope < 1e-10);
    assert_int_equal(f.dof, NX - 2);
    assert_int_equal((int)f.n, NX);
}

/* y = 2 x^b exp(sigma e), e ~ N(0,1): ln y is linear in ln x with Gaussian
 * noise of sd sigma, exactly the least-squares model, so the fitted slope is
 * unbiased with standard error sigma/sqrt(Sxx); |b_hat - b| <= 3 se holds with
 * probability 0.997 per data set, and the seeds are fixed. */
static void test_fit_noisy(void **state)
{
    (void)state;
    const double b = -0.5, sigma = 0.1;
    double se_true = sigma / sqrt(sxx());
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    for (unsigned long seed = 1; seed <= 5; seed++) {
        gsl_rng_set(r, seed);
        double y[NX], se[NX];
        for (int i = 0; i < NX; i++) {
            y[i] = 2.0 * pow(LX[i], b) * exp(sigma * gsl_ran_gaussian(r, 1.0));
            se[i] = sigma * y[i]; /* delta method: sd(ln y) = se / y */
        }
        lnk_fit f, w;
        assert_int_equal(lnk_fit_power(LX, y, NULL, NX, &f), LNK_OK);
        assert_int_equal(lnk_fit_power(LX, y, se, NX, &w), LNK_OK);
        if (fabs(f.slope - b) > 3 * f.se_slope)
            fail_msg("seed %lu: OLS slope %g, se %g", seed, f.slope, f.se_slope);
        if (fabs(w.slope - b) > 3 * w.se_slope)
            fail_msg("seed %lu: weighted slope %g, se %g", seed, w.slope, w.se_slope);
        /* equal weights: the same point estimate as OLS */
        assert_true(fabs(w.slope - f.slope) < 1e-12);
        /* weighted se: sigma/sqrt(Sxx) times max(1, sqrt(chisq/dof)) */
        assert_true(w.scale >= 1.0);
        assert_true(fabs(w.se_slope - se_true * w.scale) < 1e-12 * se_true);
        /* OLS se from the scatter: s/sqrt(Sxx), s^2 = RSS/(n-2) */
        double s = sqrt(f.chisq / f.dof);
        assert_true(fabs(f.se_slope - s / sqrt(sxx())) < 1e-12);
    }
    gsl_rng_free(r);
}

static void test_fit_errors(void **state)
{
    (void)state;
    double x[3] = {1, 2, 3}, y[3] = {1, -1, 2}, se[3] = {1, 1, 0};
    lnk_fit f;
    assert_int_equal(lnk_fit_power(x, y, NULL, 3, &f), LNK_EINVAL);
    assert_msg_has("point 1");
    y[1] = 1;
    assert_int_equal(lnk_fit_power(x, y, se, 3, &f), LNK_EINVAL);
    assert_msg_has("standard error");
    assert_int_equal(lnk_fit_power(x, y, NULL, 2, &f), LNK_EINVAL);
    assert_msg_has("at least 3");
}

static void test_mean_sd_fmt(void **state)
{
    (void)state;
    double x[] = {1, 9, 2, 9, 3, 9, 4, 9}, m, sd;
    lnk_mean_sd(x, 2, 4, &m, &sd);
    assert_true(fabs(m - 2.5) < 1e-15);
    assert_true(fabs(sd - sqrt(5.0 / 3.0)) < 1e-15);
    lnk_mean_sd(x, 1, 1, &m, &sd);
    assert_true(m == 1 && sd == 0);
    char b[64];
    lnk_fmt_pm(b, sizeof b, 1.2346, 0.0123);
    assert_string_equal(b, "1.235 ± 0.012");
    lnk_fmt_pm(b, sizeof b, 12.34, 1.5);
    assert_string_equal(b, "12.3 ± 1.5");
    lnk_fmt_pm(b, sizeof b, 123.4, 15);
    assert_string_equal(b, "123 ± 15");
    lnk_fmt_pm(b, sizeof b, 0.5, 0);
    assert_string_equal(b, "0.5");
    lnk_fmt_pm(b, sizeof b, 2e-5, 1e-6);
    assert_string_equal(b, "2e-05 ± 1e-06");
}

static char *table_text(const lnk_table *t, int tex, const char *caption)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    assert_int_equal(tex ? lnk_table_write_tex(t, f, caption, caption ? "tab:x" : NULL)
                         : lnk_table_write_md(t, f),
                     LNK_OK);
    fclose(f);
    return buf;
}

static void test_tables(void **state)
{
    (void)state;
    static const char *const head[] = {"series", "L", "a|b"};
    lnk_table t;
    assert_int_equal(lnk_table_init(&t, 3, head, "lrr"), LNK_OK);
    int r = lnk_table_new_row(&t);
    assert_int_equal(r, 0);
    lnk_table_set(&t, r, 0, "theorem_pre");
    lnk_table_set(&t, r, 1, "%d", 4);
    lnk_table_set(&t, r, 2, "%s", "0.30 ± 0.07");
    r = lnk_table_new_row(&t);
    lnk_table_set(&t, r, 0, "50%% & $x^2$ {~}");
    lnk_table_set(&t, r, 1, "%d", 16); /* column 2 left empty */
    char *md = table_text(&t, 0, NULL);
    assert_string_equal(md, "| series | L | a\\|b |\n"
                            "|:--|--:|--:|\n"
                            "| theorem_pre | 4 | 0.30 ± 0.07 |\n"
                            "| 50% & $x^2$ {~} | 16 |  |\n");
    char *tex = table_text(&t, 1, NULL);
    assert_string_equal(tex, "\\begin{tabular}{lrr}\n"
                             "\\toprule\n"
                             "series & L & a\\textbar{}b \\\\\n"
                             "\\midrule\n"
                             "theorem\\_pre & 4 & 0.30 $\\pm$ 0.07 \\\\\n"
                             "50\\% \\& \\$x\\textasciicircum{}2\\$ "
                             "\\{\\textasciitilde{}\\} & 16 &  \\\\\n"
                             "\\bottomrule\n"
                             "\\end{tabular}\n");
    char *tex2 = table_text(&t, 1, "Norms, mean ± sd");
    const char *tail = "\\end{tabular}\n\\caption{Norms, mean $\\pm$ sd}\n\\label{tab:x}\n"
                       "\\end{table}\n";
    assert_true(strlen(tex2) > strlen(tail));
    assert_string_equal(tex2 + strlen(tex2) - strlen(tail), tail);
    assert_true(strncmp(tex2, "\\begin{table}[ht]\n\\centering\n\\begin{tabular}{lrr}\n", 49) == 0);
    free(md), free(tex), free(tex2);
    assert_int_equal(lnk_table_set(&t, 5, 0, "x"), LNK_EINVAL);
    lnk_table_free(&t);
    assert_int_equal(lnk_table_init(&t, 2, head, "lx"), LNK_EINVAL);
    assert_msg_has("alignment 'x'");
}

static void test_csv_reader(void **state)
{
    (void)state;
    lnk_csvdata t;
    const char *text = "a,b,c\r\n1,\"x,y\",\"say \"\"hi\"\"\"\r\n2,,\"two\nlines\"\n";
    assert_int_equal(lnk_csvdata_parse(text, "mem.csv", &t), LNK_OK);
    assert_int_equal(t.ncol, 3);
    assert_int_equal((int)t.nrow, 2);
    assert_string_equal(t.head[2], "c");
    assert_string_equal(lnk_csvdata_str(&t, 0, 1), "x,y");
    assert_string_equal(lnk_csvdata_str(&t, 0, 2), "say \"hi\"");
    assert_string_equal(lnk_csvdata_str(&t, 1, 1), "");
    assert_string_equal(lnk_csvdata_str(&t, 1, 2), "two\nlines");
    assert_int_equal(lnk_csvdata_col(&t, "b"), 1);
    assert_int_equal(lnk_csvdata_col(&t, "z"), -1);
    double v;
    assert_int_equal(lnk_csvdata_num(&t, 1, 0, &v), LNK_OK);
    assert_true(v == 2.0);
    assert_int_equal(lnk_csvdata_num(&t, 1, 1, &v), LNK_EFORMAT);
    assert_msg_has("mem.csv: data row 2, column 'b'");
    lnk_csvdata_free(&t);
    /* header only: no rows */
    assert_int_equal(lnk_csvdata_parse("x,y\n", "h.csv", &t), LNK_OK);
    assert_int_equal((int)t.nrow, 0);
    lnk_csvdata_free(&t);
    /* a text that ends just after a ',' (found by the fuzzer: the record leaked) */
    assert_int_equal(lnk_csvdata_parse("a,b\n1,", "end.csv", &t), LNK_OK);
    assert_int_equal(t.nrow, 1);
    assert_string_equal(lnk_csvdata_str(&t, 0, 1), "");
    lnk_csvdata_free(&t);
    assert_int_equal(lnk_csvdata_parse("a,b\n1,2,", "end.csv", &t), LNK_EFORMAT);
    assert_int_equal(lnk_csvdata_parse("a,b\n1,2\n3\n", "bad.csv", &t), LNK_EFORMAT);
    assert_msg_has("bad.csv: line 3: 1 fields, the header has 2");
    assert_int_equal(lnk_csvdata_parse("a,b\n1,\"open\n", "q.csv", &t), LNK_EFORMAT);
    assert_msg_has("unterminated");
    assert_int_equal(lnk_csvdata_parse("", "e.csv", &t), LNK_EFORMAT);
    assert_int_equal(lnk_csvdata_read(tu_path("missing.csv"), &t), LNK_EIO);
    /* a file round trip through lnk_csv */
    const char *p = tu_path("rt.csv");
    lnk_afile a;
    lnk_csv c;
    static const char *const h[] = {"k", "v"};
    assert_int_equal(lnk_afile_open(&a, p), LNK_OK);
    assert_int_equal(lnk_csv_begin(&c, a.f, h, 2), LNK_OK);
    lnk_csv_str(&c, "a,\"b\"");
    lnk_csv_double(&c, 0.1);
    lnk_csv_end_row(&c);
    lnk_csv_free(&c);
    assert_int_equal(lnk_afile_commit(&a), LNK_OK);
    assert_int_equal(lnk_csvdata_read(p, &t), LNK_OK);
    assert_string_equal(lnk_csvdata_str(&t, 0, 0), "a,\"b\"");
    assert_int_equal(lnk_csvdata_num(&t, 0, 1, &v), LNK_OK);
    assert_true(v == 0.1);
    lnk_csvdata_free(&t);
}

/* build/tests/test_analysis -> build/studies/NAME (the same build directory). */
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

/* grad_table on a hand-written depth sweep: 2 depths x theorem Post/Pre x 2 seeds.
 * Expected cells, by hand (sd with n - 1; "mean ± sd" to 2 significant digits of sd):
 *   L=1 Post: 0.30, 0.50 -> 0.40 ± 0.1414 -> "0.40 ± 0.14";  Pre: 0.6, 0.6 -> "0.6"
 *   L=4 Post: 0.40, 0.40 -> "0.4";  Pre: 0.25, 0.35 -> 0.30 ± 0.0707 -> "0.300 ± 0.071"
 * Post/Pre per seed: L=1: 0.5, 0.8333 -> 0.6667 ± 0.2357 -> "0.67 ± 0.24" (and /sqrt(1));
 *   L=4: 1.6, 1.142857 -> 1.371429 ± 0.323249 -> "1.37 ± 0.32"; /2 -> "0.69 ± 0.16". */
static void test_grad_table(void **state)
{
    (void)state;
    const char *bin = study_bin("grad_table");
    if (!bin) {
        printf("  skipped: build/studies/grad_table not built (make build/studies/grad_table)\n");
        skip();
    }
    const char *dir = tu_path("gt");
    assert_int_equal(mkdir(dir, 0700), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/depth.csv", dir);
    const char *hdr = "key,setting,task,norm_pos,L,d,h,d_ff,V,B,T,batches,label_smoothing,"
                      "tie_output,seed,loss,w2_mean_norm,w2_norm_of_mean,w1_mean_norm,"
                      "w1_norm_of_mean,grad_mean_norm,seconds\n";
    char csv[4096];
    int n = snprintf(csv, sizeof csv, "%s", hdr);
    struct { const char *pos; int L, seed; double v; } rows[] = {
        {"post", 1, 0, 0.30}, {"post", 1, 1, 0.50}, {"pre", 1, 0, 0.6}, {"pre", 1, 1, 0.6},
        {"post", 4, 0, 0.40}, {"post", 4, 1, 0.40}, {"pre", 4, 0, 0.25}, {"pre", 4, 1, 0.35}};
    for (int i = 0; i < 8; i++)
        n += snprintf(csv + n, sizeof csv - n,
                      "cls/theorem/%s/L%d/x,theorem,cls,%s,%d,64,1,64,256,8,16,4,0,1,%d,5.5,1,%g,"
                      "1,1,1,0.01\n",
                      rows[i].pos, rows[i].L, rows[i].pos, rows[i].L, rows[i].seed, rows[i].v);
    tu_write_file(path, csv, (size_t)n);
    char *out = NULL;
    int rc = tu_run(&out, "'%s' --dir '%s'", bin, dir);
    if (rc != 0)
        fail_msg("grad_table failed (%d): %s", rc, out);
    free(out);
    char p2[700];
    snprintf(p2, sizeof p2, "%s/depth_table.md", dir);
    char *md = tu_read_file(p2, NULL);
    assert_string_equal(md, "| L | theorem Post-LN | theorem Pre-LN |\n"
                            "|--:|--:|--:|\n"
                            "| 1 | 0.40 ± 0.14 | 0.6 |\n"
                            "| 4 | 0.4 | 0.300 ± 0.071 |\n");
    snprintf(p2, sizeof p2, "%s/depth_table.tex", dir);
    char *tex = tu_read_file(p2, NULL);
    assert_string_equal(tex,
                        "\\begin{table}[ht]\n\\centering\n\\begin{tabular}{rrr}\n\\toprule\n"
                        "L & theorem Post-LN & theorem Pre-LN \\\\\n\\midrule\n"
                        "1 & 0.40 $\\pm$ 0.14 & 0.6 \\\\\n"
                        "4 & 0.4 & 0.300 $\\pm$ 0.071 \\\\\n"
                        "\\bottomrule\n\\end{tabular}\n"
                        "\\caption{Depth sweep: "
                        "\\textbar{}\\textbar{}dL/dW2\\textbar{}\\textbar{}\\_F of "
                        "the last block "
                        "(w2\\_norm\\_of\\_mean) against the depth L at d = 64, cls task; mean "
                        "$\\pm$ sd over seeds.}\n\\end{table}\n");
    snprintf(p2, sizeof p2, "%s/depth_ratio.md", dir);
    char *ratio = tu_read_file(p2, NULL);
    assert_string_equal(ratio, "| L | sqrt(L) | theorem Post/Pre | theorem ratio/sqrt(L) | "
                               "realistic Post/Pre | realistic ratio/sqrt(L) |\n"
                               "|--:|--:|--:|--:|--:|--:|\n"
                               "| 1 | 1.000 | 0.67 ± 0.24 | 0.67 ± 0.24 |  |  |\n"
                               "| 4 | 2.000 | 1.37 ± 0.32 | 0.69 ± 0.16 |  |  |\n");
    /* the plot data has its metadata sidecar */
    snprintf(p2, sizeof p2, "%s/depth_summary.meta.json", dir);
    assert_int_equal(access(p2, F_OK), 0);
    /* values.csv: the ratio's slope, a two-point weighted fit of the seed means of the
     * per-seed ratios, by hand: ln(1.371429 / 0.666667) / ln 4 = 0.5203, standard error
     * sqrt((0.16667/0.66667)^2 + (0.22857/1.37143)^2) / ln 4 = 0.2167 (se = sd / sqrt 2) */
    snprintf(p2, sizeof p2, "%s/values.csv", dir);
    char *vals = tu_read_file(p2, NULL);
    assert_non_null(strstr(vals, "\ndepth_theorem_ratio_slope,0.52 ± 0.22\n"));
    assert_non_null(strstr(vals, "\ndepth_theorem_ratio_range,1-4\n"));
    /* the plot script beside its data: log axes, the data file, the theory line */
    snprintf(p2, sizeof p2, "%s/depth.gp", dir);
    char *gp = tu_read_file(p2, NULL);
    assert_non_null(strstr(gp, "set logscale xy"));
    assert_non_null(strstr(gp, "'depth_summary.csv'"));
    assert_non_null(strstr(gp, "theory: L^(-1/2)"));
    snprintf(p2, sizeof p2, "%s/claims.csv", dir);
    char *cl = tu_read_file(p2, NULL);
    assert_true(strncmp(cl, "claim,value,setting,file\n", 25) == 0);
    free(md), free(tex), free(ratio), free(vals), free(gp), free(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_exact),   cmocka_unit_test(test_fit_noisy),
        cmocka_unit_test(test_fit_errors),  cmocka_unit_test(test_mean_sd_fmt),
        cmocka_unit_test(test_tables),      cmocka_unit_test(test_csv_reader),
        cmocka_unit_test(test_grad_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
