/* lnkit init: initialise the parameters of a configuration and write them
 * (safetensors) with the configuration (JSON, with n_params and param_order). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

static void help(void)
{
    printf("usage: lnkit init [--config C.json] [config flags] -o WEIGHTS.safetensors\n"
           "                  [--config-out C.json]\n\n"
           "Initialise the parameters (docs/MODEL.md section 5) and write them, and the resolved\n"
           "configuration (default: WEIGHTS with .safetensors replaced by .json).\n\n"
           "  -o, --output FILE      weights file to write                    (required)\n"
           "  --config-out FILE      configuration to write                   (WEIGHTS.json)\n"
           "                         (-o a device or FIFO, e.g. /dev/null: none unless given)\n\n");
    cli_print_model_help();
}

int cmd_init(int argc, char **argv)
{
    struct option opts[96] = {{"output", required_argument, NULL, 'o'},
                              {"config-out", required_argument, NULL, 'c'},
                              {"help", no_argument, NULL, 'h'}};
    int n = cli_add_model_options(opts, 3);
    opts[n] = (struct option){0, 0, 0, 0};
    cli_model_opts mo = {0};
    const char *out = NULL, *cfg_out = NULL;
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        if (cli_model_option(&mo, ch, optarg))
            continue;
        switch (ch) {
        case 'o': out = optarg; break;
        case 'c': cfg_out = optarg; break;
        case 'h': help(); return 0;
        default: cli_bad_option("init", ch, argv);
        }
    }
    if (optind < argc)
        cli_die("init: unexpected argument '%s'", argv[optind]);
    if (!out)
        cli_die("init: -o WEIGHTS.safetensors is required");
    /* no WEIGHTS.json beside a device or FIFO unless --config-out names one */
    char *cpath = cli_sidecar_path(out, cfg_out, ".json");
    cli_file outs[2] = {{out, "-o"}, {cpath, cfg_out ? "--config-out" : "the config beside -o"}},
             ins[1] = {{mo.config_path, "--config"}};
    cli_check_outputs("init", outs, 2, ins, 1);
    lnk_config c;
    cli_make_config(&mo, &c);
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        cli_die_lib();
    size_t np = lnk_model_n_params(m);
    double *theta = malloc(sizeof(double) * np);
    if (!theta)
        cli_die("out of memory for %zu parameters", np);
    if (lnk_model_init_params(m, theta) != LNK_OK)
        cli_die_lib();
    const lnk_layout *lay = lnk_model_layout(m);
    const char **names = malloc(sizeof(char *) * lay->n_tensors);
    if (!names)
        cli_die("out of memory");
    for (int i = 0; i < lay->n_tensors; i++)
        names[i] = lay->t[i].name;
    cli_outputs_begin(); /* weights and config: both or neither */
    if (lnk_weights_save(out, m, theta) != LNK_OK)
        cli_die_lib();
    if (cpath && lnk_config_save_json(&c, cpath, np, names, lay->n_tensors) != LNK_OK)
        cli_die_lib();
    cli_outputs_commit();
    cli_say("lnkit init: %zu parameters (%d tensors) -> %s, config -> %s\n", np,
            lay->n_tensors, out, cpath ? cpath : "(none beside a device or FIFO)");
    free(names);
    free(cpath);
    free(theta);
    lnk_model_free(m);
    lnk_config_clear(&c);
    return 0;
}
