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
#include "front/curv_opts.h"
#include "front/record.h"
#include "lnkit/provenance.h"

typedef struct {
    cli_model_opts mo;
    const char *out, *weights, *block, *batch[CLI_MAX_BATCH];
    int n_batch, random, rademacher, ones, gradient, normalize, flat, chunk;
    uint64_t rng_seed;
} vector_args;

#define T vector_args
static const cli_opt opts[] = {
    CLI_OPT_OUTPUT(T, out, CLI_REQ, "vector file to write (safetensors)", NULL),
    {.type = CLI_FLAG, .name = "random", CLI_AT(T, random), .excl = 1, .flags = CLI_REQ | CLI_ID,
     .help = "Gaussian N(0, 1) entries"},
    {.type = CLI_FLAG, .name = "ones", CLI_AT(T, ones), .excl = 1, .flags = CLI_REQ | CLI_ID,
     .help = "every entry 1"},
    {.type = CLI_FLAG, .name = "gradient", CLI_AT(T, gradient), .excl = 1,
     .flags = CLI_REQ | CLI_ID,
     .help = "the gradient of the mean loss over the batches (needs --weights, --batch)"},
    {.type = CLI_FLAG, .name = "rademacher", CLI_AT(T, rademacher), .flags = CLI_ID,
     .help = "with --random: entries +1 or -1"},
    {.type = CLI_U64, .name = "rng-seed", .arg = "N", CLI_AT(T, rng_seed), .max = 0x7fffffff,
     .flags = CLI_ID, .help = "seed of the random entries"},
    {.type = CLI_STR, .name = "weights", .arg = "FILE", CLI_AT(T, weights),
     .flags = CLI_READS | CLI_ID_FILE,
     .help = "weights, for --gradient"},
    {.type = CLI_LIST, .name = "batch", .arg = "FILE", CLI_AT(T, batch),
     .count = offsetof(T, n_batch), .flags = CLI_READS | CLI_ID_FILE,
     .help = "batch file, for --gradient; repeat for a data set of several (the token-weighted "
             "mean over them)"},
    CLI_OPT_CHUNK(T, chunk, CLI_ID | CLI_ID_SET),
    {.type = CLI_STR, .name = "block", .arg = "PATTERNS", CLI_AT(T, block), .flags = CLI_ID,
     .help = "zero outside this block: comma-separated globs on tensor names, e.g. '*.attn.*'",
     .def = "all parameters"},
    {.type = CLI_FLAG, .name = "normalize", CLI_AT(T, normalize), .flags = CLI_ID,
     .help = "scale to unit Euclidean norm"},
    {.type = CLI_FLAG, .name = "flat", CLI_AT(T, flat), .flags = CLI_ID,
     .help = "one tensor 'v' of n_params instead of the named tensors"},
    CLI_MODEL(T, mo),
    {0}};

const cli_cmd cmd_vector_decl = {
    .name = "lnkit vector",
    .summary = "make a vector for hvp: random, ones, or a saved gradient",
    .usage = "[--config C.json] [config flags]\n"
             "(--random [--rademacher] [--rng-seed N] | --ones |\n"
             " --gradient --weights W --batch B [--batch B2 ...] [--chunk N])\n"
             "[--block PATTERNS] [--normalize] [--flat] -o V.safetensors",
    .about = "Write a vector of the model's parameter space, for lnkit hvp --vector: random\n"
             "entries (standard Gaussian, or +-1 with --rademacher) from a seeded stream, all\n"
             "ones, or the gradient of the mean loss over the batches at the weights.  With\n"
             "--block, the entries outside the block are 0.  Written as the named tensors of\n"
             "docs/MODEL.md section 6 (with --flat: one tensor 'v' of n_params); hvp writes\n"
             "H v in the same layout.",
    .opts = opts,
    .size = sizeof(vector_args),
    .example = "--config CONFIG --random -o OUT",
};

int cmd_vector(int argc, char **argv)
{
    vector_args a;
    cli_parse(&cmd_vector_decl, &a, argc, argv);
    int random = a.random, rade = a.rademacher, ones = a.ones, grad = a.gradient, n_batch = a.n_batch;
    const char *wpath = a.weights, *block = a.block, *const *bpath = a.batch;
    if (rade && !random)
        cli_die("--rademacher goes with --random");
    if (cli_given("rng-seed") && !random)
        cli_die("--rng-seed goes with --random");
    if (grad && (!wpath || !n_batch))
        cli_die("--gradient needs --weights FILE and --batch FILE");
    if (!grad && (wpath || n_batch || a.chunk))
        cli_die("--weights, --batch and --chunk go with --gradient");
    const char *out = cli_out(a.out, 1);
    cli_files f = {0};
    cli_files_out(&f, out, "-o");
    cli_files_model(&f, &a.mo, wpath, bpath, n_batch);
    cli_files_check(NULL, &f);
    cli_session s = {0}; /* --gradient: the weights and batches too */
    if (grad)
        cli_open(&s, &a.mo, wpath, bpath, n_batch, a.chunk, 0);
    else
        s.m = cli_model_new(&a.mo, &s.c);
    lnk_model *m = s.m;
    lnk_block sel;
    if (lnk_block_select(m, block, &sel) != LNK_OK)
        cli_die("--block: %s", lnk_errmsg());
    size_t np = lnk_model_n_params(m);
    double *v = calloc(np, sizeof *v);
    if (!v)
        cli_die("out of memory for %zu parameters", np);
    const lnk_layout *lay = lnk_model_layout(m);
    if (random) {
        gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
        if (!r)
            cli_die("out of memory");
        gsl_rng_set(r, (unsigned long)a.rng_seed);
        CLI_CK(lnk_prov_seed(cli_prov(), "rng", a.rng_seed)); /* for the record */
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
        double loss;
        size_t nsc;
        cli_gradient(&s, &loss, v, &nsc);
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
        cli_say("loss %.17g over %d batch file(s)\n", loss, n_batch);
    }
    double nrm = lnk_norm2(v, np); /* without overflow (entries near 1e308) */
    if (!isfinite(nrm) && a.normalize)
        cli_die("--normalize: the vector's norm exceeds the range of doubles");
    if (a.normalize) {
        if (!(nrm > 0))
            cli_die("--normalize: the vector is zero");
        for (size_t i = 0; i < np; i++)
            v[i] /= nrm;
    }
    cli_record_md rec = {0};
    cli_outputs_begin();
    if (cli_root() && lnk_vector_save_meta(out, m, v, a.flat ? LNK_VEC_FLAT : LNK_VEC_NAMED,
                                           cli_record_table(&rec, "lnkit vector", random ?
                                                            "a random vector" : ones ? "ones" :
                                                            "the gradient of the mean loss over "
                                                            "the batches", &s.c, opts, &a)) != LNK_OK)
        cli_die_lib();
    cli_outputs_commit();
    cli_record_free(&rec);
    cli_say("%zu entries (%zu in the block), norm %.6g -> %s\n", np, sel.n,
            a.normalize ? 1.0 : nrm, cli_dest(a.out));
    free(v);
    lnk_block_free(&sel);
    cli_close(&s);
    return 0;
}
