/* lnkit trace: stochastic trace estimate of the loss Hessian (or a block). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/curv.h"

typedef struct {
    cli_curv_opts co;
    lnk_trace_opts to;
    const char *out;
    int json;
} trace_args;

static const cli_choice methods[] = {{"hutchinson", LNK_TRACE_HUTCHINSON},
                                     {"hutchpp", LNK_TRACE_HUTCHPP}, {NULL, 0}};

#define T trace_args
static const cli_opt opts[] = {
    CLI_OPT_OUTPUT(T, out, 0, "the CSV method,probes,trace,stderr (+ FILE.meta.json)", NULL),
    CLI_OPT_JSON_AS(T, json, "the result as JSON {trace, stderr, probes, method} on standard "
                             "output instead of CSV"),
    {.type = CLI_CHOICE, .name = "method", CLI_AT(T, to.method), .ref = methods,
     .flags = CLI_ID | CLI_META,
     .help = "Hutchinson with Rademacher probes, or Hutch++ (a third of the budget sketches the "
             "top subspace)"},
    {.type = CLI_INT, .name = "probes", .arg = "N", CLI_AT(T, to.probes), .min = 2,
     .max = 1 << 24, .flags = CLI_ID | CLI_META,
     .help = "Hutchinson probes (products) used (hutchpp: at least 4)"},
    CLI_CURV(T, co, cli_curv_trace), CLI_CKPT(T, co.ck), CLI_MODEL(T, co.mo),
    {0}};
#undef T

static void defaults(void *p)
{
    trace_args *a = p;
    cli_curv_defaults(&a->co);
    lnk_trace_opts_default(&a->to);
    a->out = "-";
}

const cli_cmd cmd_trace_decl = {
    .name = "lnkit trace",
    .summary = "Hessian trace with standard error (Hutchinson, Hutch++)",
    .usage = "--config C.json --weights W --batch B [--probes N] [--method hutchinson|hutchpp]\n"
             "[-o TRACE.csv] [--json]",
    .about = "The trace of the Hessian (or of a block, or of G or F) with its standard error:\n"
             "Hutchinson with Rademacher probes, or Hutch++.",
    .opts = opts,
    .size = sizeof(trace_args),
    .defaults = defaults,
    .example = "--config CONFIG --weights WEIGHTS --batch BATCH --probes 6 -o OUT",
};

/* --checkpoint: save the state when due (cli_ckpt_due). */
static int save(void *ctx, const lnk_trace_state *st, int must)
{
    cli_ckpt_run *r = ctx;
    if (!cli_ckpt_due(r, must))
        return LNK_OK;
    return cli_ckpt_saved(r, lnk_ckpt_save_trace(r->ck, st, cli_ckpt_products(r)));
}

int cmd_trace(int argc, char **argv)
{
    trace_args a;
    cli_parse(&cmd_trace_decl, &a, argc, argv);
    cli_curv_opts *co = &a.co;
    lnk_trace_opts to = a.to;
    const char *out = a.out;
    if (to.method == LNK_TRACE_HUTCHPP && to.probes < 4)
        cli_die("--probes must be at least 4 with hutchpp, got %d", to.probes);
    to.seed = co->rng_seed;
    cli_curv_out outs[1] = {{out, "-o", 1}};
    cli_curv s;
    cli_progress prog = {"probe", -1e9, &s.run};
    to.progress = cli_progress_fn;
    to.progress_ctx = &prog;
    cli_curv_open(&s, co, "trace", opts, &a, outs, 1);
    cli_curv_say(&s);
    /* --checkpoint: Hutch++'s sketch and Q in FILE.basis */
    size_t sk = to.method == LNK_TRACE_HUTCHPP ? (size_t)to.probes / 3 : 0;
    if (sk > s.block_n)
        sk = s.block_n;
    cli_curv_ckpt(&s, LNK_CKPT_TRACE, 2 * sk, 0, to.probes);
    if (s.run.ck) {
        to.resume = lnk_ckpt_trace_state(s.run.ck);
        to.checkpoint = save;
        to.checkpoint_ctx = &s.run;
    }
    lnk_trace_result r;
    if (lnk_trace(&s.op, &to, &r) != LNK_OK)
        cli_die_lib();
    if (!isfinite(r.trace) || !isfinite(r.std_error))
        cli_die("the estimate is not finite (%g +- %g)", r.trace, r.std_error);
    if (!cli_root()) {
        cli_curv_done(&s);
        return 0;
    }
    const char *mname = lnk_trace_method_name(to.method);
    cli_outputs_begin(); /* the CSV and its sidecar: both or neither */
    if (!a.json || !cli_is_stdout(out)) {
        lnk_afile af;
        if (lnk_afile_open(&af, cli_out(out, 0)) != LNK_OK)
            cli_die_lib();
        if (lnk_trace_fwrite(af.f, mname, &r) != LNK_OK || lnk_afile_commit(&af) != LNK_OK) {
            lnk_afile_abort(&af);
            cli_die_lib();
        }
    }
    cli_curv_meta(&s, out, json_pack("{s:i}", "sketch", r.sketch));
    cli_outputs_commit();
    if (a.json)
        cli_json_print(json_pack("{s:f, s:f, s:i, s:s}", "trace", r.trace, "stderr", r.std_error,
                                 "probes", r.probes, "method", mname));
    cli_say("trace %.6g +- %.2g (%d probes) -> %s\n", r.trace, r.std_error, r.probes,
            cli_dest(out));
    cli_curv_done(&s);
    return 0;
}
