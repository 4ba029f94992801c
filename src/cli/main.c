/* lnkit: command-line entry point; dispatches to the subcommands. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} cmds[] = {
    {"init", cmd_init, "initialise weights (SPEC §5) and write them with their config"},
    {"batch", cmd_batch, "make a batch file: synthetic ids or whitespace-tokenised text"},
    {"eval", cmd_eval, "loss and every tensor's gradient Frobenius norm on a batch"},
    {"hvp", cmd_hvp, "exact Hessian-vector product H v on a batch"},
    {"eigs", cmd_eigs, "extremal Hessian eigenvalues, residuals (Lanczos)"},
    {"trace", cmd_trace, "Hessian trace with standard error (Hutchinson, Hutch++)"},
    {"density", cmd_density, "Hessian spectral density (stochastic Lanczos quadrature)"},
    {"select", cmd_select, "which keys are selectable by some query (convex hull, exact LP)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: lnkit COMMAND [OPTIONS]   (lnkit COMMAND --help for its options)\n\n"
               "lnkit %s: exact gradients and Hessian-vector products of the transformers\n"
               "of SPEC.md at initialisation.\n\nCommands:\n", LNK_VERSION);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
    fprintf(f, "\nErrors print one line 'lnkit: ...' on stderr and exit with status 2.\n");
}

int main(int argc, char **argv)
{
    /* the best OpenBLAS kernel first: this may re-exec the program */
    if (lnk_blas_setup() != LNK_OK)
        cli_die_lib();
    if (lnk_comm_init(&argc, &argv) != LNK_OK) {
        fprintf(stderr, "lnkit: %s\n", lnk_errmsg());
        return 2;
    }
    /* Under mpirun only rank 0 speaks on stdout (--help, CSV, JSON). */
    if (lnk_comm_rank() != 0 && !freopen("/dev/null", "w", stdout))
        return 2;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("lnkit %s\n", LNK_VERSION);
        printf("OpenBLAS kernel %s (%s)\n", lnk_blas_kernel(), lnk_blas_note());
        return 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name)) {
            int rc = cmds[i].fn(argc - 1, argv + 1);
            lnk_comm_finalize();
            return rc;
        }
    cli_die("unknown command '%s' (see lnkit --help for the commands)",
            argv[1]);
}
