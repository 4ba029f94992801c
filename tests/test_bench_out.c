/* The benchmarks' CSV on standard output (-o -) comes alone: the report
 * goes to standard error then (bench/bench.h report_to_fit), to standard
 * output otherwise.  bench_curvature, the quick one, is run (make builds it
 * for this test). */
#include <limits.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_csv_alone)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
