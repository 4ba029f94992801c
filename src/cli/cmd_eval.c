/* lnkit eval: loss and every tensor's gradient Frobenius norm on a batch. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "front/progress.h"
#include "front/record.h"

typedef struct {
    cli_model_opts mo;
    const char *weights, *batch[CLI_MAX_BATCH], *out, *gout;
    int n_batch, json;
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
             "[config flags] [-o EVAL.csv] [--json] [--grad-out G.safetensors]",
    .about = "The loss, the number of scored tokens and ||dL/dW||_F of every tensor (and of all\n"
             "parameters together), as CSV with the columns quantity,tensor,value (or JSON).",
    .opts = opts,
    .size = sizeof(eval_args),
    .defaults = defaults,
    .example = "--config CONFIG --weights WEIGHTS --batch BATCH -o OUT",
};

/* The results as JSON, every value checked finite before. */
static json_t *json_result(const lnk_layout *lay, double loss, size_t nsc, const double *norm)
{
    json_t *o = json_object(), *gn = json_object();
    int bad = !o || !gn;
    bad |= json_object_set_new(o, "loss", json_real(loss));
    bad |= json_object_set_new(o, "n_scored", json_integer((json_int_t)nsc));
    for (int i = 0; i < lay->n_tensors; i++)
        bad |= json_object_set_new(gn, lay->t[i].name, json_real(norm[i]));
    bad |= json_object_set_new(o, "grad_norms", gn);
    bad |= json_object_set_new(o, "grad_norm_total", json_real(norm[lay->n_tensors]));
    if (bad)
        cli_die("out of memory for the JSON");
    return o;
}

/* One row quantity,tensor,value of the CSV (value: a count when value_int). */
static int csv_row(lnk_csv *csv, const char *quantity, const char *tensor, double value,
                   int value_int)
{
    int st = lnk_csv_str(csv, quantity);
    st = st ? st : lnk_csv_str(csv, tensor);
    st = st ? st : value_int ? lnk_csv_int(csv, (long long)value) : lnk_csv_double(csv, value);
    return st ? st : lnk_csv_end_row(csv);
}

/* The results as CSV text quantity,tensor,value (malloc'd), whole before it is printed. */
static char *csv_text(const lnk_layout *lay, double loss, size_t nsc, const double *norm)
{
    char *txt = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&txt, &len);
    if (!f)
        cli_die("out of memory for the CSV");
    static const char *const hdr[] = {"quantity", "tensor", "value"};
    lnk_csv csv;
    int st = lnk_csv_begin(&csv, f, hdr, 3);
    st = st ? st : csv_row(&csv, "loss", "", loss, 0);
    st = st ? st : csv_row(&csv, "n_scored", "", (double)nsc, 1);
    for (int i = 0; !st && i < lay->n_tensors; i++)
        st = csv_row(&csv, "grad_norm", lay->t[i].name, norm[i], 0);
    st = st ? st : csv_row(&csv, "grad_norm_total", "", norm[lay->n_tensors], 0);
    lnk_csv_free(&csv);
    if (fclose(f) != 0 || st)
        cli_die("%s", st ? lnk_errmsg() : "out of memory for the CSV");
    return txt;
}

int cmd_eval(int argc, char **argv)
{
    eval_args a;
    cli_parse(&cmd_eval_decl, &a, argc, argv);
    const char *wpath = a.weights, *const *bpath = a.batch, *out = a.out;
    int n_batch = a.n_batch;
    cli_model_opts mo = a.mo;
    char start[32];
    lnk_iso_time(start, sizeof start);
    double t0 = lnk_now();
    cli_files f = {0};
    cli_files_out_meta(&f, out, "-o");
    cli_files_out(&f, a.gout, "--grad-out");
    cli_files_model(&f, &mo, wpath, bpath, n_batch);
    cli_files_check(NULL, &f);
    cli_session s;
    cli_open(&s, &mo, wpath, bpath, n_batch, 0);
    size_t np = lnk_model_n_params(s.m), nsc = 0;
    double *g = malloc(sizeof(double) * np), loss;
    if (!g)
        cli_die("out of memory");
    cli_meter pr;
    if (!cli_dataset(&s)) {
        cli_meter_model(&pr, s.m, CLI_PASS_PRIMAL);
        if (lnk_model_eval(s.ws, s.theta, &s.b, &loss, g, &nsc) != LNK_OK)
            cli_die_lib();
    } else {
        lnk_dataset ds;
        cli_shard(&s, &ds);
        nsc = ds.n_scored;
        cli_setup_done();
        cli_meter_model(&pr, s.m, ds.n_chunks * CLI_PASS_PRIMAL);
        if (lnk_dataset_loss(s.m, s.theta, &ds, &loss, g) != LNK_OK)
            cli_die_lib();
        lnk_dataset_free(&ds);
    }
    cli_meter_end(&pr);
    if (lnk_params_check_finite(s.m, g, "gradient") != LNK_OK)
        cli_die_lib();
    /* every number before anything is written or printed: a result that is
     * not finite is refused whole (no JSON without keys, no CSV cut short) */
    const lnk_layout *lay = lnk_model_layout(s.m);
    double *norm = malloc(sizeof(double) * (size_t)(lay->n_tensors + 1));
    if (!norm)
        cli_die("out of memory");
    for (int i = 0; i < lay->n_tensors; i++)
        norm[i] = lnk_tensor_norm(s.m, g, i);
    norm[lay->n_tensors] = lnk_norm2(g, np);
    if (!isfinite(loss))
        cli_die("the loss is %g, not a finite number", loss);
    for (int i = 0; i <= lay->n_tensors; i++)
        if (!isfinite(norm[i]))
            cli_die("the gradient's norm %s%s exceeds the range of doubles (%g)",
                    i < lay->n_tensors ? "on " : "over all parameters",
                    i < lay->n_tensors ? lay->t[i].name : "", norm[i]);
    if (!cli_root()) {
        free(norm);
        free(g);
        cli_close(&s);
        return 0;
    }
    char *csv = csv_text(lay, loss, nsc, norm);
    json_t *js = a.json ? json_result(lay, loss, nsc, norm) : NULL;
    cli_outputs_begin(); /* the CSV, its sidecar and the gradient: all or none */
    if (!a.json || !cli_is_stdout(out)) {
        lnk_afile af;
        CLI_CK(lnk_afile_open(&af, cli_out(out, 0)));
        if (fputs(csv, af.f) == EOF || lnk_afile_commit(&af) != LNK_OK) {
            lnk_afile_abort(&af);
            cli_die("-o %s: could not write the CSV", out);
        }
    }
    if (!cli_is_stdout(out)) {
        json_t *x = json_pack("{s:s, s:f, s:I}", "command", "eval", "loss", loss, "n_scored",
                              (json_int_t)nsc);
        CLI_CK(x ? cli_opts_meta(opts, &a, 0, x) : LNK_ENOMEM);
        cli_meta_write(out, &s.c, x, start, lnk_now() - t0);
    }
    cli_record_md rec = {0};
    if (a.gout && lnk_vector_save_meta(cli_out(a.gout, 1), s.m, g, LNK_VEC_NAMED,
                                       cli_record_table(&rec, "lnkit eval", "the gradient of the "
                                                        "mean loss over the batches", &s.c, opts,
                                                        &a)) != LNK_OK)
        cli_die_lib();
    cli_outputs_commit();
    cli_record_free(&rec);
    if (js)
        cli_json_print(js);
    free(csv);
    free(norm);
    free(g);
    cli_close(&s);
    return 0;
}
