/* The gradient study's factorial (issue 17, item 4):
 *   1. lnk_fit_power_seeds (studies/kit/fit_seeds.c): seeds whose factors
 *      average to 1 around an exact power law give its exponent to rounding
 *      (weighted); noisy synthetic seeds (fixed stream) give it within 3
 *      standard errors; one seed a point falls back to an unweighted fit;
 *   2. grad_factorial on hand-made rows of known exponents in every cell:
 *      each of the 2 x 2 x 2 x 2 cells x 2 statistics x 4 fits is in fits.csv
 *      once, with the designed slope (1e-9), z = (slope - reference) / se and
 *      the "consistent" flag from it; values.csv quotes them; claims.csv has
 *      the four headline claims with the counts fits.csv gives; a cell
 *      without its width rows fails naming it;
 *   3. studies/scripts/study_grad_factorial.sh at a tiny size (grad_norms rows,
 *      then the summary): every cell present, every output with its sidecar. */
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

static void test_fit_seeds(void **state)
{
    (void)state;
    /* exact: y = 3 x^-0.5 times seed factors 0.8, 1, 1.2 (mean 1) */
    double x[15], y[15];
    const double X[5] = {2, 4, 8, 16, 32}, F[3] = {0.8, 1.0, 1.2};
    int n = 0;
    for (int s = 0; s < 3; s++) /* seeds first: the fit groups by x itself */
        for (int i = 0; i < 5; i++) {
            x[n] = X[i];
            y[n] = 3 * pow(X[i], -0.5) * F[s];
            n++;
        }
    lnk_fit f;
    int w = -1;
    double lo = 0, hi = 0;
    assert_int_equal(lnk_fit_power_seeds(x, y, (size_t)n, &f, &w, &lo, &hi), LNK_OK);
    assert_int_equal(w, 1);
    assert_int_equal((int)f.n, 5);
    assert_true(lo == 2 && hi == 32);
    assert_true(fabs(f.slope + 0.5) < 1e-12);
    assert_true(fabs(f.intercept - log(3)) < 1e-12);
    assert_true(f.se_slope > 0 && isfinite(f.se_slope) && f.chisq < 1e-20);
    /* noisy: lognormal seeds (sigma 0.2), exponent 0.7; 4 seeds at 6 points */
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 17);
    double xn[24], yn[24];
    n = 0;
    for (int i = 0; i < 6; i++)
        for (int s = 0; s < 4; s++) {
            xn[n] = 32 << i;
            yn[n] = 0.01 * pow(xn[n], 0.7) * exp(gsl_ran_gaussian(r, 0.2));
            n++;
        }
    gsl_rng_free(r);
    assert_int_equal(lnk_fit_power_seeds(xn, yn, (size_t)n, &f, &w, NULL, NULL), LNK_OK);
    assert_int_equal(w, 1);
    if (!(fabs(f.slope - 0.7) < 3 * f.se_slope) || !(f.se_slope < 0.1))
        fail_msg("noisy fit: slope %g ± %g, expected 0.7 within 3 se", f.slope, f.se_slope);
    /* one seed a point: unweighted (the scatter gives the se) */
    assert_int_equal(lnk_fit_power_seeds(X, (const double[]){1, 0.7, 0.5, 0.36, 0.25}, 5, &f,
                                         &w, NULL, NULL),
                     LNK_OK);
    assert_int_equal(w, 0);
    assert_true(f.slope < -0.4 && f.slope > -0.6 && f.se_slope > 0);
    /* two points of one seed: too few for an unweighted fit */
    assert_int_equal(lnk_fit_power_seeds(X, X, 2, &f, &w, NULL, NULL), LNK_EINVAL);
}

/* build/tests/test_grad_factorial -> build/studies/NAME, and the build directory. */
static const char *build_dir(void)
{
    static char buf[4096];
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    snprintf(buf, sizeof buf, "%s", dirname(dirname(exe)));
    return buf;
}

static const char *study_bin(const char *name)
{
    static char buf[4200];
    const char *b = build_dir();
    if (!b)
        return NULL;
    snprintf(buf, sizeof buf, "%s/studies/%s", b, name);
    return access(buf, X_OK) == 0 ? buf : NULL;
}

static const char *const TASK[2] = {"cls", "lm"}, *const SET[2] = {"theorem", "realistic"},
                         *const POS[2] = {"post", "pre"};
static const int VV[2] = {64, 256};
/* designed exponents: depth Post 0.1, Pre -0.5; width Post 0.5, Pre 0.8 (plus 0.01 per
 * V = 256, and 0.02 untied, so that a mixed-up cell shows) */
static double exponent(int width, int pre, int vi, int untied)
{
    double b = width ? (pre ? 0.8 : 0.5) : (pre ? -0.5 : 0.1);
    return b + 0.01 * vi + 0.02 * untied;
}

static void write_rows(const char *dir, int width, int vi, int untied)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s_V%d_%s.csv", dir, width ? "width" : "depth", VV[vi],
             untied ? "untied" : "tied");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "key,setting,task,norm_pos,L,d,seed,V,tie_output,w2_mean_norm,w2_norm_of_mean\n");
    static const double X[2][3] = {{2, 4, 8}, {32, 64, 128}}, F[3] = {0.9, 1.0, 1.1};
    for (int t = 0; t < 2; t++)
        for (int s = 0; s < 2; s++)
            for (int p = 0; p < 2; p++)
                for (int i = 0; i < 3; i++)
                    for (int k = 0; k < 3; k++) {
                        double x = X[width][i], b = exponent(width, p, vi, untied);
                        /* the mean-of-norms statistic: twice the norm of the mean, same law */
                        double y = 0.3 * pow(x, b) * F[k];
                        fprintf(f, "k,%s,%s,%s,%g,%g,%d,%d,%d,%.17g,%.17g\n", SET[s], TASK[t],
                                POS[p], width ? 4 : x, width ? x : 64, k, VV[vi], !untied, 2 * y,
                                y);
                    }
    fclose(f);
}

static void test_summary(void **state)
{
    (void)state;
    const char *bin = study_bin("grad_factorial");
    if (!bin) {
        printf("  skipped: build/studies/grad_factorial not built\n");
        skip();
    }
    const char *dir = tu_path("gf");
    assert_int_equal(mkdir(dir, 0700), 0);
    for (int w = 0; w < 2; w++)
        for (int vi = 0; vi < 2; vi++)
            for (int u = 0; u < 2; u++)
                write_rows(dir, w, vi, u);
    char *out = NULL;
    int rc = tu_run(&out, "'%s' --dir '%s'", bin, dir);
    if (rc != 0)
        fail_msg("grad_factorial failed (%d): %s", rc, out);
    assert_non_null(strstr(out, "16 cells x 2 statistics from 576 rows"));
    free(out);
    char p[800];
    snprintf(p, sizeof p, "%s/fits.csv", dir);
    lnk_csvdata t;
    assert_int_equal(lnk_csvdata_read(p, &t), LNK_OK);
    assert_int_equal((int)t.nrow, 16 * 2 * 4);
    int c_task = lnk_csvdata_col(&t, "task"), c_out = lnk_csvdata_col(&t, "output"),
        c_V = lnk_csvdata_col(&t, "V"), c_set = lnk_csvdata_col(&t, "setting"),
        c_stat = lnk_csvdata_col(&t, "statistic"), c_q = lnk_csvdata_col(&t, "quantity"),
        c_sl = lnk_csvdata_col(&t, "slope"), c_se = lnk_csvdata_col(&t, "se"),
        c_ref = lnk_csvdata_col(&t, "reference"), c_z = lnk_csvdata_col(&t, "z"),
        c_ok = lnk_csvdata_col(&t, "consistent"), c_n = lnk_csvdata_col(&t, "points");
    assert_true(c_task >= 0 && c_out >= 0 && c_V >= 0 && c_set >= 0 && c_stat >= 0 && c_q >= 0 &&
                c_sl >= 0 && c_se >= 0 && c_ref >= 0 && c_z >= 0 && c_ok >= 0 && c_n >= 0);
    static const char *const Q[4] = {"pre_L", "post_L", "post_d", "pre_d"},
                             *const ST[2] = {"w2_norm_of_mean", "w2_mean_norm"};
    int seen[2][2][2][2][2][4] = {{{{{{0}}}}}};
    int pre_L_tied_ok = 0; /* Pre-LN depth fits of a tied output within 2 se of -1/2 */
    for (size_t r = 0; r < t.nrow; r++) {
        int ti = !strcmp(lnk_csvdata_str(&t, r, c_task), "lm");
        int u = !strcmp(lnk_csvdata_str(&t, r, c_out), "untied");
        int vi = !strcmp(lnk_csvdata_str(&t, r, c_V), "256");
        int si = !strcmp(lnk_csvdata_str(&t, r, c_set), "realistic");
        int st = !strcmp(lnk_csvdata_str(&t, r, c_stat), ST[1]);
        assert_true(st || !strcmp(lnk_csvdata_str(&t, r, c_stat), ST[0]));
        int q = -1;
        for (int k = 0; k < 4; k++)
            if (!strcmp(lnk_csvdata_str(&t, r, c_q), Q[k]))
                q = k;
        assert_true(q >= 0);
        seen[ti][u][vi][si][st][q]++;
        double sl, se, ref, z, ok, n;
        assert_int_equal(lnk_csvdata_num(&t, r, c_sl, &sl), LNK_OK);
        assert_int_equal(lnk_csvdata_num(&t, r, c_se, &se), LNK_OK);
        assert_int_equal(lnk_csvdata_num(&t, r, c_ref, &ref), LNK_OK);
        assert_int_equal(lnk_csvdata_num(&t, r, c_z, &z), LNK_OK);
        assert_int_equal(lnk_csvdata_num(&t, r, c_ok, &ok), LNK_OK);
        assert_int_equal(lnk_csvdata_num(&t, r, c_n, &n), LNK_OK);
        double want = exponent(q >= 2, q == 0 || q == 3, vi, u);
        if (fabs(sl - want) > 1e-9)
            fail_msg("row %zu (%s): slope %.12g, designed %g", r + 2, Q[q], sl, want);
        assert_true(n == 3 && se > 0);
        assert_true(fabs(z - (sl - ref) / se) < 1e-9 * fmax(1, fabs(z)));
        assert_true(ok == (fabs(z) <= 2));
        pre_L_tied_ok += q == 0 && !u && ok;
        if (q == 0 || q == 1)
            assert_true(ref == (q == 0 ? -0.5 : 0));
    }
    for (int a = 0; a < 32; a++)
        for (int q = 0; q < 4; q++)
            assert_int_equal(seen[a >> 4][(a >> 3) & 1][(a >> 2) & 1][(a >> 1) & 1][a & 1][q], 1);
    lnk_csvdata_free(&t);
    /* values.csv: one cell's Pre-LN depth slope as quoted, and the count of
     * Pre-LN depth fits within 2 se of -1/2 (those of V = 64, tied: exactly -0.5) */
    snprintf(p, sizeof p, "%s/values.csv", dir);
    assert_int_equal(lnk_csvdata_read(p, &t), LNK_OK);
    int found = 0;
    for (size_t r = 0; r < t.nrow; r++) {
        const char *nm = lnk_csvdata_str(&t, r, 0), *v = lnk_csvdata_str(&t, r, 1);
        if (!strcmp(nm, "pre_L.lm.untied.V256.realistic.nom")) {
            if (strncmp(v, "-0.47", 5) != 0) /* -0.5 + 0.01 + 0.02 */
                fail_msg("%s = '%s', expected -0.47...", nm, v);
            found++;
        }
        if (!strcmp(nm, "cells")) {
            assert_string_equal(v, "32");
            found++;
        }
    }
    assert_int_equal(found, 2);
    lnk_csvdata_free(&t);
    /* claims.csv: the four headline claims, the first with the count of its
     * tied fits as fits.csv flags them and the default cell's designed slope */
    snprintf(p, sizeof p, "%s/claims.csv", dir);
    assert_int_equal(lnk_csvdata_read(p, &t), LNK_OK);
    assert_int_equal((int)t.nrow, 4);
    assert_int_equal(t.ncol, 4);
    assert_string_equal(t.head[0], "claim");
    assert_string_equal(t.head[3], "file");
    for (size_t r = 0; r < t.nrow; r++)
        for (int j = 0; j < 4; j++)
            assert_true(lnk_csvdata_str(&t, r, j)[0] != '\0');
    char want[128];
    snprintf(want, sizeof want, "tied output %d of 16 (slopes -0.50 to -0.49)", pre_L_tied_ok);
    if (!strstr(lnk_csvdata_str(&t, 0, 1), want) ||
        !strstr(lnk_csvdata_str(&t, 0, 1), "cls, tied, V = 256, theorem -0.49") ||
        strcmp(lnk_csvdata_str(&t, 0, 3), "depth_V*_*.csv") != 0)
        fail_msg("claims.csv row 1: '%s' (file %s), expected '%s' and the default cell",
                 lnk_csvdata_str(&t, 0, 1), lnk_csvdata_str(&t, 0, 3), want);
    assert_non_null(strstr(lnk_csvdata_str(&t, 0, 2), "3 seeds"));
    lnk_csvdata_free(&t);
    for (int k = 0; k < 4; k++) {
        static const char *const f[] = {"fits.meta.json", "claims.csv", "factorial.md",
                                        "factorial.tex"};
        snprintf(p, sizeof p, "%s/%s", dir, f[k]);
        assert_int_equal(access(p, R_OK), 0);
    }
    /* a cell without its width rows: refused, naming the cell */
    snprintf(p, sizeof p, "%s/width_V64_untied.csv", dir);
    assert_int_equal(unlink(p), 0);
    rc = tu_run(&out, "'%s' --dir '%s'", bin, dir);
    assert_int_equal(rc, 2);
    if (!strstr(out, "untied output, V = 64") || !strstr(out, "exponent in d"))
        fail_msg("missing rows: %s", out);
    free(out);
}

static void test_tiny_study(void **state)
{
    (void)state;
    const char *b = build_dir();
    if (!b || !study_bin("grad_factorial") || !study_bin("grad_norms")) {
        printf("  skipped: build/studies/grad_norms or grad_factorial not built\n");
        skip();
    }
    char build[4096], script[4200];
    snprintf(build, sizeof build, "%s", b);
    /* the script beside the build directory's parent (the checkout) */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", build);
    snprintf(script, sizeof script, "%s/studies/scripts/study_grad_factorial.sh", dirname(tmp));
    if (access(script, R_OK) != 0) {
        printf("  skipped: %s not found\n", script);
        skip();
    }
    const char *out_dir = tu_path("gf_out"), *work = tu_path("gf_work");
    char *out = NULL;
    int rc = tu_run(&out,
                    "GF_OUT='%s' GF_WORK='%s' GF_SEEDS=2 GF_LS=1,2,3 GF_D=8 GF_DS=8,16,24 GF_L=1 "
                    "GF_VS='12 20' GF_ARGS='--batch 2 --len 4 --batches 2' bash '%s' '%s'",
                    out_dir, work, script, build);
    if (rc != 0)
        fail_msg("study_grad_factorial.sh failed (%d): %s", rc, out);
    assert_non_null(strstr(out, "16 cells x 2 statistics"));
    free(out);
    char p[800];
    snprintf(p, sizeof p, "%s/fits.csv", out_dir);
    lnk_csvdata t;
    assert_int_equal(lnk_csvdata_read(p, &t), LNK_OK);
    assert_int_equal((int)t.nrow, 128);
    int c_sl = lnk_csvdata_col(&t, "slope"), c_n = lnk_csvdata_col(&t, "points");
    for (size_t r = 0; r < t.nrow; r++) {
        double v;
        assert_int_equal(lnk_csvdata_num(&t, r, c_sl, &v), LNK_OK);
        assert_true(isfinite(v));
        assert_int_equal(lnk_csvdata_num(&t, r, c_n, &v), LNK_OK);
        assert_true(v == 3);
    }
    lnk_csvdata_free(&t);
    static const char *const f[] = {"depth_V12_tied", "depth_V12_untied", "depth_V20_tied",
                                    "depth_V20_untied", "width_V12_tied", "width_V12_untied",
                                    "width_V20_tied", "width_V20_untied", "fits", "values",
                                    "claims"};
    for (int k = 0; k < 11; k++) {
        snprintf(p, sizeof p, "%s/%s.csv", out_dir, f[k]);
        assert_int_equal(access(p, R_OK), 0);
        snprintf(p, sizeof p, "%s/%s.meta.json", out_dir, f[k]);
        assert_int_equal(access(p, R_OK), k < 9 ? 0 : -1); /* values, claims: no sidecar */
    }
    assert_int_not_equal(access(work, F_OK), 0); /* the work directory is gone */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_seeds),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_tiny_study),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
