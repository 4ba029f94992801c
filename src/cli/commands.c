/* The commands of lnkit, in the order lnkit --help lists them. */
#include "cli/cli.h"

extern const cli_cmd cmd_init_decl, cmd_batch_decl, cmd_eval_decl, cmd_hvp_decl, cmd_eigs_decl,
    cmd_trace_decl, cmd_density_decl, cmd_blocks_decl, cmd_select_decl, cmd_params_decl,
    cmd_vector_decl, cmd_meta_decl;

const lnkit_command lnkit_commands[] = {
    {"init", cmd_init, &cmd_init_decl},
    {"batch", cmd_batch, &cmd_batch_decl},
    {"eval", cmd_eval, &cmd_eval_decl},
    {"hvp", cmd_hvp, &cmd_hvp_decl},
    {"eigs", cmd_eigs, &cmd_eigs_decl},
    {"trace", cmd_trace, &cmd_trace_decl},
    {"density", cmd_density, &cmd_density_decl},
    {"blocks", cmd_blocks, &cmd_blocks_decl},
    {"select", cmd_select, &cmd_select_decl},
    {"params", cmd_params, &cmd_params_decl},
    {"vector", cmd_vector, &cmd_vector_decl},
    {"meta", cmd_meta, &cmd_meta_decl},
    {0}};
