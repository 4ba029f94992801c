/* The conventions of docs/cli.md for the studies and the benchmarks (their
 * option tables, parsed by the same front end as lnkit's commands, whose
 * conventions tests/test_cli_conv.c checks). */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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


/* ------------------------------------------------------- one name, one meaning */

/* The declarations of every program: lnkit's commands, the studies and the
 * benchmarks print their option tables (LNK_TEST_OPTIONS=table, opt.c):
 * "PROG\tNAME\tTYPE\tVALUE\tCHOICES\tWAS\tHELP\tMIN" a line. */
static char *all_tables(char **progs, int *np)
{
    char build[PATH_MAX], *list, *t, *all = NULL;
    size_t len = 0;
    tu_build_dir(build, sizeof build);
    assert_int_equal(tu_run(&list, "cd '%s/..' && ls studies/*.c bench/*.c && '%s' --help | "
                            "sed -n '/^Commands:/,/^$/p' | awk 'NF > 1 {print \"lnkit \" $1}'",
                            build, tu_lnkit()), 0);
    *np = 0;
    for (char *p = strtok(list, "\n"); p; p = strtok(NULL, "\n")) {
        char cmd[PATH_MAX + 64];
        if (!strncmp(p, "lnkit ", 6))
            snprintf(cmd, sizeof cmd, "'%s' %s", tu_lnkit(), p + 6);
        else
            snprintf(cmd, sizeof cmd, "'%s/%.*s'", build, (int)strlen(p) - 2, p);
        progs[(*np)++] = strdup(cmd);
        const char *name = strncmp(p, "lnkit ", 6) ? strrchr(p, '/') + 1 : p;
        if (tu_run(&t, "LNK_TEST_OPTIONS=table %s | sed 's|^|%.*s\t|'", cmd,
                   (int)strcspn(name, "."), name) || !*t)
            fail_msg("%s: LNK_TEST_OPTIONS=table: no table", cmd);
        all = realloc(all, len + strlen(t) + 1);
        memcpy(all + len, t, strlen(t) + 1);
        len += strlen(t);
        free(t);
    }
    free(list);
    return all;
}

/* One option declaration of all_tables. */
typedef struct {
    char *f[8]; /* prog, name, type, value, choices, was, help, min */
} decl;

static int split_decls(char *all, decl *d, int cap)
{
    int n = 0;
    for (char *l = all, *next; l && *l && n < cap; l = next) {
        next = strchr(l, '\n');
        if (next)
            *next++ = 0;
        for (int k = 0; k < 8; k++) {
            d[n].f[k] = l;
            l = l ? strchr(l, '\t') : NULL;
            if (l)
                *l++ = 0;
            else if (k < 7)
                fail_msg("a table line of %d fields", k + 1);
        }
        n++;
    }
    return n;
}

/* The kind of value: integers of any width are one kind. */
static const char *kind(const char *type)
{
    return !strcmp(type, "int") || !strcmp(type, "long") || !strcmp(type, "u64") ? "integer"
                                                                                 : type;
}

/* Names whose value differs in form (kind, value name, choices) from program
 * to program, each with the reason it is still one meaning. */
static const char *const same_meaning_other_form[] = {
    "out",   /* a study's results: a folder (DIR) or the CSV a run extends (FILE, FILE.csv) */
    "parts", /* the parts of this study: each study has its own */
    "norm-pos", /* grad_norms sweeps a list of norm positions; a benchmark times one */
    NULL};

/* Names declared with different help texts in different programs: the one
 * meaning each has everywhere (docs/cli.md), the help saying it in the
 * program's terms, and words every such help must contain (NULL: none
 * checked).  A new shared name with another help text fails until it is
 * checked and listed here. */
static const char *const one_meaning[][3] = {
    {"L", "the model's depth (a study's model)", "depth"},
    {"V", "the vocabulary size (a study's model)", "vocabulary"},
    {"d", "the model's width (grad_norms: its sweep's width; profile: depth and width swap)", NULL},
    {"h", "heads", "heads"},
    {"batch", "a batch file (repeatable: a data set)", "batch file"},
    {"block", "the tensors matched by comma-separated globs", "globs"},
    {"cache-mb", "memory for the chunks' primal passes kept between products", "primal passes"},
    {"norm-pos", "the norm position(s): Post-LN or Pre-LN", NULL},
    {"out", "a study's results (its folder, or the CSV a run extends)", NULL},
    {"repeat", "timed repetitions, whose median is reported", "median"},
    {"src", "the source text of a parallel corpus", "source text"},
    {"tgt", "the target text of a parallel corpus", "target text"},
    {"config", "the model's configuration file (JSON)", "configuration"},
    {"json", "print the result as JSON on standard output", NULL},
    {"len", "positions per row of a batch", "positions"},
    {"max-line-len", "a corpus line's token limit (0: none)", NULL},
    {"max-steps", "the step limit of a Lanczos extremes solve", "step limit"},
    {"max-tokens", "padded tokens a chunk at most", NULL},
    {"model", "a benchmark's configurations (bench_model's a and b)", "configurations"},
    {"output", "the result file", NULL},
    {"probes", "Hutchinson probes (random vectors) of an estimate", "probes"},
    {"rng-seed", "the seed of the program's own random draws", "seed"},
    {"rows", "rows of a batch (a corpus: its first N sentence pairs)", NULL},
    {"runs", "SLQ start vectors", "start vectors"},
    {"s2s-rows", "seq2seq: the first N sentence pairs", NULL},
    {"seeds", "initialisation seeds", "seeds"},
    {"sigma-fraction", "the density kernel's width as a fraction of the nodes' range", "sigma = F"},
    {"steps", "Lanczos steps of a run (SLQ: a run's steps; a benchmark: the steps timed)", "steps"},
    {"text", "a whitespace-tokenised text file, a sequence a line", NULL},
    {"threads", "BLAS threads", "BLAS threads"},
    {"tol", "the residual tolerance of a Lanczos extremes solve, relative to max|l|", "residual"},
    {"weights", "the model's weights file", "weights"},
    {NULL, NULL, NULL}};

/* 1: name is listed in one_meaning and help says its words. */
static int listed(const char *name, const char *help)
{
    for (int i = 0; one_meaning[i][0]; i++)
        if (!strcmp(one_meaning[i][0], name))
            return !one_meaning[i][2] || strcasestr(help, one_meaning[i][2]);
    return 0;
}

/* Every long name declared by two programs (lnkit's commands, studies,
 * benchmarks) takes the same kind of value (type, value name, choices) and
 * has one meaning: the same help text, or a meaning listed above (an old
 * name, .was, is another program's name only after a rename freed it: it is
 * parsed by its own program alone). */
static void test_one_name_one_meaning(void **s)
{
    (void)s;
    char *progs[64];
    int np, shared = 0;
    char *all = all_tables(progs, &np);
    static decl d[4096];
    int n = split_decls(all, d, 4096);
    for (int i = 0; i < n; i++) {
        if (!strcmp(d[i].f[2], "config")) /* the configuration keys: one table (the library's) */
            continue;
        for (int j = 0; j < n; j++) {
            if (j >= i || strcmp(d[i].f[1], d[j].f[1]) || !strcmp(d[i].f[0], d[j].f[0]))
                continue;
            shared++;
            int form = 1;
            for (int k = 0; same_meaning_other_form[k]; k++)
                form &= !!strcmp(same_meaning_other_form[k], d[i].f[1]);
            if (form && (strcmp(kind(d[i].f[2]), kind(d[j].f[2])) ||
                         strcmp(d[i].f[3], d[j].f[3]) || strcmp(d[i].f[4], d[j].f[4])))
                fail_msg("--%s takes a %s %s%s in %s, a %s %s%s in %s", d[i].f[1],
                         kind(d[i].f[2]), d[i].f[3], d[i].f[4], d[i].f[0], kind(d[j].f[2]),
                         d[j].f[3], d[j].f[4], d[j].f[0]);
            if (strcmp(d[i].f[6], d[j].f[6]) &&
                (!listed(d[i].f[1], d[i].f[6]) || !listed(d[j].f[1], d[j].f[6])))
                fail_msg("--%s: '%s' in %s, '%s' in %s: one meaning? (one_meaning)",
                         d[i].f[1], d[i].f[6], d[i].f[0], d[j].f[6], d[j].f[0]);
        }
    }
    print_message("      %d programs, %d declarations, %d pairs of one name in two programs\n",
                  np, n, shared);
    assert_true(np >= 25);
    for (int i = 0; i < np; i++)
        free(progs[i]);
    free(all);
}

/* 1 if program prog declares option name in d[0 .. n). */
static int declares(const decl *d, int n, const char *prog, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(d[i].f[0], prog) && !strcmp(d[i].f[1], name))
            return 1;
    return 0;
}

/* A shared help is true in each program: --rng-seed seeds probes only where
 * the program takes --probes, Lanczos start vectors only where it runs
 * Lanczos steps (--steps or --max-steps). */
static void test_rng_seed_help(void **s)
{
    (void)s;
    char *progs[64];
    int np, seen = 0;
    char *all = all_tables(progs, &np);
    static decl d[4096];
    int n = split_decls(all, d, 4096);
    for (int i = 0; i < n; i++) {
        const char *p = d[i].f[0], *h = d[i].f[6];
        if (strcmp(d[i].f[1], "rng-seed"))
            continue;
        seen++;
        if (strcasestr(h, "probe") && !declares(d, n, p, "probes"))
            fail_msg("%s --rng-seed: '%s', but %s takes no --probes", p, h, p);
        if (strcasestr(h, "start vector") && !declares(d, n, p, "steps") &&
            !declares(d, n, p, "max-steps"))
            fail_msg("%s --rng-seed: '%s', but %s runs no Lanczos steps", p, h, p);
    }
    print_message("      %d programs take --rng-seed\n", seen);
    assert_true(seen >= 6);
    for (int i = 0; i < np; i++)
        free(progs[i]);
    free(all);
}

/* A value for option d: min + 1 (a number), its first choice (a list of names). */
static void value_for(const decl *d, char *buf, size_t n)
{
    double lo = atof(d->f[7]);
    if (!strcmp(kind(d->f[2]), "integer"))
        snprintf(buf, n, "%.0f", lo + 1);
    else if (!strcmp(d->f[2], "real"))
        snprintf(buf, n, "%g", lo + 0.5);
    else if (!strcmp(d->f[2], "words")) /* its first choice */
        snprintf(buf, n, "%.*s", (int)strcspn(d->f[4], ","), d->f[4]);
    else
        fail_msg("--%s (old name --%s): a %s: give the test a value", d->f[1], d->f[5], d->f[2]);
}

/* Every old name (.was) parses exactly as its option: the same values
 * parsed (LNK_TEST_OPTIONS=values) with one warning line, also under -q,
 * "PROG: warning: --OLD is now --NEW (the old name goes in the next
 * release)", none with the new name; the checkpoint identity and the
 * sidecar key keep the old name (a checkpoint made before the rename
 * resumes; sidecars keep their keys); --help shows the new name only. */
static void test_old_names(void **s)
{
    (void)s;
    char *progs[64];
    int np, n_old = 0;
    char *all = all_tables(progs, &np);
    static decl d[4096];
    int n = split_decls(all, d, 4096);
    for (int i = 0; i < n; i++) {
        if (!*d[i].f[5])
            continue;
        const char *cmd = NULL;
        for (int p = 0; p < np; p++) { /* the program of the declaration */
            const char *b = strrchr(progs[p], '/');
            if ((!strncmp(d[i].f[0], "lnkit ", 6) && strstr(progs[p], d[i].f[0] + 5) &&
                 !strcmp(strstr(progs[p], d[i].f[0] + 5), d[i].f[0] + 5)) ||
                (b && !strncmp(b + 1, d[i].f[0], strlen(d[i].f[0])) &&
                 b[1 + strlen(d[i].f[0])] == '\''))
                cmd = progs[p];
        }
        assert_non_null(cmd);
        char v[64], *o1, *o2, *e1, *e2, want[256], idl[256];
        value_for(&d[i], v, sizeof v);
        char err[PATH_MAX];
        snprintf(err, sizeof err, "%s/old.err", tu_tmpdir());
        int r1 = tu_run(&o1, "LNK_TEST_OPTIONS=values %s -q --%s %s 2>'%s'", cmd, d[i].f[5], v,
                        err); /* the warning is kept under -q */
        e1 = tu_read_file(err, NULL);
        int r2 = tu_run(&o2, "LNK_TEST_OPTIONS=values %s --%s=%s -q 2>'%s'", cmd, d[i].f[1], v,
                        err);
        e2 = tu_read_file(err, NULL);
        const char *prog = d[i].f[0];
        snprintf(want, sizeof want, "%s: warning: --%s is now --%s (the old name goes in the "
                 "next release)\n", prog, d[i].f[5], d[i].f[1]);
        if (r1 || r2 || strcmp(o1, o2) || strcmp(e1, want) || *e2)
            fail_msg("%s --%s %s: exit %d, stderr '%s'; --%s: exit %d, stderr '%s'; values %s",
                     prog, d[i].f[5], v, r1, e1, d[i].f[1], r2, e2,
                     strcmp(o1, o2) ? "differ" : "equal");
        /* its line: name, identity name, sidecar key, the value given */
        char key[64], line[256];
        snprintf(key, sizeof key, "%s", d[i].f[5]);
        for (char *k = key; *k; k++)
            *k = *k == '-' ? '_' : *k;
        snprintf(line, sizeof line, "\n%s\t--%s\t%s\t%s\n", d[i].f[1], d[i].f[5], key, v);
        if (strncmp(o1, line + 1, strlen(line + 1)) && !strstr(o1, line))
            fail_msg("%s: no line '%s' (identity --%s, sidecar key %s, value %s):\n%s", prog,
                     line, d[i].f[5], key, v, o1);
        free(o1), free(o2), free(e1), free(e2);
        /* both names: one line naming both, exit 2 (as Python's keywords) */
        r1 = tu_run(&o1, "LNK_TEST_OPTIONS=values %s --%s %s --%s %s 2>'%s'", cmd, d[i].f[5], v,
                    d[i].f[1], v, err);
        e1 = tu_read_file(err, NULL);
        snprintf(want, sizeof want, "%s: --%s and --%s are one option (--%s is its old name); "
                 "give --%s once\n", prog, d[i].f[5], d[i].f[1], d[i].f[5], d[i].f[1]);
        if (r1 != 2 || *o1 || strcmp(e1, want))
            fail_msg("%s --%s --%s: exit %d, stderr '%s'", prog, d[i].f[5], d[i].f[1], r1, e1);
        free(o1), free(e1);
        /* a prefix of the old name: the hint names the new name, never the old one */
        r1 = tu_run(&o1, "%s --%.*s %s 2>&1", cmd, (int)strlen(d[i].f[5]) - 1, d[i].f[5], v);
        snprintf(want, sizeof want, "--%s", d[i].f[5]);
        snprintf(idl, sizeof idl, "--%s", d[i].f[1]);
        const char *at = strstr(o1, want);
        if (strlen(d[i].f[5]) > 1 &&
            (r1 != 2 || !strstr(o1, "give the option's whole name") || !strstr(o1, idl) ||
             (at && (at[strlen(want)] == ',' || at[strlen(want)] == '\n'))))
            fail_msg("%s --%.*s: exit %d, '%s' (expected the hint --%s)", prog,
                     (int)strlen(d[i].f[5]) - 1, d[i].f[5], r1, o1, d[i].f[1]);
        free(o1);
        /* --help: the new name only */
        assert_int_equal(tu_run(&o1, "%s --help", cmd), 0);
        snprintf(want, sizeof want, "--%s ", d[i].f[5]);
        snprintf(idl, sizeof idl, "--%s ", d[i].f[1]);
        if (strstr(o1, want) || !strstr(o1, idl))
            fail_msg("%s --help: shows --%s, or not --%s", prog, d[i].f[5], d[i].f[1]);
        free(o1);
        n_old++;
    }
    print_message("      %d old names, each parsed as its option with one warning\n", n_old);
    assert_true(n_old >= 8);
    for (int i = 0; i < np; i++)
        free(progs[i]);
    free(all);
}

/* A prefix names the options it begins by their current names (an old name
 * stands for its new one); LNK_TEST_OPTIONS takes its two values alone, in
 * the release build too (the studies and benchmarks here are those
 * `make` builds). */
static void test_prefix_hints_and_test_options(void **s)
{
    (void)s;
    char build[PATH_MAX], *o, *e;
    tu_build_dir(build, sizeof build);
    struct {
        const char *cmd, *want;
    } c[] = {{"bin/lnkit select --keys k.csv --to 1",
              "lnkit select: '--to': give the option's whole name, --hull-tol\n"},
             {"bin/lnkit blocks --eig 3",
              "lnkit blocks: '--eig': give the option's whole name, --max-steps\n"},
             {"studies/multi30k_hessian --eig 3", "multi30k_hessian: '--eig': give the option's "
                                                  "whole name, one of --max-steps, --tol\n"},
             {"bin/lnkit eigs --max-st 3",
              "lnkit eigs: '--max-st': give the option's whole name, --max-steps\n"},
             {"bin/lnkit eigs --qu", "lnkit eigs: '--qu': give the option's whole name, --quiet\n"}};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        int rc = tu_run(&o, "'%s'/%s 2>&1", build, c[i].cmd);
        if (rc != 2 || strcmp(o, c[i].want))
            fail_msg("%s: exit %d, '%s'; expected '%s'", c[i].cmd, rc, o, c[i].want);
        free(o);
    }
    const char *prog[] = {"bin/lnkit eigs", "studies/anatomy", "bench/bench_lanczos"};
    for (size_t i = 0; i < sizeof prog / sizeof *prog; i++) {
        char err[PATH_MAX], want[256];
        snprintf(err, sizeof err, "%s/topt.err", tu_tmpdir());
        int rc = tu_run(&o, "LNK_TEST_OPTIONS=bogus '%s'/%s --help 2>'%s'", build, prog[i], err);
        e = tu_read_file(err, NULL);
        snprintf(want, sizeof want, "%s: LNK_TEST_OPTIONS: expected table or values, got 'bogus'\n",
                 strncmp(prog[i], "bin/", 4) ? strchr(prog[i], '/') + 1 : "lnkit eigs");
        if (rc != 2 || *o || strcmp(e, want))
            fail_msg("LNK_TEST_OPTIONS=bogus %s: exit %d, stdout '%.60s', stderr '%s'", prog[i],
                     rc, o, e);
        free(o), free(e);
        assert_int_equal(tu_run(&o, "LNK_TEST_OPTIONS=table '%s'/%s | grep -c .", build,
                                prog[i]), 0);
        free(o);
    }
}

/* arg in single quotes for sh, into b (of size n). */
static void sh_quote(char *b, size_t n, const char *arg)
{
    size_t k = 0;
    b[k++] = '\'';
    for (const char *p = arg; *p && k + 5 < n; p++) {
        if (*p == '\'')
            k += (size_t)snprintf(b + k, n - k, "'\\''");
        else
            b[k++] = *p;
    }
    b[k++] = '\'';
    b[k] = 0;
}

/* The command lines recorded in the committed sidecars (results/, key
 * command_line) still parse with this build (LNK_TEST_OPTIONS=values: the
 * options are parsed, nothing is run): a renamed option keeps its old name
 * (.was), so the results can be remade with the command that made them. */
static void test_recorded_command_lines(void **s)
{
    (void)s;
    char build[PATH_MAX], *list;
    tu_build_dir(build, sizeof build);
    assert_int_equal(tu_run(&list, "cd '%s/..' && find results -name '*.meta.json' | sort", build),
                     0);
    int n = 0, old = 0;
    for (char *p = strtok(list, "\n"); p; p = strtok(NULL, "\n")) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/../%s", build, p);
        json_t *m = json_load_file(path, 0, NULL), *cl = m ? json_object_get(m, "command_line")
                                                           : NULL;
        const char *prog = json_is_array(cl) && json_array_size(cl)
                               ? json_string_value(json_array_get(cl, 0)) : NULL;
        const char *base = prog ? strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog : NULL;
        char bin[PATH_MAX + 64] = "";
        if (base && !strcmp(base, "lnkit"))
            snprintf(bin, sizeof bin, "%s", tu_lnkit());
        for (int k = 0; base && !bin[0] && k < 2; k++) { /* else python3, bash: not ours */
            snprintf(bin, sizeof bin, "%s/%s/%s", build, k ? "bench" : "studies", base);
            if (access(bin, X_OK))
                bin[0] = 0;
        }
        if (!bin[0]) {
            json_decref(m);
            continue;
        }
        size_t cap = 1 << 16, k = (size_t)snprintf(NULL, 0, "LNK_TEST_OPTIONS=values '%s'", bin);
        char *cmd = malloc(cap), q[4096];
        snprintf(cmd, cap, "LNK_TEST_OPTIONS=values '%s'", bin);
        for (size_t i = 1; i < json_array_size(cl) && k + sizeof q < cap; i++) {
            const char *a = json_string_value(json_array_get(cl, i));
            sh_quote(q, sizeof q, a ? a : "");
            k += (size_t)snprintf(cmd + k, cap - k, " %s", q);
        }
        char *o;
        int rc = tu_run(&o, "%s 2>&1 >/dev/null", cmd);
        if (rc)
            fail_msg("%s: its command line does not parse: exit %d: %s", p, rc, o);
        old += strstr(o, ": warning: --") != NULL;
        n++;
        free(o);
        free(cmd);
        json_decref(m);
    }
    free(list);
    print_message("      %d recorded command lines parse (%d with an old name)\n", n, old);
    assert_true(n >= 100);
}

/* hessian_spectrum: --len is a synthetic row's positions (as in lnkit batch
 * and the other studies) and --max-line-len the --text lines' token limit
 * (as in lnkit batch), by default 24 as before the split; --len with --text,
 * its old use, gives the same files as --max-line-len with one warning. */
static void test_len_and_max_line_len(void **s)
{
    (void)s;
    char build[PATH_MAX], *o, *e;
    tu_build_dir(build, sizeof build);
    const char *d = tu_tmpdir();
    const char *text = "a b c d e f g\nb c d e\nc d e f g h i j k\na a b\n";
    tu_write_file(tu_path("hs.txt"), text, strlen(text));
    char cmd[2 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s/studies/hessian_spectrum' --d 8 --h 2 --L 1 --V 20 "
             "--rows 3 --seeds 1 -k 1 --probes 2 --runs 1 --steps 3 --block-steps 2", d, build);
    const char *runs[] = {"--text hs.txt --len 5 --out hs1", "--text hs.txt --max-line-len 5 "
                          "--out hs2", "--text hs.txt --out hs3", "--text hs.txt --max-line-len "
                          "24 --out hs4"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(tu_run(&o, "%s %s -q 2>'%s/hs.err' >/dev/null", cmd, runs[i], d), 0);
        free(o);
        e = tu_read_file(tu_path("hs.err"), NULL);
        const char *want = i ? "" : "hessian_spectrum: warning: --len with --text is now "
                                    "--max-line-len (the old use goes in the next release)\n";
        if (strcmp(e, want))
            fail_msg("hessian_spectrum %s: stderr '%s', expected '%s'", runs[i], e, want);
        free(e);
    }
    const char *f[] = {"eigs", "trace", "blocks", "slq_nodes"};
    for (int i = 0; i < 4; i++) { /* --len 5 = --max-line-len 5; the default = 24 (not 5) */
        assert_int_equal(tu_run(&o, "cd '%s' && cmp hs1/%s.csv hs2/%s.csv && cmp hs3/%s.csv "
                                "hs4/%s.csv && ! cmp -s hs1/%s.csv hs3/%s.csv", d, f[i], f[i],
                                f[i], f[i], f[i], f[i]), 0);
        free(o);
    }
    const char *bad[][2] = {{"--max-line-len 5 --out hs5", "--max-line-len applies only with "
                             "--text FILE"},
                            {"--text hs.txt --len 5 --max-line-len 5 --out hs6", "--len is for "
                             "synthetic rows; with --text give --max-line-len alone"}};
    for (int i = 0; i < 2; i++) {
        int rc = tu_run(&e, "%s %s 2>&1 >/dev/null", cmd, bad[i][0]);
        if (rc != 2 || tu_n_lines(e) != 1 || !strstr(e, bad[i][1]))
            fail_msg("hessian_spectrum %s: exit %d, '%s'", bad[i][0], rc, e);
        free(e);
    }
}

/* A study that fails before writing its results leaves no folder it made
 * ("never a half-written output", docs/cli.md): not the --out folder, nor
 * the parents it created; a folder that existed before stays. */
static void test_failed_run_leaves_no_folder(void **s)
{
    (void)s;
    char build[PATH_MAX], *e;
    tu_build_dir(build, sizeof build);
    const char *d = tu_tmpdir();
    const char *three = "a b c\nb c d\nc d e\n"; /* fewer lines than the default --rows 8 */
    tu_write_file(tu_path("three.txt"), three, strlen(three));
    tu_write_file(tu_path("val.en"), three, strlen(three));
    assert_int_equal(mkdir(tu_path("was_there"), 0777), 0);
    const char *runs[][2] = {
        {"multi30k_hessian --src nonexist.de --tgt val.en --out o1", "o1"},
        {"multi30k_hessian --src nonexist.de --tgt val.en --out o2/a/b", "o2"},
        {"hessian_spectrum --text nonexist.txt --out o3", "o3"},
        {"hessian_spectrum --text three.txt --out hs_x", "hs_x"},
        {"hessian_spectrum --text three.txt --out was_there/hs_y", "was_there/hs_y"}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        int rc = tu_run(&e, "cd '%s' && '%s/studies/'%s 2>&1 >/dev/null", d, build, runs[i][0]);
        if (rc != 2 || tu_n_lines(e) != 1)
            fail_msg("%s: exit %d, '%s' (expected one line, exit 2)", runs[i][0], rc, e);
        free(e);
        if (access(tu_path(runs[i][1]), F_OK) == 0)
            fail_msg("%s: exit 2 left the folder %s behind", runs[i][0], runs[i][1]);
    }
    if (access(tu_path("was_there"), F_OK) != 0)
        fail_msg("a failed run removed a folder that existed before it");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_programs),
                                       cmocka_unit_test(test_one_name_one_meaning),
                                       cmocka_unit_test(test_rng_seed_help),
                                       cmocka_unit_test(test_old_names),
                                       cmocka_unit_test(test_prefix_hints_and_test_options),
                                       cmocka_unit_test(test_recorded_command_lines),
                                       cmocka_unit_test(test_len_and_max_line_len),
                                       cmocka_unit_test(test_failed_run_leaves_no_folder)};
    return cmocka_run_group_tests_name("studies' and benchmarks' conventions", tests, NULL, NULL);
}
