/* Values at the edges (issue 30, items 2, 8, 9 and the smaller ones), through
 * the lnkit program on a small model and through the library:
 *  - not converged: eigs and blocks write everything, print one warning line
 *    (how many of the requested pairs, the worst residual against the
 *    tolerance, the steps used of the limit), even with --quiet, and exit 3;
 *    converged runs exit 0 without it; trace and density (no convergence
 *    test) exit 0; a block that is zero to rounding counts as converged;
 *  - select: keys near 1e308 (GLPK asserted: exit 134) and subnormal keys
 *    give the selectability of the same keys scaled into the usual range;
 *    the library's answers are the same bits for the keys scaled by any power
 *    of two from 2^-1000 to 2^1000;
 *  - norms: lnk_norm2 against a long double reference from 1e-300 to 1e300
 *    entries, bitwise the plain sum of squares where that is safe; eval with
 *    weights of 1e160 and 1e306: every tensor's norm and the total, finite,
 *    in CSV and JSON;
 *  - density and blocks: --grid-per-sigma and sigma out of range, nodes all
 *    equal: one line, exit 2, nothing written; the advice names --sigma only
 *    where the program takes it;
 *  - meta: dates that are not in the calendar, a repeated --seed; blocks: a
 *    repeated --group; blocks --help without the checkpoint options. */
#include "testutil.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "front/density.h"

static char dir[512];

static void setup(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    snprintf(dir, sizeof dir, "%s", tu_path("v"));
    char *out;
    int st = tu_run(&out, "mkdir -p '%s' && cd '%s' && L='%s' && "
                    "$L init --d 8 --h 2 --L 1 --V 10 --seed 2 -o w.safetensors && "
                    "$L batch --synthetic --config w.json --rows 3 --len 6 -o b.safetensors",
                    dir, dir, tu_lnkit());
    if (st)
        fail_msg("set-up: %s", out);
    free(out);
}

#define M "--config w.json --weights w.safetensors --batch b.safetensors"

/* Run "lnkit ARGS" in dir with stderr to err.txt; returns the status, *err its lines. */
static int run(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int run(char **err, const char *fmt, ...)
{
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char *out;
    int st = tu_run(&out, "cd '%s' && '%s' %s 2>err.txt >out.txt", dir, tu_lnkit(), args);
    free(out);
    char p[700];
    snprintf(p, sizeof p, "%s/err.txt", dir);
    size_t n;
    *err = tu_read_file(p, &n);
    return st;
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_not_converged(void **s)
{
    (void)s;
    setup();
    char *err;
    /* converged: 0, no warning */
    assert_int_equal(run(&err, "eigs " M " -k 2 --quiet -o e.csv"), 0);
    assert_string_equal(err, "");
    free(err);
    /* the step limit: every output written, one line, 3 (with --quiet too) */
    int st = run(&err, "eigs " M " -k 2 --which both --tol 0 --max-steps 12 --quiet -o e.csv "
                 "--vectors ev.safetensors");
    if (st != 3 || lines(err) != 1 ||
        !strstr(err, "eigs: warning: 4 of 4 requested eigenpairs did not converge "
                "(worst residual ") || !strstr(err, "tolerance 0; 12 of 12 Lanczos steps used)") ||
        !strstr(err, "exit status 3"))
        fail_msg("eigs not converged: exit %d, stderr '%s'", st, err);
    free(err);
    char *out;
    assert_int_equal(tu_run(&out, "cd '%s' && test -s ev.safetensors && grep -c ',0$' e.csv && "
                            "grep -o '\"converged\": [0-9]*' e.meta.json", dir), 0);
    assert_non_null(strstr(out, "4\n\"converged\": 0"));
    free(out);
    /* below rounding: the residual bounds met it, the explicit residuals not */
    st = run(&err, "eigs " M " -k 2 --tol 1e-18 -o e.csv");
    assert_int_equal(st, 3);
    assert_non_null(strstr(err, "their residual bounds met the tolerance"));
    free(err);
    /* an invariant subspace (the key bias's block, zero to rounding: 8 steps
     * span it): more steps cannot help, and the warning says so, not that
     * the step limit was reached; light mode's n steps likewise */
    for (int light = 0; light < 2; light++) {
        st = run(&err, "eigs " M " --block dec.0.attn.bk -k 1 -q -o e.csv%s",
                 light ? " --mode light" : "");
        if (st != 3 || lines(err) != 1 || !strstr(err, "so more steps cannot help") ||
            !strstr(err, light ? "as many steps as the operator has dimensions (8)"
                               : "stopped at an invariant subspace") ||
            strstr(err, "step limit"))
            fail_msg("eigs on an invariant subspace%s: exit %d, stderr '%s'",
                     light ? " (light)" : "", st, err);
        free(err);
    }
    /* blocks: too few steps for the extremes; then converged (with the
     * attention key biases, zero to rounding, among the blocks) */
    st = run(&err, "blocks " M " --max-steps 3 --probes 4 --runs 1 --steps 4 --quiet -o bl.csv");
    if (st != 3 || lines(err) != 1 || !strstr(err, "blocks: warning: ") ||
        !strstr(err, "of 36 requested eigenpairs did not converge") ||
        !strstr(err, "3 of 3 Lanczos steps used"))
        fail_msg("blocks not converged: exit %d, stderr '%s'", st, err);
    free(err);
    st = run(&err, "blocks " M " --probes 4 --runs 1 --steps 4 --quiet -o bl.csv");
    assert_int_equal(st, 0);
    assert_string_equal(err, "");
    free(err);
    assert_int_equal(tu_run(&out, "cd '%s' && grep '^dec.0.attn.bk,' bl.csv | cut -d, -f10-15 && "
                            "grep -Eq '\"extremes\": 36(,|$)' bl.meta.json && "
                            "grep -Eq '\"converged\": 36(,|$)' bl.meta.json", dir), 0);
    double top, bot;
    int tc, bc;
    assert_int_equal(sscanf(out, "%lf,%*f,%d,%lf,%*f,%d", &top, &tc, &bot, &bc), 4);
    assert_true(fabs(top) < 1e-12 && fabs(bot) < 1e-12 && tc == 1 && bc == 1);
    free(out);
    /* no convergence test: 0 however few the probes and steps */
    assert_int_equal(run(&err, "trace " M " --probes 2 --quiet"), 0);
    free(err);
    assert_int_equal(run(&err, "density " M " --runs 1 --steps 2 --sigma 0.1 --quiet -o d.csv"), 0);
    assert_string_equal(err, "");
    free(err);
}

/* ------------------------------------------------------------- select */

static void write_keys(const char *name, const double *K, int n, int d, double f)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    for (int i = 0; i < n; i++)
        for (int c = 0; c < d; c++)
            fprintf(fp, "%.17g%c", K[i * d + c] * f, c + 1 < d ? ',' : '\n');
    fclose(fp);
}

static void test_select_extremes(void **s)
{
    (void)s;
    setup();
    enum { N = 12, D = 3 };
    double K[N * D];
    tu_randn(K, N * D, 7);
    for (int c = 0; c < D; c++) /* key 11 inside the hull of 0..3 (their mean) */
        K[11 * D + c] = 0.25 * (K[c] + K[D + c] + K[2 * D + c] + K[3 * D + c]);
    char *err, *ref = NULL;
    const double f[] = {1, 1e307, 1e-310, 1e-300};
    for (int k = 0; k < 4; k++) {
        write_keys("k.csv", K, N, D, f[k]);
        int st = run(&err, "select --keys k.csv");
        if (st != 0)
            fail_msg("select with keys times %g: exit %d: %s", f[k], st, err);
        free(err);
        char p[700];
        snprintf(p, sizeof p, "%s/out.txt", dir);
        size_t n;
        char *o = tu_read_file(p, &n);
        if (!ref)
            ref = o;
        else {
            if (strcmp(o, ref))
                fail_msg("select with keys times %g:\n%s\nunscaled:\n%s", f[k], o, ref);
            free(o);
        }
    }
    assert_non_null(strstr(ref, "\n11,0\n"));
    free(ref);
    /* the keys: a triangle near the largest doubles and a point inside */
    char p[700];
    snprintf(p, sizeof p, "%s/k.csv", dir);
    const char *tri = "1.7e308,0\n0,1.7e308\n-1.7e308,-1.7e308\n0,0\n";
    tu_write_file(p, tri, strlen(tri));
    assert_int_equal(run(&err, "select --keys k.csv"), 0);
    free(err);
    char *out;
    tu_run(&out, "cat '%s/out.txt'", dir);
    assert_string_equal(out, "index,selectable\n0,1\n1,1\n2,1\n3,0\n");
    free(out);
    /* beyond the doubles: one line naming the field */
    tu_write_file(p, "1e400,0\n0,1\n", 12);
    assert_int_equal(run(&err, "select --keys k.csv"), 2);
    assert_non_null(strstr(err, "k.csv:1: column 1: value '1e400': expected a finite number"));
    assert_int_equal(lines(err), 1);
    free(err);
    /* the library: the same bits for the keys scaled by 2^e */
    int sel0[N], sel[N];
    double d0, dd;
    assert_int_equal(lnk_geom_selectable(K, N, D, 0, sel0, NULL), LNK_OK);
    assert_int_equal(lnk_geom_hull_dist(K, N, D, 11, 0, &d0, NULL), LNK_OK);
    for (int e = -1000; e <= 1000; e += 125) {
        double Ks[N * D];
        for (int i = 0; i < N * D; i++)
            Ks[i] = ldexp(K[i], e);
        assert_int_equal(lnk_geom_selectable(Ks, N, D, 0, sel, NULL), LNK_OK);
        assert_memory_equal(sel, sel0, sizeof sel);
        assert_int_equal(lnk_geom_hull_dist(Ks, N, D, 11, 0, &dd, NULL), LNK_OK);
        assert_memory_equal(&dd, &d0, sizeof dd);
    }
}

/* ------------------------------------------------------------- norms */

static long double ref_norm(const double *x, size_t n)
{
    long double m = 0, s = 0;
    for (size_t i = 0; i < n; i++)
        m = fmaxl(m, fabsl((long double)x[i]));
    if (m == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        s += ((long double)x[i] / m) * ((long double)x[i] / m);
    return m * sqrtl(s);
}

static void test_norm2(void **s)
{
    (void)s;
    enum { N = 1000 };
    double x[N];
    tu_randn(x, N, 3);
    double plain = 0;
    for (int i = 0; i < N; i++)
        plain += x[i] * x[i];
    plain = sqrt(plain);
    double got = lnk_norm2(x, N);
    assert_memory_equal(&got, &plain, sizeof got); /* the committed results' bits */
    const double f[] = {1e300, 1e200, 1e160, 1e-160, 1e-200, 1e-300, 1e-310};
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        double y[N];
        for (int i = 0; i < N; i++)
            y[i] = x[i] * f[k];
        long double r = ref_norm(y, N);
        double n2 = lnk_norm2(y, N);
        double rel = (double)fabsl((n2 - r) / r);
        if (!(rel < (f[k] < 1e-300 ? 1e-9 : 1e-14)))
            fail_msg("lnk_norm2 of entries times %g: %.17g, reference %.17Lg (%.2g)", f[k], n2, r,
                     rel);
    }
    double big[2] = {DBL_MAX, DBL_MAX}, inf2[2] = {1, INFINITY}, nan2[2] = {1, NAN}, z[3] = {0};
    assert_true(isinf(lnk_norm2(big, 2)));
    assert_true(isinf(lnk_norm2(inf2, 2)));
    assert_true(isnan(lnk_norm2(nan2, 2)));
    assert_true(lnk_norm2(z, 3) == 0);
    double one[2] = {DBL_MAX / 2, DBL_MAX / 2};
    assert_true(fabs(lnk_norm2(one, 2) / (DBL_MAX / sqrt(2.0)) - 1) < 1e-15);
}

/* out.w times f in a copy of the weights: the output layer's scale reaches the
 * gradient of every tensor below it. */
static void scaled_weights(double f)
{
    lnk_config c;
    lnk_config_default(&c);
    char p[700];
    snprintf(p, sizeof p, "%s/w.json", dir);
    assert_int_equal(lnk_config_load_json(&c, p), LNK_OK);
    assert_int_equal(lnk_config_finalize(&c), LNK_OK);
    lnk_model *m = lnk_model_alloc(&c);
    double *th = malloc(sizeof(double) * lnk_model_n_params(m));
    snprintf(p, sizeof p, "%s/w.safetensors", dir);
    assert_int_equal(lnk_weights_load(p, m, th), LNK_OK);
    const lnk_layout *lay = lnk_model_layout(m);
    const lnk_tensor_info *t = &lay->t[lnk_layout_find(lay, "out.w")];
    for (size_t i = 0; i < t->size; i++)
        th[t->offset + i] *= f;
    snprintf(p, sizeof p, "%s/big.safetensors", dir);
    assert_int_equal(lnk_weights_save(p, m, th), LNK_OK);
    free(th);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

static void test_eval_norms(void **s)
{
    (void)s;
    setup();
    const double f[] = {1e160, 1e306};
    for (int k = 0; k < 2; k++) {
        scaled_weights(f[k]);
        char *err, *out;
        const char *B = "--config w.json --weights big.safetensors --batch b.safetensors";
        assert_int_equal(run(&err, "eval %s --json --grad-out g.safetensors", B), 0);
        free(err);
        char p[700];
        snprintf(p, sizeof p, "%s/out.txt", dir);
        json_t *j = tu_load_json(p);
        json_t *gn = json_object_get(j, "grad_norms");
        assert_int_equal(json_object_size(gn), 18); /* every tensor of the model */
        double tot = json_real_value(json_object_get(j, "grad_norm_total"));
        /* against the saved gradient, in long double */
        lnk_config c;
        lnk_config_default(&c);
        snprintf(p, sizeof p, "%s/w.json", dir);
        assert_int_equal(lnk_config_load_json(&c, p), LNK_OK);
        assert_int_equal(lnk_config_finalize(&c), LNK_OK);
        lnk_model *m = lnk_model_alloc(&c);
        size_t np = lnk_model_n_params(m);
        double *g = malloc(sizeof(double) * np);
        int layout;
        snprintf(p, sizeof p, "%s/g.safetensors", dir);
        assert_int_equal(lnk_vector_load(p, m, g, &layout), LNK_OK);
        long double r = ref_norm(g, np);
        if (!(isfinite(tot) && fabsl((tot - r) / r) < 1e-14))
            fail_msg("weights times %g: grad_norm_total %.17g, reference %.17Lg", f[k], tot, r);
        const char *key;
        json_t *v;
        json_object_foreach(gn, key, v) assert_true(isfinite(json_real_value(v)));
        json_decref(j);
        free(g);
        lnk_model_free(m);
        lnk_config_clear(&c);
        /* CSV: whole, with its total */
        assert_int_equal(run(&err, "eval %s", B), 0);
        free(err);
        tu_run(&out, "cd '%s' && wc -l < out.txt && grep -c '^grad_norm_total,,[0-9]' out.txt", dir);
        assert_string_equal(out, "22\n1\n");
        free(out);
    }
}

/* ------------------------------------------------------------- options */

static void refused(const char *what, const char *args, const char *words)
{
    char *err, *out;
    tu_run(&out, "cd '%s' && rm -f o.csv o.meta.json", dir);
    free(out);
    int st = run(&err, "%s", args);
    if (st != 2 || lines(err) != 1 || !strstr(err, words) || strstr(err, "bug"))
        fail_msg("%s: exit %d, stderr '%s' (want one line with '%s')", what, st, err, words);
    free(err);
    tu_run(&out, "cd '%s' && ls o.csv o.meta.json 2>/dev/null", dir);
    assert_string_equal(out, "");
    free(out);
}

static void test_ranges(void **s)
{
    (void)s;
    setup();
    const char *cmds[] = {"density " M " --runs 1 --steps 6 --quiet -o o.csv",
                          "blocks " M " --block out.w --probes 2 --max-steps 4 --runs 1 "
                          "--steps 4 --quiet -o o.csv"};
    for (int c = 0; c < 2; c++) {
        char a[600];
        snprintf(a, sizeof a, "%s --sigma 1 --grid-per-sigma 1e-9", cmds[c]);
        refused("--grid-per-sigma 1e-9", a, "--grid-per-sigma: expected a number from 1 to 1000000");
        snprintf(a, sizeof a, "%s --sigma 1 --grid-per-sigma 0.5", cmds[c]);
        refused("--grid-per-sigma 0.5", a, "got '0.5'");
        snprintf(a, sizeof a, "%s --sigma 1e306", cmds[c]);
        refused("--sigma 1e306", a, "sigma 1e+306 is too large for a grid of the density");
        snprintf(a, sizeof a, "%s --sigma 1e-300", cmds[c]);
        refused("--sigma 1e-300", a, "sigma 1e-300 gives a grid of ");
    }
    refused("--sigma-fraction 1e-300", "density " M " --runs 1 --steps 6 --quiet -o o.csv "
            "--sigma-fraction 1e-300", "points for nodes in");
    /* one node: no width from the range; lnkit density takes --sigma */
    refused("one node", "density " M " --runs 1 --steps 1 --quiet -o o.csv",
            "]: the nodes are all equal, their range 0 gives no kernel width; give --sigma S\n");
    /* meta: a date of the calendar; each seed once */
    char p[700];
    snprintf(p, sizeof p, "%s/o.res", dir);
    tu_write_file(p, "x\n", 2);
    const char *bad_dates[] = {"2026-02-30T12:00:00Z", "2025-02-29T00:00:00Z",
                               "2026-04-31T00:00:00Z", "2026-06-15T12:30:60Z"};
    for (int i = 0; i < 4; i++) {
        char a[300];
        snprintf(a, sizeof a, "meta -o o.res --start %s --seconds 1 -- c", bad_dates[i]);
        refused(bad_dates[i], a, "--start: expected an ISO 8601 time of the calendar");
    }
    char *err;
    assert_int_equal(run(&err, "meta -o o.res --start 2024-02-29T23:59:60Z --seconds 1 --quiet "
                         "-- c"), 0);
    free(err);
    refused("--named-seed twice", "meta -o o.res --start 2024-01-01T00:00:00Z --seconds 1 "
            "--named-seed x=1 --named-seed y=2 --named-seed x=3 -- c",
            "the seed 'x' is given twice (x=1 and x=3)");
    assert_int_equal(run(&err, "meta -o o.res --start 2024-01-01T00:00:00Z --seconds 1 "
                         "--named-seed x=1 --named-seed xy=2 --quiet -- c"), 0);
    free(err);
    /* blocks: each group once; no checkpoint options listed or taken */
    refused("--group twice", "blocks " M " --group '*.attn.wq' --group '*.ffn.*' --group "
            "'*.attn.wq' --quiet -o o.csv", "--group '*.attn.wq' is given twice");
    char *out;
    tu_run(&out, "'%s' blocks --help | grep -c -- '--checkpoint\\|--resume-anywhere'", tu_lnkit());
    assert_string_equal(out, "0\n");
    free(out);
    tu_run(&out, "'%s' eigs --help | grep -c -- '--checkpoint FILE\\|--resume-anywhere'",
           tu_lnkit());
    assert_string_equal(out, "2\n");
    free(out);
}

/* cli_sigma's advice in a program that takes --sigma-fraction alone (the
 * studies anatomy and placements): no --sigma; the fraction to change when
 * one can help.  In a child: cli_die exits. */
typedef struct {
    double frac;
} frac_args;
static const cli_opt frac_opts[] = {CLI_OPT_SIGMA_FRACTION(frac_args, frac, 0, "F"), {0}};
static const cli_cmd frac_cmd = {.name = "fracprog", .summary = "s", .usage = "", .about = "a",
                                 .opts = frac_opts, .size = sizeof(frac_args)};

static int sigma_child(const char *frac, double lo, double hi, char *err, size_t n)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    fflush(NULL);
    pid_t pid = fork();
    if (!pid) {
        dup2(fd[1], 2);
        close(fd[0]);
        char *argv[] = {"fracprog", "--sigma-fraction", (char *)frac, NULL};
        frac_args a;
        cli_parse(&frac_cmd, &a, 3, argv);
        cli_sigma_opts o;
        cli_sigma_defaults(&o);
        o.fraction = a.frac;
        const char *which;
        double v;
        cli_sigma(&o, lo, hi, 10, &which, &v, 1000000);
        _exit(0);
    }
    close(fd[1]);
    size_t k = 0;
    for (ssize_t r; k + 1 < n && (r = read(fd[0], err + k, n - 1 - k)) > 0;)
        k += (size_t)r;
    err[k] = 0;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_sigma_advice(void **s)
{
    (void)s;
    char err[1024];
    assert_int_equal(sigma_child("0.01", 2, 2, err, sizeof err), 2);
    assert_string_equal(err, "fracprog: --sigma-fraction 0.01 for nodes in [2, 2]: the nodes are "
                        "all equal, their range 0 gives no kernel width\n");
    /* sigma = F (range) overflows / underflows */
    /* (the library's words, no internal function name: Python shows them too) */
    assert_int_equal(sigma_child("1e300", 0, 1e10, err, sizeof err), 2);
    if (strncmp(err, "fracprog: --sigma-fraction 1e+300: fraction f = 1e+300 of the spectral "
                "range [0, 1e+10] gives sigma = inf; expected a finite sigma > 0; ", 119) ||
        !strstr(err, "; give a smaller --sigma-fraction\n") || strstr(err, "--sigma S") ||
        lines(err) != 1)
        fail_msg("overflow: '%s'", err);
    assert_int_equal(sigma_child("1e-300", 0, 1e-30, err, sizeof err), 2);
    if (!strstr(err, "gives sigma = 0; expected a finite sigma > 0 (the product underflows); "
                "give a larger --sigma-fraction\n") || strstr(err, "--sigma S") ||
        strstr(err, "sigma_from"))
        fail_msg("underflow: '%s'", err);
    /* and a width that is fine */
    assert_int_equal(sigma_child("0.01", 0, 1, err, sizeof err), 0);
    assert_string_equal(err, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_converged), cmocka_unit_test(test_select_extremes),
        cmocka_unit_test(test_norm2),         cmocka_unit_test(test_eval_norms),
        cmocka_unit_test(test_ranges),       cmocka_unit_test(test_sigma_advice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
