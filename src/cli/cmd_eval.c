/* lnkit eval: loss and every tensor's gradient Frobenius norm on a batch. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

static void help(void)
{
    printf("usage: lnkit eval --config C.json --weights W.safetensors --batch B.safetensors\n"
           "                  [--batch B2 ...] [config flags] [--json] [--grad-out G.safetensors]\n\n"
           "Print the loss, the number of scored tokens and ||dL/dW||_F of every tensor\n"
           "(and of all parameters together) as CSV with columns quantity,tensor,value\n"
           "(or as JSON with --json).  Several --batch files are one data set: the\n"
           "token-weighted mean loss over them (MODEL.md §4) and its gradient.\n\n"
           "  --weights FILE         weights (safetensors, MODEL.md §6)        (required)\n"
           "  --batch FILE           batch (safetensors); repeat for a data set of\n"
           "                         several files                             (required)\n"
           "  --json                 JSON instead of CSV                       (CSV)\n"
           "  --grad-out FILE        also write the gradient (named tensors)   (none)\n\n");
    cli_print_model_help();
}

/* The results as JSON text (malloc'd), every value checked finite before. */
static char *json_text(const lnk_layout *lay, double loss, size_t nsc, const double *norm)
{
    json_t *o = json_object(), *gn = json_object();
    int bad = !o || !gn;
    bad |= json_object_set_new(o, "loss", json_real(loss));
    bad |= json_object_set_new(o, "n_scored", json_integer((json_int_t)nsc));
    for (int i = 0; i < lay->n_tensors; i++)
        bad |= json_object_set_new(gn, lay->t[i].name, json_real(norm[i]));
    bad |= json_object_set_new(o, "grad_norms", gn);
    bad |= json_object_set_new(o, "grad_norm_total", json_real(norm[lay->n_tensors]));
    char *j = bad ? NULL : json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                          JSON_REAL_PRECISION(17));
    json_decref(o);
    char *txt = NULL;
    if (!j || asprintf(&txt, "%s\n", j) < 0)
        cli_die("eval: out of memory for the JSON");
    free(j);
    return txt;
}

/* The results as CSV text quantity,tensor,value (malloc'd), whole before it is printed. */
static char *csv_text(const lnk_layout *lay, double loss, size_t nsc, const double *norm)
{
    char *txt = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&txt, &len);
    if (!f)
        cli_die("eval: out of memory for the CSV");
    static const char *const hdr[] = {"quantity", "tensor", "value"};
    lnk_csv csv;
    int st = lnk_csv_begin(&csv, f, hdr, 3);
    st = st ? st : lnk_csv_str(&csv, "loss");
    st = st ? st : lnk_csv_str(&csv, "");
    st = st ? st : lnk_csv_double(&csv, loss);
    st = st ? st : lnk_csv_end_row(&csv);
    st = st ? st : lnk_csv_str(&csv, "n_scored");
    st = st ? st : lnk_csv_str(&csv, "");
    st = st ? st : lnk_csv_int(&csv, (long long)nsc);
    st = st ? st : lnk_csv_end_row(&csv);
    for (int i = 0; !st && i < lay->n_tensors; i++) {
        st = lnk_csv_str(&csv, "grad_norm");
        st = st ? st : lnk_csv_str(&csv, lay->t[i].name);
        st = st ? st : lnk_csv_double(&csv, norm[i]);
        st = st ? st : lnk_csv_end_row(&csv);
    }
    st = st ? st : lnk_csv_str(&csv, "grad_norm_total");
    st = st ? st : lnk_csv_str(&csv, "");
    st = st ? st : lnk_csv_double(&csv, norm[lay->n_tensors]);
    st = st ? st : lnk_csv_end_row(&csv);
    lnk_csv_free(&csv);
    if (fclose(f) != 0 || st)
        cli_die("eval: %s", st ? lnk_errmsg() : "out of memory for the CSV");
    return txt;
}

int cmd_eval(int argc, char **argv)
{
    struct option opts[96] = {{"weights", required_argument, NULL, 'w'},
                              {"batch", required_argument, NULL, 'b'},
                              {"json", no_argument, NULL, 'j'},
                              {"grad-out", required_argument, NULL, 'g'},
                              {"help", no_argument, NULL, 'h'}};
    int n = cli_add_model_options(opts, 5);
    opts[n] = (struct option){0, 0, 0, 0};
    cli_model_opts mo = {0};
    const char *wpath = NULL, *bpath[CLI_MAX_BATCH], *gout = NULL;
    int json = 0, ch, n_batch = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (cli_model_option(&mo, ch, optarg))
            continue;
        switch (ch) {
        case 'w': wpath = optarg; break;
        case 'b': cli_add_batch(bpath, &n_batch, optarg); break;
        case 'j': json = 1; break;
        case 'g': gout = optarg; break;
        case 'h': help(); return 0;
        default: cli_bad_option("eval", ch, argv);
        }
    }
    if (optind < argc)
        cli_die("eval: unexpected argument '%s'", argv[optind]);
    cli_files f = {0};
    cli_files_out(&f, gout, "--grad-out");
    cli_files_in(&f, mo.config_path, "--config");
    cli_files_in(&f, wpath, "--weights");
    for (int i = 0; i < n_batch; i++)
        cli_files_in(&f, bpath[i], "--batch");
    cli_files_check("eval", &f);
    cli_session s;
    cli_open(&s, &mo, wpath, bpath, n_batch, 0);
    size_t np = lnk_model_n_params(s.m), nsc = 0;
    double *g = malloc(sizeof(double) * np), loss;
    if (!g)
        cli_die("out of memory");
    if (!cli_dataset(&s)) {
        if (lnk_model_eval(s.ws, s.theta, &s.b, &loss, g, &nsc) != LNK_OK)
            cli_die_lib();
    } else {
        lnk_dataset ds;
        cli_shard(&s, &ds);
        nsc = ds.n_scored;
        cli_setup_done();
        if (lnk_dataset_loss(s.m, s.theta, &ds, &loss, g) != LNK_OK)
            cli_die_lib();
        lnk_dataset_free(&ds);
    }
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
        cli_die("eval: the loss is %g, not a finite number", loss);
    for (int i = 0; i <= lay->n_tensors; i++)
        if (!isfinite(norm[i]))
            cli_die("eval: the gradient's norm %s%s exceeds the range of doubles (%g)",
                    i < lay->n_tensors ? "on " : "over all parameters",
                    i < lay->n_tensors ? lay->t[i].name : "", norm[i]);
    if (!cli_root()) {
        free(norm);
        free(g);
        cli_close(&s);
        return 0;
    }
    char *txt = json ? json_text(lay, loss, nsc, norm) : csv_text(lay, loss, nsc, norm);
    if (gout) {
        cli_outputs_begin();
        if (lnk_vector_save(gout, s.m, g, LNK_VEC_NAMED) != LNK_OK)
            cli_die_lib();
        cli_outputs_commit();
    }
    size_t len = strlen(txt);
    if (fwrite(txt, 1, len, stdout) != len || fflush(stdout) != 0)
        cli_die("eval: could not write to standard output");
    free(txt);
    free(norm);
    free(g);
    cli_close(&s);
    return 0;
}
