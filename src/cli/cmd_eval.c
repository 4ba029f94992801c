/* lnkit eval: loss and every tensor's gradient Frobenius norm on a batch. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "front/curv_opts.h"
#include "front/record.h"

typedef struct {
    cli_model_opts mo;
    const char *weights, *batch[CLI_MAX_BATCH], *out, *gout;
    int n_batch, json, chunk;
} eval_args;

#define T eval_args
static const cli_opt opts[] = {
    CLI_OPT_OUTPUT(T, out, 0, "the CSV quantity,tensor,value (+ FILE.meta.json)", NULL),
    CLI_OPT_JSON_AS(T, json, "the result as JSON {loss, n_scored, grad_norms, grad_norm_total} "
                             "on standard output instead of CSV"),
    {.type = CLI_STR, .name = "weights", .arg = "FILE", CLI_AT(T, weights),
     .flags = CLI_REQ | CLI_READS | CLI_META | CLI_ID_FILE, .help = "weights"},
    {.type = CLI_LIST, .name = "batch", .arg = "FILE", CLI_AT(T, batch),
     .count = offsetof(T, n_batch), .flags = CLI_REQ | CLI_READS | CLI_ID_FILE,
     .help = "batch file; repeat for a data set of several (the mean loss over all their scored "
             "tokens)"},
    CLI_OPT_CHUNK(T, chunk, CLI_ID | CLI_ID_SET),
    {.type = CLI_STR, .name = "grad-out", .arg = "FILE", CLI_AT(T, gout),
     .flags = CLI_WRITES | CLI_STDOUT | CLI_BINARY,
     .help = "also write the gradient (the named tensors of docs/MODEL.md section 6)"},
    CLI_MODEL(T, mo),
    {0}};
#undef T

static void defaults(void *p) { ((eval_args *)p)->out = "-"; }

const cli_cmd cmd_eval_decl = {
    .name = "lnkit eval",
    .summary = "loss and every tensor's gradient Frobenius norm on a batch",
    .usage = "--config C.json --weights W.safetensors --batch B.safetensors [--batch B2 ...]\n"
             "[--chunk N] [config flags] [-o EVAL.csv] [--json] [--grad-out G.safetensors]",
    .about = "The loss, the number of scored tokens and ||dL/dW||_F of every tensor (and of all\n"
             "parameters together), as CSV with the columns quantity,tensor,value (or JSON).",
    .opts = opts,
    .size = sizeof(eval_args),
    .defaults = defaults,
    .example = "--config CONFIG --weights WEIGHTS --batch BATCH -o OUT",
};

int cmd_eval(int argc, char **argv)
{
    eval_args a;
    cli_parse(&cmd_eval_decl, &a, argc, argv);
    const char *wpath = a.weights, *const *bpath = a.batch, *out = a.out;
    int n_batch = a.n_batch;
    cli_model_opts mo = a.mo;
    cli_run_begin();
    cli_files f = {0};
    cli_files_out_meta(&f, out, "-o");
    cli_files_out(&f, a.gout, "--grad-out");
    cli_files_model(&f, &mo, wpath, bpath, n_batch);
    cli_files_check(NULL, &f);
    cli_session s;
    cli_open(&s, &mo, wpath, bpath, n_batch, a.chunk, 0);
    size_t np = lnk_model_n_params(s.m), nsc = 0;
    double *g = malloc(sizeof(double) * np), loss;
    if (!g)
        cli_die("out of memory");
    cli_gradient(&s, &loss, g, &nsc);
    /* every number before anything is written or printed: a result that is
     * not finite is refused whole (no JSON without keys, no CSV cut short) */
    const lnk_layout *lay = lnk_model_layout(s.m);
    double *norm = malloc(sizeof(double) * (size_t)(lay->n_tensors + 1));
    if (!norm)
        cli_die("out of memory");
    if (!isfinite(loss))
        cli_die("the loss is %g, not a finite number", loss);
    CLI_CK(lnk_stats_grad_norms(s.m, g, norm));
    if (!cli_root()) {
        free(norm);
        free(g);
        cli_close(&s);
        return 0;
    }
    lnk_eval_result r = {loss, nsc, norm};
    cli_outputs_begin(); /* the CSV, its sidecar and the gradient: all or none */
    if (!a.json || !cli_is_stdout(out))
        CLI_CK(lnk_eval_write(cli_out(out, 0), lay, &r));
    if (!cli_is_stdout(out)) {
        /* "chunks" as in the curvature commands' sidecars: the data set's pieces */
        json_t *x = json_pack("{s:s, s:f, s:I, s:i}", "command", "eval", "loss", loss,
                              "n_scored", (json_int_t)nsc, "chunks", s.n_chunks);
        CLI_CK(x ? cli_opts_meta(opts, &a, 0, x) : LNK_ENOMEM);
        cli_run_meta(out, &s.c, x);
    }
    cli_record_md rec = {0};
    if (a.gout && lnk_vector_save_meta(cli_out(a.gout, 1), s.m, g, LNK_VEC_NAMED,
                                       cli_record_table(&rec, "lnkit eval", "the gradient of the "
                                                        "mean loss over the batches", &s.c, opts,
                                                        &a)) != LNK_OK)
        cli_die_lib();
    cli_outputs_commit();
    cli_record_free(&rec);
    if (a.json && (lnk_eval_fwrite_json(stdout, lay, &r) != LNK_OK || fflush(stdout) != 0))
        cli_die("could not write to standard output");
    cli_say("loss %.6g over %zu scored tokens -> %s%s%s\n", loss, nsc, cli_dest(out),
            a.gout ? ", gradient -> " : "", a.gout ? cli_dest(a.gout) : "");
    free(norm);
    free(g);
    cli_close(&s);
    return 0;
}
