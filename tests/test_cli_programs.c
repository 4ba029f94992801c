/* The conventions of docs/cli.md for the studies and the benchmarks (their
 * option tables, parsed by the same front end as lnkit's commands, whose
 * conventions tests/test_cli_conv.c checks). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"

/* The studies and the benchmarks follow the same conventions (their option
 * tables, parsed by the same front end): --help and -h print a usage with
 * their options and -q/--quiet, exit 0; an unknown option or a bad value is
 * one line "PROG: ..." naming it, exit 2.  Each writes a result, named by
 * -o (their declarations, as --help lists them: a study's -o, --out DIR or
 * FILE, a benchmark's -o, --output FILE); a study's -o - is refused in one
 * line saying why (a folder, a CSV a run resumes).  All are built with the
 * tests (make run-tests): one missing fails. */
static void test_programs(void **s)
{
    (void)s;
    char build[PATH_MAX];
    tu_build_dir(build, sizeof build);
    /* the programs of the sources (studies/NAME.c, bench/NAME.c) as built */
    char *list;
    assert_int_equal(tu_run(&list, "cd '%s/..' && ls studies/*.c bench/*.c", build), 0);
    int n = 0;
    for (char *p = strtok(list, "\n"); p; p = strtok(NULL, "\n")) {
        char path[PATH_MAX + 64], *o, *e;
        snprintf(path, sizeof path, "%s/%.*s", build, (int)strlen(p) - 2, p);
        if (access(path, X_OK))
            fail_msg("%s: not built", path);
        const char *prog = strrchr(path, '/') + 1;
        int study = !strncmp(p, "studies/", 8);
        for (int h = 0; h < 2; h++) {
            int rc = tu_run(&o, "'%s' %s 2>&1", path, h ? "-h" : "--help");
            if (rc || strncmp(o, "usage: ", 7) || !strstr(o, "-q, --quiet"))
                fail_msg("%s %s: exit %d:\n%s", prog, h ? "-h" : "--help", rc, o);
            /* the result's option: -o, and no long --out/--output without it */
            const char *want = study ? "\n  -o, --out " : "\n  -o, --output FILE ";
            const char *other = study ? "\n      --out " : "\n      --output ";
            if (!strstr(o, want) || strstr(o, other))
                fail_msg("%s %s: no '%s' option:\n%s", prog, h ? "-h" : "--help", want + 3, o);
            free(o);
        }
        if (study) { /* -o -: refused before any work, one line saying why */
            int rc = tu_run(&e, "'%s' -o - 2>&1 >/dev/null", path);
            char want[128];
            snprintf(want, sizeof want, "%s: -o -: the ", prog);
            if (rc != 2 || tu_n_lines(e) != 1 || strncmp(e, want, strlen(want)) ||
                !strstr(e, "which standard output cannot be; give a "))
                fail_msg("%s -o -: exit %d, '%s'", prog, rc, e);
            free(e);
        }
        int rc = tu_run(&e, "'%s' --no-such-option 1 2>&1 >/dev/null", path);
        char want[128];
        snprintf(want, sizeof want, "%s: unknown option '--no-such-option'", prog);
        if (rc != 2 || tu_n_lines(e) != 1 || strncmp(e, want, strlen(want)))
            fail_msg("%s --no-such-option: exit %d, '%s'", prog, rc, e);
        free(e);
        n++;
    }
    free(list);
    print_message("      %d studies and benchmarks: --help, -h, -o, an unknown option\n", n);
    assert_true(n >= 13);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_programs)};
    return cmocka_run_group_tests_name("studies' and benchmarks' conventions", tests, NULL, NULL);
}
