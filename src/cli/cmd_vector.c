/* lnkit vector: make a vector of the parameter space for hvp (and for
 * anything that reads vectors, docs/MODEL.md §8): random (Gaussian or
 * Rademacher, seeded), all ones, or the loss gradient on batches; optionally
 * restricted to a block and normalised. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

static void help(void)
{
    printf("usage: lnkit vector [--config C.json] [config flags]\n"
           "                    (--random [--rademacher] [--rng-seed N] | --ones |\n"
           "                     --gradient --weights W --batch B [--batch B2 ...])\n"
           "                    [--block PATTERNS] [--normalize] [--flat] -o V.safetensors\n\n"
           "Write a vector of the model's parameter space, for lnkit hvp --vector:\n"
           "random entries (standard Gaussian, or +-1 with --rademacher) from a seeded\n"
           "stream, all ones, or the gradient of the mean loss over the batches at the\n"
           "weights.  With --block, the entries outside the block are 0.  Written as the\n"
           "named tensors of docs/MODEL.md section 6 (with --flat: one tensor 'v' of\n"
           "n_params); hvp writes H v in the same layout.\n\n"
           "  -o, --output FILE      vector file to write                       (required)\n"
           "  --random               Gaussian N(0, 1) entries\n"
           "  --rademacher           with --random: entries +1 or -1\n"
           "  --rng-seed N           seed of the random entries                 (0)\n"
           "  --ones                 every entry 1\n"
           "  --gradient             the loss gradient (needs --weights, --batch)\n"
           "  --weights FILE         weights for --gradient\n"
           "  --batch FILE           batch for --gradient; repeat for several files (the\n"
           "                         token-weighted mean over them)\n"
           "  --block PATTERNS       zero outside this block, e.g. '*.attn.*'   (all)\n"
           "  --normalize            scale to unit Euclidean norm\n"
           "  --flat                 one tensor 'v' instead of the named tensors\n\n");
    cli_print_model_help();
}

enum { O_RANDOM = 1, O_RADE, O_RNG, O_ONES, O_GRAD, O_WEIGHTS, O_BATCH, O_BLOCK, O_NORM, O_FLAT };

int cmd_vector(int argc, char **argv)
{
    struct option opts[112] = {{"output", required_argument, NULL, 'o'},
                               {"help", no_argument, NULL, 'h'},
                               {"random", no_argument, NULL, O_RANDOM},
                               {"rademacher", no_argument, NULL, O_RADE},
                               {"rng-seed", required_argument, NULL, O_RNG},
                               {"ones", no_argument, NULL, O_ONES},
                               {"gradient", no_argument, NULL, O_GRAD},
                               {"weights", required_argument, NULL, O_WEIGHTS},
                               {"batch", required_argument, NULL, O_BATCH},
                               {"block", required_argument, NULL, O_BLOCK},
                               {"normalize", no_argument, NULL, O_NORM},
                               {"flat", no_argument, NULL, O_FLAT}};
    int n = cli_add_model_options(opts, 12);
    opts[n] = (struct option){0, 0, 0, 0};
    cli_model_opts mo = {0};
    const char *out = NULL, *wpath = NULL, *block = NULL, *bpath[CLI_MAX_BATCH];
    int random = 0, rade = 0, ones = 0, grad = 0, normalize = 0, flat = 0, n_batch = 0, ch;
    long rng_seed = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        if (cli_model_option(&mo, ch, optarg))
            continue;
        switch (ch) {
        case 'o': out = optarg; break;
        case O_RANDOM: random = 1; break;
        case O_RADE: rade = 1; break;
        case O_RNG: rng_seed = cli_int("rng-seed", optarg, 0, 0x7fffffffL); break;
        case O_ONES: ones = 1; break;
        case O_GRAD: grad = 1; break;
        case O_WEIGHTS: wpath = optarg; break;
        case O_BATCH: cli_add_batch(bpath, &n_batch, optarg); break;
        case O_BLOCK: block = optarg; break;
        case O_NORM: normalize = 1; break;
        case O_FLAT: flat = 1; break;
        case 'h': help(); return 0;
        default: cli_bad_option("vector", ch, argv);
        }
    }
    if (optind < argc)
        cli_die("vector: unexpected argument '%s'", argv[optind]);
    if (random + ones + grad != 1)
        cli_die("vector: give exactly one of --random, --ones and --gradient");
    if (rade && !random)
        cli_die("vector: --rademacher goes with --random");
    if (grad && (!wpath || !n_batch))
        cli_die("vector: --gradient needs --weights FILE and --batch FILE");
    if (!grad && (wpath || n_batch))
        cli_die("vector: --weights and --batch go with --gradient");
    if (!out)
        cli_die("vector: -o V.safetensors is required");
    cli_files f = {0};
    cli_files_out(&f, out, "-o");
    cli_files_in(&f, mo.config_path, "--config");
    cli_files_in(&f, wpath, "--weights");
    for (int i = 0; i < n_batch; i++)
        cli_files_in(&f, bpath[i], "--batch");
    cli_files_check("vector", &f);
    lnk_config c;
    cli_make_config(&mo, &c);
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        cli_die_lib();
    lnk_block sel;
    if (lnk_block_select(m, block, &sel) != LNK_OK)
        cli_die("vector: --block: %s", lnk_errmsg());
    size_t np = lnk_model_n_params(m);
    double *v = calloc(np, sizeof *v);
    if (!v)
        cli_die("out of memory for %zu parameters", np);
    const lnk_layout *lay = lnk_model_layout(m);
    if (random) {
        gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
        if (!r)
            cli_die("out of memory");
        gsl_rng_set(r, (unsigned long)rng_seed);
        /* the block's entries in flat order, one stream: the same seed gives
         * the same entries on any machine */
        for (int k = 0; k < sel.n_tensors; k++) {
            const lnk_tensor_info *t = &lay->t[sel.tensor[k]];
            for (size_t i = 0; i < t->size; i++)
                v[t->offset + i] = rade ? (gsl_rng_uniform_int(r, 2) ? 1.0 : -1.0)
                                        : gsl_ran_gaussian(r, 1.0);
        }
        gsl_rng_free(r);
    } else if (ones) {
        for (int k = 0; k < sel.n_tensors; k++)
            for (size_t i = 0; i < lay->t[sel.tensor[k]].size; i++)
                v[lay->t[sel.tensor[k]].offset + i] = 1.0;
    } else {
        double *theta = malloc(sizeof(double) * np), loss;
        lnk_batch *b = calloc((size_t)n_batch, sizeof *b);
        if (!theta || !b)
            cli_die("out of memory for %zu parameters", np);
        if (cli_load_weights(wpath, m, theta) != LNK_OK)
            cli_die_lib();
        for (int i = 0; i < n_batch; i++)
            if (cli_load_batch(bpath[i], m, &b[i]) != LNK_OK)
                cli_die_lib();
        if (lnk_dataset_eval(m, theta, b, n_batch, &loss, v, NULL) != LNK_OK)
            cli_die_lib();
        if (lnk_params_check_finite(m, v, "gradient") != LNK_OK)
            cli_die_lib();
        if (block) { /* keep the block's entries only */
            double *keep = calloc(np, sizeof *keep);
            if (!keep)
                cli_die("out of memory");
            for (int k = 0; k < sel.n_tensors; k++) {
                const lnk_tensor_info *t = &lay->t[sel.tensor[k]];
                memcpy(keep + t->offset, v + t->offset, sizeof(double) * t->size);
            }
            free(v);
            v = keep;
        }
        cli_say("lnkit vector: loss %.17g over %d batch file(s)\n", loss, n_batch);
        for (int i = 0; i < n_batch; i++)
            lnk_batch_free(&b[i]);
        free(b);
        free(theta);
    }
    double nrm = lnk_norm2(v, np); /* without overflow (entries near 1e308) */
    if (!isfinite(nrm) && normalize)
        cli_die("vector: --normalize: the vector's norm exceeds the range of doubles");
    if (normalize) {
        if (!(nrm > 0))
            cli_die("vector: --normalize: the vector is zero");
        for (size_t i = 0; i < np; i++)
            v[i] /= nrm;
    }
    cli_outputs_begin();
    if (cli_root() && lnk_vector_save(out, m, v, flat ? LNK_VEC_FLAT : LNK_VEC_NAMED) != LNK_OK)
        cli_die_lib();
    cli_outputs_commit();
    cli_say("lnkit vector: %zu entries (%zu in the block), norm %.6g -> %s\n", np, sel.n,
            normalize ? 1.0 : nrm, out);
    free(v);
    lnk_block_free(&sel);
    lnk_model_free(m);
    lnk_config_clear(&c);
    return 0;
}
