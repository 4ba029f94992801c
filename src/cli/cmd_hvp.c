/* lnkit hvp: exact Hessian-vector product on a batch. */
#include <stdio.h>
#include <stdlib.h>
#include "cli/cli.h"
#include "cli/curv.h"

static void help(void)
{
    printf("usage: lnkit hvp --config C.json --weights W.safetensors --batch B.safetensors\n"
           "                 --vector V.safetensors -o HV.safetensors [--repeat N] [config flags]\n\n"
           "Write H v, the exact product of the loss Hessian with v (forward-over-reverse),\n"
           "in the layout of the input vector (one tensor 'v' [n_params], or named tensors).\n\n"
           "  --weights FILE         weights                                    (required)\n"
           "  --batch FILE           batch; repeat for a data set of several files\n"
           "                         (the Hessian of their token-weighted mean\n"
           "                         loss, MODEL.md §4)                         (required)\n"
           "  --vector FILE          the vector v                               (required)\n"
           "  -o, --output FILE      where H v is written                       (required)\n"
           "  --repeat N             compute N times, print the median seconds\n"
           "                         per product on stderr                      (1)\n"
           "  --cache-mb MB          keep the primal pass (forward, loss, adjoints)\n"
           "                         for the repeats: same bits, each repeat runs\n"
           "                         only the tangent passes; 0: recompute it  (auto)\n"
           "  --operator hessian|ggn|functional\n"
           "                         H v, the Gauss-Newton part G v (G = J^T H_out J)\n"
           "                         or the functional part F v = H v - G v    (hessian)\n\n");
    cli_print_model_help();
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int cmd_hvp(int argc, char **argv)
{
    struct option opts[96] = {{"weights", required_argument, NULL, 'w'},
                              {"batch", required_argument, NULL, 'b'},
                              {"vector", required_argument, NULL, 'v'},
                              {"output", required_argument, NULL, 'o'},
                              {"repeat", required_argument, NULL, 'r'},
                              {"help", no_argument, NULL, 'h'},
                              {"cache-mb", required_argument, NULL, 'c'},
                              {"operator", required_argument, NULL, 'O'}};
    int n = cli_add_model_options(opts, 8);
    opts[n] = (struct option){0, 0, 0, 0};
    cli_model_opts mo = {0};
    const char *wpath = NULL, *bpath[CLI_MAX_BATCH], *vpath = NULL, *out = NULL;
    int repeat = 1, ch, cache_set = 0, n_batch = 0;
    long cache_mb = -1;
    lnk_op_kind kind = LNK_OP_HESSIAN;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        if (cli_model_option(&mo, ch, optarg))
            continue;
        switch (ch) {
        case 'w': wpath = optarg; break;
        case 'b': cli_add_batch(bpath, &n_batch, optarg); break;
        case 'v': vpath = optarg; break;
        case 'o': out = optarg; break;
        case 'r': repeat = (int)cli_int("repeat", optarg, 1, 1000000); break;
        case 'c': cache_mb = cli_cache_mb(optarg), cache_set = 1; break;
        case 'O': kind = cli_op_kind("hvp", optarg); break;
        case 'h': help(); return 0;
        default: cli_bad_option("hvp", ch, argv);
        }
    }
    if (optind < argc)
        cli_die("hvp: unexpected argument '%s'", argv[optind]);
    if (!vpath)
        cli_die("hvp: --vector FILE is required");
    if (!out)
        cli_die("hvp: -o HV.safetensors is required");
    cli_files f = {0};
    cli_files_out(&f, out, "-o");
    cli_files_in(&f, mo.config_path, "--config");
    cli_files_in(&f, wpath, "--weights");
    for (int i = 0; i < n_batch; i++)
        cli_files_in(&f, bpath[i], "--batch");
    cli_files_in(&f, vpath, "--vector");
    cli_files_check("hvp", &f);
    cli_session s;
    cli_open(&s, &mo, wpath, bpath, n_batch, LNK_WS_HVP);
    size_t np = lnk_model_n_params(s.m);
    double *v = malloc(sizeof(double) * np), *hv = malloc(sizeof(double) * np);
    double *t = malloc(sizeof(double) * repeat);
    double *gv = kind == LNK_OP_FUNCTIONAL ? malloc(sizeof(double) * np) : NULL;
    if (!v || !hv || !t || (kind == LNK_OP_FUNCTIONAL && !gv))
        cli_die("out of memory");
    int layout;
    cli_check(cli_load_vector(vpath, s.m, v, &layout));
    lnk_hessian *h = NULL;
    lnk_dataset ds;
    lnk_dataset_init(&ds);
    if (cli_dataset(&s)) {
        cli_shard(&s, &ds);
        h = lnk_hessian_alloc_dataset(s.m, s.theta, &ds, NULL);
        if (!h)
            cli_die_lib();
        cli_set_cache(h, cache_set, cache_mb);
        cli_check(lnk_hessian_set_kind(h, kind));
        cli_setup_done();
    }
    /* one batch in one process: its primal pass is kept in the workspace at no
     * extra memory, unless --cache-mb 0 */
    int keep = !cache_set || cache_mb > 0;
    for (int i = 0; i < repeat; i++) {
        double t0 = lnk_now();
        int st = LNK_OK;
        if (h)
            st = lnk_hessian_apply_full(h, v, hv);
        else if (kind == LNK_OP_HESSIAN && !keep)
            st = lnk_model_hvp(s.ws, s.theta, &s.b, v, hv, NULL, NULL);
        else if (((i > 0 && keep) ||
                  (st = lnk_model_hvp_prepare(s.ws, s.theta, &s.b, NULL, NULL)) == 0)) {
            if (kind == LNK_OP_HESSIAN)
                st = lnk_model_hvp_apply(s.ws, v, hv);
            else if (kind == LNK_OP_GGN)
                st = lnk_model_ggn_apply(s.ws, v, NULL, hv);
            else if ((st = lnk_model_ggn_apply(s.ws, v, hv, gv)) == LNK_OK)
                for (size_t j = 0; j < np; j++)
                    hv[j] -= gv[j];
        }
        if (st != LNK_OK)
            cli_die_lib();
        t[i] = lnk_now() - t0;
    }
    if (h)
        keep = lnk_hessian_cached_chunks(h, NULL) == ds.n_chunks && ds.n_chunks > 0;
    lnk_hessian_free(h);
    lnk_dataset_free(&ds);
    if (lnk_params_check_finite(s.m, hv, kind == LNK_OP_HESSIAN ? "H v" : kind == LNK_OP_GGN ?
                                "G v" : "F v") != LNK_OK)
        cli_die_lib();
    if (!cli_root()) {
        free(v), free(hv), free(t), free(gv);
        cli_close(&s);
        return 0;
    }
    if (lnk_vector_save(out, s.m, hv, layout) != LNK_OK)
        cli_die_lib();
    if (repeat > 1) {
        /* with the pass kept, the first product also ran it: the others are timed */
        int k = keep ? repeat - 1 : repeat;
        double *tk = keep ? t + 1 : t, first = t[0];
        qsort(tk, (size_t)k, sizeof *t, cmp);
        double med = k % 2 ? tk[k / 2] : 0.5 * (tk[k / 2 - 1] + tk[k / 2]);
        cli_say("lnkit hvp: median %.6f s per product over %d (min %.6f, max %.6f)", med,
                k, tk[0], tk[k - 1]);
        if (keep)
            cli_say(", primal pass kept (the first product, with it: %.6f s)\n", first);
        else
            cli_say(", primal pass recomputed in each\n");
    }
    free(v);
    free(hv);
    free(t);
    free(gv);
    cli_close(&s);
    return 0;
}
