/* lnkit hvp: exact Hessian-vector product on a batch. */
#include <stdio.h>
#include <stdlib.h>
#include "cli/cli.h"

static void help(void)
{
    printf("usage: lnkit hvp --config C.json --weights W.safetensors --batch B.safetensors\n"
           "                 --vector V.safetensors -o HV.safetensors [--repeat N] [config flags]\n\n"
           "Write H v, the exact product of the loss Hessian with v (forward-over-reverse),\n"
           "in the layout of the input vector (one tensor 'v' [n_params], or named tensors).\n\n"
           "  --weights FILE         weights                                    (required)\n"
           "  --batch FILE           batch                                      (required)\n"
           "  --vector FILE          the vector v                               (required)\n"
           "  -o, --output FILE      where H v is written                       (required)\n"
           "  --repeat N             compute N times, print the median seconds\n"
           "                         per product on stderr                      (1)\n\n");
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
                              {"help", no_argument, NULL, 'h'}};
    int n = cli_add_model_options(opts, 6);
    opts[n] = (struct option){0, 0, 0, 0};
    cli_model_opts mo = {0};
    const char *wpath = NULL, *bpath = NULL, *vpath = NULL, *out = NULL;
    int repeat = 1, ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        if (cli_model_option(&mo, ch, optarg))
            continue;
        switch (ch) {
        case 'w': wpath = optarg; break;
        case 'b': bpath = optarg; break;
        case 'v': vpath = optarg; break;
        case 'o': out = optarg; break;
        case 'r': repeat = (int)cli_int("repeat", optarg, 1, 1000000); break;
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
    cli_file outs[1] = {{out, "-o"}},
             ins[4] = {{mo.config_path, "--config"}, {wpath, "--weights"}, {bpath, "--batch"},
                       {vpath, "--vector"}};
    cli_check_outputs("hvp", outs, 1, ins, 4);
    cli_session s;
    cli_open(&s, &mo, wpath, bpath, LNK_WS_HVP);
    size_t np = lnk_model_n_params(s.m);
    double *v = malloc(sizeof(double) * np), *hv = malloc(sizeof(double) * np);
    double *t = malloc(sizeof(double) * repeat);
    if (!v || !hv || !t)
        cli_die("out of memory");
    int layout;
    cli_check(lnk_vector_load(vpath, s.m, v, &layout));
    lnk_hessian *h = NULL;
    lnk_batch *own = NULL;
    int n_own = 0;
    if (lnk_comm_size() > 1) {
        size_t nsc;
        cli_shard(&s, &own, &n_own, &nsc);
        h = lnk_hessian_alloc_shard(s.m, s.theta, own, n_own, nsc, NULL);
        if (!h)
            cli_die_lib();
        cli_setup_done();
    }
    for (int i = 0; i < repeat; i++) {
        double t0 = lnk_now();
        if (h ? lnk_hessian_apply_full(h, v, hv) != LNK_OK
              : lnk_model_hvp(s.ws, s.theta, &s.b, v, hv, NULL, NULL) != LNK_OK)
            cli_die_lib();
        t[i] = lnk_now() - t0;
    }
    lnk_hessian_free(h);
    for (int c = 0; c < n_own; c++)
        lnk_batch_free(&own[c]);
    free(own);
    if (lnk_params_check_finite(s.m, hv, "H v") != LNK_OK)
        cli_die_lib();
    if (!cli_root()) {
        free(v), free(hv), free(t);
        cli_close(&s);
        return 0;
    }
    if (lnk_vector_save(out, s.m, hv, layout) != LNK_OK)
        cli_die_lib();
    if (repeat > 1) {
        qsort(t, (size_t)repeat, sizeof *t, cmp);
        double med = repeat % 2 ? t[repeat / 2] : 0.5 * (t[repeat / 2 - 1] + t[repeat / 2]);
        cli_say("lnkit hvp: median %.6f s per product over %d (min %.6f, max %.6f)\n",
                med, repeat, t[0], t[repeat - 1]);
    }
    free(v);
    free(hv);
    free(t);
    cli_close(&s);
    return 0;
}
