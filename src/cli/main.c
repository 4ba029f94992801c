/* lnkit: command-line entry point; dispatches to the subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: lnkit COMMAND [OPTIONS]   (lnkit COMMAND --help, or lnkit help COMMAND, for "
               "its options)\n\n"
               "lnkit %s: exact gradients and Hessian-vector products of the transformers\n"
               "of docs/MODEL.md at initialisation.\n\nCommands:\n", LNK_VERSION);
    for (const lnkit_command *c = lnkit_commands; c->name; c++)
        fprintf(f, "  %-8s %s\n", c->name, c->cmd->summary);
    fprintf(f, "\nOptions:\n"
               "  -h, --help             this list\n"
               "  --version              version, git commit, compiler, BLAS library, its kernel\n"
               "                         and threads, LAPACK, GSL, GLPK, jansson\n"
               "\nMessages start 'lnkit COMMAND: '; an error is one such line on standard error\n"
               "and exit status 2; eigs and blocks exit with status 3 (after writing their\n"
               "results and one warning line) when requested eigenpairs did not converge.\n"
               "docs/cli.md: the conventions every command follows.\n"
               "man lnkit, man lnkit-COMMAND: the manual pages.\n");
}

/* The name messages start with, known from argv[1] before anything can
 * fail (a bad LNK_MEM_LIMIT_MB is "lnkit eval: LNK_MEM_LIMIT_MB: ..."):
 * "lnkit CMD", "lnkit help", or "lnkit" without a command. */
static const char *prog_name(int argc, char **argv, char *buf, size_t n)
{
    snprintf(buf, n, "lnkit");
    for (const lnkit_command *c = lnkit_commands; argc > 1 && c->name; c++)
        if (!strcmp(argv[1], c->name))
            snprintf(buf, n, "lnkit %s", c->name);
    if (argc > 1 && !strcmp(argv[1], "help"))
        snprintf(buf, n, "lnkit help");
    return buf;
}

int main(int argc, char **argv)
{
    char prog[64];
    cli_start(&argc, &argv, prog_name(argc, argv, prog, sizeof prog));
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    int help = !strcmp(name, "help");
    if (help && argc > 3)
        cli_die("give one command (lnkit help COMMAND), not %d words", argc - 2);
    if (help && argc == 3)
        name = argv[2];
    else if (help || !strcmp(name, "--help") || !strcmp(name, "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(name, "--version")) {
        char *v = lnk_version_text(cli_blas_note());
        if (!v)
            cli_die("out of memory");
        fputs(v, stdout);
        free(v);
        return 0;
    }
    for (const lnkit_command *c = lnkit_commands; c->name; c++)
        if (!strcmp(name, c->name)) {
            /* lnkit help CMD is lnkit CMD --help */
            char *hv[] = {argv[1 + help], "--help", NULL};
            return help ? c->run(2, hv) : c->run(argc - 1, argv + 1);
        }
    cli_die("unknown command '%s' (lnkit --help lists the commands)", name);
}
