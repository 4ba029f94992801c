/* lnkit params: what a model is made of: its tensors in the flat order of
 * docs/MODEL.md §6 (shape, count, offset) and the parameter groups that
 * --block accepts, from a configuration alone (no weights needed). */
#include <jansson.h>
#include <stdio.h>
#include "cli/cli.h"

typedef struct {
    cli_model_opts mo;
    const char *block, *out;
    int csv, json;
} params_args;

static const cli_opt opts[] = {
    CLI_OPT_OUTPUT(params_args, out, 0, "the listing (the table, or --csv) (+ FILE.meta.json)",
                   NULL),
    {.type = CLI_STR, .name = "block", .arg = "PATTERNS", CLI_AT(params_args, block),
     .flags = CLI_META, .unset = "",
     .help = "list only this block: comma-separated globs on tensor names, e.g. '*.attn.*' or "
             "'dec.5.*'", .def = "all parameters"},
    {.type = CLI_FLAG, .name = "csv", CLI_AT(params_args, csv), .flags = CLI_META,
     .help = "CSV kind,name,shape,count,offset (kind tensor or group) instead of the table"},
    CLI_OPT_JSON_AS(params_args, json, "the listing as JSON {n_params, n_tensors, tensors, groups} "
                                       "on standard output instead of the table"),
    CLI_MODEL(params_args, mo),
    {0}};

static void defaults(void *p) { ((params_args *)p)->out = "-"; }

const cli_cmd cmd_params_decl = {
    .name = "lnkit params",
    .summary = "the model's tensors: shapes, counts, offsets, --block groups",
    .usage = "[--config C.json] [config flags] [--block PATTERNS] [--csv] [--json] [-o FILE]",
    .about = "List the model's tensors in the flat order of the parameter vector (docs/MODEL.md\n"
             "section 6): index, name, shape, count and offset in the vector; then the groups\n"
             "that --block of eigs/trace/density accepts (comma-separated shell globs on the\n"
             "names; '*' also matches dots), each with its tensor and parameter counts.  With\n"
             "--block, only the tensors of that block are listed, with the block's size.",
    .opts = opts,
    .size = sizeof(params_args),
    .defaults = defaults,
    .example = "--config CONFIG -o OUT",
};

/* The listing to -o (a file through a temporary name, or standard output),
 * with a sidecar beside a file. */
static void write_listing(const params_args *a, const lnk_listing *l, const lnk_config *c)
{
    cli_outputs_begin(); /* --json: on standard output; -o FILE: the table or --csv */
    if (!a->json || !cli_is_stdout(a->out))
        CLI_CK(lnk_listing_write(cli_out(a->out, 0), l,
                                 a->csv ? LNK_LISTING_CSV : LNK_LISTING_TABLE));
    if (!cli_is_stdout(a->out)) {
        json_t *x = json_pack("{s:s}", "command", "params");
        CLI_CK(x ? cli_opts_meta(opts, a, 0, x) : LNK_ENOMEM);
        cli_run_meta(a->out, c, x);
    }
    cli_outputs_commit();
    if (a->json && (lnk_listing_fwrite(stdout, l, LNK_LISTING_JSON) != LNK_OK || fflush(stdout)))
        cli_die("could not write to standard output");
}

int cmd_params(int argc, char **argv)
{
    params_args a;
    cli_parse(&cmd_params_decl, &a, argc, argv);
    if (a.csv && a.json && cli_is_stdout(a.out))
        cli_die("--csv is the format of -o FILE, and --json goes to standard output: give -o FILE");
    cli_run_begin();
    cli_files f = {0};
    cli_files_out_meta(&f, a.out, "-o");
    cli_files_model(&f, &a.mo, NULL, NULL, 0);
    cli_files_check(NULL, &f);
    lnk_config c;
    lnk_model *m = cli_model_new(&a.mo, &c);
    lnk_listing l;
    int st = lnk_listing_make(m, a.block, &l);
    if (st != LNK_OK)
        cli_die(st == LNK_ENOMEM ? "%s" : "--block: %s", lnk_errmsg());
    write_listing(&a, &l, &c);
    cli_say("%zu parameters in %d tensors -> %s\n", l.sel.n, l.sel.n_tensors, cli_dest(a.out));
    lnk_listing_free(&l);
    lnk_model_free(m);
    lnk_config_clear(&c);
    return 0;
}
