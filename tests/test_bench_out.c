/* The benchmarks' CSV on standard output (-o -) comes alone: the report
 * goes to standard error then (bench/bench.h report_to_fit), to standard
 * output otherwise; -o FILE has its FILE.meta.json sidecar (bench_meta),
 * -o - and -o /dev/null none.  bench_curvature, the quick one, and bench_mpi
 * on a tiny model are run (make builds them for this test); bench_span on
 * its smaller config (a) with few repeats. */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

/* The benchmark PROG beside the lnkit under test (build/bench/PROG). */
static void bench_path(const char *prog, char *path, size_t n)
{
    char build[PATH_MAX];
    snprintf(build, sizeof build, "%s", tu_lnkit());
    char *slash = strstr(build, "/bin/lnkit");
    if (!slash)
        fail_msg("LNK_BIN '%s' is not BUILD/bin/lnkit", tu_lnkit());
    *slash = 0;
    size_t lb = strlen(build);
    if (lb > 8 && !strcmp(build + lb - 8, "/testing"))
        build[lb - 8] = 0;
    snprintf(path, n, "%s/bench/%s", build, prog);
}

static void test_csv_alone(void **s)
{
    (void)s;
    char b[PATH_MAX + 32];
    bench_path("bench_curvature", b, sizeof b);
    char *out;
    const char *dir = tu_tmpdir();
    /* -o -: standard output is the CSV (a header, then rows of 6 fields) */
    int st = tu_run(&out, "cd '%s' && '%s' --n 1000 --steps 10 -o - 2>err.txt | awk -F, "
                    "'NR == 1 && $0 != \"n,threads,what,j,seconds,gb_per_s\" {print \"header \" "
                    "$0} NF != 6 {print \"line \" NR \": \" $0} END {print NR \" lines\"}'",
                    dir, b);
    if (st || strcmp(out, "21 lines\n"))
        fail_msg("bench_curvature -o -: exit %d, standard output checked: '%s'", st, out);
    free(out);
    st = tu_run(&out, "cd '%s' && grep -c '^bench_curvature: n = 1000, M = 10 steps' err.txt", dir);
    if (st || atoi(out) != 1)
        fail_msg("bench_curvature -o -: the report is not on standard error");
    free(out);
    /* -o FILE: the report on standard output, as before */
    st = tu_run(&out, "cd '%s' && '%s' --n 1000 --steps 10 -o bc.csv 2>/dev/null | grep -c "
                "'^bench_curvature: n = 1000' && test \"$(wc -l < bc.csv)\" = 21", dir, b);
    if (st || atoi(out) != 1)
        fail_msg("bench_curvature -o bc.csv: exit %d, '%s'", st, out);
    free(out);
}

/* bench_mpi (one process, synthetic pairs, a tiny model): with -o - standard
 * output is the CSV alone (its header row, then the run's row), the table on
 * standard error; with -o FILE the table on standard output, naming the
 * model's depths (1-1 here), and the file gets the header row when it is new
 * or empty, then one row per run (appended), so that runs build one table. */
static void test_mpi_csv_alone(void **s)
{
    (void)s;
    char b[PATH_MAX + 32];
    bench_path("bench_mpi", b, sizeof b);
    char *out;
    const char *dir = tu_tmpdir(), *run = "--src none.de --rows 12 --size 8,2,16,1 --max-tokens "
                                          "256 --repeat 1 --steps 2";
    const char *hdr = "data,pairs,scored_tokens,chunks,d,d_ff,n_params,ranks,threads,t_hvp_s,"
                      "t_comm_s,bytes_per_hvp,t_step_s,t_orth_s,basis_MB_80_steps,"
                      "imbalance_scored,imbalance_padded";
    int st = tu_run(&out, "cd '%s' && '%s' %s -o - 2>mpi_err.txt | awk -F, 'NR == 1 && $0 != "
                    "\"%s\" {print \"header \" $0} NF != 17 || (NR > 1 && $1 != \"synthetic\") "
                    "{print \"line \" NR \": \" $0} END {print NR \" lines\"}'", dir, b, run, hdr);
    if (st || strcmp(out, "2 lines\n"))
        fail_msg("bench_mpi -o -: exit %d, standard output checked: '%s'", st, out);
    free(out);
    st = tu_run(&out, "cd '%s' && grep -c '^bench_mpi: synthetic, 12 pairs.*, 1-1 d 8 h 2 d_ff 16,"
                "\\|^ranks\\|^    1 ' mpi_err.txt", dir);
    if (st || atoi(out) != 3)
        fail_msg("bench_mpi -o -: the table (naming the 1-1 model) is not on standard error (%s "
                 "lines)", out);
    free(out);
    for (int i = 1; i <= 2; i++) { /* a new file, then the same file again; an empty file */
        st = tu_run(&out, "cd '%s' && rm -f bm.csv%s && '%s' %s -o bm.csv 2>/dev/null | grep -c "
                    "'^bench_mpi: synthetic' && '%s' %s -o bm.csv >/dev/null 2>&1 && test "
                    "\"$(head -1 bm.csv)\" = '%s' && test \"$(grep -c '^data,' bm.csv)\" = 1 && "
                    "test \"$(grep -c '^synthetic,12,' bm.csv)\" = 2 && test \"$(wc -l < bm.csv)\" "
                    "= 3", dir, i == 2 ? " && touch bm.csv" : "", b, run, b, run, hdr);
        if (st || atoi(out) != 1)
            fail_msg("bench_mpi -o bm.csv (%s), twice: exit %d, '%s'", i == 1 ? "new" : "empty",
                     st, out);
        free(out);
    }
}

/* -o FILE's sidecar: the standard record (command line, commit, BLAS kernel,
 * threads as --threads set them) and the benchmark's settings. */
static void test_sidecar(void **s)
{
    (void)s;
    char b[PATH_MAX + 32], path[PATH_MAX + 64];
    bench_path("bench_curvature", b, sizeof b);
    const char *dir = tu_tmpdir();
    char *out;
    int st = tu_run(&out, "cd '%s' && rm -f bs.* && '%s' --n 1000 --steps 12 --threads 1 -o bs.csv "
                    ">/dev/null 2>&1", dir, b);
    assert_int_equal(st, 0);
    free(out);
    snprintf(path, sizeof path, "%s/bs.meta.json", dir);
    json_error_t e;
    json_t *m = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
    if (!m)
        fail_msg("bench_curvature -o bs.csv: %s: %s", path, e.text);
    json_t *cl = json_object_get(m, "command_line"); /* the words, as given */
    const char *w0 = json_string_value(json_array_get(cl, 0));
    size_t steps_at = 0, i;
    json_t *w;
    json_array_foreach(cl, i, w)
        if (!strcmp(json_string_value(w) ? json_string_value(w) : "", "--steps"))
            steps_at = i;
    if (json_array_size(cl) != 9 || !w0 || !strstr(w0, "bench_curvature") || steps_at != 3 ||
        strcmp(json_string_value(json_array_get(cl, 4)), "12"))
        fail_msg("command_line: %zu words, the first '%s'", json_array_size(cl), w0 ? w0 : "");
    assert_non_null(json_object_get(m, "git_commit"));
    const char *k = json_string_value(json_object_get(m, "blas_kernel"));
    if (!k || !*k)
        fail_msg("blas_kernel: '%s'", k ? k : "(none)");
    assert_int_equal(json_integer_value(json_object_get(m, "threads")), 1);
    assert_int_equal(json_integer_value(json_object_get(m, "steps")), 12);
    assert_true(json_real_value(json_object_get(m, "n")) == 1000.0);
    assert_null(json_object_get(m, "output")); /* the output is the file itself */
    json_decref(m);
    /* -o - and a device: no sidecar anywhere */
    st = tu_run(&out, "cd '%s' && mkdir -p none && cd none && '%s' --n 1000 --steps 10 -o - "
                ">/dev/null 2>&1 && '%s' --n 1000 --steps 10 -o /dev/null >/dev/null 2>&1 && ls",
                dir, b, b);
    if (st || *out)
        fail_msg("bench_curvature -o - / -o /dev/null: exit %d, files '%s'", st, out);
    free(out);
}

/* bench_span --model a: the table's shape (2 placements x 2 kinds x 7
 * blocks), the blocks' sizes as docs/MODEL.md section 6 gives them (d = 128,
 * d_ff = 512, V = 1000), the timed rows' numbers finite and positive, the
 * Post-LN final norm a row without timing that says why.  No timing is
 * asserted (speed is the benchmark's to measure, not a test's); that a
 * block's product gives the full product's bits is tests/test_span.c's. */
#define SPAN_COLS 15
static void test_span_csv(void **s)
{
    (void)s;
    char b[PATH_MAX + 32];
    bench_path("bench_span", b, sizeof b);
    const char *dir = tu_tmpdir();
    char *out;
    int st = tu_run(&out, "cd '%s' && rm -f sp.* && '%s' --model a --repeat 3 --threads 1 -o "
                    "sp.csv >/dev/null 2>&1", dir, b);
    if (st)
        fail_msg("bench_span --model a: exit %d", st);
    free(out);
    char *text = tu_read_file(tu_path("sp.csv"), NULL), *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    assert_non_null(line);
    assert_string_equal(line, "config,norm_pos,kind,block,block_params,layer,L,seconds,"
                              "over_full,expected,repeats,threads,dgemm_gflops,"
                              "other_cpu_share,note");
    int rows = 0, skipped = 0, out_rows = 0;
    while ((line = strtok_r(NULL, "\n", &save))) {
        char *f[SPAN_COLS + 1], *p = line;
        int nf = 0;
        while (nf <= SPAN_COLS && (f[nf] = strsep(&p, ",")))
            nf++;
        if (nf != SPAN_COLS)
            fail_msg("sp.csv line %d: %d fields: %s", rows + 2, nf, line);
        rows++;
        const char *block = f[3], *kind = f[2];
        if (strcmp(f[0], "a") || (strcmp(f[1], "post") && strcmp(f[1], "pre")) ||
            (strcmp(kind, "hessian") && strcmp(kind, "ggn")) || strcmp(f[6], "6") || strcmp(f[11], "1"))
            fail_msg("sp.csv line %d: %s", rows + 1, line);
        if (*f[14]) { /* not timed: only Post-LN's final norm */
            if (strcmp(f[1], "post") || strcmp(block, "dec.final_norm.*") || *f[4] || *f[7] ||
                *f[8] || strcmp(f[10], "0"))
                fail_msg("sp.csv line %d: a row without timing: %s", rows + 1, line);
            skipped++;
            continue;
        }
        long n = atol(f[4]);
        long want = !strcmp(block, "out.w") || !strcmp(block, "*_emb") ? 128000
                    : strstr(block, ".ffn.w2")                       ? 512 * 128
                    : !strcmp(block, "dec.final_norm.*")             ? 2 * 128
                                                                     : n;
        double sec = atof(f[7]), over = atof(f[8]), dg = atof(f[12]), oth = atof(f[13]);
        if (n != want || !isfinite(sec) || sec <= 0 || !isfinite(over) || over <= 0 ||
            strcmp(f[10], "3") || !isfinite(dg) || dg <= 0 || !(oth >= 0 && oth <= 1))
            fail_msg("sp.csv line %d: %s", rows + 1, line);
        if (!strcmp(block, "*") && strcmp(f[8], "1")) /* the full product over itself */
            fail_msg("sp.csv line %d: the full row's over_full is %s", rows + 1, f[8]);
        /* hessian.h's fraction (L - l) / L for layer l = 3 of 6 (both kinds) */
        if (!strcmp(block, "dec.3.ffn.w2") && strcmp(f[9], "0.5"))
            fail_msg("sp.csv line %d: expected '%s'", rows + 1, f[9]);
        out_rows += !strcmp(block, "out.w");
    }
    if (rows != 28 || skipped != 2 || out_rows != 4)
        fail_msg("sp.csv: %d rows (%d without timing, %d of out.w); expected 28 (2, 4)", rows,
                 skipped, out_rows);
    free(text);
    /* its sidecar names the settings */
    json_error_t e;
    json_t *m = json_load_file(tu_path("sp.meta.json"), JSON_REJECT_DUPLICATES, &e);
    if (!m)
        fail_msg("bench_span: sp.meta.json: %s", e.text);
    assert_int_equal(json_integer_value(json_object_get(m, "repeat")), 3);
    assert_string_equal(json_string_value(json_object_get(m, "model")), "a");
    json_decref(m);
    /* a --model not among the sizes: one line naming it, exit 2, no output
     * (bench_model declares the same option, BENCH_OPT_MODEL) */
    char bm[PATH_MAX + 32];
    bench_path("bench_model", bm, sizeof bm);
    const char *progs[] = {b, bm};
    for (int i = 0; i < 2; i++) {
        st = tu_run(&out, "cd '%s' && rm -f bad.* && '%s' --model c -o bad.csv 2>&1 >/dev/null; "
                    "echo \"rc=$?\"; ls bad.* 2>/dev/null; true", dir, progs[i]);
        if (st || !strstr(out, "--model: expected one of a, b, all, got 'c'\nrc=2\n") ||
            tu_n_lines(out) != 2)
            fail_msg("%s --model c: '%s'", progs[i], out);
        free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_csv_alone),
                                       cmocka_unit_test(test_mpi_csv_alone),
                                       cmocka_unit_test(test_sidecar),
                                       cmocka_unit_test(test_span_csv)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
