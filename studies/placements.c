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
#include "lnkit/corpus.h"
#include "lnkit/lnkit.h"
#include "front/front.h"
#include "placements/place.h"

typedef struct {
    const char *out, *part, *op, *src, *tgt, *checkpoint;
    int B, T, pairs, max_tokens, cache_mb, every, quiet;
    long batch_seed;
    pl_num num;
} opts_t;

/* The options, one entry each: name, type (s string, i integer, n number, f
 * flag), where, range, help.  A --KEY VALUE not listed here is a
 * configuration key (lnk_config_set). */
typedef struct {
    const char *name;
    char type;
    void *p;
    double lo, hi;
    const char *help;
} opt_t;

#define OPTS(o)                                                                                   \
    {                                                                                             \
        {"out", 's', &o.out, 0, 0, "FILE.csv: the rows (and FILE.meta.json)"},                    \
        {"part", 's', &o.part, 0, 0, "extremes|anatomy|grad|coupling|scale|eigs"},                \
        {"operator", 's', &o.op, 0, 0, "eigs: hessian|ggn|functional (hessian)"},                 \
        {"batch", 'i', &o.B, 1, 1 << 20, "lm: rows of the synthetic batch (8)"},                  \
        {"len", 'i', &o.T, 1, 1 << 20, "lm: tokens a row (16)"},                                  \
        {"batch-seed", 'l', &o.batch_seed, 0, 0x7fffffff, "lm: the batch's seed (1234)"},        \
        {"src", 's', &o.src, 0, 0, "seq2seq: source text (data/multi30k/val.de)"},               \
        {"tgt", 's', &o.tgt, 0, 0, "seq2seq: target text (data/multi30k/val.en)"},               \
        {"pairs", 'i', &o.pairs, 0, 1 << 30, "seq2seq: the first N pairs, 0 all (0)"},            \
        {"max-tokens", 'i', &o.max_tokens, 1, 1 << 30, "seq2seq: padded tokens a chunk (512)"},  \
        {"probes", 'i', &o.num.probes, 2, 1 << 20, "probes a Frobenius norm (16)"},               \
        {"trace-probes", 'i', &o.num.trace_probes, 2, 1 << 20, "probes a trace (128)"},            \
        {"cross-probes", 'i', &o.num.cross_probes, 2, 1 << 20, "probes a source group (8)"},      \
        {"eig-steps", 'i', &o.num.eig_steps, 2, 100000, "Lanczos steps at most (400)"},           \
        {"tol", 'n', &o.num.tol, 0, 1, "residual <= tol max|l| (1e-6)"},                          \
        {"slq-runs", 'i', &o.num.slq_runs, 1, 10000, "SLQ runs a block (2)"},                     \
        {"slq-steps", 'i', &o.num.slq_steps, 2, 100000, "SLQ steps a run (24)"},                  \
        {"sigma-fraction", 'n', &o.num.sigma_frac, 1e-9, 1, "JS kernel / node range (0.01)"},     \
        {"rng-seed", 'l', &o.num.rng, 0, 0x7fffffff, "Lanczos and probe streams (0)"},            \
        {"checkpoint", 's', &o.checkpoint, 0, 0, "eigs: FILE to save to and resume from"},       \
        {"checkpoint-every", 'i', &o.every, 1, 1 << 20, "eigs: products between saves (5)"},      \
        {"cache-mb", 'i', &o.cache_mb, 0, 1 << 30, "memory for kept primal passes (2000)"},       \
        {"quiet", 'f', &o.quiet, 0, 0, "no progress on stderr"},                                  \
    }

static void usage(const opt_t *t, int n)
{
    printf("usage: placements --part PART --out FILE.csv [--KEY VALUE ...] [options]\n"
           "  --KEY VALUE          any configuration key (MODEL.md §8): --norm-pos, --norm,\n"
           "                       --activation, --pos, --bias, --L, --d, --h, --seed, --task,\n"
           "                       --input-scale, ... (lm, V 64, h 4, d 64, L 6 unless given)\n");
    for (int i = 0; i < n; i++)
        printf("  --%-18s %s\n", t[i].name, t[i].help);
}

static void parse(int argc, char **argv, opts_t *o, lnk_config *c)
{
    opt_t t[] = OPTS((*o));
    int nt = (int)(sizeof t / sizeof *t);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(t, nt);
            exit(0);
        }
        if (strncmp(a, "--", 2))
            fail("unexpected argument '%s' (see --help)", a);
        const opt_t *e = NULL;
        for (int k = 0; k < nt && !e; k++)
            e = !strcmp(a + 2, t[k].name) ? &t[k] : NULL;
        if (e && e->type == 'f') {
            *(int *)e->p = 1;
            continue;
        }
        if (i + 1 >= argc)
            fail("%s needs a value", a);
        const char *v = argv[++i];
        if (!e) {
            if (lnk_config_set(c, a + 2, v) != LNK_OK)
                fail("%s%s", lnk_errmsg(), strstr(lnk_errmsg(), "unknown option")
                                               ? "; nor an option of this program (--help)"
                                               : "");
        } else if (e->type == 's')
            *(const char **)e->p = v;
        else if (e->type == 'i')
            *(int *)e->p = (int)arg_int(e->name, v, (long)e->lo, (long)e->hi);
        else if (e->type == 'l')
            *(uint64_t *)e->p = (uint64_t)arg_int(e->name, v, (long)e->lo, (long)e->hi);
        else
            *(double *)e->p = arg_num(e->name, v, e->lo, e->hi);
    }
    if (!o->out || !o->part)
        fail("--out and --part are required (see --help)");
    size_t L = strlen(o->out);
    if (L < 5 || strcmp(o->out + L - 4, ".csv"))
        fail("--out: expected a path ending in .csv, got '%s'", o->out);
    static const char *const parts[] = {"extremes", "anatomy", "grad", "coupling", "scale",
                                        "eigs"};
    int ok = 0;
    for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
        ok |= !strcmp(o->part, parts[k]);
    if (!ok)
        fail("--part: expected extremes, anatomy, grad, coupling, scale or eigs, got '%s'",
             o->part);
    if (o->checkpoint && strcmp(o->part, "eigs"))
        fail("--checkpoint: only --part eigs saves checkpoints");
}

/* The seq2seq data set: pairs, vocabularies (sizes into c), chunks. */
static void load_pairs(const opts_t *o, lnk_config *c, lnk_dataset *ds, char *what, size_t wn)
{
    lnk_corpus cp;
    CK(lnk_corpus_read(o->src, o->tgt, &cp));
    study_input_read(o->src, &cp.src.digest);
    study_input_read(o->tgt, &cp.tgt.digest);
    if (o->pairs > 0 && o->pairs < cp.src.n_lines)
        cp.src.n_lines = cp.tgt.n_lines = o->pairs;
    lnk_vocab *vs, *vt;
    CK(lnk_corpus_vocabs(&cp, 0, 1, 0, &vs, &vt));
    lnk_pairs_opts po;
    lnk_pairs_opts_default(&po);
    lnk_pairs p;
    CK(lnk_pairs_make(&cp, vs, vt, &po, &p));
    lnk_batch *ch;
    int nch;
    CK(lnk_pairs_batches(&p, (size_t)o->max_tokens, &ch, &nch));
    c->V_src = lnk_vocab_size(vs);
    c->V_tgt = lnk_vocab_size(vt);
    ds->chunks = ch;
    ds->n_chunks = ds->n_total = nch;
    ds->first = 0;
    ds->n_scored = p.n_scored;
    ds->procs = NULL;
    snprintf(what, wn, "%d pairs of %s / %s (vocabularies %d / %d from them, min count 1), "
             "%d chunks of at most %d padded tokens, sorted by length", p.n, o->src, o->tgt,
             c->V_src, c->V_tgt, nch, o->max_tokens);
    lnk_pairs_free(&p);
    lnk_vocab_free(vs);
    lnk_vocab_free(vt);
    lnk_corpus_free(&cp);
}

/* ------------------------------------------------------ --part eigs */

typedef struct {
    const char *name;
    lnk_ckpt *ck;
    lnk_hessian *h;
    long base, last;
    int every, quiet;
    double t_save, t_print;
} ckpt_ctx;

static int save(void *ctx, const lnk_eigs_state *st, int must)
{
    ckpt_ctx *k = ctx;
    long done = k->base + lnk_hessian_n_products(k->h);
    if (!must && done - k->last < k->every && lnk_now() - k->t_save < 600)
        return LNK_OK;
    int rc = lnk_ckpt_save_eigs(k->ck, st, done);
    if (rc == LNK_OK)
        k->last = done, k->t_save = lnk_now();
    return rc;
}

static int progress(void *ctx, const lnk_eigs_progress *p)
{
    ckpt_ctx *k = ctx;
    if (k->quiet || p->elapsed - k->t_print < 60)
        return 0;
    k->t_print = p->elapsed;
    fprintf(stderr, "placements: %s: step %d/%d top %.9g bottom %.9g converged %d/%d %.0f s\n",
            k->name, p->step, p->max_steps, p->n_top ? p->top[0] : NAN,
            p->n_bottom ? p->bottom[0] : NAN, p->n_converged, p->n_top + p->n_bottom,
            p->elapsed);
    return 0;
}

/* The checkpoint, if any, is handed back (*ck) to be removed once the CSV is
 * written; *before: the products of the runs it resumed. */
static void part_eigs(pl_ctx *c, const opts_t *o, const lnk_config *cf, lnk_ckpt **ck,
                      long *before)
{
    lnk_op_kind kind;
    CK(lnk_op_kind_parse(o->op ? o->op : "hessian", &kind));
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
    ckpt_ctx k = {o->out, NULL, c->h, 0, 0, o->every, o->quiet, lnk_now(), -1e9};
    eo.progress = progress;
    eo.progress_ctx = &k;
    if (o->checkpoint) {
        lnk_ckpt_id id = {0};
        char *cj = lnk_config_to_json(cf, 0, NULL, 0);
        if (!cj)
            fail("out of memory");
        lnk_sha256 hs;
        unsigned char dg[32];
        char hex[65];
        lnk_sha256_init(&hs);
        lnk_sha256_update(&hs, cj, strlen(cj));
        lnk_sha256_final(&hs, dg);
        lnk_sha256_hex(dg, hex);
        free(cj);
        int rc = lnk_ckpt_id_add(&id, "the configuration (SHA-256)", "%s", hex);
        if (cf->task == LNK_TASK_SEQ2SEQ) {
            /* the texts as they were read (their digests in the record: not read again) */
            const lnk_digest *ds = lnk_prov_input_find(cli_prov(), o->src),
                             *dt = lnk_prov_input_find(cli_prov(), o->tgt);
            rc = rc ? rc : lnk_ckpt_id_add(&id, "--src (SHA-256)", "%s", ds ? ds->sha256 : "?");
            rc = rc ? rc : lnk_ckpt_id_add(&id, "--tgt (SHA-256)", "%s", dt ? dt->sha256 : "?");
            rc = rc ? rc : lnk_ckpt_id_add(&id, "--pairs", "%d", o->pairs);
            rc = rc ? rc : lnk_ckpt_id_add(&id, "--max-tokens", "%d", o->max_tokens);
        } else {
            rc = rc ? rc : lnk_ckpt_id_add(&id, "--batch", "%d", o->B);
            rc = rc ? rc : lnk_ckpt_id_add(&id, "--len", "%d", o->T);
            rc = rc ? rc : lnk_ckpt_id_add(&id, "--batch-seed", "%ld", (long)o->batch_seed);
        }
        rc = rc ? rc : lnk_ckpt_id_add(&id, "--operator", "%s", lnk_op_kind_name(kind));
        rc = rc ? rc : lnk_ckpt_id_add(&id, "--tol", "%.17g", eo.tol);
        rc = rc ? rc : lnk_ckpt_id_add(&id, "--eig-steps", "%d", eo.max_steps);
        rc = rc ? rc : lnk_ckpt_id_add(&id, "--rng-seed", "%llu", (unsigned long long)eo.seed);
        rc = rc ? rc : lnk_ckpt_id_add_build(&id);
        CK(rc);
        int m = (size_t)eo.max_steps < op.n ? eo.max_steps : (int)op.n;
        CK(lnk_ckpt_open(&k.ck, NULL, o->checkpoint, "placements", &id, LNK_CKPT_EIGS, op.n,
                         (size_t)m + 1, 1));
        lnk_ckpt_id_free(&id);
        k.base = k.last = lnk_ckpt_products(k.ck);
        eo.basis = lnk_ckpt_basis(k.ck);
        eo.resume = lnk_ckpt_eigs_state(k.ck);
        eo.checkpoint = save;
        eo.checkpoint_ctx = &k;
        if (!o->quiet && lnk_ckpt_resumed(k.ck))
            fprintf(stderr, "placements: resumed %s from %ld products\n", o->checkpoint, k.base);
    }
    lnk_eigs_result r;
    CK(lnk_eigs(&op, &eo, &r));
    for (int i = 0; i < r.k; i++)
        pl_row(c, "eig", lnk_op_kind_name(kind), i < r.n_top ? "top" : "bottom", NULL, NULL,
               r.value[i], NAN, r.residual[i], r.converged[i], r.steps);
    pl_row(c, "products", lnk_op_kind_name(kind), NULL, NULL, NULL,
           (double)(k.base + lnk_hessian_n_products(c->h)), NAN, NAN, -1, -1);
    lnk_eigs_result_free(&r);
    *ck = k.ck;
    *before = k.base;
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "placements");
    opts_t o = {.src = "data/multi30k/val.de", .tgt = "data/multi30k/val.en", .B = 8, .T = 16,
                .max_tokens = 512, .cache_mb = 2000, .every = 5, .batch_seed = 1234,
                .num = {.probes = 16, .trace_probes = 128, .eig_steps = 400, .tol = 1e-6,
                        .slq_runs = 2, .slq_steps = 24, .sigma_frac = 0.01, .cross_probes = 8,
                        .rng = 0}};
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
    CK(lnk_config_finalize(&cf));
    lnk_model *m = lnk_model_alloc(&cf);
    if (!m)
        die();
    size_t np = lnk_model_n_params(m);
    double *th = study_alloc(sizeof(double) * np);
    CK(lnk_model_init_params(m, th));
    CK(lnk_prov_seed(cli_prov(), "init", cf.seed));
    CK(lnk_prov_seed(cli_prov(), "rng", o.num.rng));
    if (cf.task != LNK_TASK_SEQ2SEQ) {
        lnk_batch b;
        CK(lnk_batch_synthetic(m, o.B, o.T, (uint64_t)o.batch_seed, &b));
        CK(lnk_dataset_add_rows(&ds, m, &b, 0));
        lnk_batch_free(&b);
        snprintf(data, sizeof data, "synthetic %s batch: %d rows of %d tokens, ids uniform in "
                 "[4, V), batch seed %ld, one chunk", lnk_task_name(cf.task), o.B, o.T,
                 (long)o.batch_seed);
        CK(lnk_prov_seed(cli_prov(), "batch", (uint64_t)o.batch_seed));
    }
    lnk_hessian *h = lnk_hessian_alloc_dataset(m, th, &ds, NULL);
    if (!h)
        die();
    CK(lnk_hessian_set_cache(h, (size_t)o.cache_mb << 20));
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
    lnk_ckpt *ck = NULL;
    long before = 0;
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
        part_eigs(&c, &o, &cf, &ck, &before);
    double sec = lnk_now() - t0, cpu = (double)clock() / CLOCKS_PER_SEC;
    long prod = lnk_hessian_n_products(h) + before;
    lnk_meta *extra = lnk_meta_alloc();
    if (!extra)
        die();
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
    if (ck) {
        CK(lnk_ckpt_remove(ck));
        lnk_ckpt_close(ck);
    }
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
