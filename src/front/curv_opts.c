/* The shared options of curvature runs (front/curv_opts.h). */
#include "front/curv_opts.h"

const cli_choice cli_lanczos_modes[] = {{"full", LNK_LANCZOS_FULL}, {"light", LNK_LANCZOS_LIGHT},
                                        {NULL, 0}};
const cli_choice cli_reorths[] = {{"partial", LNK_REORTH_PARTIAL}, {"always", LNK_REORTH_ALWAYS},
                                  {NULL, 0}};

void cli_set_cache(lnk_hessian *h, long mb)
{
    if (mb >= 0 && lnk_hessian_set_cache(h, (size_t)mb * 1048576) != LNK_OK)
        cli_die_lib();
}

const char *cli_op_letter(int op_kind)
{
    return op_kind == LNK_OP_GGN ? "G" : op_kind == LNK_OP_FUNCTIONAL ? "F" : "H";
}

void cli_say_ggn_bottom(const char *given, int blocks, int steps, const char *steps_opt)
{
    cli_say("--operator ggn%s%s: %s positive semidefinite, so %s >= 0 and usually in a cluster "
            "at 0 that Lanczos resolves slowly: the bottom %s may take all %d steps (%s) and "
            "stay unconverged by their residuals; %s still bounds %s to [0, v] (Cauchy "
            "interlacing)\n", given ? " " : "", given ? given : "",
            blocks ? "each block G_bb is" : "G is",
            blocks ? "its bottom eigenvalue is" : "its bottom eigenvalues are",
            blocks ? "extremes" : "pairs", steps, steps_opt,
            blocks ? "each bottom value v" : "the i-th bottom value v",
            blocks ? "the block's smallest eigenvalue" : "G's i-th smallest eigenvalue");
}
