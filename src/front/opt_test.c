/* The option tables for tests/test_cli_programs.c, which compares the
 * declarations of every program (LNK_TEST_OPTIONS, opt_int.h).  Read by
 * every build, not only the test builds: the test checks the studies and
 * benchmarks that `make` builds and `make install` installs, which have no
 * test build. */
#include <stdlib.h>
#include <string.h>
#include "front/front.h"
#include "front/opt_int.h"

int cli_test_options(void)
{
    const char *s = getenv("LNK_TEST_OPTIONS");
    if (!s || !*s)
        return 0;
    if (!strcmp(s, "table"))
        return 1;
    if (!strcmp(s, "values"))
        return 2;
    cli_die("LNK_TEST_OPTIONS: expected table or values, got '%s'", s);
}

_Noreturn void cli_dump_values(const cli_flat *flat, int n_flat)
{
    char a[64], b[64], v[512];
    for (int i = 0; i < n_flat; i++) {
        const cli_opt *o = flat[i].o;
        const char *t = flat[i].heading ? NULL : cli_opt_text(o, flat[i].base, v, sizeof v);
        if (!flat[i].heading)
            printf("%s\t%s\t%s\t%s\n", o->name, cli_opt_id_name(o, a, sizeof a),
                   cli_opt_meta_key(o, b, sizeof b), t ? t : "");
    }
    exit(fflush(stdout) ? 2 : 0);
}

_Noreturn void cli_dump_table(const cli_flat *flat, int n_flat)
{
    static const char *const types[] = {"end", "flag", "int", "long", "u64", "real", "str",
                                        "choice", "list", "call", "group", "config", "ints",
                                        "words"};
    for (int i = 0; i < n_flat; i++) {
        const cli_opt *o = flat[i].o;
        if (flat[i].heading)
            continue;
        printf("%s\t%s\t%s\t", o->name, types[o->type], o->arg ? o->arg : "");
        for (const cli_choice *c = o->type == CLI_CHOICE || o->type == CLI_WORDS ? o->ref : NULL;
             c && c->name; c++)
            printf("%s%s", c == o->ref ? "" : ",", c->name);
        printf("\t%s\t", o->was ? o->was : "");
        for (const char *h = o->help ? o->help : ""; *h; h++)
            putchar(*h == '\n' || *h == '\t' ? ' ' : *h);
        printf("\t%.17g\n", o->min);
    }
    exit(fflush(stdout) ? 2 : 0);
}
