/* lnkit trace: stochastic trace estimate of the loss Hessian (or a block). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/curv.h"

static void help(void)
{
    printf("usage: lnkit trace --config C.json --weights W --batch B [--probes N]\n"
           "                   [--method hutchinson|hutchpp] [--json] [-o TRACE.csv]\n\n"
           "Trace of the Hessian (or a block) with its standard error: Hutchinson with\n"
           "Rademacher probes, or Hutch++ (a third of the budget sketches the top subspace).\n"
           "Prints CSV method,probes,trace,stderr (or JSON with keys trace, stderr, probes);\n"
           "with -o also writes it to a file with its .meta.json.\n\n"
           "  --probes N             H v products used                         (100)\n"
           "  --method M             hutchinson or hutchpp                      (hutchinson)\n"
           "  --json                 JSON on stdout instead of CSV\n"
           "  -o, --output FILE      also write the CSV here (+ .meta.json)     (none)\n\n");
    cli_curv_print_help(1);
}

/* --checkpoint: save the state when due (cli_ckpt_due). */
static int save(void *ctx, const lnk_trace_state *st, int must)
{
    cli_curv *s = ctx;
    if (!cli_ckpt_due(s, must))
        return LNK_OK;
    int rc = lnk_ckpt_save_trace(s->ck, st, cli_ckpt_products(s));
    if (rc == LNK_OK)
        cli_ckpt_saved(s);
    return rc;
}

enum { O_PROBES = 1, O_METHOD, O_JSON };

int cmd_trace(int argc, char **argv)
{
    struct option opts[128] = {{"output", required_argument, NULL, 'o'},
                               {"help", no_argument, NULL, 'h'},
                               {"probes", required_argument, NULL, O_PROBES},
                               {"method", required_argument, NULL, O_METHOD},
                               {"json", no_argument, NULL, O_JSON}};
    int n = cli_curv_add_options(opts, 5, 1);
    opts[n] = (struct option){0, 0, 0, 0};
    cli_curv_opts co = {0};
    const char *out = NULL;
    int json = 0, ch;
    lnk_trace_opts to;
    lnk_trace_opts_default(&to);
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        if (cli_curv_option(&co, ch, optarg))
            continue;
        switch (ch) {
        case 'o': out = optarg; break;
        case O_PROBES: to.probes = (int)cli_int("probes", optarg, 2, 1 << 24); break;
        case O_METHOD:
            if (!strcmp(optarg, "hutchinson"))
                to.method = LNK_TRACE_HUTCHINSON;
            else if (!strcmp(optarg, "hutchpp"))
                to.method = LNK_TRACE_HUTCHPP;
            else
                cli_die("trace: --method: expected hutchinson or hutchpp, got '%s'", optarg);
            break;
        case O_JSON: json = 1; break;
        case 'h': help(); return 0;
        default: cli_bad_option("trace", ch, argv);
        }
    }
    if (optind < argc)
        cli_die("trace: unexpected argument '%s'", argv[optind]);
    if (to.method == LNK_TRACE_HUTCHPP && to.probes < 4)
        cli_die("trace: --probes must be at least 4 with hutchpp, got %d", to.probes);
    to.seed = co.rng_seed;
    cli_curv_out outs[1] = {{out, "-o", 1}};
    cli_curv_check_outputs("trace", &co, outs, 1);
    cli_curv s;
    cli_progress prog = {"trace", "probe", -1e9, &s};
    if (!co.quiet) {
        to.progress = cli_progress_fn;
        to.progress_ctx = &prog;
    }
    cli_curv_open(&s, &co);
    /* --checkpoint: what the run belongs to; Hutch++'s sketch and Q in FILE.basis */
    lnk_ckpt_id id = {0};
    cli_check(lnk_ckpt_id_add(&id, "--method", "%s", lnk_trace_method_name(to.method)) ||
              lnk_ckpt_id_add(&id, "--probes", "%d", to.probes) ? LNK_ENOMEM : LNK_OK);
    size_t sk = to.method == LNK_TRACE_HUTCHPP ? (size_t)to.probes / 3 : 0;
    if (sk > s.block_n)
        sk = s.block_n;
    cli_ckpt_open(&s, &co, &id, LNK_CKPT_TRACE, 2 * sk, 0, to.probes);
    if (s.ck) {
        to.resume = lnk_ckpt_trace_state(s.ck);
        to.checkpoint = save;
        to.checkpoint_ctx = &s;
    }
    lnk_trace_result r;
    if (lnk_trace(&s.op, &to, &r) != LNK_OK)
        cli_die_lib();
    if (!isfinite(r.trace) || !isfinite(r.std_error))
        cli_die("trace: the estimate is not finite (%g +- %g)", r.trace, r.std_error);
    if (!cli_root()) {
        cli_ckpt_done(&s);
        cli_curv_close(&s);
        return 0;
    }
    const char *mname = lnk_trace_method_name(to.method);
    if (out) {
        cli_outputs_begin(); /* the CSV and its sidecar: both or neither */
        lnk_afile af;
        if (lnk_afile_open(&af, out) != LNK_OK)
            cli_die_lib();
        if (lnk_trace_fwrite(af.f, mname, &r) != LNK_OK || lnk_afile_commit(&af) != LNK_OK) {
            lnk_afile_abort(&af);
            cli_die_lib();
        }
        lnk_meta *extra = lnk_meta_alloc();
        if (!extra)
            cli_die_lib();
        lnk_meta_str(extra, "method", mname);
        lnk_meta_int(extra, "probes", r.probes);
        lnk_meta_int(extra, "sketch", r.sketch);
        cli_curv_meta(&s, &co, out, "trace", extra);
        lnk_meta_free(extra);
        cli_outputs_commit();
    }
    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "trace", json_real(r.trace));
        json_object_set_new(o, "stderr", json_real(r.std_error));
        json_object_set_new(o, "probes", json_integer(r.probes));
        json_object_set_new(o, "method", json_string(mname));
        char *txt = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        if (!txt)
            cli_die("out of memory");
        puts(txt);
        free(txt);
        json_decref(o);
    } else if (lnk_trace_fwrite(stdout, mname, &r) != LNK_OK)
        cli_die_lib();
    if (fflush(stdout) != 0)
        cli_die("trace: could not write to standard output");
    cli_ckpt_done(&s);
    cli_curv_close(&s);
    return 0;
}
