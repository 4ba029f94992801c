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
 *   density.csv   norm_pos,t,density   (nodes of all seeds pooled; one sigma for both)
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
 * in job order).  The summarising step (summarise(); alone: --summarise DIR)
 * reads only them and the sidecar of eigs.csv (the run's settings) and writes
 * grad_profile.csv, grad_depth.csv, density.csv, the tables extremes,
 * per_seed, blocks_table, blocks_convergence, profile_table, depth_table,
 * slopes, local_slopes (.md, .tex), summary.md, values.csv and claims.csv
 * (studies/kit/quoted.h), density.gp (gnuplot -> density.png, log density
 * axis) and grad.gp (-> grad.png; depth panel log-log with the fits and the
 * theory's slopes).  Post/Pre ratios are taken over the seeds where both
 * values converged; depth slopes by weighted least squares (kit/fit.c).
 * Every CSV has its .meta.json.  The (variant, seed) jobs run in --jobs
 * threads (one BLAS thread each); results do not depend on the scheduling.
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
#include <gsl/gsl_statistics_double.h>
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
#include "kit/quoted.h"

typedef struct {
    const char *out, *src, *tgt, *depths_str;
    int d, h, d_ff, L, sentences, min_count, max_vocab, joint, max_len, max_tokens;
    int seeds, grad_seeds, k, eig_steps, probes, runs, steps, block_steps, jobs, quiet;
    int do_spec, do_grad;
    double kappa, eig_tol, block_tol;
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
        "  --kappa K         SLQ kernel width, Papyan's kappa         (3)\n"
        "  --depths LIST     L of the last-W2 sweep (Figure 3 c/d)    (6,8,10,12,14)\n"
        "  --grad-seeds N    seeds for the gradient norms             (6)\n"
        "  --parts LIST      spectrum,grad                            (spectrum,grad)\n"
        "  --jobs N          worker threads (one BLAS thread each)    (2)\n"
        "  --quiet           no progress on stderr\n"
        "  --summarise DIR   only the summarising step, from the raw rows in DIR (eigs,\n"
        "                    trace, blocks, slq_nodes, grad, jobs.csv and the sidecar of\n"
        "                    eigs.csv): tables, summary.md, values.csv, claims.csv, plot\n"
        "                    scripts (with --kappa)\n");
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

/* The jobs' results and the job arrays (the run and --summarise both end here). */
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

/* Rank 0, from the files: the rows of the next job (norm_pos, seed; and L
 * when cl >= 0) starting at row *r; returns their count and moves *r past
 * them.  Fails if the file does not hold them there. */
static size_t job_rows(const study_table *t, size_t *r, int pre, int seed, int cl, int L)
{
    int cp = study_table_col(t, "norm_pos"), cs = study_table_col(t, "seed");
    size_t r0 = *r;
    while (*r < t->d.nrow && !strcmp(study_table_str(t, *r, cp), pname(pre)) &&
           study_table_num(t, *r, cs) == seed && (cl < 0 || study_table_num(t, *r, cl) == L))
        (*r)++;
    if (*r == r0)
        fail("%s: row %zu: expected the rows of %s seed %d", t->d.what, r0 + 2, pname(pre), seed);
    return *r - r0;
}

/* Rank 0: every job's numbers that the summaries need, read back from the
 * files that write_rows wrote (numbers round-trip exactly: %.17g). */
static void read_jobs(const opts_t *o, sched_t *S, int have_jobs)
{
    study_table te, tt, tb, tg, tj;
    int jl = -1, jh = -1, js = -1;
    if (have_jobs) { /* results written before jobs.csv existed have none */
        study_table_read(&tj, o->out, "jobs.csv");
        jl = study_table_col(&tj, "loss"), jh = study_table_col(&tj, "hvp");
        js = study_table_col(&tj, "seconds");
        if (tj.d.nrow != (size_t)(S->n_spec + S->n_grad))
            fail("%s: %zu rows, expected %d jobs", tj.d.what, tj.d.nrow, S->n_spec + S->n_grad);
    }
    if (o->do_spec) {
        study_table_read(&te, o->out, "eigs.csv");
        study_table_read(&tt, o->out, "trace.csv");
        study_table_read(&tb, o->out, "blocks.csv");
        int ew = study_table_col(&te, "which"), ev = study_table_col(&te, "eigenvalue");
        int er = study_table_col(&te, "residual"), ec = study_table_col(&te, "converged");
        int tp = study_table_col(&tt, "probes"), tv = study_table_col(&tt, "trace");
        int ts = study_table_col(&tt, "stderr");
        int bn = study_table_col(&tb, "n_params"), bv = study_table_col(&tb, "top_eigenvalue");
        int br = study_table_col(&tb, "residual"), bc = study_table_col(&tb, "converged");
        int bs = study_table_col(&tb, "steps");
        size_t re = 0, rt = 0, rb = 0;
        for (int j = 0; j < S->n_spec; j++) {
            spec_job *J = &S->spec[j];
            spec_point *P = &J->P;
            spec_point_free(P); /* rank 0's own jobs: replaced by what the files say */
            size_t r0 = re, k = job_rows(&te, &re, J->pre, J->seed, -1, 0);
            P->er.k = (int)k;
            P->er.value = study_alloc(sizeof(double) * k);
            P->er.residual = study_alloc(sizeof(double) * k);
            P->er.converged = study_alloc(sizeof(int) * k);
            for (size_t i = 0; i < k; i++) {
                P->er.n_top += !strcmp(study_table_str(&te, r0 + i, ew), "top");
                P->er.value[i] = study_table_num(&te, r0 + i, ev);
                P->er.residual[i] = study_table_num(&te, r0 + i, er);
                P->er.converged[i] = (int)study_table_num(&te, r0 + i, ec);
            }
            P->er.n_bottom = P->er.k - P->er.n_top;
            r0 = rt;
            job_rows(&tt, &rt, J->pre, J->seed, -1, 0);
            P->tr.probes = (int)study_table_num(&tt, r0, tp);
            P->tr.trace = study_table_num(&tt, r0, tv);
            P->tr.std_error = study_table_num(&tt, r0, ts);
            r0 = rb;
            if (job_rows(&tb, &rb, J->pre, J->seed, -1, 0) != (size_t)S->nblk)
                fail("%s: %s seed %d: expected %d blocks", tb.d.what, pname(J->pre), J->seed,
                     S->nblk);
            P->btop = study_alloc(sizeof(double) * S->nblk);
            P->bres = study_alloc(sizeof(double) * S->nblk);
            P->bconv = study_alloc(sizeof(int) * S->nblk);
            P->bsteps = study_alloc(sizeof(int) * S->nblk);
            P->bn = study_alloc(sizeof(size_t) * S->nblk);
            for (int b = 0; b < S->nblk; b++) {
                P->bn[b] = (size_t)study_table_num(&tb, r0 + b, bn);
                P->btop[b] = study_table_num(&tb, r0 + b, bv);
                P->bres[b] = study_table_num(&tb, r0 + b, br);
                P->bconv[b] = (int)study_table_num(&tb, r0 + b, bc);
                P->bsteps[b] = (int)study_table_num(&tb, r0 + b, bs);
            }
            J->loss = have_jobs ? study_table_num(&tj, (size_t)j, jl) : NAN;
            P->hvp = have_jobs ? (long)study_table_num(&tj, (size_t)j, jh) : 0;
            J->sec = have_jobs ? study_table_num(&tj, (size_t)j, js) : NAN;
        }
        study_table_free(&te);
        study_table_free(&tt);
        study_table_free(&tb);
    }
    if (o->do_grad) {
        study_table_read(&tg, o->out, "grad.csv");
        int gL = study_table_col(&tg, "L"), gv = study_table_col(&tg, "grad_norm");
        size_t rg = 0;
        for (int j = 0; j < S->n_grad; j++) {
            grad_job *J = &S->grad[j];
            size_t r0 = rg;
            if (job_rows(&tg, &rg, J->pre, J->seed, gL, J->L) != (size_t)4 * J->L)
                fail("%s: %s seed %d L %d: expected %d rows", tg.d.what, pname(J->pre), J->seed,
                     J->L, 4 * J->L);
            free(J->w1);
            free(J->w2);
            J->w1 = study_alloc(sizeof(double) * 2 * (size_t)J->L);
            J->w2 = study_alloc(sizeof(double) * 2 * (size_t)J->L);
            for (int i = 0; i < 4 * J->L; i++) /* side, layer, then W1, W2 */
                ((i & 1) ? J->w2 : J->w1)[i / 2] = study_table_num(&tg, r0 + (size_t)i, gv);
            J->loss = have_jobs ? study_table_num(&tj, (size_t)(S->n_spec + j), jl) : NAN;
            J->sec = have_jobs ? study_table_num(&tj, (size_t)(S->n_spec + j), js) : NAN;
        }
        study_table_free(&tg);
    }
    if (have_jobs)
        study_table_free(&tj);
}

/* ------------------------------------------------------------ output */

static double mean(const double *x, int n) { return gsl_stats_mean(x, 1, (size_t)n); }
static double sd(const double *x, int n) { return n > 1 ? gsl_stats_sd(x, 1, (size_t)n) : 0.0; }

/* Density of each variant (nodes of all its seeds pooled), one sigma and one
 * grid, from slq_nodes.csv; lo/hi get each variant's smallest and largest
 * node (where the density's tails end). */
static double write_density(const opts_t *o, const lnk_meta *extra, const char *start, double t0,
                            double integ[2], double lo[2], double hi[2])
{
    lnk_slq_result *r;
    int *pre, n;
    spec_read_slq(o->out, &r, &pre, &n);
    lo[0] = lo[1] = INFINITY;
    hi[0] = hi[1] = -INFINITY;
    for (int i = 0; i < n; i++) {
        lo[pre[i]] = fmin(lo[pre[i]], r[i].node_min);
        hi[pre[i]] = fmax(hi[pre[i]], r[i].node_max);
    }
    double sigma = spec_write_density(o->out, r, pre, n, o->kappa, o->steps, NULL, extra, start,
                                      t0, integ);
    for (int i = 0; i < n; i++)
        lnk_slq_result_free(&r[i]);
    free(r);
    free(pre);
    return sigma;
}

/* grad job of (L, pre, seed), or fail */
static grad_job *find_grad(sched_t *S, int L, int pre, int seed)
{
    for (int j = 0; j < S->n_grad; j++)
        if (S->grad[j].L == L && S->grad[j].pre == pre && S->grad[j].seed == seed)
            return &S->grad[j];
    fail("grad.csv: no rows for L = %d, %s, seed %d", L, pname(pre), seed);
}

/* mean and sd over the grad seeds of w (0: W1, 1: W2) at (L, pre, side, layer) */
static void grad_stat(sched_t *S, int L, int pre, int side, int layer, int w, double *m,
                      double *s)
{
    int G = S->o->grad_seeds;
    double *v = study_alloc(sizeof(double) * (size_t)G);
    for (int k = 0; k < G; k++) {
        grad_job *J = find_grad(S, L, pre, k);
        v[k] = (w ? J->w2 : J->w1)[side * L + layer];
    }
    *m = mean(v, G);
    *s = sd(v, G);
    free(v);
}

/* From the jobs read back from grad.csv (every seed): grad_profile.csv (seed
 * means per layer of the --L model: Figure 3 a/b) and grad_depth.csv (seed
 * means of the last decoder W2 over depth: Figure 3 c/d). */
static void write_grad(const opts_t *o, sched_t *S, const lnk_meta *extra, const char *start,
                       double t0)
{
    /* one row per layer, one column per series (plots read columns) */
    static const char *const hp[] = {"x", "side", "layer", "post_w1", "post_w1_sd", "post_w2",
                                     "post_w2_sd", "pre_w1", "pre_w1_sd", "pre_w2",
                                     "pre_w2_sd"};
    out_csv fp;
    csv_open(&fp, o->out, "grad_profile.csv", hp, 11);
    int L = o->L;
    for (int s = 0; s < 2; s++)
        for (int l = 0; l < L; l++) {
            CK(lnk_csv_int(&fp.c, s * L + l + 1));
            CK(lnk_csv_str(&fp.c, s ? "dec" : "enc"));
            CK(lnk_csv_int(&fp.c, l));
            for (int pre = 0; pre < 2; pre++)
                for (int w = 0; w < 2; w++) {
                    double m, sdv;
                    grad_stat(S, L, pre, s, l, w, &m, &sdv);
                    CK(lnk_csv_double(&fp.c, m));
                    CK(lnk_csv_double(&fp.c, sdv));
                }
            CK(lnk_csv_end_row(&fp.c));
        }
    csv_close(&fp, NULL, extra, start, t0);
    static const char *const hd[] = {"L", "post_last_w2", "post_sd", "pre_last_w2", "pre_sd"};
    out_csv fd;
    csv_open(&fd, o->out, "grad_depth.csv", hd, 5);
    for (int i = 0; i < o->n_depths; i++) {
        int Ld = o->depths[i];
        CK(lnk_csv_int(&fd.c, Ld));
        for (int pre = 0; pre < 2; pre++) {
            double m, sdv;
            grad_stat(S, Ld, pre, 1, Ld - 1, 1, &m, &sdv);
            CK(lnk_csv_double(&fd.c, m));
            CK(lnk_csv_double(&fd.c, sdv));
        }
        CK(lnk_csv_end_row(&fd.c));
    }
    csv_close(&fd, NULL, extra, start, t0);
}

/* The setting of every claim: model, data, seeds. */
static void setting_of(char *b, size_t n, const opts_t *o, const data_t *D, int seeds)
{
    snprintf(b, n, "seq2seq %d-%d, LayerNorm, Xavier, d = %d, h = %d, d_ff = %d; Multi30k "
             "De-En validation, %s%d pairs (V_src = %d, V_tgt = %d, %zu scored tokens); %d seeds",
             o->L, o->L, o->d, o->h, o->d_ff, o->sentences ? "first " : "all ", D->n_pairs,
             D->V_src, D->V_tgt, D->n_scored, seeds);
}

/* summary.md, the Hessian part: extremes, every seed, the blocks with their
 * convergence, the density; values and claims.  Post / Pre comparisons use
 * only seeds where both values converged. */
static void summary_spec(FILE *f, const opts_t *o, sched_t *S, const data_t *D, double sigma,
                         const double integ[2], const double lo[2], const double hi[2],
                         int have_jobs, study_quoted *q)
{
    int NS = o->seeds, nb = S->nblk;
    size_t n2 = 2 * (size_t)NS;
    double *top = study_alloc(sizeof(double) * n2), *bot = study_alloc(sizeof(double) * n2);
    double *trc = study_alloc(sizeof(double) * n2), *tse = study_alloc(sizeof(double) * n2);
    double *loss = study_alloc(sizeof(double) * n2);
    int *topc = study_alloc(sizeof(int) * n2), *botc = study_alloc(sizeof(int) * n2);
    double *btop = study_alloc(sizeof(double) * n2 * (size_t)nb);
    double *brel = study_alloc(sizeof(double) * n2 * (size_t)nb);
    int *bconv = study_alloc(sizeof(int) * n2 * (size_t)nb);
    int econv = 0, etot = 0;
    for (int j = 0; j < S->n_spec; j++) {
        spec_job *J = &S->spec[j];
        int i = J->pre * NS + J->seed;
        const lnk_eigs_result *er = &J->P.er;
        top[i] = er->n_top ? er->value[0] : NAN;
        topc[i] = er->n_top && er->converged[0];
        bot[i] = er->n_bottom ? er->value[er->n_top] : NAN;
        botc[i] = er->n_bottom && er->converged[er->n_top];
        trc[i] = J->P.tr.trace;
        tse[i] = J->P.tr.std_error;
        loss[i] = J->loss;
        for (int k = 0; k < er->k; k++)
            econv += er->converged[k], etot++;
        for (int b = 0; b < nb; b++) {
            btop[(size_t)i * nb + b] = J->P.btop[b];
            brel[(size_t)i * nb + b] = J->P.bres[b] / fabs(J->P.btop[b]);
            bconv[(size_t)i * nb + b] = J->P.bconv[b];
        }
    }
    char setting[512], b1[96], b2[96], v[1024];
    setting_of(setting, sizeof setting, o, D, NS);
    fprintf(f, "## Hessian of the data-set loss\n\n"
               "%d seeds (0..%d; the same seed gives both variants the same weights).  Mean ± "
               "sd over the seeds compared: a Post / Pre comparison uses only the seeds where "
               "both variants' values converged (residual <= tol x the largest |Ritz value| of "
               "the run: tol %g for the top-%d / bottom-%d eigenvalues, at most %d Lanczos "
               "steps; %g for the blocks, at most %d steps).  %d of %d eigenvalues converged.  "
               "Trace: Hutchinson, %d Rademacher probes (standard errors in the per-seed "
               "table).\n\n",
            NS, NS - 1, o->eig_tol, o->k, o->k, o->eig_steps, o->block_tol, o->block_steps,
            econv, etot, o->probes);
    static const char *const hx[] = {"quantity", "Post-LN", "Pre-LN", "Post / Pre (means)",
                                     "Post / Pre per seed", "seeds compared"};
    lnk_table t;
    CK(lnk_table_init(&t, 6, hx, "lrrrrr"));
    spec_cmp ctop = spec_compare(top, topc, top + NS, topc + NS, NS, 1);
    spec_cmp cbot = spec_compare(bot, botc, bot + NS, botc + NS, NS, 1);
    spec_cmp ctr = spec_compare(trc, NULL, trc + NS, NULL, NS, 1);
    spec_cmp_row(&t, "top eigenvalue", &ctop, NS);
    spec_cmp_row(&t, "bottom eigenvalue", &cbot, NS);
    spec_cmp_row(&t, "trace (Hutchinson)", &ctr, NS);
    if (have_jobs) {
        spec_cmp cl = spec_compare(loss, NULL, loss + NS, NULL, NS, 1);
        spec_cmp_row(&t, "loss at init", &cl, NS);
    }
    for (int e = 0; e < 2; e++) {
        const double *x = e ? hi : lo;
        int r = lnk_table_new_row(&t);
        CK(lnk_table_set(&t, r, 0, "SLQ nodes, %s", e ? "largest" : "smallest"));
        CK(lnk_table_set(&t, r, 1, "%.3g", x[0]));
        CK(lnk_table_set(&t, r, 2, "%.3g", x[1]));
        CK(lnk_table_set(&t, r, 3, "%.2f", x[0] / x[1]));
        CK(lnk_table_set(&t, r, 5, "pooled"));
    }
    study_write_table(o->out, "extremes", &t,
                      "Extremal eigenvalues, trace and the reach of the spectral density (the "
                      "smallest and largest SLQ node over all runs and seeds: where "
                      "density.png's tails end).", f);
    lnk_table_free(&t);
    static const char *const hs[] = {"seed", "top, Post-LN", "top, Pre-LN", "Post / Pre",
                                     "bottom, Post-LN", "bottom, Pre-LN", "Post / Pre",
                                     "trace ± se, Post-LN", "trace ± se, Pre-LN"};
    CK(lnk_table_init(&t, 9, hs, "rrrrrrrrr"));
    for (int s = 0; s < NS; s++) {
        int r = lnk_table_new_row(&t);
        const char *nc = " (not converged)";
        CK(lnk_table_set(&t, r, 0, "%d", s));
        CK(lnk_table_set(&t, r, 1, "%#.3g%s", top[s], topc[s] ? "" : nc));
        CK(lnk_table_set(&t, r, 2, "%#.3g%s", top[NS + s], topc[NS + s] ? "" : nc));
        CK(lnk_table_set(&t, r, 3, "%.2f", top[s] / top[NS + s]));
        CK(lnk_table_set(&t, r, 4, "%#.3g%s", bot[s], botc[s] ? "" : nc));
        CK(lnk_table_set(&t, r, 5, "%#.3g%s", bot[NS + s], botc[NS + s] ? "" : nc));
        CK(lnk_table_set(&t, r, 6, "%.2f", bot[s] / bot[NS + s]));
        table_set_pm(&t, r, 7, trc[s], tse[s]);
        table_set_pm(&t, r, 8, trc[NS + s], tse[NS + s]);
    }
    study_write_table(o->out, "per_seed", &t, "Every seed.", f);
    lnk_table_free(&t);

    /* blocks: convergence first, then the comparisons it allows */
    int nconv[2] = {0, 0}, npair = 0, nblk_cmp = 0;
    double *rel_all = study_alloc(sizeof(double) * n2 * (size_t)nb);
    double *rel_v[2] = {study_alloc(sizeof(double) * (size_t)NS * nb),
                        study_alloc(sizeof(double) * (size_t)NS * nb)};
    double rel_max = 0;
    for (size_t i = 0; i < n2 * (size_t)nb; i++) {
        int pre = i >= (size_t)NS * nb;
        nconv[pre] += bconv[i];
        rel_all[i] = brel[i];
        rel_v[pre][i - (size_t)pre * NS * nb] = brel[i];
        rel_max = fmax(rel_max, brel[i]);
    }
    double rel_med = study_median(rel_all, (int)(n2 * nb));
    double rel_med_v[2] = {study_median(rel_v[0], NS * nb), study_median(rel_v[1], NS * nb)};
    fprintf(f, "### Blocks\n\nTop eigenvalue of the Hessian restricted to each block: the Ritz "
               "value after at most %d Lanczos steps, a lower bound on it, with residual "
               "`||H v - l v||` (some eigenvalue lies within it).  %d of %d (Post-LN) and %d "
               "of %d (Pre-LN) block values converged (tol %g); residual / value: median %.2g "
               "(Post-LN %.2g, Pre-LN %.2g), largest %.2g.\n\n",
            o->block_steps, nconv[0], NS * nb, nconv[1], NS * nb, o->block_tol, rel_med,
            rel_med_v[0], rel_med_v[1], rel_max);
    static const char *const hb[] = {"block (parameters)", "Post-LN", "Pre-LN",
                                     "Post / Pre (means)", "Post / Pre per seed",
                                     "seeds compared"};
    CK(lnk_table_init(&t, 6, hb, "lrrrrr"));
    lnk_table tc;
    static const char *const hc[] = {"block", "converged, Post-LN", "converged, Pre-LN",
                                     "residual / value, Post-LN (median)",
                                     "residual / value, Pre-LN (median)"};
    CK(lnk_table_init(&tc, 5, hc, "lrrrr"));
    double cmp_lo = INFINITY, cmp_hi = -INFINITY;
    int n_post_larger = 0;
    double *tmp = study_alloc(sizeof(double) * (size_t)NS);
    for (int b = 0; b < nb; b++) {
        spec_cmp c = spec_compare(btop + b, bconv + b, btop + (size_t)NS * nb + b,
                                  bconv + (size_t)NS * nb + b, NS, nb);
        char name[96];
        snprintf(name, sizeof name, "`%s` (%zu)", S->blk[b].pat, S->spec[0].P.bn[b]);
        spec_cmp_row(&t, name, &c, NS);
        if (c.n) {
            nblk_cmp++;
            npair += c.n;
            cmp_lo = fmin(cmp_lo, c.rmin), cmp_hi = fmax(cmp_hi, c.rmax);
            for (int s = 0; s < NS; s++)
                if (bconv[s * nb + b] && bconv[(NS + s) * nb + b])
                    n_post_larger += btop[s * nb + b] > btop[(NS + s) * nb + b];
        }
        int r = lnk_table_new_row(&tc);
        CK(lnk_table_set(&tc, r, 0, "`%s`", S->blk[b].pat));
        for (int pre = 0; pre < 2; pre++) {
            for (int s = 0; s < NS; s++)
                tmp[s] = brel[(size_t)(pre * NS + s) * nb + b];
            CK(lnk_table_set(&tc, r, 1 + pre, "%d of %d", pre ? c.n_pre_conv : c.n_post_conv,
                             NS));
            CK(lnk_table_set(&tc, r, 3 + pre, "%.2g", study_median(tmp, NS)));
        }
    }
    snprintf(v, sizeof v, "Top eigenvalue of each block, compared over the seeds where both "
             "variants' values converged (%d of %d (block, seed) pairs; \"-\": none).", npair,
             NS * nb);
    study_write_table(o->out, "blocks_table", &t, v, f);
    lnk_table_free(&t);
    study_write_table(o->out, "blocks_convergence", &tc,
                      "Convergence of the block values: converged seeds and the median over "
                      "seeds of residual / value.", f);
    lnk_table_free(&tc);
    fprintf(f, "Spectral density: `density.csv` / `density.png` (SLQ %d x %d per seed, nodes "
               "of the %d seeds pooled, one Gaussian kernel for both, sigma = %.3g from "
               "Papyan's kappa = %g; integrals %.6f and %.6f).\n\n",
            o->runs, o->steps, NS, sigma, o->kappa, integ[0], integ[1]);

    /* values */
    const spec_cmp *cq[3] = {&ctop, &cbot, &ctr};
    const char *qn[3] = {"top", "bottom", "trace"};
    for (int i = 0; i < 3; i++) {
        lnk_fmt_pm(b1, sizeof b1, cq[i]->post, cq[i]->post_sd);
        lnk_fmt_pm(b2, sizeof b2, cq[i]->pre, cq[i]->pre_sd);
        snprintf(v, sizeof v, "%s_post", qn[i]);
        quoted_value(q, v, "%s", b1);
        snprintf(v, sizeof v, "%s_pre", qn[i]);
        quoted_value(q, v, "%s", b2);
        snprintf(v, sizeof v, "%s_ratio", qn[i]);
        quoted_value(q, v, "%.2f", cq[i]->ratio);
        snprintf(v, sizeof v, "%s_ratio_range", qn[i]);
        quoted_value(q, v, "%.2f-%.2f", cq[i]->rmin, cq[i]->rmax);
        snprintf(v, sizeof v, "%s_seeds", qn[i]);
        quoted_value(q, v, "%d of %d", cq[i]->n, NS);
    }
    quoted_value(q, "top_post_cv", "%.0f%%", 100 * ctop.post_sd / fabs(ctop.post));
    quoted_value(q, "top_pre_cv", "%.0f%%", 100 * ctop.pre_sd / fabs(ctop.pre));
    quoted_value(q, "trace_se_max_post", "%.2g", gsl_stats_max(tse, 1, (size_t)NS));
    quoted_value(q, "trace_se_max_pre", "%.2g", gsl_stats_max(tse + NS, 1, (size_t)NS));
    quoted_value(q, "eig_conv", "%d of %d", econv, etot);
    quoted_value(q, "tail_neg_post", "%.3g", lo[0]);
    quoted_value(q, "tail_neg_pre", "%.3g", lo[1]);
    quoted_value(q, "tail_pos_post", "%.3g", hi[0]);
    quoted_value(q, "tail_pos_pre", "%.3g", hi[1]);
    quoted_value(q, "tail_neg_ratio", "%.1f", lo[0] / lo[1]);
    quoted_value(q, "tail_pos_ratio", "%.1f", hi[0] / hi[1]);
    quoted_value(q, "sigma", "%.3g", sigma);
    quoted_value(q, "block_conv_post", "%d of %d", nconv[0], NS * nb);
    quoted_value(q, "block_conv_pre", "%d of %d", nconv[1], NS * nb);
    quoted_value(q, "block_conv_all", "%d of %d", nconv[0] + nconv[1], 2 * NS * nb);
    quoted_value(q, "block_rel_median", "%.2g%%", 100 * rel_med);
    quoted_value(q, "block_rel_median_post", "%.2g%%", 100 * rel_med_v[0]);
    quoted_value(q, "block_rel_median_pre", "%.2g%%", 100 * rel_med_v[1]);
    quoted_value(q, "block_rel_max", "%.0f%%", 100 * rel_max);
    quoted_value(q, "block_pairs", "%d of %d", npair, NS * nb);
    quoted_value(q, "block_pairs_blocks", "%d of %d", nblk_cmp, nb);
    quoted_value(q, "block_pairs_post_larger", "%d", n_post_larger);
    if (npair)
        quoted_value(q, "block_pairs_ratio_range", "%.2f-%.2f", cmp_lo, cmp_hi);
    quoted_value(q, "block_steps", "%d", o->block_steps);
    quoted_value(q, "chunks", "%d", D->n_chunks);
    quoted_value(q, "n_scored", "%zu", D->n_scored);
    quoted_value(q, "V_src", "%d", D->V_src);
    quoted_value(q, "V_tgt", "%d", D->V_tgt);

    /* claims */
    snprintf(v, sizeof v, "%s against %s: Post / Pre %.2f (per seed %.2f-%.2f; %d of %d seeds, "
             "both converged to %g)", (lnk_fmt_pm(b1, sizeof b1, ctop.post, ctop.post_sd), b1),
             (lnk_fmt_pm(b2, sizeof b2, ctop.pre, ctop.pre_sd), b2), ctop.ratio, ctop.rmin,
             ctop.rmax, ctop.n, NS, o->eig_tol);
    char file[1100];
    snprintf(file, sizeof file, "eigs.csv");
    quoted_claim(q, "Multi30k Hessian top eigenvalue at init, Post-LN vs Pre-LN (mean ± sd)", v,
                 setting, file);
    snprintf(v, sizeof v, "%s against %s: Post / Pre %.2f (per seed %.2f-%.2f; %d of %d seeds)",
             (lnk_fmt_pm(b1, sizeof b1, cbot.post, cbot.post_sd), b1),
             (lnk_fmt_pm(b2, sizeof b2, cbot.pre, cbot.pre_sd), b2), cbot.ratio, cbot.rmin,
             cbot.rmax, cbot.n, NS);
    quoted_claim(q, "Multi30k Hessian bottom eigenvalue at init, Post-LN vs Pre-LN", v, setting,
                 file);
    snprintf(v, sizeof v, "%s against %s: Post / Pre %.2f (per seed %.2f-%.2f; Hutchinson se "
             "up to %.2g): not separated",
             (lnk_fmt_pm(b1, sizeof b1, ctr.post, ctr.post_sd), b1),
             (lnk_fmt_pm(b2, sizeof b2, ctr.pre, ctr.pre_sd), b2), ctr.ratio, ctr.rmin, ctr.rmax,
             gsl_stats_max(tse, 1, n2));
    snprintf(file, sizeof file, "trace.csv");
    quoted_claim(q, "Multi30k Hessian trace at init, Post-LN vs Pre-LN", v, setting, file);
    if (npair)
        snprintf(v, sizeof v, "%d of %d (block, seed) pairs converged for both variants (in %d "
                 "of %d blocks); on those, Post / Pre per seed %.2f-%.2f; block residual / "
                 "value median %.2g%% (Post-LN %.2g%%, Pre-LN %.2g%%)", npair, NS * nb,
                 nblk_cmp, nb, cmp_lo, cmp_hi, 100 * rel_med, 100 * rel_med_v[0],
                 100 * rel_med_v[1]);
    else
        snprintf(v, sizeof v, "no (block, seed) pair converged for both variants");
    snprintf(file, sizeof file, "blocks.csv");
    quoted_claim(q, "Multi30k per-block top eigenvalues: the comparisons the converged values "
                 "allow", v, setting, file);
    free(top), free(bot), free(trc), free(tse), free(loss), free(topc), free(botc);
    free(btop), free(brel), free(bconv), free(rel_all), free(rel_v[0]), free(rel_v[1]);
    free(tmp);
}

/* summary.md, the gradient part (Xiong et al. Figure 3): the profile of the
 * --L model, the last decoder W2 against depth with its weighted power-law
 * fits (seed means, weights from the seed sds / sqrt(seeds)) and the local
 * slopes between successive depths; values and claims. */
static void summary_grad(FILE *f, const opts_t *o, sched_t *S, const data_t *D,
                         study_quoted *q, lnk_fit fit[2], double yr[2])
{
    int G = o->grad_seeds, L = o->L, nd = o->n_depths;
    char setting[512], v[1024], b1[96], file[1100];
    setting_of(setting, sizeof setting, o, D, G);
    fprintf(f, "## Gradient norms at initialisation (Xiong et al. 2020, Figure 3)\n\n"
               "`||dL/dW||_F` of the data-set loss, mean ± sd over %d seeds.\n\n", G);
    static const char *const hp[] = {"layer", "Post-LN W1", "Post-LN W2", "Pre-LN W1",
                                     "Pre-LN W2"};
    lnk_table t;
    CK(lnk_table_init(&t, 5, hp, "lrrrr"));
    double w2m[2][2][64]; /* [pre][side][layer] seed means of W2 */
    for (int s = 0; s < 2; s++)
        for (int l = 0; l < L; l++) {
            int r = lnk_table_new_row(&t);
            CK(lnk_table_set(&t, r, 0, "%s %d", s ? "dec" : "enc", l));
            for (int pre = 0; pre < 2; pre++)
                for (int w = 0; w < 2; w++) {
                    double m, sdv;
                    grad_stat(S, L, pre, s, l, w, &m, &sdv);
                    table_set_pm(&t, r, 1 + 2 * pre + w, m, sdv);
                    if (w && l < 64)
                        w2m[pre][s][l] = m;
                }
        }
    snprintf(v, sizeof v, "(a, b): every layer of the %d-%d model (`grad_profile.csv`).", L, L);
    study_write_table(o->out, "profile_table", &t, v, f);
    lnk_table_free(&t);
    static const char *const hd[] = {"L", "Post-LN", "Pre-LN", "Post / Pre"};
    CK(lnk_table_init(&t, 4, hd, "rrrr"));
    double *x = study_alloc(sizeof(double) * (size_t)nd), *y[2], *se[2], *ys[2];
    for (int pre = 0; pre < 2; pre++) {
        y[pre] = study_alloc(sizeof(double) * (size_t)nd);
        se[pre] = study_alloc(sizeof(double) * (size_t)nd);
        ys[pre] = study_alloc(sizeof(double) * (size_t)nd);
    }
    for (int i = 0; i < nd; i++) {
        int Ld = o->depths[i], r = lnk_table_new_row(&t);
        x[i] = Ld;
        CK(lnk_table_set(&t, r, 0, "%d", Ld));
        for (int pre = 0; pre < 2; pre++) {
            grad_stat(S, Ld, pre, 1, Ld - 1, 1, &y[pre][i], &ys[pre][i]);
            se[pre][i] = ys[pre][i] / sqrt((double)G);
            table_set_pm(&t, r, 1 + pre, y[pre][i], ys[pre][i]);
        }
        CK(lnk_table_set(&t, r, 3, "%.2f", y[0][i] / y[1][i]));
        for (int pre = 0; pre < 2; pre++) { /* the plot's y range: every error bar */
            yr[0] = fmin(yr[0], y[pre][i] - ys[pre][i] > 0 ? y[pre][i] - ys[pre][i]
                                                            : y[pre][i] / 2);
            yr[1] = fmax(yr[1], y[pre][i] + ys[pre][i]);
        }
    }
    study_write_table(o->out, "depth_table", &t,
                      "(c, d): `W2` of the last decoder layer against depth (L-L models; "
                      "`grad_depth.csv`).", f);
    lnk_table_free(&t);
    static const char *const hf[] = {"series", "slope ± se", "chi2/dof", "L", "theory",
                                     "|slope - theory| / se", "per-seed slopes, mean ± se"};
    CK(lnk_table_init(&t, 7, hf, "lrrrrrr"));
    double pss[2][2]; /* per-seed slopes: mean and its standard error */
    static const double theory[2] = {0.0, -0.5};
    static const char *const th_txt[2] = {"0 (flat)", "-1/2"};
    /* a weighted fit needs 2 depths and a seed spread, an unweighted one 3 depths */
    int can_fit = nd >= (G > 1 ? 2 : 3), seed_fit = nd >= 3;
    for (int pre = 0; pre < 2 && can_fit; pre++) {
        CK(lnk_fit_power(x, y[pre], G > 1 ? se[pre] : NULL, (size_t)nd, &fit[pre]));
        int r = lnk_table_new_row(&t);
        CK(lnk_table_set(&t, r, 0, "%s, last decoder W2", pre ? "Pre-LN" : "Post-LN"));
        table_set_pm(&t, r, 1, fit[pre].slope, fit[pre].se_slope);
        CK(lnk_table_set(&t, r, 2, "%.2f", fit[pre].dof ? fit[pre].chisq / fit[pre].dof : NAN));
        CK(lnk_table_set(&t, r, 3, "%d-%d", o->depths[0], o->depths[nd - 1]));
        CK(lnk_table_set(&t, r, 4, "%s", th_txt[pre]));
        CK(lnk_table_set(&t, r, 5, "%.1f",
                         fabs(fit[pre].slope - theory[pre]) / fit[pre].se_slope));
        /* the seeds are paired across depths (seed s initialises every L-L model), so
         * their errors are correlated: each seed's own slope, then mean ± sd / sqrt(G) */
        double *ps = study_alloc(sizeof(double) * (size_t)G), *yy = study_alloc(sizeof(double) * (size_t)nd);
        pss[pre][0] = pss[pre][1] = NAN;
        for (int k = 0; k < G && seed_fit; k++) {
            for (int i = 0; i < nd; i++)
                yy[i] = find_grad(S, o->depths[i], pre, k)->w2[2 * o->depths[i] - 1];
            lnk_fit pf;
            CK(lnk_fit_power(x, yy, NULL, (size_t)nd, &pf));
            ps[k] = pf.slope;
        }
        if (seed_fit) {
            lnk_mean_sd(ps, 1, (size_t)G, &pss[pre][0], &pss[pre][1]);
            pss[pre][1] /= sqrt((double)G);
            table_set_pm(&t, r, 6, pss[pre][0], pss[pre][1]);
        } else
            CK(lnk_table_set(&t, r, 6, "-"));
        free(ps), free(yy);
    }
    study_write_table(o->out, "slopes", &t,
                      "Log-log slopes of the last decoder W2 against L: weighted least squares "
                      "on the seed means, weights from the seed sd / sqrt(seeds), standard "
                      "errors scaled by sqrt(chi2/dof) when that exceeds 1 (studies/kit/fit.c); "
                      "theory: Xiong et al.'s Theorem 1 (Post-LN independent of L, Pre-LN "
                      "L^(-1/2)).  Last column: each seed's own least-squares slope (one seed "
                      "initialises the models of every depth, so the seed means' errors are "
                      "correlated across L), their mean ± sd / sqrt(seeds).", f);
    lnk_table_free(&t);
    static const char *const hl[] = {"L", "Post-LN", "Pre-LN"};
    CK(lnk_table_init(&t, 3, hl, "lrr"));
    for (int i = 0; i + 1 < nd; i++) {
        int r = lnk_table_new_row(&t);
        CK(lnk_table_set(&t, r, 0, "%d-%d", o->depths[i], o->depths[i + 1]));
        for (int pre = 0; pre < 2; pre++) {
            double ls = log(y[pre][i + 1] / y[pre][i]) / log(x[i + 1] / x[i]);
            CK(lnk_table_set(&t, r, 1 + pre, "%.2f", fabs(ls) < 0.005 ? 0.0 : ls));
        }
    }
    study_write_table(o->out, "local_slopes", &t,
                      "Local slopes: ln(y2 / y1) / ln(L2 / L1) between successive depths "
                      "(seed means).", f);
    lnk_table_free(&t);
    fprintf(f, "Plot: `grad.png` (from `grad.gp`; (c, d) on log axes with the fitted lines and "
               "the theory's slopes through the fits' geometric-mean point).\n\n");

    /* values and claims */
    snprintf(file, sizeof file, "grad.csv");
    static const char *const pn[2] = {"post", "pre"};
    for (int pre = 0; pre < 2 && can_fit; pre++) {
        char name[64], list[512] = "";
        snprintf(name, sizeof name, "slope_%s", pn[pre]);
        lnk_fmt_pm(b1, sizeof b1, fit[pre].slope, fit[pre].se_slope);
        quoted_value(q, name, "%s%s", fit[pre].slope > 0 ? "+" : "", b1);
        snprintf(name, sizeof name, "chi2dof_%s", pn[pre]);
        quoted_value(q, name, "%.2f", fit[pre].dof ? fit[pre].chisq / fit[pre].dof : NAN);
        snprintf(name, sizeof name, "slope_%s_nse", pn[pre]);
        quoted_value(q, name, "%.1f", fabs(fit[pre].slope - theory[pre]) / fit[pre].se_slope);
        snprintf(name, sizeof name, "seed_slope_%s", pn[pre]);
        lnk_fmt_pm(list, sizeof list, pss[pre][0], pss[pre][1]);
        quoted_value(q, name, "%s%s", pss[pre][0] > 0 ? "+" : "", list);
        list[0] = '\0';
        for (int i = 0; i < nd; i++) {
            size_t len = strlen(list);
            snprintf(list + len, sizeof list - len, "%s%#.2g", i ? ", " : "", y[pre][i]);
        }
        snprintf(name, sizeof name, "last_w2_%s", pn[pre]);
        quoted_value(q, name, "%s", list);
        int within = fabs(fit[pre].slope - theory[pre]) <= 2 * fit[pre].se_slope;
        snprintf(v, sizeof v, "slope %s%s (se), chi2/dof %.2f, L = %d-%d; theory %s: %s "
                 "(%.1f se); per-seed slopes %s%.2f ± %.2f", fit[pre].slope > 0 ? "+" : "", b1,
                 fit[pre].dof ? fit[pre].chisq / fit[pre].dof : NAN, o->depths[0],
                 o->depths[nd - 1], th_txt[pre], within ? "consistent" : "not consistent",
                 fabs(fit[pre].slope - theory[pre]) / fit[pre].se_slope,
                 pss[pre][0] > 0 ? "+" : "", pss[pre][0], pss[pre][1]);
        snprintf(name, sizeof name, "Multi30k last decoder W2 gradient vs depth, %s",
                 pre ? "Pre-LN" : "Post-LN");
        quoted_claim(q, name, v, setting, file);
    }
    quoted_value(q, "depth_ratio_first", "%.1f", y[0][0] / y[1][0]);
    quoted_value(q, "depth_ratio_last", "%.1f", y[0][nd - 1] / y[1][nd - 1]);
    quoted_value(q, "depths", "%d-%d", o->depths[0], o->depths[nd - 1]);
    quoted_value(q, "grad_seeds", "%d", G);
    if (L <= 64) {
        /* the profile: first and last layer of each stack, W2 seed means */
        double emin[2] = {INFINITY, INFINITY}, emax[2] = {-INFINITY, -INFINITY};
        for (int pre = 0; pre < 2; pre++)
            for (int l = 0; l < L; l++)
                emin[pre] = fmin(emin[pre], w2m[pre][0][l]),
                emax[pre] = fmax(emax[pre], w2m[pre][0][l]);
        quoted_value(q, "prof_post_dec_w2", "%#.2g -> %#.2g", w2m[0][1][0], w2m[0][1][L - 1]);
        quoted_value(q, "prof_post_enc_w2_range", "%#.2g-%#.2g", emin[0], emax[0]);
        quoted_value(q, "prof_pre_enc_w2", "%#.2g -> %#.2g", w2m[1][0][0], w2m[1][0][L - 1]);
        quoted_value(q, "prof_pre_dec_w2", "%#.2g -> %#.2g", w2m[1][1][0], w2m[1][1][L - 1]);
    }
    free(x);
    for (int pre = 0; pre < 2; pre++)
        free(y[pre]), free(se[pre]), free(ys[pre]);
}

static void write_gp(const opts_t *o, double sigma, const lnk_fit fit[2], const double yr[2])
{
    char gp[1100];
    lnk_afile ag;
    if (o->do_spec) {
        char title[256];
        snprintf(title, sizeof title, "Hessian spectral density at init, Multi30k seq2seq "
                 "%d-%d, d=%d, %d seeds, SLQ %dx%d, sigma=%.3g", o->L, o->L, o->d, o->seeds,
                 o->runs, o->steps, sigma);
        study_density_gp(o->out, title);
    }
    if (!o->do_grad)
        return;
    /* Figure 3: seed means with their sd as error bars; (a, b) encoder and
     * decoder as separate lines; (c, d) log-log with the fits and the theory */
    int nd = o->n_depths;
    double l0 = o->depths[0], l1 = o->depths[nd - 1], lm = sqrt(l0 * l1);
    char xt[512] = "", yt[512] = "";
    for (int e = -6; e <= 6; e++) /* 1-2-5 ticks within the y range */
        for (int m = 1; m <= 5; m += (m == 2 ? 3 : 1)) {
            double t = m * pow(10.0, e);
            if (t >= yr[0] / 1.3 && t <= yr[1] * 1.3) {
                size_t len = strlen(yt);
                snprintf(yt + len, sizeof yt - len, "%s%g", len ? ", " : "", t);
            }
        }
    for (int i = 0; i < nd; i++) {
        size_t len = strlen(xt);
        snprintf(xt + len, sizeof xt - len, "%s%d", i ? ", " : "", o->depths[i]);
    }
    snprintf(gp, sizeof gp, "%s/grad.gp", o->out);
    CK(lnk_afile_open(&ag, gp));
    study_track(&ag);
    FILE *f = ag.f;
    fprintf(f,
            "# gnuplot script: Xiong et al. Figure 3 on Multi30k (grad_profile.csv, "
            "grad_depth.csv; the fits of slopes.md)\n"
            "set terminal pngcairo size 1350,480 noenhanced\n"
            "set output 'grad.png'\n"
            "set datafile separator ','\n"
            "set multiplot layout 1,3\n"
            "set xlabel 'layer (encoder 1..%d, decoder %d..%d)'\n"
            "set ylabel '||dL/dW||_F (mean +- sd over %d seeds)'\n"
            "set key top left\n"
            "set xrange [0.5:%d.5]\n"
            "set yrange [0:*]\n"
            "set arrow from %d.5, graph 0 to %d.5, graph 1 nohead dt 2 lc 'gray'\n"
            "enc(c) = strcol(2) eq 'enc' ? column(c) : 1/0\n"
            "dec(c) = strcol(2) eq 'dec' ? column(c) : 1/0\n",
            o->L, o->L + 1, 2 * o->L, o->grad_seeds, 2 * o->L, o->L, o->L);
    for (int w = 0; w < 2; w++) {
        int cp = w ? 6 : 4, cq = w ? 10 : 8;
        fprintf(f,
                "set title '(a, b) W%d, %d-%d model'\n"
                "plot 'grad_profile.csv' every ::1 using 1:(enc(%d)):%d with yerrorlines lw 2 "
                "lc 1 title 'Post-LN', '' every ::1 using 1:(dec(%d)):%d with yerrorlines lw 2 "
                "lc 1 notitle, \\\n"
                "     '' every ::1 using 1:(enc(%d)):%d with yerrorlines lw 2 lc 2 title "
                "'Pre-LN', '' every ::1 using 1:(dec(%d)):%d with yerrorlines lw 2 lc 2 "
                "notitle\n",
                w + 1, o->L, o->L, cp, cp + 1, cp, cp + 1, cq, cq + 1, cq, cq + 1);
    }
    fprintf(f,
            "unset arrow\n"
            "set title '(c, d) last decoder W2 (log-log; dashed: theory)'\n"
            "set xlabel 'L (L-L model)'\n"
            "set logscale xy\n"
            "set xrange [%g:%g]\n"
            "set yrange [%.3g:%.3g]\n"
            "set key below horizontal maxcols 3 width -2\n"
            "set xtics (%s)\n"
            "set ytics (%s)\n"
            "bp = %.17g; ap = %.17g\n"
            "bq = %.17g; aq = %.17g\n"
            "fp(x) = exp(ap) * x**bp\n"
            "fq(x) = exp(aq) * x**bq\n"
            "tp(x) = fp(%.17g)\n"
            "tq(x) = fq(%.17g) * (x / %.17g)**(-0.5)\n",
            l0 * 0.9, l1 * 1.1, yr[0] / 1.3, yr[1] * 1.3, xt, yt, fit[0].slope, fit[0].intercept,
            fit[1].slope, fit[1].intercept, lm, lm, lm);
    int fits = fit[0].n > 0; /* no fit of too few depths: the points alone */
    fprintf(f,
            "plot 'grad_depth.csv' every ::1 using 1:2:3 with yerrorbars pt 7 lc 1 title "
            "'Post-LN'%s, \\\n"
            "     'grad_depth.csv' every ::1 using 1:4:5 with yerrorbars pt 5 lc 2 title "
            "'Pre-LN'%s\n"
            "unset multiplot\n",
            fits ? ", fp(x) lw 2 lc 1 title sprintf('fit %+.2f', bp), tp(x) dt 2 lc 1 title "
                   "'flat'" : "",
            fits ? ", fq(x) lw 2 lc 2 title sprintf('fit %+.2f', bq), tq(x) dt 2 lc 2 title "
                   "'L^(-1/2)'" : "");
    study_untrack(&ag);
    CK(lnk_afile_commit(&ag));
}

/* ------------------------------------------------------------ summarising */

static void write_summary(const opts_t *o, sched_t *S, const data_t *D, double sigma,
                          const double integ[2], const double lo[2], const double hi[2],
                          int have_jobs, lnk_fit fit[2], double yr[2])
{
    char md[1100];
    snprintf(md, sizeof md, "%s/summary.md", o->out);
    lnk_afile am;
    CK(lnk_afile_open(&am, md));
    study_track(&am);
    FILE *f = am.f;
    fprintf(f, "# Multi30k: Post-LN vs Pre-LN encoder-decoder at initialisation\n\n"
               "seq2seq %d-%d, d = %d, h = %d, d_ff = %d, LayerNorm, Xavier; data: %s%d pairs "
               "of %s -> %s (%d kept, %d dropped by length), V_src = %d, V_tgt = %d%s, %zu "
               "scored positions, %d chunks of <= %d padded tokens (%zu in all).\n\n",
            o->L, o->L, o->d, o->h, o->d_ff, o->sentences ? "the first " : "all ",
            o->sentences ? o->sentences : D->n_pairs, o->src, o->tgt, D->n_pairs, D->n_dropped,
            D->V_src, D->V_tgt, o->joint ? " (joint)" : "", D->n_scored, D->n_chunks,
            o->max_tokens, D->padded);
    study_quoted q;
    quoted_open(&q, o->out);
    quoted_value(&q, "pairs", "%d", D->n_pairs);
    if (o->do_spec)
        summary_spec(f, o, S, D, sigma, integ, lo, hi, have_jobs, &q);
    if (o->do_grad)
        summary_grad(f, o, S, D, &q, fit, yr);
    fprintf(f, "Run times, products and memory: the sidecars (`*.meta.json`)%s.\n",
            have_jobs ? " and `jobs.csv`" : "");
    quoted_close(&q);
    study_untrack(&am);
    CK(lnk_afile_commit(&am));
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

static int file_exists(const char *dir, const char *name)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, R_OK) == 0;
}

/* The summarising step, from the raw rows in dir alone (eigs, trace, blocks,
 * slq_nodes, grad, and jobs.csv when present; the run's settings from the
 * sidecar of eigs.csv, or of grad.csv): grad_profile.csv, grad_depth.csv,
 * density.csv, the tables (.md, .tex), summary.md, values.csv, claims.csv,
 * density.gp and grad.gp.  Rank 0 only. */
static void summarise(const char *dir, double kappa)
{
    char start[32];
    lnk_iso_time(start, sizeof start);
    double t0 = lnk_now();
    opts_t o = {.out = dir, .kappa = kappa};
    o.do_spec = file_exists(dir, "eigs.csv");
    o.do_grad = file_exists(dir, "grad.csv");
    if (!o.do_spec && !o.do_grad)
        fail("%s: neither eigs.csv nor grad.csv: not a multi30k_hessian results directory", dir);
    int have_jobs = file_exists(dir, "jobs.csv");
    static const char *const raw[] = {"eigs.csv", "trace.csv", "blocks.csv", "slq_nodes.csv",
                                      "grad.csv", "jobs.csv"};
    for (int k = 0; k < 6; k++)
        if ((k < 4 && o.do_spec) || (k == 4 && o.do_grad) || (k == 5 && have_jobs)) {
            char p[1100];
            snprintf(p, sizeof p, "%s/%s", dir, raw[k]);
            study_input(p);
        }
    const char *rawname = o.do_spec ? "eigs" : "grad";
    json_t *side = study_sidecar(dir, rawname);
    char what[1100];
    snprintf(what, sizeof what, "%s/%s.meta.json", dir, rawname);
    const json_t *cfg = json_object_get(side, "config");
    if (!cfg)
        fail("%s: no member 'config'", what);
    data_t D = {0};
    o.d = (int)sidecar_int(cfg, "d", what);
    o.h = (int)sidecar_int(cfg, "h", what);
    o.d_ff = (int)sidecar_int(cfg, "d_ff", what);
    o.L = (int)sidecar_int(cfg, "L", what);
    D.V_src = (int)sidecar_int(cfg, "V_src", what);
    D.V_tgt = (int)sidecar_int(cfg, "V_tgt", what);
    o.src = sidecar_str(side, "src", what);
    o.tgt = sidecar_str(side, "tgt", what);
    o.sentences = (int)sidecar_int(side, "sentences", what);
    o.joint = json_is_true(json_object_get(side, "joint_vocab"));
    o.max_tokens = (int)sidecar_int(side, "max_tokens", what);
    o.seeds = (int)sidecar_int(side, "seeds", what);
    o.k = (int)sidecar_int(side, "k", what);
    o.eig_steps = (int)sidecar_int(side, "eig_steps", what);
    o.eig_tol = sidecar_num(side, "eig_tol", what);
    o.probes = (int)sidecar_int(side, "probes", what);
    o.runs = (int)sidecar_int(side, "slq_runs", what);
    o.steps = (int)sidecar_int(side, "slq_steps", what);
    o.block_steps = (int)sidecar_int(side, "block_steps", what);
    o.block_tol = sidecar_num(side, "block_tol", what);
    o.grad_seeds = (int)sidecar_int(side, "grad_seeds", what);
    parse_depths(&o, sidecar_str(side, "depths", what));
    D.n_pairs = (int)sidecar_int(side, "pairs", what);
    D.n_dropped = (int)sidecar_int(side, "dropped", what);
    D.n_scored = (size_t)sidecar_int(side, "n_scored", what);
    D.n_chunks = (int)sidecar_int(side, "chunks", what);
    D.padded = (size_t)sidecar_int(side, "padded_tokens", what);
    lnk_meta *extra = summary_extra("multi30k_hessian --summarise", side, NULL);

    sched_t S = {.o = &o, .D = &D, .t0 = t0};
    block_t *blk = calloc((size_t)(5 * o.L + 3), sizeof *blk);
    if (!blk)
        fail("out of memory");
    S.nblk = make_blocks(o.L, blk);
    S.blk = blk;
    make_jobs(&o, &S);
    read_jobs(&o, &S, have_jobs);
    double sigma = 0, integ[2] = {0, 0}, lo[2] = {0, 0}, hi[2] = {0, 0};
    lnk_fit fit[2];
    memset(fit, 0, sizeof fit);
    if (o.do_spec)
        sigma = write_density(&o, extra, start, t0, integ, lo, hi);
    if (o.do_grad)
        write_grad(&o, &S, extra, start, t0);
    double yr[2] = {INFINITY, -INFINITY};
    write_summary(&o, &S, &D, sigma, integ, lo, hi, have_jobs, fit, yr);
    write_gp(&o, sigma, fit, yr);
    sched_free(&S);
    free(blk);
    lnk_meta_free(extra);
    json_decref(side);
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
                .do_grad = 1, .kappa = 3.0, .eig_tol = 1e-6, .block_tol = 1e-3};
    const char *summarise_dir = NULL;
    enum { O_SRC = 256, O_TGT, O_SENT, O_MINC, O_MAXV, O_JOINT, O_MAXLEN, O_MAXTOK, O_DFF,
           O_EIGSTEPS, O_EIGTOL, O_BSTEPS, O_BTOL, O_DEPTHS, O_GSEEDS, O_PARTS, O_JOBS,
           O_SUMMARISE };
    static struct option lo[] = {
        {"out", 1, 0, 'o'},          {"src", 1, 0, O_SRC},          {"tgt", 1, 0, O_TGT},
        {"sentences", 1, 0, O_SENT}, {"min-count", 1, 0, O_MINC},   {"max-vocab", 1, 0, O_MAXV},
        {"joint-vocab", 0, 0, O_JOINT}, {"max-len", 1, 0, O_MAXLEN},
        {"max-tokens", 1, 0, O_MAXTOK}, {"d", 1, 0, 'd'},           {"h", 1, 0, 'H'},
        {"d-ff", 1, 0, O_DFF},       {"L", 1, 0, 'L'},              {"seeds", 1, 0, 's'},
        {"k", 1, 0, 'k'},            {"eig-steps", 1, 0, O_EIGSTEPS}, {"eig-tol", 1, 0, O_EIGTOL},
        {"probes", 1, 0, 'p'},       {"runs", 1, 0, 'r'},           {"steps", 1, 0, 'm'},
        {"block-steps", 1, 0, O_BSTEPS}, {"block-tol", 1, 0, O_BTOL}, {"kappa", 1, 0, 'K'},
        {"depths", 1, 0, O_DEPTHS},  {"grad-seeds", 1, 0, O_GSEEDS}, {"parts", 1, 0, O_PARTS},
        {"jobs", 1, 0, O_JOBS},      {"quiet", 0, 0, 'q'},          {"help", 0, 0, 'h'},
        {"summarise", 1, 0, O_SUMMARISE}, {0, 0, 0, 0}};
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
        case 'K': o.kappa = arg_pos("kappa", optarg, 1); break;
        case O_DEPTHS: o.depths_str = optarg; break;
        case O_GSEEDS: o.grad_seeds = (int)arg_int("grad-seeds", optarg, 1, 1000); break;
        case O_PARTS:
            o.do_spec = strstr(optarg, "spectrum") != NULL;
            o.do_grad = strstr(optarg, "grad") != NULL;
            if (!o.do_spec && !o.do_grad)
                fail("--parts: expected spectrum and/or grad, got '%s'", optarg);
            break;
        case O_JOBS: o.jobs = (int)arg_int("jobs", optarg, 1, 64); break;
        case O_SUMMARISE: summarise_dir = optarg; break;
        case 'q': o.quiet = 1; break;
        case 'h': usage(); return 0;
        default:
            fail("unknown option or missing value '%s' (--help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        fail("unexpected argument '%s'", argv[optind]);
    if (summarise_dir) { /* the summarising step alone, on the raw rows of a run */
        if (study_root())
            summarise(summarise_dir, o.kappa);
        return 0;
    }
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
    /* MPI: job j ran on rank j % P; the rows of every job to rank 0, which
     * summarises from the files */
    write_rows(&o, &S, &base, extra, start, t0);
    lnk_meta_free(extra);
    if (study_root()) {
        /* the summarising step, from the files alone (as --summarise) */
        summarise(o.out, o.kappa);
        if (!o.quiet)
            fprintf(stderr, "multi30k_hessian: wrote %s/ in %.0f s\n", o.out, lnk_now() - t0);
    }
    sched_free(&S);
    free(blk);
    lnk_batches_free(D.chunks, D.n_chunks);
    lnk_config_clear(&base);
    return 0;
}
