/* placements: one point and one part of the placement study (issue 34;
 * studies/placements/place.h describes the parts and the groups).  The
 * point is a model configuration given by the library's configuration keys
 * (--norm-pos peri --activation swiglu --L 12 --seed 2 ...: any key of
 * MODEL.md §8; the study's defaults are lm, V = 64, h = 4, d = 64, L = 6),
 * at initialisation, on
 *   lm       a synthetic batch (--batch B rows of --len T tokens, ids uniform
 *            in [4, V), batch seed --batch-seed), one chunk;
 *   seq2seq  the pairs of --src / --tgt (all of them, or the first --pairs),
 *            the vocabularies built from them, cut into chunks of at most
 *            --max-tokens padded tokens (lnkit batch's rule).
 * Its rows go to --out FILE.csv (columns: measure, operator, which, block,
 * kind, layer, n, block_b, value, se, residual, converged, steps) with
 * FILE.meta.json, the library's sidecar: the whole configuration, the part,
 * the numerical settings, inputs, commit, times, products.  The file appears
 * whole when the part is done, or not at all: a runner skips the points whose
 * CSV and sidecar exist (studies/scripts/study_placements.sh).
 * --part eigs (the long Multi30k runs) computes one --operator's extremes
 * with a checkpoint (--checkpoint FILE, lnkit eigs --checkpoint's format and
 * rules): a run that is killed continues from its last save, with bitwise
 * the result of an uninterrupted run. */
#include <math.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lnkit/checkpoint.h"
#include "lnkit/lnkit.h"
#include "front/ckpt.h"
#include "front/curv_opts.h"
#include "front/front.h"
#include "front/model.h"
#include "front/pairs.h"
#include "placements/place.h"

typedef struct {
    const char *out, *part, *op;
    cli_pairs_opts pa; /* --src, --tgt, --max-tokens */
    int B, T, pairs, quiet;
    long cache_mb;
    cli_ckpt_opts ck;
    uint64_t batch_seed;
    pl_num num;
} opts_t;

enum { PART_EXTREMES, PART_ANATOMY, PART_GRAD, PART_COUPLING, PART_SCALE, PART_EIGS };
static const cli_choice part_names[] = {{"extremes", PART_EXTREMES}, {"anatomy", PART_ANATOMY},
                                        {"grad", PART_GRAD}, {"coupling", PART_COUPLING},
                                        {"scale", PART_SCALE}, {"eigs", PART_EIGS}, {NULL, 0}};
typedef struct {
    opts_t o;
    int part, op;
    cli_config_flags keys;
} args_t;

#define O args_t
#define INT(nm, a, f, lo, hi, h) {.type = CLI_INT, .name = nm, .arg = a, CLI_AT(O, f), \
                                  .min = lo, .max = hi, .help = h}
/* a renamed option: its old name (opt.h) */
#define INT_WAS(nm, old, a, f, lo, hi, h) {.type = CLI_INT, .name = nm, .was = old, .arg = a, \
                                           CLI_AT(O, f), .min = lo, .max = hi, .help = h}
static const cli_opt opts[] = {
    STUDY_OPT_OUT(O, o.out, "FILE.csv", CLI_REQ | CLI_RESUMED, NULL,
                  "the rows (and FILE.meta.json)"),
    {.type = CLI_CHOICE, .name = "part", CLI_AT(O, part), .ref = part_names, .flags = CLI_REQ,
     .help = "the part of the study to run"},
    CLI_OPT_OPERATOR(O, op, 0),
    INT("rows", "N", o.B, 1, 1 << 20, "lm: rows of the synthetic batch"),
    INT("len", "T", o.T, 1, 1 << 20, "lm: positions per row"),
    {.type = CLI_U64, .name = "batch-seed", .arg = "N", CLI_AT(O, o.batch_seed),
     .max = 0x7fffffff, .help = "lm: the synthetic batch's seed"},
    CLI_OPT_SRC(O, o.pa, 0, 0),
    CLI_OPT_TGT(O, o.pa),
    INT("s2s-rows", "N", o.pairs, 0, 1 << 30, "seq2seq: the first N sentence pairs, 0: all"),
    CLI_OPT_MAX_TOKENS(O, o.pa, "seq2seq: padded tokens a chunk", NULL),
    INT("probes", "N", o.num.probes, 2, 1 << 20, "probes a Frobenius norm"),
    INT("trace-probes", "N", o.num.trace_probes, 2, 1 << 20, "probes a trace"),
    INT("cross-probes", "N", o.num.cross_probes, 2, 1 << 20, "probes a source group"),
    INT_WAS("max-steps", "eig-steps", "M", o.num.eig_steps, 2, 100000,
            "Lanczos step limit of the extremes"),
    CLI_OPT_TOL(O, o.num.tol, 0, "an extreme converges when its residual <= T max|l|"),
    INT_WAS("runs", "slq-runs", "N", o.num.slq_runs, 1, 10000, "SLQ start vectors per block"),
    INT_WAS("steps", "slq-steps", "M", o.num.slq_steps, 2, 100000, "SLQ Lanczos steps per run"),
    CLI_OPT_SIGMA_FRACTION(O, o.num.sigma_frac, 0,
                           "the JS densities' kernel width: sigma = F (range of the nodes)"),
    CLI_OPT_RNG_SEED(O, o.num.rng, 0, CLI_RNG_SEED_HELP),
    CLI_OPT_CHECKPOINT(O, o.ck.path),
    CLI_OPT_CHECKPOINT_EVERY(O, o.ck.every),
    CLI_OPT_CACHE_MB(O, o.cache_mb, CLI_CACHE_MB_HELP),
    {.type = CLI_GROUP, .help = "Model configuration (docs/MODEL.md section 8; the study's "
     "defaults: lm, V 64, h 4, d 64, L 6)"},
    {.type = CLI_CONFIG, CLI_AT(O, keys)},
    {0}};
#undef INT
#undef INT_WAS
#undef O

static void defaults(void *p)
{
    args_t *a = p;
    lnk_eigs_opts eo;
    lnk_eigs_opts_default(&eo);
    a->o = (opts_t){.B = 8, .T = 16, .cache_mb = -1, .batch_seed = 1234,
                    .num = {.probes = 16, .trace_probes = 128, .eig_steps = 400, .tol = eo.tol,
                            .slq_runs = 2, .slq_steps = 24, .sigma_frac = CLI_SIGMA_FRACTION,
                            .cross_probes = 8, .rng = 0}};
    cli_ckpt_opts_default(&a->o.ck);
    cli_pairs_opts_default(&a->o.pa);
    a->o.pa.src = "data/multi30k/val.de", a->o.pa.tgt = "data/multi30k/val.en";
    a->o.pa.max_tokens = 512;
    a->op = LNK_OP_HESSIAN;
}

static const cli_cmd cmd = {
    .name = "placements",
    .usage = "--part PART --out FILE.csv [config flags] [options]",
    .about = "One point and one part of the placement study (issue 34; studies/placements/\n"
             "place.h): a model configuration given by the configuration keys, at\n"
             "initialisation, on a synthetic lm batch or the pairs of --src/--tgt.",
    .opts = opts, .size = sizeof(args_t), .defaults = defaults};

static void parse(int argc, char **argv, opts_t *o, lnk_config *c)
{
    args_t a;
    cli_parse(&cmd, &a, argc, argv);
    cli_setup_done();
    *o = a.o;
    o->quiet = cli_quiet;
    o->part = part_names[a.part].name;
    o->op = lnk_op_kind_name(a.op);
    for (int i = 0; i < a.keys.n; i++)
        CLI_CK(lnk_config_set(c, a.keys.key[i], a.keys.val[i]));
    size_t L = strlen(o->out);
    if (L < 5 || strcmp(o->out + L - 4, ".csv"))
        cli_die("--out: expected a path ending in .csv, got '%s'", o->out);
    if (o->ck.path && a.part != PART_EIGS)
        cli_die("--checkpoint: only --part eigs saves checkpoints");
}

/* The seq2seq data set: pairs, vocabularies (sizes into c), chunks. */
static void load_pairs(const opts_t *o, lnk_config *c, lnk_dataset *ds, char *what, size_t wn)
{
    cli_pairs D;
    cli_pairs_load(&o->pa, o->pairs, CLI_PAIRS_CHUNKS, &D);
    c->V_src = lnk_vocab_size(D.vs);
    c->V_tgt = lnk_vocab_size(D.vt);
    ds->chunks = D.chunks;   /* lnk_dataset_free frees them */
    ds->n_chunks = ds->n_total = D.n_chunks;
    ds->first = 0;
    ds->n_scored = D.p.n_scored;
    ds->procs = NULL;
    snprintf(what, wn, "%d pairs of %s / %s (vocabularies %d / %d from them, min count 1), "
             "%d chunks of at most %ld padded tokens, sorted by length", D.p.n, o->pa.src,
             o->pa.tgt, c->V_src, c->V_tgt, D.n_chunks, o->pa.max_tokens);
    D.chunks = NULL; /* handed over */
    cli_pairs_free(&D);
}

/* ------------------------------------------------------ --part eigs */

/* With --checkpoint, the run's checkpoint (r->ck) is left open to be
 * removed once the CSV is written; r->resumed_from: the products of the
 * runs it resumed. */
static void part_eigs(pl_ctx *c, const opts_t *o, const lnk_config *cf, cli_ckpt_run *r)
{
    lnk_op_kind kind;
    CLI_CK(lnk_op_kind_parse(o->op ? o->op : "hessian", &kind));
    lnk_operator op = pl_op(c, NULL, kind);
    lnk_eigs_opts eo;
    lnk_eigs_opts_default(&eo);
    /* G: its top only, as in part extremes (its bottom is >= 0, and 0 where
     * the rank bound written here is below n) */
    int C = cf->task == LNK_TASK_CLS ? cf->n_classes : cf->V_tgt;
    if (kind == LNK_OP_GGN)
        pl_row(c, "g_rank_bound", "ggn", NULL, NULL, NULL, (double)c->ds->n_scored * (C - 1),
               NAN, NAN, -1, -1);
    eo.k_top = 1;
    eo.k_bottom = kind == LNK_OP_GGN ? 0 : 1;
    eo.tol = c->num.tol;
    eo.max_steps = c->num.eig_steps;
    eo.seed = c->num.rng;
    int m = (size_t)eo.max_steps < op.n ? eo.max_steps : (int)op.n;
    cli_ckpt_start(r, c->h, m + eo.k_top + eo.k_bottom, o->ck.every);
    cli_eigs_progress pr = {o->out, 60, -1e9, r};
    eo.progress = cli_eigs_progress_fn;
    eo.progress_ctx = &pr;
    if (o->ck.path) {
        /* the identity of the point's checkpoint (the build's items: cli_ckpt_open) */
        lnk_ckpt_id id = {0};
        int rc = cli_ckpt_id_config(&id, "the configuration (SHA-256)", cf);
        if (cf->task == LNK_TASK_SEQ2SEQ) {
            /* the texts as they were read (their digests in the record: not read again) */
            const lnk_digest *ds = lnk_prov_input_find(cli_prov(), o->pa.src),
                             *dt = lnk_prov_input_find(cli_prov(), o->pa.tgt);
            rc = rc ? rc : lnk_ckpt_id_add(&id, "--src (SHA-256)", "%s", ds ? ds->sha256 : "?");
            rc = rc ? rc : lnk_ckpt_id_add(&id, "--tgt (SHA-256)", "%s", dt ? dt->sha256 : "?");
            rc = rc ? rc : lnk_ckpt_id_add(&id, "--pairs", "%d", o->pairs);
            rc = rc ? rc : lnk_ckpt_id_add(&id, "--max-tokens", "%ld", o->pa.max_tokens);
        } else {
            rc = rc ? rc : lnk_ckpt_id_add(&id, "--batch", "%d", o->B);
            rc = rc ? rc : lnk_ckpt_id_add(&id, "--len", "%d", o->T);
            rc = rc ? rc : lnk_ckpt_id_add(&id, "--batch-seed", "%ld", (long)o->batch_seed);
        }
        rc = rc ? rc : lnk_ckpt_id_add(&id, "--operator", "%s", lnk_op_kind_name(kind));
        rc = rc ? rc : lnk_ckpt_id_add(&id, "--tol", "%.17g", eo.tol);
        /* the names before the renames (--max-steps; --s2s-rows): checkpoints resume */
        rc = rc ? rc : lnk_ckpt_id_add(&id, "--eig-steps", "%d", eo.max_steps);
        rc = rc ? rc : lnk_ckpt_id_add(&id, "--rng-seed", "%llu", (unsigned long long)eo.seed);
        CLI_CK(rc);
        cli_ckpt_open(r, &o->ck, "placements", &id, LNK_CKPT_EIGS, op.n, (size_t)m + 1, 1);
        eo.basis = lnk_ckpt_basis(r->ck);
        eo.resume = lnk_ckpt_eigs_state(r->ck);
        eo.checkpoint = cli_ckpt_save_eigs;
        eo.checkpoint_ctx = r;
    }
    lnk_eigs_result res;
    CLI_CK(lnk_eigs(&op, &eo, &res));
    for (int i = 0; i < res.k; i++)
        pl_row(c, "eig", lnk_op_kind_name(kind), i < res.n_top ? "top" : "bottom", NULL, NULL,
               res.value[i], NAN, res.residual[i], res.converged[i], res.steps);
    pl_row(c, "products", lnk_op_kind_name(kind), NULL, NULL, NULL,
           (double)cli_ckpt_products(r), NAN, NAN, -1, -1);
    lnk_eigs_result_free(&res);
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "placements");
    opts_t o;
    lnk_config cf;
    lnk_config_default(&cf);
    cf.V = 64;
    cf.h = 4;
    cf.d = 64;
    cf.L = 6;
    parse(argc, argv, &o, &cf);
    lnk_dataset ds;
    lnk_dataset_init(&ds);
    char data[1400];
    if (cf.task == LNK_TASK_SEQ2SEQ)
        load_pairs(&o, &cf, &ds, data, sizeof data);
    CLI_CK(lnk_config_finalize(&cf));
    lnk_model *m = lnk_model_alloc(&cf);
    if (!m)
        cli_die_lib();
    size_t np = lnk_model_n_params(m);
    double *th = cli_alloc(sizeof(double) * np);
    CLI_CK(lnk_model_init_params(m, th));
    CLI_CK(lnk_prov_seed(cli_prov(), "init", cf.seed));
    CLI_CK(lnk_prov_seed(cli_prov(), "rng", o.num.rng));
    if (cf.task != LNK_TASK_SEQ2SEQ) {
        lnk_batch b;
        CLI_CK(lnk_batch_synthetic(m, o.B, o.T, (uint64_t)o.batch_seed, &b));
        CLI_CK(lnk_dataset_add_rows(&ds, m, &b, 0));
        lnk_batch_free(&b);
        snprintf(data, sizeof data, "synthetic %s batch: %d rows of %d tokens, ids uniform in "
                 "[4, V), batch seed %ld, one chunk", lnk_task_name(cf.task), o.B, o.T,
                 (long)o.batch_seed);
        CLI_CK(lnk_prov_seed(cli_prov(), "batch", (uint64_t)o.batch_seed));
    }
    lnk_hessian *h = lnk_hessian_alloc_dataset(m, th, &ds, NULL);
    if (!h)
        cli_die_lib();
    cli_set_cache(h, o.cache_mb);
    char start[32];
    lnk_iso_time(start, sizeof start);
    double t0 = lnk_now();
    /* the output: DIR/NAME.csv */
    char dir[1024], *sl;
    snprintf(dir, sizeof dir, "%s", o.out);
    sl = strrchr(dir, '/');
    const char *name = sl ? sl + 1 : o.out;
    if (sl)
        *sl = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    make_dir(dir);
    out_csv oc;
    csv_open(&oc, dir, name, PL_HDR, PL_NCOL);
    pl_ctx c = {m, th, &ds, h, {0, NULL}, o.num, &oc, o.quiet};
    pl_groups_make(m, &c.G);
    cli_ckpt_run run = {0}; /* --part eigs */
    if (!strcmp(o.part, "extremes"))
        pl_part_extremes(&c);
    else if (!strcmp(o.part, "anatomy"))
        pl_part_anatomy(&c);
    else if (!strcmp(o.part, "grad"))
        pl_part_grad(&c);
    else if (!strcmp(o.part, "coupling"))
        pl_part_coupling(&c);
    else if (!strcmp(o.part, "scale"))
        pl_part_scale(&c);
    else
        part_eigs(&c, &o, &cf, &run);
    long before = run.resumed_from;
    double sec = lnk_now() - t0, cpu = (double)clock() / CLOCKS_PER_SEC;
    long prod = lnk_hessian_n_products(h) + before;
    lnk_meta *extra = lnk_meta_alloc();
    if (!extra)
        cli_die_lib();
    lnk_meta_str(extra, "study", "placements");
    lnk_meta_str(extra, "part", o.part);
    lnk_meta_str(extra, "operator", o.op ? o.op : "");
    lnk_meta_str(extra, "data", data);
    lnk_meta_int(extra, "n_params", (long long)np);
    lnk_meta_int(extra, "groups", c.G.n);
    lnk_meta_int(extra, "probes", o.num.probes);
    lnk_meta_int(extra, "trace_probes", o.num.trace_probes);
    lnk_meta_int(extra, "cross_probes", o.num.cross_probes);
    lnk_meta_int(extra, "eig_steps", o.num.eig_steps);
    lnk_meta_real(extra, "tol", o.num.tol);
    lnk_meta_int(extra, "slq_runs", o.num.slq_runs);
    lnk_meta_int(extra, "slq_steps", o.num.slq_steps);
    lnk_meta_real(extra, "sigma_fraction", o.num.sigma_frac);
    lnk_meta_int(extra, "rng_seed", (long long)o.num.rng);
    lnk_meta_str(extra, "js_log", "natural");
    lnk_meta_int(extra, "products_this_run", lnk_hessian_n_products(h));
    lnk_meta_int(extra, "products_before", before);
    lnk_meta_real(extra, "seconds", sec);
    lnk_meta_real(extra, "cpu_seconds", cpu);
    lnk_meta_int(extra, "blas_threads", lnk_blas_threads());
    csv_close(&oc, &cf, extra, start, t0);
    lnk_meta_free(extra);
    cli_ckpt_done(&run);
    if (!o.quiet)
        fprintf(stderr, "placements: %s: %ld products in %.1f s -> %s\n", o.part, prod, sec,
                o.out);
    pl_groups_free(&c.G);
    lnk_hessian_free(h);
    lnk_dataset_free(&ds);
    free(th);
    lnk_model_free(m);
    lnk_config_clear(&cf);
    return 0;
}
