/* anatomy: the anatomy of the loss curvature at initialisation (issue 17):
 * Post-LN vs Pre-LN (and RMSNorm, per-head qk_norm), for the lm task on a
 * synthetic batch and the seq2seq task on the first pairs of Multi30k, over
 * depth and width with seeds.  For every point (task, norm position, norm,
 * qk_norm, L, d, seed):
 *   - the largest and smallest eigenvalue of the Hessian H, its Gauss-Newton
 *     part G = J^T H_out J and its functional part F = H - G (Lanczos, with
 *     explicit residuals), and the mass of each unit eigenvector on every
 *     named tensor (sum of its squared entries there; the masses sum to 1);
 *   - ||A_bb||_F (Hutchinson on ||A_bb z||^2, with its standard error) of the
 *     diagonal block of every weight matrix of every layer (Q, K, V, O, the
 *     two FFN matrices; the cross-attention's too), for A = H, G and F;
 *   - the SLQ density of the Hessian's diagonal block of each weight kind
 *     (all layers of one side together: emb, Q, K, V, O, FFN1, FFN2, out)
 *     and the Jensen-Shannon distance between every two of them, on a common
 *     grid with sigma = --sigma-fraction of the common node range (natural
 *     log: distances in [0, sqrt(ln 2)]); and the same between the spectra
 *     each divided by its block's largest |SLQ node| (js_scaled: shapes
 *     only, scale removed).
 * Files in OUT/ (CSV, each with its .meta.json sidecar):
 *   extremes.csv   key,operator,which,eigenvalue,residual,converged,steps,scale
 *   mass.csv       key,operator,which,tensor,mass
 *   blocknorms.csv key,block,side,layer,kind,n,operator,frob,frob_se
 *   js.csv         key,block_a,block_b,js_distance,sigma,js_scaled,sigma_scaled
 * where key = task,norm_pos,norm,qk_norm,L,d,seed,n_params.  The summary
 * (tables, figures, claims) is made from these files by python3 -m
 * studies.summary anatomy DIR; studies/scripts/study_anatomy.sh runs both.
 * Every Lanczos and probe stream uses seed --rng-seed (0), as `lnkit eigs`,
 * so an extreme here is the one `lnkit eigs -k 1 --which both --tol T
 * --max-steps M --operator OP` gives on the same weights and batch.
 *
 * --resume (the long runs: studies/scripts/study_anatomy.sh --full) continues
 * the four CSVs in OUT: a point (key columns task ... seed) whose rows are in
 * js.csv, the file written last, is done and skipped; the others are
 * computed, their rows appended after the kept ones (the kit's resumable
 * sweep CSVs, csv_resume) and the files rewritten atomically with their
 * sidecars after every point (every round of P points under mpirun, the j-th
 * point still to do on rank j % P).  Rows of a point that a kill cut off
 * between the files (in extremes.csv but not yet in js.csv) are dropped first
 * and the point is computed again.  The settings that are not key columns
 * (h, the data, tol, Lanczos steps, probes, SLQ runs and steps, sigma
 * fraction, rng seed) must be those of OUT/extremes.meta.json, else the run
 * fails naming the first that differs: rows of two settings never mix. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lnkit/blockstats.h"
#include "lnkit/corpus.h"
#include "lnkit/hessian.h"
#include "lnkit/lnkit.h"
#include "kit/kit.h"


#define MAXLIST 16

typedef struct {
    int n, v[MAXLIST];
} ilist;

typedef struct {
    const char *out, *src, *tgt;
    int h, V, B, T, seeds, pairs, max_tokens;
    ilist lm_L, lm_d, s2s_L, s2s_d;
    int lm_refL, lm_refd, s2s_refL, s2s_refd, variants;
    int probes, eig_steps, runs, steps, quiet, resume;
    double tol, sigma_frac;
    uint64_t rng;
} opts_t;

typedef struct {
    int task, pre, norm, qk, L, d, seed;
} point_t;

typedef struct {
    opts_t o;
    cli_ints lm_L, lm_d, s2s_L, s2s_d;
    int no_variants;
} args_t;

#define O args_t
#define INTS(nm, f, lo, hi, h) {.type = CLI_INTS, .name = nm, .arg = "LIST", CLI_AT(O, f), \
                                .min = lo, .max = hi, .help = h}
#define INT(nm, a, f, lo, hi, h) {.type = CLI_INT, .name = nm, .arg = a, CLI_AT(O, f), \
                                  .min = lo, .max = hi, .help = h}
static const cli_opt opts[] = {
    {.type = CLI_STR, .name = "out", .arg = "DIR", CLI_AT(O, o.out), .flags = CLI_WRITES,
     .help = "output directory"},
    INTS("lm-L", lm_L, 1, 256, "lm depths at d = --lm-d-ref ('': none)"),
    INTS("lm-d", lm_d, 2, 4096, "lm widths at L = --lm-L-ref ('': none)"),
    INT("lm-L-ref", "N", o.lm_refL, 1, 256, "the lm reference point's depth"),
    INT("lm-d-ref", "N", o.lm_refd, 2, 4096, "the lm reference point's width"),
    INTS("s2s-L", s2s_L, 1, 256, "seq2seq depths, L_enc = L_dec ('': none)"),
    INTS("s2s-d", s2s_d, 2, 4096, "seq2seq widths at L = --s2s-L-ref ('': none)"),
    INT("s2s-L-ref", "N", o.s2s_refL, 1, 256, "the seq2seq reference point's depth"),
    INT("s2s-d-ref", "N", o.s2s_refd, 2, 4096, "the seq2seq reference point's width"),
    {.type = CLI_FLAG, .name = "no-variants", CLI_AT(O, no_variants),
     .help = "no RMSNorm or qk_norm points (lm reference only)"},
    INT("h", "N", o.h, 1, 256, "heads"),
    INT("V", "N", o.V, 5, 1 << 24, "lm: vocabulary"),
    INT("rows", "N", o.B, 1, 1 << 20, "lm: rows of the synthetic batch"),
    INT("len", "T", o.T, 1, 1 << 20, "lm: positions per row"),
    {.type = CLI_STR, .name = "src", .arg = "FILE", CLI_AT(O, o.src), .flags = CLI_READS,
     .help = "seq2seq: source text"},
    {.type = CLI_STR, .name = "tgt", .arg = "FILE", CLI_AT(O, o.tgt), .flags = CLI_READS,
     .help = "seq2seq: target text"},
    INT("s2s-rows", "N", o.pairs, 1, 1 << 24, "seq2seq: the first N sentence pairs"),
    INT("seeds", "N", o.seeds, 1, 1000, "initialisation seeds 0..N-1"),
    INT("probes", "N", o.probes, 2, 1 << 20, "Hutchinson probes per block norm"),
    {.type = CLI_REAL, .name = "tol", .arg = "T", CLI_AT(O, o.tol), .max = 1,
     .help = "residual tolerance of the extremes, relative to max|l|"},
    INT("eig-steps", "M", o.eig_steps, 2, 100000, "Lanczos step limit of the extremes"),
    INT("runs", "N", o.runs, 1, 10000, "SLQ start vectors per kind block"),
    INT("steps", "M", o.steps, 2, 100000, "SLQ Lanczos steps per run"),
    {.type = CLI_REAL, .name = "sigma-fraction", .arg = "F", CLI_AT(O, o.sigma_frac),
     .min = 1e-9, .max = 1, .help = "the JS densities' kernel width over the common node range"},
    {.type = CLI_U64, .name = "rng-seed", .arg = "N", CLI_AT(O, o.rng), .max = 0x7fffffff,
     .help = "seed of the Lanczos start vectors and probes"},
    {.type = CLI_FLAG, .name = "resume", CLI_AT(O, o.resume),
     .help = "continue the CSVs in --out: skip their points, append the others (the settings "
             "must be the same)"},
    {0}};
#undef INT
#undef INTS
#undef O

static void defaults(void *p)
{
    args_t *a = p;
    a->o = (opts_t){.out = "results/anatomy", .src = "data/multi30k/val.de",
                    .tgt = "data/multi30k/val.en", .h = 4, .V = 64, .B = 4, .T = 16, .seeds = 3,
                    .pairs = 12, .max_tokens = 1 << 20, .lm_refL = 4, .lm_refd = 32,
                    .s2s_refL = 2, .s2s_refd = 16, .variants = 1, .probes = 6, .eig_steps = 300,
                    .runs = 2, .steps = 24, .tol = 1e-6, .sigma_frac = 0.01, .rng = 0};
    a->lm_L = (cli_ints){4, {1, 2, 4, 8}};
    a->lm_d = (cli_ints){3, {16, 32, 64}};
    a->s2s_L = (cli_ints){4, {1, 2, 4, 6}};
    a->s2s_d = (cli_ints){3, {8, 16, 32}};
}

static const cli_cmd cmd = {
    .name = "anatomy",
    .usage = "[--out DIR] [--lm-L LIST] [--lm-d LIST] [--s2s-L LIST] [--s2s-d LIST] [--seeds N]\n"
             "[--resume] ...",
    .about = "The curvature's anatomy against depth and width: the extremes of H, G and F with\n"
             "their eigenvectors' mass per tensor, block norms and JS distances, per point\n"
             "(task, norm position, norm, depth, width, seed).  The summary: python3 -m\n"
             "studies.summary anatomy DIR.",
    .opts = opts, .size = sizeof(args_t), .defaults = defaults};

/* A list option into the study's list (at most MAXLIST values). */
static void copy_list(const char *name, const cli_ints *from, ilist *to)
{
    if (from->n > MAXLIST)
        cli_die("--%s: at most %d values, got %d", name, MAXLIST, from->n);
    to->n = from->n;
    memcpy(to->v, from->v, sizeof(int) * (size_t)from->n);
}

/* ------------------------------------------------------------ the points */

static int add_point(point_t *P, int n, point_t p)
{
    for (int i = 0; i < n; i++)
        if (!memcmp(&P[i], &p, sizeof p))
            return n;
    P[n] = p;
    return n + 1;
}

/* Every point once, in a fixed order: task, configuration, norm position, seed. */
static int make_points(const opts_t *o, point_t **out)
{
    int cap = 2 * o->seeds * (o->lm_L.n + o->lm_d.n + o->s2s_L.n + o->s2s_d.n + 4) + 8;
    point_t *P = calloc((size_t)cap, sizeof *P);
    if (!P)
        cli_die("out of memory");
    int n = 0;
    for (int task = 0; task < 2; task++) {
        const ilist *Ls = task ? &o->s2s_L : &o->lm_L, *ds = task ? &o->s2s_d : &o->lm_d;
        int refL = task ? o->s2s_refL : o->lm_refL, refd = task ? o->s2s_refd : o->lm_refd;
        /* configurations (L, d, norm, qk) */
        int cfg[4 * MAXLIST + 4][4], nc = 0;
        for (int i = 0; i < Ls->n; i++)
            cfg[nc][0] = Ls->v[i], cfg[nc][1] = refd, cfg[nc][2] = LNK_NORM_LAYERNORM,
            cfg[nc++][3] = LNK_NORM_NONE;
        for (int i = 0; i < ds->n; i++)
            cfg[nc][0] = refL, cfg[nc][1] = ds->v[i], cfg[nc][2] = LNK_NORM_LAYERNORM,
            cfg[nc++][3] = LNK_NORM_NONE;
        if (!task && o->variants && Ls->n + ds->n > 0) {
            cfg[nc][0] = refL, cfg[nc][1] = refd, cfg[nc][2] = LNK_NORM_RMSNORM,
            cfg[nc++][3] = LNK_NORM_NONE;
            cfg[nc][0] = refL, cfg[nc][1] = refd, cfg[nc][2] = LNK_NORM_LAYERNORM,
            cfg[nc++][3] = LNK_NORM_LAYERNORM;
        }
        for (int k = 0; k < nc; k++)
            for (int pre = 0; pre < 2; pre++)
                for (int s = 0; s < o->seeds; s++)
                    n = add_point(P, n, (point_t){task ? LNK_TASK_SEQ2SEQ : LNK_TASK_LM, pre,
                                                  cfg[k][2], cfg[k][3], cfg[k][0], cfg[k][1], s});
    }
    *out = P;
    return n;
}

/* ------------------------------------------------------------ data */

typedef struct {
    lnk_batch *chunks;
    int n_chunks, V_src, V_tgt, n_pairs;
    size_t n_scored;
} s2s_data;

static void load_pairs(const opts_t *o, s2s_data *D)
{
    lnk_corpus c;
    CLI_CK(lnk_corpus_read(o->src, o->tgt, &c));
    study_input_read(o->src, &c.src.digest);
    study_input_read(o->tgt, &c.tgt.digest);
    if (o->pairs > 0 && o->pairs < c.src.n_lines)
        c.src.n_lines = c.tgt.n_lines = o->pairs;
    lnk_vocab *vs, *vt;
    CLI_CK(lnk_corpus_vocabs(&c, 0, 1, 0, &vs, &vt));
    lnk_pairs_opts po;
    lnk_pairs_opts_default(&po);
    lnk_pairs p;
    CLI_CK(lnk_pairs_make(&c, vs, vt, &po, &p));
    CLI_CK(lnk_pairs_batches(&p, (size_t)o->max_tokens, &D->chunks, &D->n_chunks));
    D->V_src = lnk_vocab_size(vs);
    D->V_tgt = lnk_vocab_size(vt);
    D->n_pairs = p.n;
    D->n_scored = p.n_scored;
    lnk_pairs_free(&p);
    lnk_vocab_free(vs);
    lnk_vocab_free(vt);
    lnk_corpus_free(&c);
}

static void make_config(lnk_config *c, const opts_t *o, const s2s_data *D, const point_t *p)
{
    lnk_config_default(c);
    c->task = (lnk_task)p->task;
    c->norm_pos = p->pre ? LNK_POS_PRE : LNK_POS_POST;
    c->norm = (lnk_norm_type)p->norm;
    c->qk_norm = (lnk_norm_type)p->qk;
    c->d = p->d;
    c->h = o->h;
    c->L = p->L;
    c->V = o->V;
    if (p->task == LNK_TASK_SEQ2SEQ) {
        c->V = D->V_src;
        c->V_src = D->V_src;
        c->V_tgt = D->V_tgt;
    }
    c->seed = (uint64_t)p->seed;
    CLI_CK(lnk_config_finalize(c));
}

/* ------------------------------------------------------------ blocks */

/* Weight kinds of a layer: the side's sublayers' weight matrices. */
typedef struct {
    const char *side, *sub, *w, *kind;
} wkind;
static const wkind LM_KINDS[] = {
    {"dec", "attn", "wq", "Q"}, {"dec", "attn", "wk", "K"},   {"dec", "attn", "wv", "V"},
    {"dec", "attn", "wo", "O"}, {"dec", "ffn", "w1", "FFN1"}, {"dec", "ffn", "w2", "FFN2"}};
static const wkind S2S_KINDS[] = {
    {"enc", "attn", "wq", "Q"},   {"enc", "attn", "wk", "K"},   {"enc", "attn", "wv", "V"},
    {"enc", "attn", "wo", "O"},   {"enc", "ffn", "w1", "FFN1"}, {"enc", "ffn", "w2", "FFN2"},
    {"dec", "attn", "wq", "Q"},   {"dec", "attn", "wk", "K"},   {"dec", "attn", "wv", "V"},
    {"dec", "attn", "wo", "O"},   {"dec", "xattn", "wq", "XQ"}, {"dec", "xattn", "wk", "XK"},
    {"dec", "xattn", "wv", "XV"}, {"dec", "xattn", "wo", "XO"}, {"dec", "ffn", "w1", "FFN1"},
    {"dec", "ffn", "w2", "FFN2"}};

/* ------------------------------------------------------------ files */

#define NKEY 8
static const char *const KEY[NKEY] = {"task", "norm_pos", "norm", "qk_norm",
                                      "L",    "d",        "seed", "n_params"};

typedef struct {
    out_csv ext, mass, bn, js;
} files_t;

static void open_files(files_t *F, const char *dir, int resume)
{
    const char *he[NKEY + 7], *hm[NKEY + 4], *hb[NKEY + 8], *hj[NKEY + 6];
    for (int i = 0; i < NKEY; i++)
        he[i] = hm[i] = hb[i] = hj[i] = KEY[i];
    const char *e[] = {"operator", "which", "eigenvalue", "residual", "converged", "steps",
                       "scale"};
    const char *m[] = {"operator", "which", "tensor", "mass"};
    const char *b[] = {"block", "side", "layer", "kind", "n", "operator", "frob", "frob_se"};
    const char *j[] = {"block_a", "block_b", "js_distance", "sigma", "js_scaled",
                       "sigma_scaled"};
    memcpy(he + NKEY, e, sizeof e);
    memcpy(hm + NKEY, m, sizeof m);
    memcpy(hb + NKEY, b, sizeof b);
    memcpy(hj + NKEY, j, sizeof j);
    if (!resume) {
        csv_sweep(&F->ext, dir, "extremes.csv", he, NKEY + 7);
        csv_sweep(&F->mass, dir, "mass.csv", hm, NKEY + 4);
        csv_sweep(&F->bn, dir, "blocknorms.csv", hb, NKEY + 8);
        csv_sweep(&F->js, dir, "js.csv", hj, NKEY + 6);
        return;
    }
    char p[1100];
    snprintf(p, sizeof p, "%s/extremes.csv", dir);
    csv_resume(&F->ext, p, he, NKEY + 7, NULL);
    snprintf(p, sizeof p, "%s/mass.csv", dir);
    csv_resume(&F->mass, p, hm, NKEY + 4, NULL);
    snprintf(p, sizeof p, "%s/blocknorms.csv", dir);
    csv_resume(&F->bn, p, hb, NKEY + 8, NULL);
    snprintf(p, sizeof p, "%s/js.csv", dir);
    csv_resume(&F->js, p, hj, NKEY + 6, NULL);
}

/* ------------------------------------------------------------ resuming */

/* A point's key as its rows hold it: task,norm_pos,norm,qk_norm,L,d,seed. */
static void point_key(const point_t *p, char *k, size_t n)
{
    snprintf(k, n, "%s,%s,%s,%s,%d,%d,%d", lnk_task_name((lnk_task)p->task),
             p->pre ? "pre" : "post", lnk_norm_type_name((lnk_norm_type)p->norm),
             lnk_norm_type_name((lnk_norm_type)p->qk), p->L, p->d, p->seed);
}

static void row_key(const study_csvdata *t, size_t r, char *k, size_t n)
{
    k[0] = '\0';
    for (int j = 0; j < NKEY - 1; j++)
        snprintf(k + strlen(k), n - strlen(k), "%s%s", j ? "," : "", study_csvdata_str(t, r, j));
}

typedef struct {
    char (*k)[96];
    size_t n;
} keyset;

static int keyset_has(const keyset *s, const char *k)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->k[i], k))
            return 1;
    return 0;
}

/* The points done: the keys of DIR/js.csv (empty if there is none). */
static void done_points(const char *dir, keyset *s)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/js.csv", dir);
    s->k = NULL;
    s->n = 0;
    if (access(p, F_OK) != 0)
        return;
    study_csvdata t;
    CLI_CK(study_csvdata_read(p, &t));
    s->k = cli_alloc(sizeof *s->k * (t.nrow + 1));
    for (size_t r = 0; r < t.nrow; r++) {
        char k[96];
        row_key(&t, r, k, sizeof k);
        if (!keyset_has(s, k))
            snprintf(s->k[s->n++], sizeof *s->k, "%s", k);
    }
    study_csvdata_free(&t);
}

/* Rank 0: drop from DIR/NAME the rows of points not done (a run killed
 * between its files), rewriting it atomically; then every rank goes on. */
static void drop_partial(const char *dir, const char *name, const keyset *done)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (!study_root() || access(p, F_OK) != 0)
        return;
    study_csvdata t;
    CLI_CK(study_csvdata_read(p, &t));
    size_t drop = 0;
    char k[96];
    for (size_t r = 0; r < t.nrow; r++) {
        row_key(&t, r, k, sizeof k);
        drop += !keyset_has(done, k);
    }
    if (drop) {
        lnk_afile a;
        lnk_csv c;
        CLI_CK(lnk_afile_open(&a, p));
        CLI_CK(lnk_csv_begin(&c, a.f, (const char *const *)t.head, t.ncol));
        for (size_t r = 0; r < t.nrow; r++) {
            row_key(&t, r, k, sizeof k);
            if (!keyset_has(done, k))
                continue;
            for (int j = 0; j < t.ncol; j++)
                CLI_CK(lnk_csv_str(&c, study_csvdata_str(&t, r, j)));
            CLI_CK(lnk_csv_end_row(&c));
        }
        lnk_csv_free(&c);
        CLI_CK(lnk_afile_commit(&a));
        fprintf(stderr, "anatomy: %s: dropped %zu rows of points not in js.csv (a run cut off "
                "between its files); they are computed again\n", p, drop);
    }
    study_csvdata_free(&t);
}

/* The sidecars' own keys: the settings of this run and its counts. */
static lnk_meta *settings(const opts_t *o, int np, const char *s2s_data, long computed,
                          long skipped)
{
    lnk_meta *m = lnk_meta_alloc();
    if (!m)
        cli_die_lib();
    char lm[160];
    snprintf(lm, sizeof lm, "synthetic lm batch B = %d, T = %d, V = %d, ids uniform in [4, V), "
             "batch seed 1234", o->B, o->T, o->V);
    int lm_ref[2] = {o->lm_refL, o->lm_refd}, s2s_ref[2] = {o->s2s_refL, o->s2s_refd};
    lnk_meta_str(m, "study", "anatomy");
    lnk_meta_int(m, "points", np);
    lnk_meta_int(m, "seeds", o->seeds);
    lnk_meta_int(m, "h", o->h);
    lnk_meta_str(m, "lm_data", lm);
    lnk_meta_str(m, "s2s_data", s2s_data);
    lnk_meta_ints(m, "lm_ref", lm_ref, 2);
    lnk_meta_ints(m, "s2s_ref", s2s_ref, 2);
    lnk_meta_real(m, "tol", o->tol);
    lnk_meta_int(m, "eig_steps", o->eig_steps);
    lnk_meta_int(m, "probes", o->probes);
    lnk_meta_int(m, "slq_runs", o->runs);
    lnk_meta_int(m, "slq_steps", o->steps);
    lnk_meta_real(m, "sigma_fraction", o->sigma_frac);
    lnk_meta_int(m, "rng_seed", (long long)o->rng);
    lnk_meta_str(m, "js_log", "natural");
    lnk_meta_str(m, "varied", "task, norm_pos, norm, qk_norm, L, d, seed (the key columns)");
    lnk_meta_bool(m, "resumed", o->resume);
    lnk_meta_int(m, "points_computed_this_run", computed);
    lnk_meta_int(m, "points_skipped_this_run", skipped);
    return m;
}

/* The settings of this run (extra, the sidecars' keys) must be those of
 * DIR/extremes.meta.json where the CSVs exist. */
static void check_settings(const char *dir, const lnk_meta *extra)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/js.csv", dir);
    if (access(p, F_OK) != 0)
        return;
    json_t *old = study_sidecar(dir, "extremes");
    CLI_CK(lnk_meta_status(extra));
    const json_t *now = lnk_meta_object(extra);
    static const char *const keys[] = {"h", "lm_data", "s2s_data", "tol", "eig_steps", "probes",
                                       "slq_runs", "slq_steps", "sigma_fraction", "rng_seed",
                                       "lm_ref", "s2s_ref"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *a = json_object_get(old, keys[i]), *b = json_object_get(now, keys[i]);
        if (!a || !json_equal(a, b)) {
            char *ta = a ? json_dumps(a, JSON_ENCODE_ANY) : NULL,
                 *tb = json_dumps(b, JSON_ENCODE_ANY);
            cli_die("--resume: %s/extremes.meta.json has %s = %s, this run %s; resume with the "
                 "same settings or choose another --out", dir, keys[i], ta ? ta : "(none)",
                 tb ? tb : "?");
        }
    }
    json_decref(old);
}

static void key_row(lnk_csv *c, const point_t *p, size_t n_params)
{
    CLI_CK(lnk_csv_str(c, lnk_task_name((lnk_task)p->task)));
    CLI_CK(lnk_csv_str(c, p->pre ? "pre" : "post"));
    CLI_CK(lnk_csv_str(c, lnk_norm_type_name((lnk_norm_type)p->norm)));
    CLI_CK(lnk_csv_str(c, lnk_norm_type_name((lnk_norm_type)p->qk)));
    CLI_CK(lnk_csv_int(c, p->L));
    CLI_CK(lnk_csv_int(c, p->d));
    CLI_CK(lnk_csv_int(c, p->seed));
    CLI_CK(lnk_csv_int(c, (long long)n_params));
}

/* ------------------------------------------------------------ one point */

static const lnk_op_kind OPS[3] = {LNK_OP_HESSIAN, LNK_OP_GGN, LNK_OP_FUNCTIONAL};

/* The extremes of H, G and F and their eigenvectors' mass per tensor. */
static void point_extremes(const opts_t *o, const point_t *p, lnk_hessian *h, size_t np, files_t *F,
                           const lnk_layout *lay)
{
    /* extremes of H, G, F and their eigenvectors' mass per tensor */
    for (int k = 0; k < 3; k++) {
        CLI_CK(lnk_hessian_set_kind(h, OPS[k]));
        lnk_operator op = lnk_hessian_operator(h);
        lnk_eigs_opts eo;
        lnk_eigs_opts_default(&eo);
        eo.k_top = eo.k_bottom = 1;
        eo.tol = o->tol;
        eo.max_steps = o->eig_steps;
        eo.vectors = 1;
        eo.seed = o->rng;
        lnk_eigs_result r;
        CLI_CK(lnk_eigs(&op, &eo, &r));
        const char *opn = lnk_op_kind_name(OPS[k]);
        for (int i = 0; i < r.k; i++) {
            const char *which = i < r.n_top ? "top" : "bottom";
            lnk_csv *e = &F->ext.c;
            key_row(e, p, np);
            CLI_CK(lnk_csv_str(e, opn));
            CLI_CK(lnk_csv_str(e, which));
            CLI_CK(lnk_csv_double(e, r.value[i]));
            CLI_CK(lnk_csv_double(e, r.residual[i]));
            CLI_CK(lnk_csv_int(e, r.converged[i]));
            CLI_CK(lnk_csv_int(e, r.steps));
            CLI_CK(lnk_csv_double(e, r.scale));
            CLI_CK(lnk_csv_end_row(e));
            const double *v = r.vectors + (size_t)i * np;
            for (int t = 0; t < lay->n_tensors; t++) {
                double s = 0;
                for (size_t q = 0; q < lay->t[t].size; q++)
                    s += v[lay->t[t].offset + q] * v[lay->t[t].offset + q];
                lnk_csv *mc = &F->mass.c;
                key_row(mc, p, np);
                CLI_CK(lnk_csv_str(mc, opn));
                CLI_CK(lnk_csv_str(mc, which));
                CLI_CK(lnk_csv_str(mc, lay->t[t].name));
                CLI_CK(lnk_csv_double(mc, s));
                CLI_CK(lnk_csv_end_row(mc));
            }
        }
        lnk_eigs_result_free(&r);
    }

}

/* ||A_bb||_F of every layer's weight matrices, A = H, G, F. */
static void point_blocknorms(const opts_t *o, const point_t *p, lnk_hessian *h, size_t np, files_t *F)
{
    int s2s = p->task == LNK_TASK_SEQ2SEQ;
    const wkind *K = s2s ? S2S_KINDS : LM_KINDS;
    int nk = s2s ? (int)(sizeof S2S_KINDS / sizeof *K) : (int)(sizeof LM_KINDS / sizeof *K);
    /* ||A_bb||_F of every layer's weight matrices, A = H, G, F */
    for (int k = 0; k < nk; k++)
        for (int l = 0; l < p->L; l++) {
            char pat[64];
            snprintf(pat, sizeof pat, "%s.%d.%s.%s", K[k].side, l, K[k].sub, K[k].w);
            CLI_CK(lnk_hessian_set_block(h, pat));
            for (int q = 0; q < 3; q++) {
                CLI_CK(lnk_hessian_set_kind(h, OPS[q]));
                lnk_operator op = lnk_hessian_operator(h);
                lnk_frob_result fr;
                CLI_CK(lnk_frobenius(&op, o->probes, o->rng, &fr));
                lnk_csv *bc = &F->bn.c;
                key_row(bc, p, np);
                CLI_CK(lnk_csv_str(bc, pat));
                CLI_CK(lnk_csv_str(bc, K[k].side));
                CLI_CK(lnk_csv_int(bc, l));
                CLI_CK(lnk_csv_str(bc, K[k].kind));
                CLI_CK(lnk_csv_int(bc, (long long)op.n));
                CLI_CK(lnk_csv_str(bc, lnk_op_kind_name(OPS[q])));
                CLI_CK(lnk_csv_double(bc, fr.frob));
                CLI_CK(lnk_csv_double(bc, fr.frob_se));
                CLI_CK(lnk_csv_end_row(bc));
            }
        }

}

/* SLQ of the Hessian's kind blocks (all layers of a side together), and the
 * Jensen-Shannon distances between their densities. */
static void point_js(const opts_t *o, const point_t *p, lnk_hessian *h, size_t np, files_t *F)
{
    int s2s = p->task == LNK_TASK_SEQ2SEQ;
    const wkind *K = s2s ? S2S_KINDS : LM_KINDS;
    int nk = s2s ? (int)(sizeof S2S_KINDS / sizeof *K) : (int)(sizeof LM_KINDS / sizeof *K);
    int nj = nk + (s2s ? 3 : 2);
    char (*jn)[64] = cli_alloc(sizeof *jn * (size_t)nj);
    lnk_slq_result *sr = cli_alloc(sizeof *sr * (size_t)nj);
    int a = 0;
    snprintf(jn[a++], 64, s2s ? "src_emb" : "tgt_emb");
    if (s2s)
        snprintf(jn[a++], 64, "tgt_emb");
    for (int k = 0; k < nk; k++)
        snprintf(jn[a++], 64, "%s.*.%s.%s", K[k].side, K[k].sub, K[k].w);
    snprintf(jn[a++], 64, "out.w");
    CLI_CK(lnk_hessian_set_kind(h, LNK_OP_HESSIAN));
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < nj; i++) {
        CLI_CK(lnk_hessian_set_block(h, jn[i]));
        lnk_operator op = lnk_hessian_operator(h);
        lnk_slq_opts so;
        lnk_slq_opts_default(&so);
        so.runs = o->runs;
        so.steps = o->steps;
        so.seed = o->rng;
        CLI_CK(lnk_slq(&op, &so, &sr[i]));
        lo = fmin(lo, sr[i].node_min);
        hi = fmax(hi, sr[i].node_max);
    }
    /* the distances between the densities as they are (one kernel, sigma a
     * fraction of the common node range), then between the densities of the
     * spectra each divided by its block's largest |node| (shapes only, in
     * [-1, 1]; Zhang et al. compare block spectra normalised by their scale) */
    double *js = cli_alloc(sizeof(double) * 2 * (size_t)nj * (size_t)nj), sig[2];
    const lnk_slq_result **rp = cli_alloc(sizeof *rp * (size_t)nj);
    for (int i = 0; i < nj; i++)
        rp[i] = &sr[i];
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            lo = INFINITY, hi = -INFINITY;
            for (int i = 0; i < nj; i++) {
                double sc = fmax(fabs(sr[i].node_min), fabs(sr[i].node_max));
                if (!(sc > 0))
                    cli_die("block %s: every SLQ node is 0", jn[i]);
                for (int q = 0; q < sr[i].offset[sr[i].runs]; q++)
                    sr[i].node[q] /= sc;
                sr[i].node_min /= sc;
                sr[i].node_max /= sc;
                lo = fmin(lo, sr[i].node_min);
                hi = fmax(hi, sr[i].node_max);
            }
        }
        double *t;
        size_t npts;
        CLI_CK(lnk_sigma_from_fraction(o->sigma_frac, lo, hi, &sig[pass]));
        CLI_CK(lnk_slq_grid_common(rp, nj, sig[pass], LNK_SLQ_PAD, 4, 5000000, &t, &npts));
        double *phi = cli_alloc(sizeof(double) * npts * (size_t)nj);
        for (int i = 0; i < nj; i++)
            CLI_CK(lnk_slq_density(&sr[i], sig[pass], t, npts, phi + (size_t)i * npts));
        for (int i = 0; i < nj; i++)
            for (int j = i + 1; j < nj; j++)
                CLI_CK(lnk_js_distance(t, phi + (size_t)i * npts, phi + (size_t)j * npts, npts,
                                   &js[((size_t)pass * nj + i) * nj + j]));
        free(phi);
        free(t);
    }
    for (int i = 0; i < nj; i++)
        for (int j = i + 1; j < nj; j++) {
            lnk_csv *jc = &F->js.c;
            key_row(jc, p, np);
            CLI_CK(lnk_csv_str(jc, jn[i]));
            CLI_CK(lnk_csv_str(jc, jn[j]));
            CLI_CK(lnk_csv_double(jc, js[(size_t)i * nj + j]));
            CLI_CK(lnk_csv_double(jc, sig[0]));
            CLI_CK(lnk_csv_double(jc, js[((size_t)nj + i) * nj + j]));
            CLI_CK(lnk_csv_double(jc, sig[1]));
            CLI_CK(lnk_csv_end_row(jc));
        }
    for (int i = 0; i < nj; i++)
        lnk_slq_result_free(&sr[i]);
    free(sr);
    free(rp);
    free(jn);
    free(js);
}

static void run_point(const opts_t *o, const point_t *p, const s2s_data *D, files_t *F)
{
    lnk_config c;
    make_config(&c, o, D, p);
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        cli_die_lib();
    size_t np = lnk_model_n_params(m);
    const lnk_layout *lay = lnk_model_layout(m);
    double *th = cli_alloc(sizeof(double) * np);
    CLI_CK(lnk_model_init_params(m, th));
    lnk_batch b = {0};
    lnk_dataset ds;
    if (p->task == LNK_TASK_LM) {
        CLI_CK(lnk_batch_synthetic(m, o->B, o->T, 1234, &b));
        ds = (lnk_dataset){&b, 1, 1, 0, lnk_batch_n_scored(m, &b), NULL};
    } else
        ds = (lnk_dataset){D->chunks, D->n_chunks, D->n_chunks, 0, D->n_scored, NULL};
    lnk_hessian *h = lnk_hessian_alloc_dataset(m, th, &ds, NULL);
    if (!h)
        cli_die_lib();

    point_extremes(o, p, h, np, F, lay);
    point_blocknorms(o, p, h, np, F);
    point_js(o, p, h, np, F);
    lnk_hessian_free(h);
    if (p->task == LNK_TASK_LM)
        lnk_batch_free(&b);
    free(th);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "anatomy");
    args_t a;
    cli_parse(&cmd, &a, argc, argv);
    cli_setup_done();
    opts_t o = a.o;
    o.quiet = cli_quiet;
    o.variants = !a.no_variants;
    copy_list("lm-L", &a.lm_L, &o.lm_L);
    copy_list("lm-d", &a.lm_d, &o.lm_d);
    copy_list("s2s-L", &a.s2s_L, &o.s2s_L);
    copy_list("s2s-d", &a.s2s_d, &o.s2s_d);
    point_t *P;
    int np = make_points(&o, &P);
    if (np == 0)
        cli_die("no points: every sweep list is empty");
    for (int i = 0; i < np; i++)
        if (P[i].d % o.h || P[i].d % 2)
            cli_die("d = %d must be even and a multiple of --h %d", P[i].d, o.h);
    s2s_data D = {0};
    int any_s2s = 0;
    for (int i = 0; i < np; i++)
        any_s2s |= P[i].task == LNK_TASK_SEQ2SEQ;
    if (any_s2s)
        load_pairs(&o, &D);
    char start[32];
    lnk_iso_time(start, sizeof start);
    double t0 = lnk_now();
    lnk_config base;
    point_t p0 = P[0];
    make_config(&base, &o, &D, &p0);
    char s2s_data[1200] = "none (no seq2seq points)";
    if (any_s2s)
        snprintf(s2s_data, sizeof s2s_data, "first %d pairs of %s / %s (%d kept, V_src %d, "
                 "V_tgt %d), one chunk", o.pairs, o.src, o.tgt, D.n_pairs, D.V_src, D.V_tgt);
    /* the points still to do (all of them without --resume) */
    keyset done = {NULL, 0};
    make_dir(o.out);
    if (o.resume) {
        done_points(o.out, &done);
        drop_partial(o.out, "extremes.csv", &done);
        drop_partial(o.out, "mass.csv", &done);
        drop_partial(o.out, "blocknorms.csv", &done);
        CLI_CK(lnk_comm_barrier());
    }
    long *todo = cli_alloc(sizeof(long) * (size_t)np);
    long ntodo = 0;
    for (long i = 0; i < np; i++) {
        char k[96];
        point_key(&P[i], k, sizeof k);
        if (!o.resume || !keyset_has(&done, k))
            todo[ntodo++] = i;
    }
    lnk_meta *extra = settings(&o, np, s2s_data, 0, np - ntodo);
    if (o.resume)
        check_settings(o.out, extra);
    files_t F;
    open_files(&F, o.out, o.resume);
    if (o.resume && !o.quiet && study_root())
        fprintf(stderr, "anatomy: resuming %s: %ld of %d points done, %ld to compute\n", o.out,
                (long)np - ntodo, np, ntodo);
    for (long j = 0; j < ntodo; j++) {
        long i = todo[j];
        if (study_mine(j)) {
            csv_point(&F.ext, j);
            csv_point(&F.mass, j);
            csv_point(&F.bn, j);
            csv_point(&F.js, j);
            double ts = lnk_now();
            run_point(&o, &P[i], &D, &F);
            if (!o.quiet && study_root())
                fprintf(stderr, "anatomy: %ld/%d %s %s %s qk=%s L=%d d=%d seed %d: %.1f s (%.0f s "
                        "so far)\n", i + 1, np, lnk_task_name((lnk_task)P[i].task),
                        P[i].pre ? "pre" : "post", lnk_norm_type_name((lnk_norm_type)P[i].norm),
                        lnk_norm_type_name((lnk_norm_type)P[i].qk), P[i].L, P[i].d, P[i].seed,
                        lnk_now() - ts, lnk_now() - t0);
        }
        /* --resume: a checkpoint after every round of P points (js.csv last:
         * a point is done when its rows are there) */
        if (o.resume && (j + 1) % study_ranks() == 0 && j + 1 < ntodo) {
            lnk_meta_free(extra);
            extra = settings(&o, np, s2s_data, j + 1, np - ntodo);
            csv_flush(&F.ext, &base, extra, start, t0);
            csv_flush(&F.mass, &base, extra, start, t0);
            csv_flush(&F.bn, &base, extra, start, t0);
            csv_flush(&F.js, &base, extra, start, t0);
        }
    }
    lnk_meta_free(extra);
    extra = settings(&o, np, s2s_data, ntodo, np - ntodo);
    csv_close(&F.ext, &base, extra, start, t0);
    csv_close(&F.mass, &base, extra, start, t0);
    csv_close(&F.bn, &base, extra, start, t0);
    csv_close(&F.js, &base, extra, start, t0);
    lnk_meta_free(extra);
    if (!o.quiet && study_root())
        fprintf(stderr, "anatomy: %ld points computed, %ld skipped, in %.0f s -> "
                "%s/{extremes,mass,blocknorms,js}.csv\n", ntodo, (long)np - ntodo,
                lnk_now() - t0, o.out);
    free(todo);
    free(done.k);
    lnk_config_clear(&base);
    if (D.chunks)
        lnk_batches_free(D.chunks, D.n_chunks);
    free(P);
    return 0;
}
