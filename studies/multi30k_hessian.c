/* multi30k_hessian: the reference experiment of issue 6 — Post-LN vs Pre-LN
 * encoder-decoder transformers at Xavier initialisation on Multi30k
 * (German -> English validation pairs): the Hessian of the mean loss over the
 * data set, and Xiong et al.'s Figure 3 gradient norms on the same data.
 *
 * Data.  --src/--tgt (default data/multi30k/val.{de,en}, relative to
 * the repository), the first --rows pairs (0 = all 1014), vocabularies
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
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lnkit/lnkit.h"
#include "front/pairs.h"
#include "front/progress.h"
#include "kit/kit.h"
#include "kit/spectral.h"

typedef struct {
    const char *out, *depths_str;
    cli_pairs_opts pa; /* --src, --tgt, the vocabularies, --max-line-len, --max-tokens */
    int d, h, d_ff, L, sentences;
    int seeds, grad_seeds, k, eig_steps, probes, runs, steps, block_steps, jobs, quiet;
    int do_spec, do_grad;
    double eig_tol, block_tol;
    int depths[32], n_depths;
} opts_t;

enum { PART_SPECTRUM, PART_GRAD };
static const cli_choice part_names[] = {{"spectrum", PART_SPECTRUM}, {"grad", PART_GRAD},
                                        {NULL, 0}};
typedef struct {
    opts_t o;
    cli_ints parts;
} args_t;

#define O args_t
static const cli_opt opts[] = {
    STUDY_OPT_OUT(O, o.out, "DIR", 0, NULL, "output directory"),
    CLI_OPT_SRC(O, o.pa, 0, 0),
    CLI_OPT_TGT(O, o.pa),
    {.type = CLI_INT, .name = "rows", .was = "sentences", .arg = "N", CLI_AT(O, o.sentences),
     .max = 1 << 24,
     .help = "the first N sentence pairs, 0: all"},
    CLI_OPT_MIN_COUNT(O, o.pa),
    CLI_OPT_MAX_VOCAB(O, o.pa),
    CLI_OPT_JOINT_VOCAB(O, o.pa),
    CLI_OPT_MAX_LINE_LEN(O, o.pa, "drop the pairs with a side longer, 0: none"),
    CLI_OPT_MAX_TOKENS(O, o.pa, "padded tokens per chunk", NULL),
    {.type = CLI_INT, .name = "d", .arg = "N", CLI_AT(O, o.d), .min = 2, .max = 8192,
     .help = "width (L-L seq2seq, LayerNorm, Xavier)"},
    {.type = CLI_INT, .name = "h", .arg = "N", CLI_AT(O, o.h), .min = 1, .max = 1024,
     .help = "heads"},
    {.type = CLI_INT, .name = "d-ff", .arg = "N", CLI_AT(O, o.d_ff), .min = 1, .max = 1 << 20,
     .help = "feed-forward width"},
    {.type = CLI_INT, .name = "L", .arg = "N", CLI_AT(O, o.L), .min = 1, .max = 256,
     .help = "depth of each side"},
    {.type = CLI_INT, .name = "seeds", .arg = "N", CLI_AT(O, o.seeds), .min = 1, .max = 1000,
     .help = "initialisation seeds 0..N-1 of the spectra"},
    {.type = CLI_INT, .key = 'k', .name = "k", .arg = "N", CLI_AT(O, o.k), .min = 1, .max = 1000,
     .help = "eigenpairs per end"},
    {.type = CLI_INT, .name = "max-steps", .was = "eig-steps", .arg = "M",
     CLI_AT(O, o.eig_steps), .min = 2, .max = 100000, .help = "Lanczos step limit of the extremes"},
    {.type = CLI_REAL, .name = "tol", .was = "eig-tol", .arg = "T", CLI_AT(O, o.eig_tol),
     .max = HUGE_VAL,
     .flags = CLI_GT, .help = "their residual tolerance, relative to max|l|"},
    {.type = CLI_INT, .name = "probes", .arg = "N", CLI_AT(O, o.probes), .min = 2, .max = 1 << 20,
     .help = "Hutchinson probes for the trace"},
    {.type = CLI_INT, .name = "runs", .arg = "N", CLI_AT(O, o.runs), .min = 1, .max = 10000,
     .help = "SLQ start vectors"},
    {.type = CLI_INT, .name = "steps", .arg = "M", CLI_AT(O, o.steps), .min = 2, .max = 100000,
     .help = "SLQ Lanczos steps per run"},
    {.type = CLI_INT, .name = "block-steps", .arg = "M", CLI_AT(O, o.block_steps), .min = 1,
     .max = 100000, .help = "Lanczos step limit of the blocks' top eigenvalues"},
    {.type = CLI_REAL, .name = "block-tol", .arg = "T", CLI_AT(O, o.block_tol), .max = HUGE_VAL,
     .flags = CLI_GT, .help = "their residual tolerance, relative"},
    {.type = CLI_STR, .name = "depths", .arg = "LIST", CLI_AT(O, o.depths_str),
     .help = "the depths of the last-W2 sweep (Figure 3 c/d)"},
    {.type = CLI_INT, .name = "grad-seeds", .arg = "N", CLI_AT(O, o.grad_seeds), .min = 1,
     .max = 1000, .help = "seeds of the gradient norms"},
    {.type = CLI_WORDS, .name = "parts", CLI_AT(O, parts), .ref = part_names,
     .help = "the parts to run"},
    {.type = CLI_INT, .name = "jobs", .arg = "N", CLI_AT(O, o.jobs), .min = 1, .max = 64,
     .help = "worker threads, one BLAS thread each"},
    {0}};
#undef O

static void defaults(void *p)
{
    args_t *a = p;
    a->o = (opts_t){.out = "results/multi30k", .depths_str = "6,8,10,12,14",
                    .d = 32, .h = 4, .d_ff = 64, .L = 6, .sentences = 200, .seeds = 3, .grad_seeds = 6, .k = 3, .eig_steps = 40,
                    .probes = 30, .runs = 4, .steps = 40, .block_steps = 10, .jobs = 2,
                    .eig_tol = 1e-6, .block_tol = 1e-3};
    cli_pairs_opts_default(&a->o.pa);
    a->o.pa.src = "data/multi30k/val.de";
    a->o.pa.tgt = "data/multi30k/val.en";
    a->o.pa.max_tokens = 512;
    a->parts = (cli_ints){2, {PART_SPECTRUM, PART_GRAD}};
}

static const cli_cmd cmd = {
    .name = "multi30k_hessian",
    .usage = "[--src F] [--tgt F] [--out DIR] [--rows N] [--d N] [--h N] [--d-ff N] [--L N]\n"
             "[--seeds N] [-k N] [--parts spectrum,grad] [--jobs N] ...",
    .about = "The reference experiment on Multi30k (L-L seq2seq): Post-LN vs Pre-LN Hessian\n"
             "spectra, traces, densities and block top eigenvalues, and the last-W2 gradient\n"
             "norms against depth.  The summary: python3 -m studies.summary multi30k OUT.",
    .opts = opts, .size = sizeof(args_t), .defaults = defaults};

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
    cli_pairs P;
    cli_pairs_load(&o->pa, o->sentences, CLI_PAIRS_CHUNKS, &P);
    *D = (data_t){.chunks = P.chunks, .n_chunks = P.n_chunks, .V_src = lnk_vocab_size(P.vs),
                  .V_tgt = lnk_vocab_size(P.vt), .n_pairs = P.p.n, .n_dropped = P.p.n_dropped,
                  .n_scored = P.p.n_scored, .src_tokens = P.p.src_tokens,
                  .tgt_tokens = P.p.tgt_tokens, .padded = P.padded, .max_chunk = P.max_chunk};
    P.chunks = NULL; /* handed over */
    cli_pairs_free(&P);
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
    CLI_CK(lnk_config_finalize(c));
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
    int done[2];       /* this rank's finished spectral, gradient jobs */
    double sec[2];     /* and their seconds */
} sched_t;

/* A job of kind k (0 spectral, 1 gradient) took sec: "job d/n of the kind,
 * about T left" for this rank (its mean job time, the jobs it has left, its
 * --jobs threads).  Thread-safe. */
static void job_done(sched_t *S, int k, double sec, char *buf, size_t n)
{
    int first = k ? S->n_spec : 0, count = k ? S->n_grad : S->n_spec, mine = 0;
    for (int j = first; j < first + count; j++)
        mine += study_mine(j);
    pthread_mutex_lock(&S->mu);
    int d = ++S->done[k];
    double mean = (S->sec[k] += sec) / d;
    pthread_mutex_unlock(&S->mu);
    char t[32];
    cli_human_time(mean * (mine - d) / S->o->jobs, t, sizeof t);
    snprintf(buf, n, "job %d/%d, about %s left", d, mine, t);
}

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
        cli_die_lib();
    double *th = malloc(sizeof(double) * lnk_model_n_params(m));
    CLI_CK(lnk_model_init_params(m, th));
    lnk_dataset ds = dataset_of(D);
    CLI_CK(lnk_dataset_loss(m, th, &ds, &J->loss, NULL));
    spec_opts so = {o->k, o->eig_tol, o->eig_steps, o->probes, o->runs, o->steps, o->block_tol,
                    o->block_steps};
    spec_run(m, th, &ds, &so, S->blk, S->nblk, (uint64_t)J->seed, &J->P);
    J->sec = lnk_now() - ts;
    char left[80];
    job_done(S, 0, J->sec, left, sizeof left);
    if (!o->quiet && study_root())
        fprintf(stderr,
                "multi30k_hessian: %s seed %d: loss %.4f top %.5g bottom %.5g trace %.5g; %ld H v "
                "in %.0f s (eigs %.0f, trace %.0f, slq %.0f, blocks %.0f; %.2f s/Hv); %.0f s so "
                "far, spectra %s\n",
                J->pre ? "pre " : "post", J->seed, J->loss,
                J->P.er.n_top ? J->P.er.value[0] : NAN,
                J->P.er.n_bottom ? J->P.er.value[J->P.er.n_top] : NAN, J->P.tr.trace, J->P.hvp,
                J->sec,
                J->P.sec_eigs, J->P.sec_trace, J->P.sec_slq, J->P.sec_blocks, J->sec / J->P.hvp,
                lnk_now() - S->t0, left);
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
        cli_die_lib();
    size_t n = lnk_model_n_params(m);
    double *th = malloc(sizeof(double) * n), *g = malloc(sizeof(double) * n);
    CLI_CK(lnk_model_init_params(m, th));
    lnk_dataset ds = dataset_of(S->D);
    CLI_CK(lnk_dataset_loss(m, th, &ds, &J->loss, g));
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
    char left[80];
    job_done(S, 1, J->sec, left, sizeof left);
    if (!o->quiet && study_root())
        fprintf(stderr, "multi30k_hessian: grad %d-%d %s seed %d: loss %.4f, last W2 %.4g (%.1f s; "
                "gradients %s)\n", J->L, J->L, J->pre ? "pre " : "post", J->seed, J->loss,
                J->w2[2 * J->L - 1], J->sec, left);
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
        CLI_CK(lnk_csv_int(&fj.c, j));
        if (j < S->n_spec) {
            spec_job *J = &S->spec[j];
            spec_files_point(&F, j);
            spec_rows(&F, pname(J->pre), J->seed, &J->P, S->blk, S->nblk);
            CLI_CK(lnk_csv_str(&fj.c, "spectrum"));
            CLI_CK(lnk_csv_str(&fj.c, pname(J->pre)));
            CLI_CK(lnk_csv_int(&fj.c, J->seed));
            CLI_CK(lnk_csv_int(&fj.c, o->L));
            CLI_CK(lnk_csv_double(&fj.c, J->loss));
            CLI_CK(lnk_csv_int(&fj.c, J->P.hvp));
            CLI_CK(lnk_csv_double(&fj.c, J->sec));
        } else {
            grad_job *J = &S->grad[j - S->n_spec];
            csv_point(&fg, j);
            for (int s = 0; s < 2; s++)
                for (int l = 0; l < J->L; l++)
                    for (int w = 0; w < 2; w++) {
                        CLI_CK(lnk_csv_str(&fg.c, pname(J->pre)));
                        CLI_CK(lnk_csv_int(&fg.c, J->seed));
                        CLI_CK(lnk_csv_int(&fg.c, J->L));
                        CLI_CK(lnk_csv_str(&fg.c, s ? "dec" : "enc"));
                        CLI_CK(lnk_csv_int(&fg.c, l));
                        CLI_CK(lnk_csv_str(&fg.c, w ? "ffn.w2" : "ffn.w1"));
                        CLI_CK(lnk_csv_double(&fg.c, (w ? J->w2 : J->w1)[s * J->L + l]));
                        CLI_CK(lnk_csv_end_row(&fg.c));
                    }
            CLI_CK(lnk_csv_str(&fj.c, "grad"));
            CLI_CK(lnk_csv_str(&fj.c, pname(J->pre)));
            CLI_CK(lnk_csv_int(&fj.c, J->seed));
            CLI_CK(lnk_csv_int(&fj.c, J->L));
            CLI_CK(lnk_csv_double(&fj.c, J->loss));
            CLI_CK(lnk_csv_int(&fj.c, 0));
            CLI_CK(lnk_csv_double(&fj.c, J->sec));
        }
        CLI_CK(lnk_csv_end_row(&fj.c));
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
            cli_die("out of memory");
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
            cli_die("out of memory");
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
            cli_die("--depths: expected a list like 6,8,10, got '%s'", s);
        o->depths[o->n_depths++] = (int)v;
        p = *e ? e + 1 : e;
    }
    if (o->n_depths == 0)
        cli_die("--depths: empty list");
}

int main(int argc, char **argv)
{
    study_start(&argc, &argv, "multi30k_hessian");
    args_t a;
    cli_parse(&cmd, &a, argc, argv);
    cli_setup_done();
    opts_t o = a.o;
    o.quiet = cli_quiet;
    for (int i = 0; i < a.parts.n; i++) {
        o.do_spec |= a.parts.v[i] == PART_SPECTRUM;
        o.do_grad |= a.parts.v[i] == PART_GRAD;
    }
    if (!o.do_spec && !o.do_grad)
        cli_die("--parts: expected spectrum and/or grad, got none");
    if (o.d % o.h || o.d % 2)
        cli_die("--d %d must be even and a multiple of --h %d", o.d, o.h);
    parse_depths(&o, o.depths_str);
    char start[32];
    lnk_iso_time(start, sizeof start);
    double t0 = lnk_now();
    make_dir(o.out); /* only rank 0 writes files */
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
            cli_die("cannot start thread %d", i);
    for (int i = 0; i < nth; i++)
        pthread_join(th[i], NULL);

    lnk_config base;
    make_config(&base, &o, &D, 0, o.L, 0);
    lnk_meta *extra = lnk_meta_alloc();
    if (!extra)
        cli_die_lib();
    lnk_meta_str(extra, "study", "multi30k_hessian");
    lnk_meta_str(extra, "src", o.pa.src);
    lnk_meta_str(extra, "tgt", o.pa.tgt);
    lnk_meta_int(extra, "sentences", o.sentences);
    lnk_meta_int(extra, "pairs", D.n_pairs);
    lnk_meta_int(extra, "dropped", D.n_dropped);
    lnk_meta_int(extra, "max_len", o.pa.max_len);
    lnk_meta_int(extra, "min_count", o.pa.min_count);
    lnk_meta_int(extra, "max_vocab", o.pa.max_vocab);
    lnk_meta_bool(extra, "joint_vocab", o.pa.joint);
    lnk_meta_bool(extra, "src_eos", 0);
    lnk_meta_int(extra, "n_scored", (long long)D.n_scored);
    lnk_meta_int(extra, "chunks", D.n_chunks);
    lnk_meta_int(extra, "max_tokens", o.pa.max_tokens);
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
