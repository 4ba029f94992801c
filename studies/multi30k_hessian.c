/* multi30k_hessian: the reference experiment of issue 6 — Post-LN vs Pre-LN
 * encoder-decoder transformers at Xavier initialisation on Multi30k
 * (German -> English validation pairs): the Hessian of the mean loss over the
 * data set, and Xiong et al.'s Figure 3 gradient norms on the same data.
 *
 * Data.  --src/--tgt (default data/multi30k/val.{de,en}, relative to
 * the repository), the first --sentences pairs (0 = all 1014), vocabularies
 * built from those pairs (separate by default; --joint-vocab), rows as in
 * include/lnkit/corpus.h (src = source tokens, tgt = <bos> y <eos>), cut into
 * length-sorted chunks of at most --max-tokens padded tokens: the data-set
 * loss, gradient and H v are the exact token-weighted means over the chunks.
 *
 * Spectral part, for norm_pos in {post, pre} and seeds 0..S-1 (task seq2seq,
 * L-L, LayerNorm, Xavier; the same data for all):
 *   eigs.csv      norm_pos,seed,which,index,eigenvalue,residual,converged
 *   trace.csv     norm_pos,seed,method,probes,trace,stderr
 *   blocks.csv    norm_pos,seed,block,side,layer,kind,n_params,top_eigenvalue,residual,
 *                 converged,steps
 *   slq_nodes.csv norm_pos,seed,run,index,node,weight
 * Blocks: src_emb, tgt_emb, out.w, and per layer l enc.l.attn, enc.l.ffn,
 * dec.l.attn (causal self-attention), dec.l.xattn (cross-attention), dec.l.ffn.
 *
 * Gradient part (Xiong et al. 2020, Figure 3), for every depth of --depths
 * (L-L models), norm_pos and seeds 0..G-1: the data-set gradient at init and
 *   grad.csv      norm_pos,seed,L,side,layer,tensor,grad_norm   (ffn.w1, ffn.w2 of every
 *                 encoder and decoder layer; Figure 3 a/b = the rows of L = --L, c/d =
 *                 the decoder's last layer w2 over L)
 *   jobs.csv      job,kind,norm_pos,seed,L,loss,hvp,seconds   (every job: its loss at init,
 *                 H v products and time)
 * These are the raw rows (under MPI each rank writes its jobs' rows, gathered
 * in job order), every CSV with its .meta.json; the summary is made from them
 * alone: python3 -m studies.summary multi30k DIR.  The (variant, seed) jobs run
 * in --jobs threads (one BLAS thread each); results do not depend on the
 * scheduling.
 *
 * Size.  The reference experiment (6-6, d = 512, h = 8, d_ff = 2048, all 1014
 * pairs) costs ~13 TFLOP per H v, minutes per product here, so the defaults
 * are a reduced configuration that runs in ~15 minutes on 2 cores: d = 32,
 * h = 4, d_ff = 64 (= 2d, the ratio of Xiong et al.'s IWSLT model), 6-6, the
 * first 200 pairs, 3 seeds, top/bottom-3 eigenvalues (<= 40 Lanczos steps),
 * trace with 30 probes, SLQ 4 x 40, block top eigenvalues with <= 10 Lanczos
 * steps (lower bounds; residuals in blocks.csv).  Every one of these is a
 * flag (bench/bench_multi30k measures the full-size cost per H v). */
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lnkit/corpus.h"
#include "lnkit/lnkit.h"
#include "kit/kit.h"
#include "kit/spectral.h"

typedef struct {
    const char *out, *src, *tgt, *depths_str;
    int d, h, d_ff, L, sentences, min_count, max_vocab, joint, max_len, max_tokens;
    int seeds, grad_seeds, k, eig_steps, probes, runs, steps, block_steps, jobs, quiet;
    int do_spec, do_grad;
    double eig_tol, block_tol;
    int depths[32], n_depths;
} opts_t;

static void usage(void)
{
    printf(
        "usage: multi30k_hessian [options]\n"
        "  --src F --tgt F   parallel text   (data/multi30k/val.de, val.en)\n"
        "  --out DIR         output directory                         (results/multi30k)\n"
        "  --sentences N     first N pairs, 0 = all                   (200)\n"
        "  --min-count N     vocabulary minimum count                 (1)\n"
        "  --max-vocab N     vocabulary size limit per side, 0 = none (0)\n"
        "  --joint-vocab     one vocabulary for both sides\n"
        "  --max-len N       drop pairs with a side longer, 0 = none  (0)\n"
        "  --max-tokens N    padded tokens per chunk                  (512)\n"
        "  --d N --h N --d-ff N --L N   model (L-L seq2seq, LayerNorm, Xavier) (32, 4, 64, 6)\n"
        "  --seeds N         initialisation seeds 0..N-1 (spectra)    (3)\n"
        "  --k N             top-k and bottom-k eigenvalues           (3)\n"
        "  --eig-steps M     Lanczos step limit for them              (40)\n"
        "  --eig-tol T       their relative residual tolerance        (1e-6)\n"
        "  --probes N        Hutchinson probes for the trace          (30)\n"
        "  --runs N --steps M           SLQ start vectors and steps   (4, 40)\n"
        "  --block-steps M   Lanczos step limit, block top eigenvalue (10)\n"
        "  --block-tol T     its relative residual tolerance          (1e-3)\n"
        "  --depths LIST     L of the last-W2 sweep (Figure 3 c/d)    (6,8,10,12,14)\n"
        "  --grad-seeds N    seeds for the gradient norms             (6)\n"
        "  --parts LIST      spectrum,grad                            (spectrum,grad)\n"
        "  --jobs N          worker threads (one BLAS thread each)    (2)\n"
        "  --quiet           no progress on stderr\n"
        "The summary: python3 -m studies.summary multi30k OUT\n");
}

static double arg_pos(const char *name, const char *s, double min)
{
    char *e;
    double v = strtod(s, &e);
    if (*s == '\0' || *e || !isfinite(v) || !(v > min))
        fail("--%s: expected a number > %g, got '%s'", name, min, s);
    return v;
}

/* ------------------------------------------------------------ data */

typedef struct {
    lnk_batch *chunks;
    int n_chunks, V_src, V_tgt, n_pairs, n_dropped;
    size_t n_scored, src_tokens, tgt_tokens, padded, max_chunk;
} data_t;

/* The data set of every job: a view of D's chunks (borrowed; each rank runs
 * whole jobs, so no process group). */
static lnk_dataset dataset_of(const data_t *D)
{
    return (lnk_dataset){D->chunks, D->n_chunks, D->n_chunks, 0, D->n_scored, NULL};
}

static void load_data(const opts_t *o, data_t *D)
{
    lnk_corpus c;
    CK(lnk_corpus_read(o->src, o->tgt, &c));
    study_input_read(o->src, &c.src.digest);
    study_input_read(o->tgt, &c.tgt.digest);
    if (o->sentences > 0 && o->sentences < c.src.n_lines) /* a prefix: the texts are freed by */
        c.src.n_lines = c.tgt.n_lines = o->sentences;     /* their pools, not per line */
    lnk_vocab *vs, *vt;
    CK(lnk_corpus_vocabs(&c, o->joint, o->min_count, o->max_vocab, &vs, &vt));
    lnk_pairs_opts po;
    lnk_pairs_opts_default(&po);
    po.max_len = o->max_len;
    lnk_pairs p;
    CK(lnk_pairs_make(&c, vs, vt, &po, &p));
    CK(lnk_pairs_batches(&p, (size_t)o->max_tokens, &D->chunks, &D->n_chunks));
    D->V_src = lnk_vocab_size(vs);
    D->V_tgt = lnk_vocab_size(vt);
    D->n_pairs = p.n;
    D->n_dropped = p.n_dropped;
    D->n_scored = p.n_scored;
    D->src_tokens = p.src_tokens;
    D->tgt_tokens = p.tgt_tokens;
    D->padded = D->max_chunk = 0;
    for (int i = 0; i < D->n_chunks; i++) {
        size_t s = lnk_pairs_padded(&D->chunks[i]);
        D->padded += s;
        D->max_chunk = s > D->max_chunk ? s : D->max_chunk;
    }
    lnk_pairs_free(&p);
    lnk_vocab_free(vs);
    lnk_vocab_free(vt);
    lnk_corpus_free(&c);
}

static void make_config(lnk_config *c, const opts_t *o, const data_t *D, int pre, int L,
                        int seed)
{
    lnk_config_default(c);
    c->task = LNK_TASK_SEQ2SEQ;
    c->norm_pos = pre ? LNK_POS_PRE : LNK_POS_POST;
    c->d = o->d;
    c->h = o->h;
    c->d_ff = o->d_ff;
    c->L = L;
    c->V = D->V_src; /* the base key, unused here: recorded as the source vocabulary, not 32 */
    c->V_src = D->V_src;
    c->V_tgt = D->V_tgt;
    c->seed = (uint64_t)seed;
    CK(lnk_config_finalize(c));
}

/* ------------------------------------------------------------ blocks */

typedef spec_block block_t;

static int make_blocks(int L, block_t *b)
{
    int n = 0;
    b[n++] = (block_t){"src_emb", "enc", "embedding", -1};
    for (int l = 0; l < L; l++) {
        b[n] = (block_t){"", "enc", "self_attn", l};
        snprintf(b[n++].pat, 64, "enc.%d.attn.*", l);
        b[n] = (block_t){"", "enc", "ffn", l};
        snprintf(b[n++].pat, 64, "enc.%d.ffn.*", l);
    }
    b[n++] = (block_t){"tgt_emb", "dec", "embedding", -1};
    for (int l = 0; l < L; l++) {
        b[n] = (block_t){"", "dec", "self_attn", l};
        snprintf(b[n++].pat, 64, "dec.%d.attn.*", l);
        b[n] = (block_t){"", "dec", "cross_attn", l};
        snprintf(b[n++].pat, 64, "dec.%d.xattn.*", l);
        b[n] = (block_t){"", "dec", "ffn", l};
        snprintf(b[n++].pat, 64, "dec.%d.ffn.*", l);
    }
    b[n++] = (block_t){"out.w", "dec", "output", L};
    return n;
}

/* ------------------------------------------------------------ jobs */

typedef struct {
    int pre, seed;
    double loss;
    spec_point P;   /* eigs, trace, SLQ, blocks (kit/spectral.h) */
    double sec;
} spec_job;

typedef struct {
    int pre, seed, L;
    double loss;
    double *w1, *w2;   /* [2L]: encoder layers 0..L-1, then decoder layers */
    double sec;
} grad_job;

typedef struct {
    const opts_t *o;
    const data_t *D;
    int nblk;
    const block_t *blk;
    spec_job *spec;
    int n_spec;
    grad_job *grad;
    int n_grad;
    int next;
    pthread_mutex_t mu;
    double t0;
} sched_t;

/* The jobs' results and the job arrays. */
static void sched_free(sched_t *S)
{
    for (int j = 0; j < S->n_spec; j++)
        spec_point_free(&S->spec[j].P);
    for (int j = 0; j < S->n_grad; j++) {
        free(S->grad[j].w1);
        free(S->grad[j].w2);
    }
    free(S->spec);
    free(S->grad);
}

static void run_spec(sched_t *S, spec_job *J)
{
    const opts_t *o = S->o;
    const data_t *D = S->D;
    double ts = lnk_now();
    lnk_config c;
    make_config(&c, o, D, J->pre, o->L, J->seed);
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        die();
    double *th = malloc(sizeof(double) * lnk_model_n_params(m));
    CK(lnk_model_init_params(m, th));
    lnk_dataset ds = dataset_of(D);
    CK(lnk_dataset_loss(m, th, &ds, &J->loss, NULL));
    spec_opts so = {o->k, o->eig_tol, o->eig_steps, o->probes, o->runs, o->steps, o->block_tol,
                    o->block_steps};
    spec_run(m, th, &ds, &so, S->blk, S->nblk, (uint64_t)J->seed, &J->P);
    J->sec = lnk_now() - ts;
    if (!o->quiet && study_root())
        fprintf(stderr,
                "multi30k_hessian: %s seed %d: loss %.4f top %.5g bottom %.5g trace %.5g; %ld H v "
                "in %.0f s (eigs %.0f, trace %.0f, slq %.0f, blocks %.0f; %.2f s/Hv); %.0f s so "
                "far\n",
                J->pre ? "pre " : "post", J->seed, J->loss,
                J->P.er.n_top ? J->P.er.value[0] : NAN,
                J->P.er.n_bottom ? J->P.er.value[J->P.er.n_top] : NAN, J->P.tr.trace, J->P.hvp,
                J->sec,
                J->P.sec_eigs, J->P.sec_trace, J->P.sec_slq, J->P.sec_blocks, J->sec / J->P.hvp,
                lnk_now() - S->t0);
    free(th);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

static void run_grad(sched_t *S, grad_job *J)
{
    const opts_t *o = S->o;
    double ts = lnk_now();
    lnk_config c;
    make_config(&c, o, S->D, J->pre, J->L, J->seed);
    lnk_model *m = lnk_model_alloc(&c);
    if (!m)
        die();
    size_t n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * n), *g = malloc(sizeof(double) * n);
    CK(lnk_model_init_params(m, th));
    lnk_dataset ds = dataset_of(S->D);
    CK(lnk_dataset_loss(m, th, &ds, &J->loss, g));
    const lnk_layout *lay = lnk_model_layout(m);
    J->w1 = malloc(sizeof(double) * 2 * J->L);
    J->w2 = malloc(sizeof(double) * 2 * J->L);
    for (int s = 0; s < 2; s++)
        for (int l = 0; l < J->L; l++) {
            char nm[64];
            snprintf(nm, sizeof nm, "%s.%d.ffn.w1", s ? "dec" : "enc", l);
            J->w1[s * J->L + l] = lnk_tensor_norm(m, g, lnk_layout_find(lay, nm));
            snprintf(nm, sizeof nm, "%s.%d.ffn.w2", s ? "dec" : "enc", l);
            J->w2[s * J->L + l] = lnk_tensor_norm(m, g, lnk_layout_find(lay, nm));
        }
    J->sec = lnk_now() - ts;
    if (!o->quiet && study_root())
        fprintf(stderr, "multi30k_hessian: grad %d-%d %s seed %d: loss %.4f, last W2 %.4g (%.1f s)\n",
                J->L, J->L, J->pre ? "pre " : "post", J->seed, J->loss, J->w2[2 * J->L - 1],
                J->sec);
    free(th);
    free(g);
    lnk_model_free(m);
    lnk_config_clear(&c);
}

static void *worker(void *arg)
{
    sched_t *S = arg;
    lnk_set_blas_threads(1);
    for (;;) {
        pthread_mutex_lock(&S->mu);
        int j = S->next++;
        pthread_mutex_unlock(&S->mu);
        if (j < S->n_spec + S->n_grad && !study_mine(j))
            continue; /* another rank's job (MPI) */
        if (j < S->n_spec)
            run_spec(S, &S->spec[j]);
        else if (j < S->n_spec + S->n_grad)
            run_grad(S, &S->grad[j - S->n_spec]);
        else
            return NULL;
    }
}

static const char *pname(int pre) { return pre ? "pre" : "post"; }

/* Collective: every rank writes the raw rows of its own jobs (job j ran on
 * rank j % P) as the points of sweep CSVs, gathered to rank 0 in job order:
 * eigs, trace, blocks, slq_nodes (the spectral jobs), grad.csv (the gradient
 * jobs) and jobs.csv (each job's loss, products and time). */
static void write_rows(const opts_t *o, sched_t *S, const lnk_config *base,
                       const lnk_meta *extra, const char *start, double t0)
{
    spec_files F;
    if (o->do_spec)
        spec_files_open(&F, o->out, 1, 1);
    static const char *const hg[] = {"norm_pos", "seed", "L", "side", "layer", "tensor",
                                     "grad_norm"};
    static const char *const hj[] = {"job", "kind", "norm_pos", "seed", "L", "loss", "hvp",
                                     "seconds"};
    out_csv fg, fj;
    if (o->do_grad)
        csv_sweep(&fg, o->out, "grad.csv", hg, 7);
    csv_sweep(&fj, o->out, "jobs.csv", hj, 8);
    for (int j = 0; j < S->n_spec + S->n_grad; j++) {
        if (!study_mine(j))
            continue;
        csv_point(&fj, j);
        CK(lnk_csv_int(&fj.c, j));
        if (j < S->n_spec) {
            spec_job *J = &S->spec[j];
            spec_files_point(&F, j);
            spec_rows(&F, pname(J->pre), J->seed, &J->P, S->blk, S->nblk);
            CK(lnk_csv_str(&fj.c, "spectrum"));
            CK(lnk_csv_str(&fj.c, pname(J->pre)));
            CK(lnk_csv_int(&fj.c, J->seed));
            CK(lnk_csv_int(&fj.c, o->L));
            CK(lnk_csv_double(&fj.c, J->loss));
            CK(lnk_csv_int(&fj.c, J->P.hvp));
            CK(lnk_csv_double(&fj.c, J->sec));
        } else {
            grad_job *J = &S->grad[j - S->n_spec];
            csv_point(&fg, j);
            for (int s = 0; s < 2; s++)
                for (int l = 0; l < J->L; l++)
                    for (int w = 0; w < 2; w++) {
                        CK(lnk_csv_str(&fg.c, pname(J->pre)));
                        CK(lnk_csv_int(&fg.c, J->seed));
                        CK(lnk_csv_int(&fg.c, J->L));
                        CK(lnk_csv_str(&fg.c, s ? "dec" : "enc"));
                        CK(lnk_csv_int(&fg.c, l));
                        CK(lnk_csv_str(&fg.c, w ? "ffn.w2" : "ffn.w1"));
                        CK(lnk_csv_double(&fg.c, (w ? J->w2 : J->w1)[s * J->L + l]));
                        CK(lnk_csv_end_row(&fg.c));
                    }
            CK(lnk_csv_str(&fj.c, "grad"));
            CK(lnk_csv_str(&fj.c, pname(J->pre)));
            CK(lnk_csv_int(&fj.c, J->seed));
            CK(lnk_csv_int(&fj.c, J->L));
            CK(lnk_csv_double(&fj.c, J->loss));
            CK(lnk_csv_int(&fj.c, 0));
            CK(lnk_csv_double(&fj.c, J->sec));
        }
        CK(lnk_csv_end_row(&fj.c));
    }
    if (o->do_spec)
        spec_files_close(&F, base, extra, start, t0);
    if (o->do_grad)
        csv_close(&fg, base, extra, start, t0);
    csv_close(&fj, base, extra, start, t0);
}

static void parse_depths(opts_t *o, const char *s);

/* The jobs of a run with options o, in the order they are numbered (job j
 * runs on rank j % P): the spectra (pre, seed), then the gradient norms of
 * the --L model and of the other depths (pre, seed). */
static void make_jobs(const opts_t *o, sched_t *S)
{
    if (o->do_spec) {
        S->n_spec = 2 * o->seeds;
        S->spec = calloc((size_t)S->n_spec, sizeof *S->spec);
        if (!S->spec)
            fail("out of memory");
        for (int j = 0; j < S->n_spec; j++) {
            S->spec[j].pre = j / o->seeds;
            S->spec[j].seed = j % o->seeds;
        }
    }
    if (o->do_grad) {
        int Ls[33], nL = 0;
        Ls[nL++] = o->L;
        for (int i = 0; i < o->n_depths; i++) {
            int dup = 0;
            for (int j = 0; j < nL; j++)
                dup |= Ls[j] == o->depths[i];
            if (!dup)
                Ls[nL++] = o->depths[i];
        }
        S->grad = calloc((size_t)nL * 2 * o->grad_seeds, sizeof *S->grad);
        if (!S->grad)
            fail("out of memory");
        for (int i = 0; i < nL; i++)
            for (int pre = 0; pre < 2; pre++)
                for (int s = 0; s < o->grad_seeds; s++)
                    S->grad[S->n_grad++] = (grad_job){.pre = pre, .seed = s, .L = Ls[i]};
    }
}

/* ------------------------------------------------------------ main */

static void parse_depths(opts_t *o, const char *s)
{
    o->n_depths = 0;
    for (const char *p = s; *p;) {
        char *e;
        long v = strtol(p, &e, 10);
        if (e == p || v < 1 || v > 256 || o->n_depths == 32 || (*e && *e != ','))
            fail("--depths: expected a list like 6,8,10, got '%s'", s);
        o->depths[o->n_depths++] = (int)v;
        p = *e ? e + 1 : e;
    }
    if (o->n_depths == 0)
        fail("--depths: empty list");
}

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "multi30k_hessian");
    opts_t o = {.out = "results/multi30k",
                .src = "data/multi30k/val.de",
                .tgt = "data/multi30k/val.en",
                .depths_str = "6,8,10,12,14",
                .d = 32, .h = 4, .d_ff = 64, .L = 6, .sentences = 200, .min_count = 1,
                .max_vocab = 0, .joint = 0, .max_len = 0, .max_tokens = 512,
                .seeds = 3, .grad_seeds = 6, .k = 3, .eig_steps = 40, .probes = 30, .runs = 4,
                .steps = 40, .block_steps = 10, .jobs = 2, .quiet = 0, .do_spec = 1,
                .do_grad = 1, .eig_tol = 1e-6, .block_tol = 1e-3};
    enum { O_SRC = 256, O_TGT, O_SENT, O_MINC, O_MAXV, O_JOINT, O_MAXLEN, O_MAXTOK, O_DFF,
           O_EIGSTEPS, O_EIGTOL, O_BSTEPS, O_BTOL, O_DEPTHS, O_GSEEDS, O_PARTS, O_JOBS };
    static struct option lo[] = {
        {"out", 1, 0, 'o'},          {"src", 1, 0, O_SRC},          {"tgt", 1, 0, O_TGT},
        {"sentences", 1, 0, O_SENT}, {"min-count", 1, 0, O_MINC},   {"max-vocab", 1, 0, O_MAXV},
        {"joint-vocab", 0, 0, O_JOINT}, {"max-len", 1, 0, O_MAXLEN},
        {"max-tokens", 1, 0, O_MAXTOK}, {"d", 1, 0, 'd'},           {"h", 1, 0, 'H'},
        {"d-ff", 1, 0, O_DFF},       {"L", 1, 0, 'L'},              {"seeds", 1, 0, 's'},
        {"k", 1, 0, 'k'},            {"eig-steps", 1, 0, O_EIGSTEPS}, {"eig-tol", 1, 0, O_EIGTOL},
        {"probes", 1, 0, 'p'},       {"runs", 1, 0, 'r'},           {"steps", 1, 0, 'm'},
        {"block-steps", 1, 0, O_BSTEPS}, {"block-tol", 1, 0, O_BTOL},
        {"depths", 1, 0, O_DEPTHS},  {"grad-seeds", 1, 0, O_GSEEDS}, {"parts", 1, 0, O_PARTS},
        {"jobs", 1, 0, O_JOBS},      {"quiet", 0, 0, 'q'},          {"help", 0, 0, 'h'},
        {0, 0, 0, 0}};
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'o': o.out = optarg; break;
        case O_SRC: o.src = optarg; break;
        case O_TGT: o.tgt = optarg; break;
        case O_SENT: o.sentences = (int)arg_int("sentences", optarg, 0, 1 << 24); break;
        case O_MINC: o.min_count = (int)arg_int("min-count", optarg, 1, 1 << 24); break;
        case O_MAXV: o.max_vocab = (int)arg_int("max-vocab", optarg, 0, 1 << 24); break;
        case O_JOINT: o.joint = 1; break;
        case O_MAXLEN: o.max_len = (int)arg_int("max-len", optarg, 0, 1 << 20); break;
        case O_MAXTOK: o.max_tokens = (int)arg_int("max-tokens", optarg, 2, 1 << 30); break;
        case 'd': o.d = (int)arg_int("d", optarg, 2, 8192); break;
        case 'H': o.h = (int)arg_int("h", optarg, 1, 1024); break;
        case O_DFF: o.d_ff = (int)arg_int("d-ff", optarg, 1, 1 << 20); break;
        case 'L': o.L = (int)arg_int("L", optarg, 1, 256); break;
        case 's': o.seeds = (int)arg_int("seeds", optarg, 1, 1000); break;
        case 'k': o.k = (int)arg_int("k", optarg, 1, 1000); break;
        case O_EIGSTEPS: o.eig_steps = (int)arg_int("eig-steps", optarg, 2, 100000); break;
        case O_EIGTOL: o.eig_tol = arg_pos("eig-tol", optarg, 0); break;
        case 'p': o.probes = (int)arg_int("probes", optarg, 2, 1 << 20); break;
        case 'r': o.runs = (int)arg_int("runs", optarg, 1, 10000); break;
        case 'm': o.steps = (int)arg_int("steps", optarg, 2, 100000); break;
        case O_BSTEPS: o.block_steps = (int)arg_int("block-steps", optarg, 1, 100000); break;
        case O_BTOL: o.block_tol = arg_pos("block-tol", optarg, 0); break;
        case O_DEPTHS: o.depths_str = optarg; break;
        case O_GSEEDS: o.grad_seeds = (int)arg_int("grad-seeds", optarg, 1, 1000); break;
        case O_PARTS:
            o.do_spec = strstr(optarg, "spectrum") != NULL;
            o.do_grad = strstr(optarg, "grad") != NULL;
            if (!o.do_spec && !o.do_grad)
                fail("--parts: expected spectrum and/or grad, got '%s'", optarg);
            break;
        case O_JOBS: o.jobs = (int)arg_int("jobs", optarg, 1, 64); break;
        case 'q': o.quiet = 1; break;
        case 'h': usage(); return 0;
        default:
            fail("unknown option or missing value '%s' (--help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        fail("unexpected argument '%s'", argv[optind]);
    if (o.d % o.h || o.d % 2)
        fail("--d %d must be even and a multiple of --h %d", o.d, o.h);
    parse_depths(&o, o.depths_str);
    char start[32], cmd[1200];
    lnk_iso_time(start, sizeof start);
    double t0 = lnk_now();
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", o.out);
    if (study_root() && system(cmd) != 0) /* only rank 0 writes files */
        fail("cannot create '%s'", o.out);
    data_t D;
    load_data(&o, &D);
    if (!o.quiet && study_root())
        fprintf(stderr, "multi30k_hessian: %d pairs (%d dropped), V_src %d, V_tgt %d, %zu scored "
                "positions, %d chunks (largest %zu padded tokens, %zu in all)\n",
                D.n_pairs, D.n_dropped, D.V_src, D.V_tgt, D.n_scored, D.n_chunks, D.max_chunk,
                D.padded);

    sched_t S = {.o = &o, .D = &D, .t0 = t0};
    pthread_mutex_init(&S.mu, NULL);
    block_t *blk = calloc((size_t)(5 * o.L + 3), sizeof *blk);
    S.nblk = make_blocks(o.L, blk);
    S.blk = blk;
    make_jobs(&o, &S); /* the spectra, then the --L model and the depth sweep */
    int nth = o.jobs;
    pthread_t th[64];
    for (int i = 0; i < nth; i++)
        if (pthread_create(&th[i], NULL, worker, &S) != 0)
            fail("cannot start thread %d", i);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);

    lnk_config base;
    make_config(&base, &o, &D, 0, o.L, 0);
    lnk_meta *extra = lnk_meta_alloc();
    if (!extra)
        die();
    lnk_meta_str(extra, "study", "multi30k_hessian");
    lnk_meta_str(extra, "src", o.src);
    lnk_meta_str(extra, "tgt", o.tgt);
    lnk_meta_int(extra, "sentences", o.sentences);
    lnk_meta_int(extra, "pairs", D.n_pairs);
    lnk_meta_int(extra, "dropped", D.n_dropped);
    lnk_meta_int(extra, "max_len", o.max_len);
    lnk_meta_int(extra, "min_count", o.min_count);
    lnk_meta_int(extra, "max_vocab", o.max_vocab);
    lnk_meta_bool(extra, "joint_vocab", o.joint);
    lnk_meta_bool(extra, "src_eos", 0);
    lnk_meta_int(extra, "n_scored", (long long)D.n_scored);
    lnk_meta_int(extra, "chunks", D.n_chunks);
    lnk_meta_int(extra, "max_tokens", o.max_tokens);
    lnk_meta_int(extra, "padded_tokens", (long long)D.padded);
    lnk_meta_int(extra, "seeds", o.seeds);
    lnk_meta_int(extra, "k", o.k);
    lnk_meta_int(extra, "eig_steps", o.eig_steps);
    lnk_meta_real(extra, "eig_tol", o.eig_tol);
    lnk_meta_int(extra, "probes", o.probes);
    lnk_meta_int(extra, "slq_runs", o.runs);
    lnk_meta_int(extra, "slq_steps", o.steps);
    lnk_meta_int(extra, "block_steps", o.block_steps);
    lnk_meta_real(extra, "block_tol", o.block_tol);
    lnk_meta_int(extra, "grad_seeds", o.grad_seeds);
    lnk_meta_str(extra, "depths", o.depths_str);
    lnk_meta_int(extra, "jobs", o.jobs);
    lnk_meta_str(extra, "varied", "norm_pos in {post, pre}, seed; L for grad.csv");
    /* MPI: job j ran on rank j % P; the rows of every job to rank 0 */
    write_rows(&o, &S, &base, extra, start, t0);
    lnk_meta_free(extra);
    if (study_root() && !o.quiet)
        fprintf(stderr, "multi30k_hessian: wrote %s/ in %.0f s (the summary: python3 -m "
                "studies.summary multi30k %s)\n", o.out, lnk_now() - t0, o.out);
    sched_free(&S);
    free(blk);
    lnk_batches_free(D.chunks, D.n_chunks);
    lnk_config_clear(&base);
    return 0;
}
