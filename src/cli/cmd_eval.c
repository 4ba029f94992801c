/* lnkit eval: loss and every tensor's gradient Frobenius norm on a batch. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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
    if (!cli_root()) {
        free(g);
        cli_close(&s);
        return 0;
    }
    if (gout) {
        cli_outputs_begin();
        if (lnk_vector_save(gout, s.m, g, LNK_VEC_NAMED) != LNK_OK)
            cli_die_lib();
        cli_outputs_commit();
    }
    const lnk_layout *lay = lnk_model_layout(s.m);
    double tot = 0;
    for (size_t i = 0; i < np; i++)
        tot += g[i] * g[i];
    tot = sqrt(tot);
    if (json) {
        json_t *o = json_object(), *gn = json_object();
        json_object_set_new(o, "loss", json_real(loss));
        json_object_set_new(o, "n_scored", json_integer((json_int_t)nsc));
        for (int i = 0; i < lay->n_tensors; i++)
            json_object_set_new(gn, lay->t[i].name, json_real(lnk_tensor_norm(s.m, g, i)));
        json_object_set_new(o, "grad_norms", gn);
        json_object_set_new(o, "grad_norm_total", json_real(tot));
        char *txt = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        if (!txt)
            cli_die("out of memory");
        puts(txt);
        free(txt);
        json_decref(o);
    } else {
        static const char *const hdr[] = {"quantity", "tensor", "value"};
        lnk_csv csv;
        int st = lnk_csv_begin(&csv, stdout, hdr, 3);
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
            st = st ? st : lnk_csv_double(&csv, lnk_tensor_norm(s.m, g, i));
            st = st ? st : lnk_csv_end_row(&csv);
        }
        st = st ? st : lnk_csv_str(&csv, "grad_norm_total");
        st = st ? st : lnk_csv_str(&csv, "");
        st = st ? st : lnk_csv_double(&csv, tot);
        st = st ? st : lnk_csv_end_row(&csv);
        lnk_csv_free(&csv);
        if (st)
            cli_die_lib();
    }
    if (fflush(stdout) != 0)
        cli_die("eval: could not write to standard output");
    free(g);
    cli_close(&s);
    return 0;
}
