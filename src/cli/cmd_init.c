/* lnkit init: initialise the parameters of a configuration and write them
 * (safetensors) with the configuration (JSON, with n_params and param_order). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "front/record.h"

typedef struct {
    cli_model_opts mo;
    const char *out, *cfg_out;
} init_args;

static const cli_opt opts[] = {
    CLI_OPT_OUTPUT(init_args, out, CLI_REQ, "weights file to write (safetensors)", NULL),
    {.type = CLI_STR, .name = "config-out", .arg = "FILE", CLI_AT(init_args, cfg_out),
     .flags = CLI_WRITES | CLI_STDOUT, .help = "configuration to write; -: standard output",
     .def = "WEIGHTS.json; none beside standard output, a device or a FIFO"},
    CLI_MODEL(init_args, mo),
    {0}};

const cli_cmd cmd_init_decl = {
    .name = "lnkit init",
    .summary = "initialise weights (MODEL.md §5) and write them with their config",
    .usage = "[--config C.json] [config flags] -o WEIGHTS.safetensors [--config-out C.json]",
    .about = "Initialise the parameters (docs/MODEL.md section 5) and write them, and the\n"
             "resolved configuration with n_params and param_order (default: WEIGHTS with\n"
             ".safetensors replaced by .json).",
    .opts = opts,
    .size = sizeof(init_args),
    .example = "--d 8 --h 2 --L 1 --V 12 -o OUT",
};

int cmd_init(int argc, char **argv)
{
    init_args a;
    cli_parse(&cmd_init_decl, &a, argc, argv);
    /* no WEIGHTS.json beside standard output, a device or a FIFO unless --config-out names one */
    char *cpath = cli_sidecar_path(a.out, a.cfg_out, ".json");
    const char *out = cli_out(a.out, 1);
    cli_file outs[2] = {{out, "-o"}, {cpath, a.cfg_out ? "--config-out" : "the config beside -o"}},
             ins[1] = {{a.mo.config_path, "--config"}};
    cli_check_outputs(NULL, outs, 2, ins, 1);
    lnk_config c;
    lnk_model *m = cli_model_new(&a.mo, &c);
    size_t np = lnk_model_n_params(m);
    double *theta = cli_alloc(sizeof(double) * np);
    CLI_CK(lnk_model_init_params(m, theta));
    cli_record_md rec;
    cli_outputs_begin(); /* weights and config: both or neither */
    CLI_CK(lnk_weights_save_meta(out, m, theta,
                                 cli_record_table(&rec, "lnkit init", "the initial weights "
                                                  "(docs/MODEL.md section 5)", &c, opts, &a)));
    if (cpath)
        CLI_CK(lnk_model_config_save(cli_out(cpath, 0), m));
    cli_outputs_commit();
    cli_record_free(&rec);
    cli_say("%zu parameters (%d tensors) -> %s, config -> %s\n", np,
            lnk_model_layout(m)->n_tensors,
            cli_dest(a.out),
            cli_dest(cpath));
    free(cpath);
    free(theta);
    lnk_model_free(m);
    lnk_config_clear(&c);
    return 0;
}
