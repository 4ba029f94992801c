/* The conventions of docs/cli.md, for every command of lnkit, generated from the commands' option
 * tables (src/front/opt.h): --help lists exactly the declared options, each with a help text; a bad
 * value of each option is one line "lnkit CMD: ..." naming it and exit 2; -o - writes the bytes -o
 * FILE writes, to standard output, with no file named "-"; --json parses; --quiet leaves standard
 * error empty; the man page's OPTIONS are the table's; one option name has one kind of value in
 * every command; an option that does not apply is refused; the feedback of long runs (the block
 * named, time left, G's bottom end). Studies, benchmarks: tests/test_cli_programs.c. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "testutil.h"
#include "cli/cli.h"
#include "front/opt_int.h"

static char dir[PATH_MAX];

/* Inputs the examples name: CONFIG WEIGHTS BATCH VECTOR KEYS. */
static void setup(void)
{
    static int done;
    if (done++)
        return;
    snprintf(dir, sizeof dir, "%s/conv", tu_tmpdir());
    mkdir(dir, 0777);
    char *out;
    const char *L = tu_lnkit();
    int st = tu_run(&out, "cd '%s' && '%s' init --d 8 --h 2 --L 1 --V 12 -o w.safetensors -q && "
                    "'%s' batch --synthetic --config w.json --rows 3 --len 4 -o b.safetensors -q "
                    "&& '%s' vector --config w.json --random -o v.safetensors -q && printf "
                    "'1,0\\n0,1\\n0.2,0.2\\n' > keys.csv", dir, L, L, L);
    if (st)
        fail_msg("setup: %s", out);
    free(out);
}

/* example with the placeholders replaced; OUT -> out (NULL: OUT dropped with its -o) */
static void expand(char *dst, size_t n, const char *example, const char *out)
{
    static const char *const ph[][2] = {{"CONFIG", "../w.json"}, {"WEIGHTS", "../w.safetensors"},
                                        {"BATCH", "../b.safetensors"},
                                        {"VECTOR", "../v.safetensors"}, {"KEYS", "../keys.csv"}};
    size_t k = 0;
    for (const char *p = example ? example : ""; *p && k + 64 < n;) {
        int hit = 0;
        for (size_t i = 0; i < sizeof ph / sizeof ph[0] && !hit; i++)
            if (!strncmp(p, ph[i][0], strlen(ph[i][0]))) {
                k += (size_t)snprintf(dst + k, n - k, "%s", ph[i][1]);
                p += strlen(ph[i][0]);
                hit = 1;
            }
        if (!hit && !strncmp(p, "-o OUT", 6)) {
            if (out)
                k += (size_t)snprintf(dst + k, n - k, "-o '%s'", out);
            p += 6;
            hit = 1;
        }
        if (!hit)
            dst[k++] = *p++;
    }
    dst[k] = 0;
}

/* lnkit ARGS in dir: exit status; stdout and stderr in *o, *e (malloc'd). */
static int run(char **o, char **e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run(char **o, char **e, const char *fmt, ...)
{
    char args[4096], *junk;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    int st = tu_run(&junk, "cd '%s' && rm -rf run && mkdir run && cd run && '%s' %s "
                    ">../stdout 2>../stderr", dir, tu_lnkit(), args);
    free(junk);
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/stdout", dir);
    *o = tu_read_file(p, NULL);
    snprintf(p, sizeof p, "%s/stderr", dir);
    *e = tu_read_file(p, NULL);
    return st;
}

/* The options of a command's table: long names, each once. */
static int table(const lnkit_command *c, void **args, cli_flat *f)
{
    *args = calloc(1, c->cmd->size);
    if (c->cmd->defaults)
        c->cmd->defaults(*args);
    return cli_flatten(c->cmd->opts, *args, f, CLI_MAX_OPTS);
}

/* --help lists exactly the table's options (and -q/--quiet, -h/--help),
 * each with a help text; lnkit help CMD is lnkit CMD --help. */
static void test_help_lists_the_table(void **s)
{
    (void)s;
    setup();
    for (const lnkit_command *c = lnkit_commands; c->name; c++) {
        if (!c->cmd->opts)
            fail_msg("lnkit %s declares no option table", c->name);
        char *o, *e, *o2, *e2;
        assert_int_equal(run(&o, &e, "%s --help", c->name), 0);
        assert_int_equal(run(&o2, &e2, "help %s", c->name), 0);
        assert_string_equal(o, o2);
        static cli_flat f[CLI_MAX_OPTS];
        void *args;
        int n = table(c, &args, f), listed = 0;
        for (int i = 0; i < n; i++) {
            if (f[i].heading)
                continue;
            char want[80];
            snprintf(want, sizeof want, "--%s", f[i].o->name);
            /* on an option line: 2 spaces, then "-k, --name" or "--name" */
            int found = 0;
            for (const char *l = o; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                size_t len = strcspn(l, "\n");
                if (!strncmp(l, "  -", 3)) {
                    const char *w = strstr(l, want);
                    if (w && w < l + len && (w[strlen(want)] == ' ' || w[strlen(want)] == '\n' ||
                                             w[strlen(want)] == ','))
                        found = 1;
                }
            }
            if (!found)
                fail_msg("lnkit %s --help does not list %s", c->name, want);
            if (!f[i].o->help || !*f[i].o->help)
                fail_msg("lnkit %s: %s has no help text", c->name, want);
            listed++;
        }
        /* and nothing else: as many option lines as options (+ --quiet, --help) */
        int lines = 0;
        for (const char *l = o; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
            lines += !strncmp(l, "  -", 3);
        if (lines != listed + 2)
            fail_msg("lnkit %s --help: %d option lines for %d options (+ --quiet, --help)",
                     c->name, lines, listed);
        /* -q keeps the warnings (test_long_work), and its help says so */
        const char *gen = strstr(o, "\nGeneral:\n  -q, --quiet");
        if (!gen || !strstr(gen, "errors and") || !strstr(gen, "warnings"))
            fail_msg("lnkit %s --help: -q's text does not say warnings stay: %s", c->name,
                     gen ? gen : o);
        free(args);
        free(o), free(e), free(o2), free(e2);
    }
}

/* One bad value of each option: "lnkit CMD: " + one line naming it, exit 2,
 * nothing on standard output, no file made. */
static void test_bad_values(void **s)
{
    (void)s;
    setup();
    int cases = 0;
    for (const lnkit_command *c = lnkit_commands; c->name; c++) {
        if (!c->cmd->opts)
            continue;
        static cli_flat f[CLI_MAX_OPTS];
        void *args;
        int n = table(c, &args, f);
        for (int i = 0; i < n; i++) {
            const cli_opt *o = f[i].o;
            if (f[i].heading || o->type == CLI_FLAG || o->type == CLI_STR || o->type == CLI_LIST)
                continue;
            /* keys of sides an lm model does not have are accepted and ignored, whatever
             * their value (MODEL.md section 8; test_config checks them where they apply) */
            if (f[i].key >= 0 && (!strcmp(o->name, "L-enc") || !strcmp(o->name, "V-src") ||
                                  !strcmp(o->name, "n-classes")))
                continue;
            const char *bad[2] = {"x", NULL};
            char below[64];
            if (o->type == CLI_INT || o->type == CLI_LONG || o->type == CLI_U64 ||
                o->type == CLI_REAL) {
                snprintf(below, sizeof below, "%.17g", o->flags & CLI_GT ? o->min : o->min - 1);
                bad[1] = below;
            }
            for (int b = 0; b < 2 && bad[b]; b++) {
                char ex[2048], *out, *err, pre[64], flag[64];
                expand(ex, sizeof ex, c->cmd->example, "out.file");
                snprintf(pre, sizeof pre, "lnkit %s: ", c->name);
                cli_opt_flag(o, flag, sizeof flag);
                int st = run(&out, &err, "%s %s %s %s", c->name, ex, flag, bad[b]);
                char *files;
                tu_run(&files, "ls -A '%s/run'", dir);
                if (st != 2 || strncmp(err, pre, strlen(pre)) || tu_n_lines(err) != 1 ||
                    !strstr(err, flag) || out[0] || files[0])
                    fail_msg("lnkit %s %s %s %s: exit %d, stderr '%s', stdout '%s', files '%s'",
                             c->name, ex, flag, bad[b], st, err, out, files);
                free(files), free(out), free(err);
                cases++;
            }
        }
        free(args);
    }
    print_message("      %d bad values refused, each in one line\n", cases);
    assert_true(cases > 20);
}

/* A value for option o on a command line: a flag none, a choice its first
 * name other than not, a file name, a number. */
static const char *some_value(const cli_opt *o, const char *not)
{
    if (o->type == CLI_FLAG)
        return "";
    if (o->type == CLI_CHOICE)
        for (const cli_choice *c = o->ref; c->name; c++)
            if (!not || strcmp(c->name, not))
                return c->name;
    return o->type == CLI_STR ? "ck.file" : "3";
}

/* An option that does not apply (its .needs unmet: --checkpoint-every and
 * --resume-anywhere without --checkpoint, --reorth with --mode light) is
 * refused, one line naming both options, exit 2, nothing written; with its
 * need met the same command line runs. */
static void test_not_applying(void **s)
{
    (void)s;
    setup();
    int cases = 0;
    for (const lnkit_command *c = lnkit_commands; c->name; c++) {
        if (!c->cmd->opts || !c->cmd->example)
            continue;
        static cli_flat f[CLI_MAX_OPTS];
        void *args;
        int n = table(c, &args, f);
        for (int i = 0; i < n; i++) {
            const cli_opt *o = f[i].o;
            if (f[i].heading || !o->needs)
                continue;
            char need[64], ex[2048], *out, *err, pre[64], flag[64], unmet[160], met[160];
            snprintf(need, sizeof need, "%s", o->needs);
            char *eq = strchr(need, '=');
            if (eq)
                *eq++ = 0;
            const cli_opt *no = NULL;
            for (int j = 0; j < n; j++)
                if (!f[j].heading && !strcmp(f[j].o->name, need))
                    no = f[j].o;
            assert_non_null(no);
            snprintf(unmet, sizeof unmet, eq ? "--%s %s" : "", need, some_value(no, eq));
            snprintf(met, sizeof met, "--%s %s", need, eq ? eq : some_value(no, NULL));
            expand(ex, sizeof ex, c->cmd->example, "out.file");
            snprintf(pre, sizeof pre, "lnkit %s: ", c->name);
            cli_opt_flag(o, flag, sizeof flag);
            int st = run(&out, &err, "%s %s %s %s %s", c->name, ex, unmet, flag,
                         some_value(o, NULL));
            char *files, needf[80];
            snprintf(needf, sizeof needf, "--%s", need);
            tu_run(&files, "ls -A '%s/run'", dir);
            if (st != 2 || strncmp(err, pre, strlen(pre)) || tu_n_lines(err) != 1 ||
                !strstr(err, flag) || !strstr(err, needf) || out[0] || files[0])
                fail_msg("lnkit %s %s %s %s: exit %d, stderr '%s', stdout '%s', files '%s'",
                         c->name, ex, unmet, flag, st, err, out, files);
            free(files), free(out), free(err);
            st = run(&out, &err, "%s %s %s %s %s -q", c->name, ex, met, flag, some_value(o, NULL));
            if (st)
                fail_msg("lnkit %s %s %s %s: exit %d, stderr '%s'", c->name, ex, met, flag, st,
                         err);
            free(out), free(err);
            cases++;
        }
        free(args);
    }
    print_message("      %d options that do not apply refused, each in one line\n", cases);
    assert_true(cases >= 8); /* eigs, trace, density: 2 checkpoint options; eigs, density: --reorth */
}

/* Every message starts with the command's name, also those before the
 * command line is parsed (the environment's settings, lnkit help), and a
 * refused run is one line: the operator's checks (-k, --group's globs) come
 * before the line on what the run works on.  A study's notes obey -q. */
static void test_messages(void **s)
{
    (void)s;
    setup();
    static const struct {
        const char *env, *args, *prefix;
    } cases[] = {
        {"LNK_MEM_LIMIT_MB=abc", "eval --config ../w.json --weights ../w.safetensors --batch "
         "../b.safetensors", "lnkit eval: LNK_MEM_LIMIT_MB: "},
        {"LNK_BLAS_KERNEL=Bogus", "eigs --help", "lnkit eigs: LNK_BLAS_KERNEL=Bogus: "},
        {"LNK_MEM_LIMIT_MB=0", "help trace", "lnkit help: LNK_MEM_LIMIT_MB: "},
        {"", "help eigs extra", "lnkit help: give one command"},
        {"", "eigs --config ../w.json --weights ../w.safetensors --batch ../b.safetensors -k "
         "99999", "lnkit eigs: -k 99999 is larger than the operator's size"},
        {"", "blocks --config ../w.json --weights ../w.safetensors --batch ../b.safetensors "
         "--group nosuch", "lnkit blocks: --group 'nosuch': "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *junk, p[PATH_MAX + 16];
        int st = tu_run(&junk, "cd '%s' && rm -rf run && mkdir run && cd run && env %s '%s' %s "
                        ">../stdout 2>../stderr", dir, cases[i].env, tu_lnkit(), cases[i].args);
        free(junk);
        snprintf(p, sizeof p, "%s/stderr", dir);
        char *e = tu_read_file(p, NULL);
        if (st != 2 || tu_n_lines(e) != 1 || strncmp(e, cases[i].prefix, strlen(cases[i].prefix)))
            fail_msg("%s lnkit %s: exit %d, stderr '%s' (expected one line '%s...')",
                     cases[i].env, cases[i].args, st, e, cases[i].prefix);
        free(e);
    }
    /* lnkit batch names the arrays it wrote (an lm batch has tgt rows only) */
    static const char *const said[][2] = {
        {"--config ../w.json --rows 3 --len 4", "lnkit batch: tgt [3, 5] -> x.st\n"},
        {"--task cls --V 12 --rows 2 --len 4", "lnkit batch: src and labels [2, 4] -> x.st\n"},
        {"--task seq2seq --V 12 --rows 2 --len 4", "lnkit batch: src [2, 4], tgt [2, 5] -> x.st\n"}};
    for (size_t i = 0; i < sizeof said / sizeof said[0]; i++) {
        char *out, *err;
        assert_int_equal(run(&out, &err, "batch --synthetic %s -o x.st", said[i][0]), 0);
        if (strcmp(err, said[i][1]))
            fail_msg("lnkit batch --synthetic %s: stderr '%s', expected '%s'", said[i][0], err,
                     said[i][1]);
        free(out), free(err);
    }
    char build[PATH_MAX], *o;
    tu_build_dir(build, sizeof build);
    const char *demo = "--out dp --seeds 1 --d 8 --L 1 --rows 2 --len 4 --V 8";
    for (int q = 0; q < 2; q++) {
        int st = tu_run(&o, "cd '%s/run' && '%s/studies/demo_postpre' %s %s 2>err && printf "
                        "'[err]' && cat err", dir, build, demo, q ? "-q" : "");
        const char *err = strstr(o, "[err]");
        if (st || !err || err != o || (q && err[5]) ||
            (!q && strncmp(err + 5, "demo_postpre: wrote dp/", 23)))
            fail_msg("demo_postpre %s %s: exit %d, stdout then [err] stderr: '%s'", demo,
                     q ? "-q" : "", st, o);
        free(o);
    }
}

/* -o - writes to standard output what -o FILE writes to FILE, and no
 * file; --json parses; --quiet is silent; the example runs. */
static void test_outputs_json_quiet(void **s)
{
    (void)s;
    setup();
    for (const lnkit_command *c = lnkit_commands; c->name; c++) {
        if (!c->cmd->opts || !c->cmd->example)
            continue;
        char ex[2048], *o, *e, *files;
        expand(ex, sizeof ex, c->cmd->example, "out.file");
        int has_o = strstr(c->cmd->example, "-o OUT") != NULL;
        int st = run(&o, &e, "%s %s --quiet", c->name, ex);
        if (st || e[0])
            fail_msg("lnkit %s %s --quiet: exit %d, stderr '%s'", c->name, ex, st, e);
        free(o), free(e);
        if (has_o) {
            char *file, dash[2048], p[PATH_MAX + 32];
            assert_int_equal(run(&o, &e, "%s %s -q", c->name, ex), 0);
            free(o), free(e);
            snprintf(p, sizeof p, "%s/run/out.file", dir);
            size_t nf, no;
            file = tu_read_file(p, &nf);
            expand(dash, sizeof dash, c->cmd->example, "-");
            st = run(&o, &e, "%s %s -q", c->name, dash);
            tu_run(&files, "ls -A '%s/run'", dir);
            snprintf(p, sizeof p, "%s/stdout", dir);
            free(o);
            o = tu_read_file(p, &no);
            if (st || nf != no || memcmp(o, file, nf) || files[0])
                fail_msg("lnkit %s %s: exit %d, %zu bytes on standard output, %zu in -o FILE, "
                         "files left '%s'", c->name, dash, st, no, nf, files);
            free(files), free(o), free(e);
            /* the last note says what was written, and -q silences it */
            assert_int_equal(run(&o, &e, "%s %s", c->name, ex), 0);
            size_t ne = strlen(e);
            while (ne && e[ne - 1] == '\n')
                e[--ne] = 0;
            const char *last = strrchr(e, '\n');
            if (!strstr(last ? last : e, "-> out.file"))
                fail_msg("lnkit %s %s: the last note does not say '-> out.file': '%s'", c->name,
                         ex, e);
            free(o), free(e);
            /* -o FILE --json: FILE holds what -o FILE alone writes (not the JSON) */
            if (run(&o, &e, "%s %s --json -q", c->name, ex) == 0) {
                free(o);
                snprintf(p, sizeof p, "%s/run/out.file", dir);
                o = tu_read_file(p, &no);
                if (no != nf || memcmp(o, file, nf))
                    fail_msg("lnkit %s %s --json: -o FILE differs from without --json", c->name,
                             ex);
            }
            free(file), free(o), free(e);
        }
        static cli_flat f[CLI_MAX_OPTS];
        void *args;
        int n = table(c, &args, f), json = 0, json_out = 0, out_req = 0;
        for (int i = 0; i < n; i++) {
            if (!f[i].heading && !strcmp(f[i].o->name, "json")) {
                json = 1; /* every --json prints on standard output (params too) */
                json_out = (f[i].o->flags & CLI_STDOUT) != 0;
                if (!json_out)
                    fail_msg("lnkit %s --json: not declared as printing on standard output",
                             c->name);
            }
            out_req |= !f[i].heading && !strcmp(f[i].o->name, "output") &&
                       (f[i].o->flags & CLI_REQ);
        }
        free(args);
        if (json) { /* a required -o (hvp's product) stays: --json prints the rest */
            expand(ex, sizeof ex, c->cmd->example, out_req ? "out.file" : NULL);
            assert_int_equal(run(&o, &e, "%s %s --json -q", c->name, ex), 0);
            json_error_t je;
            json_t *j = json_loads(o, 0, &je);
            if (!j)
                fail_msg("lnkit %s %s --json: not JSON (%s): %s", c->name, ex, je.text, o);
            json_decref(j);
            free(o), free(e);
            /* -o - and --json both on standard output: refused */
            st = run(&o, &e, "%s %s --json -o -", c->name, ex);
            if (json_out && (st != 2 || tu_n_lines(e) != 1))
                fail_msg("lnkit %s %s --json -o -: exit %d, stderr '%s'", c->name, ex, st, e);
            free(o), free(e);
        }
    }
}

/* Every option declared as writing a file, given '-': no file named '-'
 * appears, and either the run wrote standard output (the option declares
 * '-' as standard output) or it was refused in one line with exit 2; with
 * --json (standard output already) or with -o left at its default '-', a
 * second output on standard output is refused the same way. */
static void dash_case(const lnkit_command *c, const char *args, int may_run, int *cases)
{
    char *o, *e, *files, pre[64], p[PATH_MAX + 16];
    int st = run(&o, &e, "%s %s", c->name, args);
    tu_run(&files, "ls -A '%s/run'", dir);
    size_t no = 0; /* binary: the bytes, not the string */
    snprintf(p, sizeof p, "%s/stdout", dir);
    free(tu_read_file(p, &no));
    snprintf(pre, sizeof pre, "lnkit %s: ", c->name);
    int refused = st == 2 && !strncmp(e, pre, strlen(pre)) && tu_n_lines(e) == 1 && !no &&
                  !files[0];
    int dash = !strncmp(files, "-\n", 2) || strstr(files, "\n-\n");
    int ran = may_run && st == 0 && no && !dash;
    if (!refused && !ran)
        fail_msg("lnkit %s %s: exit %d, stderr '%s', %zu bytes on standard output, files '%s'",
                 c->name, args, st, e, no, files);
    free(o), free(e), free(files);
    ++*cases;
}

/* An input given as '-': refused in one line naming standard input (or, for
 * lnkit meta's -o, that -o names a file there), nothing written. */
static void dash_input(const lnkit_command *c, const cli_opt *o, int *cases)
{
    char ex[2048], flag[64], *out, *err, *files, pre[160];
    cli_opt_flag(o, flag, sizeof flag);
    expand(ex, sizeof ex, c->cmd->example, "out.file");
    int st = run(&out, &err, "%s %s %s -", c->name, ex, flag);
    tu_run(&files, "ls -A '%s/run'", dir);
    snprintf(pre, sizeof pre, "lnkit %s: %s -: ", c->name, flag);
    if (st != 2 || strncmp(err, pre, strlen(pre)) || tu_n_lines(err) != 1 || out[0] || files[0] ||
        !(strstr(err, "/dev/stdin") || (o->key == 'o' && strstr(err, "not standard output"))))
        fail_msg("lnkit %s %s %s -: exit %d, stderr '%s', stdout '%s', files '%s'", c->name, ex,
                 flag, st, err, out, files);
    free(out), free(err), free(files);
    ++*cases;
}

static void test_dash_outputs(void **s)
{
    (void)s;
    setup();
    int cases = 0;
    for (const lnkit_command *c = lnkit_commands; c->name; c++) {
        if (!c->cmd->opts || !c->cmd->example)
            continue;
        static cli_flat f[CLI_MAX_OPTS];
        void *args;
        int n = table(c, &args, f), json = 0, o_dash = 0;
        for (int i = 0; i < n; i++)
            if (!f[i].heading && !strcmp(f[i].o->name, "json"))
                json = 1;
            else if (!f[i].heading && f[i].o->key == 'o' && f[i].o->type == CLI_STR)
                o_dash = cli_opt_text(f[i].o, f[i].base, NULL, 0) &&
                         !strcmp(cli_opt_text(f[i].o, f[i].base, NULL, 0), "-");
        for (int i = 0; i < n; i++)
            if (!f[i].heading && (f[i].o->flags & CLI_READS) && !(f[i].o->flags & CLI_STDIN))
                dash_input(c, f[i].o, &cases);
        for (int i = 0; i < n; i++) {
            const cli_opt *o = f[i].o;
            if (f[i].heading || o->type != CLI_STR || !(o->flags & CLI_WRITES) || o->key == 'o')
                continue;
            char ex[2048], a[2200], flag[64];
            int out = (o->flags & CLI_STDOUT) != 0;
            cli_opt_flag(o, flag, sizeof flag);
            expand(ex, sizeof ex, c->cmd->example, "out.file");
            snprintf(a, sizeof a, "%s %s - -q", ex, flag);
            dash_case(c, a, out, &cases);
            if (json) {
                snprintf(a, sizeof a, "%s %s - --json -q", ex, flag);
                dash_case(c, a, 0, &cases);
            }
            if (o_dash) {
                expand(ex, sizeof ex, c->cmd->example, NULL);
                snprintf(a, sizeof a, "%s %s - -q", ex, flag);
                dash_case(c, a, 0, &cases);
            }
        }
        free(args);
    }
    print_message("      %d runs with an input or output given as '-'\n", cases);
    assert_true(cases >= 20);
}

/* The man page's OPTIONS section is the table's (tools/cli_doc). */
static void test_man_pages(void **s)
{
    (void)s;
    char man[PATH_MAX], doc[PATH_MAX + 32];
    snprintf(man, sizeof man, "%s", tu_lnkit());
    char *slash = strstr(man, "/bin/lnkit");
    if (!slash)
        skip();
    *slash = 0;
    size_t lm = strlen(man); /* the test build's lnkit (BUILD/testing/bin): BUILD's pages */
    if (lm > 8 && !strcmp(man + lm - 8, "/testing"))
        man[lm - 8] = 0;
    snprintf(doc, sizeof doc, "%s/tools/cli_doc", man);
    for (const lnkit_command *c = lnkit_commands; c->name; c++) {
        if (!c->cmd->opts)
            continue;
        char *gen, *page, path[PATH_MAX + 64];
        assert_int_equal(tu_run(&gen, "'%s' %s", doc, c->name), 0);
        snprintf(path, sizeof path, "%s/man/lnkit-%s.1", man, c->name);
        page = tu_read_file(path, NULL);
        if (!strstr(page, gen))
            fail_msg("%s: its OPTIONS are not cli_doc %s's", path, c->name);
        free(gen), free(page);
    }
}

/* One name, one kind of value: an option of several commands has the same
 * type, value name and choices in each. */
static void test_one_vocabulary(void **s)
{
    (void)s;
    static cli_flat all[16 * CLI_MAX_OPTS];
    const char *owner[16 * CLI_MAX_OPTS];
    void *args[32];
    int n = 0, na = 0, pairs = 0;
    for (const lnkit_command *c = lnkit_commands; c->name && na < 32; c++) {
        if (!c->cmd->opts)
            continue;
        int k = table(c, &args[na++], all + n);
        for (int i = 0; i < k; i++)
            owner[n + i] = c->name;
        n += k;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            const cli_opt *a = all[i].o, *b = all[j].o;
            if (all[i].heading || all[j].heading || strcmp(a->name, b->name) || a == b)
                continue;
            pairs++;
            int same = a->type == b->type && a->key == b->key &&
                       !strcmp(a->arg ? a->arg : "", b->arg ? b->arg : "");
            if (same && a->type == CLI_CHOICE) {
                const cli_choice *x = a->ref, *y = b->ref;
                for (; x->name && y->name && !strcmp(x->name, y->name); x++, y++)
                    ;
                same = !x->name && !y->name;
            }
            if (!same)
                fail_msg("--%s means different things in lnkit %s and lnkit %s", a->name,
                         owner[i], owner[j]);
        }
    print_message("      %d options shared between commands, each with one meaning\n", pairs);
    for (int i = 0; i < na; i++)
        free(args[i]);
}

/* The line of stderr that contains needle, or fail. */
/* ... and no line gives two times left (one estimate a line) */
static void has(const char *cmd, const char *e, const char *needle)
{
    if (!strstr(e, needle))
        fail_msg("lnkit %s: no '%s' on standard error:\n%s", cmd, needle, e);
    for (const char *l = strstr(e, " left"), *n, *eol; l; l = n)
        if ((n = strstr(l + 5, " left")) && (!(eol = strchr(l, '\n')) || n < eol))
            fail_msg("lnkit %s: two times left in a line:\n%s", cmd, e);
}

/* Feedback on long work (docs/cli.md, Long runs): the header names what the
 * run works on (the block selected, not the whole model's size); eigs, trace,
 * density and blocks say how far they are and how long is left; G's bottom
 * end is announced before the run and, if unconverged, explained after. */
static void test_long_work(void **s)
{
    (void)s;
    setup();
    const char *C = "--config ../w.json --weights ../w.safetensors --batch ../b.safetensors";
    char *o, *e;
    /* the test model: 1064 parameters in 18 tensors; dec.0.* is 16 of them, 872 */
    assert_int_equal(run(&o, &e, "eigs %s -k 1 --max-steps 20 -o e.csv", C), 0);
    has("eigs", e, "lnkit eigs: the whole model: 1064 parameters in 18 tensors;");
    has("eigs", e, "lnkit eigs: step 1/20");
    has("eigs", e, "s left)");
    free(o), free(e);
    assert_int_equal(run(&o, &e, "eigs %s --block 'dec.0.*' -k 1 --max-steps 20 -o e.csv", C),
                     0);
    has("eigs --block", e, "lnkit eigs: block 'dec.0.*' of the 1064 parameters: 872 parameters "
        "in 16 tensor(s);");
    assert_null(strstr(e, "18 tensors"));
    free(o), free(e);
    assert_int_equal(run(&o, &e, "trace %s --block '*.ffn.*' --probes 4 -o t.csv", C), 0);
    has("trace", e, "lnkit trace: block '*.ffn.*' of the 1064 parameters: 552 parameters in 4 "
        "tensor(s);");
    has("trace", e, "lnkit trace: probe 4/4");
    has("trace", e, "s left");
    free(o), free(e);
    assert_int_equal(run(&o, &e, "density %s --runs 2 --steps 5 -o d.csv", C), 0);
    has("density", e, "lnkit density: the whole model:");
    has("density", e, "lnkit density: step 10/10");
    has("density", e, "s left");
    free(o), free(e);
    int st = run(&o, &e, "blocks %s --block '*.ffn.*' --probes 2 --max-steps 10 --runs 1 "
                 "--steps 5 -o bl.csv", C);
    assert_true(st == 0 || st == 3);
    has("blocks", e, "lnkit blocks: 4 blocks: 4 tensor(s) matched by --block '*.ffn.*'");
    has("blocks", e, "products (");
    has("blocks", e, "lnkit blocks: 4/4 dec.0.ffn.b2 (8)");
    has("blocks", e, "s left");
    free(o), free(e);
    /* G (positive semidefinite), both ends: said before the run; the bottom
     * pairs, if unconverged, explained by it, not by the step limit alone */
    st = run(&o, &e, "eigs %s --operator ggn --which both -k 1 --max-steps 30 -o g.csv", C);
    assert_true(st == 0 || st == 3);
    has("eigs --operator ggn", e, "lnkit eigs: --operator ggn --which both: G is positive "
        "semidefinite");
    if (st == 3) {
        const char *w = strstr(e, "lnkit eigs: warning: ");
        assert_non_null(w);
        if (!strstr(w, "G's bottom eigenvalues"))
            fail_msg("the warning does not explain G's bottom end: %s", w);
    }
    free(o), free(e);
    /* both ends unconverged (3 steps cannot resolve either): each end its reason */
    st = run(&o, &e, "eigs %s --operator ggn --which both -k 1 --max-steps 3 -o g.csv", C);
    assert_int_equal(st, 3);
    has("eigs --which both, 3 steps", e, "2 of 2 requested eigenpairs did not converge");
    has("eigs --which both, 3 steps", e, ": the top pairs: the step limit was reached");
    has("eigs --which both, 3 steps", e, "; the bottom pairs: G's bottom eigenvalues are a "
        "cluster at 0 (G is positive semidefinite)");
    free(o), free(e);
    /* --quiet: nothing but warnings */
    st = run(&o, &e, "eigs %s --operator ggn --which bottom -k 1 --max-steps 30 -o g.csv -q", C);
    assert_true(st == 0 || st == 3);
    assert_int_equal(tu_n_lines(e), st == 3);
    free(o), free(e);
}

/* Summary notes in the user's names: eigs names the option that stopped it
 * and the operator's letter; batch -o - says the vocabulary went nowhere;
 * blocks counts "1 block". */
static void test_notes(void **s)
{
    (void)s;
    setup();
    static const char *const cases[][2] = {
        {"eigs CF --operator ggn -k 1 --max-steps 3 -o e.csv", "stopped by --max-steps, "},
        {"eigs CF --operator ggn -k 1 --max-steps 3 -o e.csv", "||Gv - lv||"},
        {"eigs CF --operator functional -k 1 --max-steps 3 -o e.csv", "||Fv - lv||"},
        {"eigs CF -k 1 --max-steps 3 -o e.csv", "||Hv - lv||"},
        {"batch --text ../t.txt -o -", "vocabulary of 8 tokens -> (none beside standard output"},
        {"blocks CF --block dec.0.ffn.w1 --probes 2 --runs 1 --steps 3 --max-steps 3 -o b.csv",
         ": 1 block: 1 tensor(s)"},
        {"blocks CF --block dec.0.ffn.w1 --probes 2 --runs 1 --steps 3 --max-steps 3 -o b.csv",
         ": 1 block (hessian), "}};
    char *o, *e;
    tu_run(&o, "cd '%s' && printf 'a b c\\nb c d\\n' > t.txt", dir);
    free(o);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[512];
        const char *c = cases[i][0], *cf = strstr(c, "CF");
        snprintf(cmd, sizeof cmd, "%.*s%s%s", cf ? (int)(cf - c) : (int)strlen(c), c,
                 cf ? "--config ../w.json --weights ../w.safetensors --batch ../b.safetensors"
                    : "", cf ? cf + 2 : "");
        int st = run(&o, &e, "%s", cmd);
        if ((st != 0 && st != 3) || !strstr(e, cases[i][1]) || strstr(e, "max_steps"))
            fail_msg("lnkit %s: exit %d, no '%s' in '%s'", cmd, st, cases[i][1], e);
        free(o), free(e);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_lists_the_table), cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_outputs_json_quiet), cmocka_unit_test(test_dash_outputs),
        cmocka_unit_test(test_man_pages),
        cmocka_unit_test(test_one_vocabulary), cmocka_unit_test(test_long_work),
        cmocka_unit_test(test_not_applying),
        cmocka_unit_test(test_messages), cmocka_unit_test(test_notes),
    };
    return cmocka_run_group_tests_name("cli conventions", tests, NULL, NULL);
}
