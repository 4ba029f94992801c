/* lnkit: command-line entry point; dispatches to the subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "lnkit/provenance.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} cmds[] = {
    {"init", cmd_init, "initialise weights (MODEL.md §5) and write them with their config"},
    {"batch", cmd_batch, "make a batch file: synthetic ids or whitespace-tokenised text"},
    {"eval", cmd_eval, "loss and every tensor's gradient Frobenius norm on a batch"},
    {"hvp", cmd_hvp, "exact Hessian-vector product H v on a batch"},
    {"eigs", cmd_eigs, "extremal Hessian eigenvalues, residuals (Lanczos)"},
    {"trace", cmd_trace, "Hessian trace with standard error (Hutchinson, Hutch++)"},
    {"density", cmd_density, "Hessian spectral density (stochastic Lanczos quadrature)"},
    {"blocks", cmd_blocks, "per-tensor / group blocks: ||A_bb||_F, extremes, densities, JS"},
    {"select", cmd_select, "which keys are selectable by some query (convex hull, exact LP)"},
    {"params", cmd_params, "the model's tensors: shapes, counts, offsets, --block groups"},
    {"vector", cmd_vector, "make a vector for hvp: random, ones, or a saved gradient"},
    {"meta", cmd_meta, "the .meta.json sidecar of a result another program wrote"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: lnkit COMMAND [OPTIONS]   (lnkit COMMAND --help for its options)\n\n"
               "lnkit %s: exact gradients and Hessian-vector products of the transformers\n"
               "of docs/MODEL.md at initialisation.\n\nCommands:\n", LNK_VERSION);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
    fprintf(f, "\nOptions:\n"
               "  --help                 this list\n"
               "  --version              version, git commit, compiler, BLAS library, its kernel\n"
               "                         and threads, LAPACK, GSL, GLPK, jansson\n"
               "\nErrors print one line 'lnkit: ...' on stderr and exit with status 2; eigs and\n"
               "blocks exit with status 3 (after writing their results and one warning line)\n"
               "when requested eigenpairs did not converge.\n"
               "man lnkit, man lnkit-COMMAND: the manual pages.\n");
}

int main(int argc, char **argv)
{
    /* settings, the best OpenBLAS kernel (may restart the program), MPI,
     * the command line for the sidecars */
    cli_start(&argc, &argv, "lnkit");
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
        char *v = lnk_version_text(cli_blas_note());
        if (!v)
            cli_die("out of memory");
        fputs(v, stdout);
        free(v);
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
